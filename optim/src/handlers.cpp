// The loop's built-in handlers: log, validate, early_stop, reduce_lr_on_plateau and
// checkpoint. Each is an ordinary handler attached with Loop::handle; those that keep
// state across epochs rebuild it from the history when a run is resumed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <ostream>

#include "glia/optim/checkpoint.hpp"
#include "loop_impl.hpp"

namespace glia {

namespace {

bool iteration_event(Event e) {
  return e == Event::iteration_started || e == Event::iteration_completed;
}
bool epoch_event(Event e) {
  return e == Event::epoch_started || e == Event::epoch_completed || e == Event::epoch_halted;
}

double monitored(const LoopState& s, const std::string& name, const char* who) {
  auto it = s.metrics.find(name);
  if (it != s.metrics.end()) return it->second;
  std::string have;
  for (const auto& [k, v] : s.metrics) have += (have.empty() ? "" : ", ") + k;
  throw Error(cat(who, ": no metric '", name, "' at the end of epoch ", s.epoch + 1,
                  "; the epoch has: ", have.empty() ? "none" : have,
                  name.rfind("validation_", 0) == 0 ? " (attach validate() before it)" : ""));
}

// Tracks the best value of a monitored metric and the epochs since it last improved.
struct Plateau {
  MonitorMode mode = MonitorMode::min;
  double min_delta = 0;
  bool seen = false;
  double best = 0;
  std::int64_t wait = 0;

  // Whether `value` improved on the best (the first value always does).
  bool observe(double value) {
    bool better =
        !seen || (mode == MonitorMode::min ? value < best - min_delta : value > best + min_delta);
    if (better) {
      seen = true;
      best = value;
      wait = 0;
    } else {
      ++wait;
    }
    return better;
  }
};

// Rebuilds a plateau from a resumed run's history, as the epochs before it saw it;
// `reduces` replays reduce_lr_on_plateau's reset after each reduction.
void replay(Plateau& p, const LoopState& s, const std::string& monitor, std::int64_t patience,
            bool reduces) {
  for (const auto& epoch : s.history) {
    auto it = epoch.find(monitor);
    if (it == epoch.end()) continue;
    if (!p.observe(it->second) && reduces && p.wait >= patience) p.wait = 0;
  }
}

void check_monitor(const std::string& monitor, std::int64_t patience, double min_delta,
                   const char* who) {
  check(!monitor.empty(), who, ": the monitored metric's name is empty");
  check(patience >= 0, who, ": patience must be >= 0, got ", patience);
  check(min_delta >= 0, who, ": min_delta must be >= 0, got ", min_delta);
}

}  // namespace

Loop& Loop::log(std::ostream& out, Filter filter, Event event) {
  std::ostream* stream = &out;
  const Impl* owner = impl_.get();  // the hook lives inside the Impl it points to
  return handle(
      event,
      [stream, owner](LoopState& s) {
        if (owner->rank() != 0) return HandlerResult::continue_;  // data parallel: rank 0 logs
        std::string where = event_name(s.event);
        if (iteration_event(s.event)) {
          // At iteration_started the batch under way is the next one.
          std::int64_t k = s.iteration + (s.event == Event::iteration_started ? 1 : 0);
          where = cat("Epoch ", s.epoch + 1, ", iteration ", k);
        } else if (epoch_event(s.event)) {
          where = cat("Epoch ", s.epoch + 1);
        }
        std::string m = metrics_text(s.metrics);
        *stream << where << (m.empty() ? "" : ": " + m) << '\n';
        return HandlerResult::continue_;
      },
      filter);
}

Loop& Loop::validate(DataSource data, Filter filter) {
  check(impl_->training, "Loop::validate: only a trainer validates (an evaluator evaluates)");
  struct Validation {
    DataSource data;
    std::shared_ptr<Loop> evaluator;
    std::int64_t version = -1;
  };
  auto v = std::make_shared<Validation>(Validation{std::move(data), nullptr, -1});
  // The hook lives inside the Impl it points to, so the pointer outlives every call.
  const Impl* owner = impl_.get();
  return handle(
      Event::epoch_completed,
      [v, owner](LoopState& s) {
        if (!v->evaluator || v->version != owner->metrics_version) {
          // Sharded validation data: the evaluator sums over the processes; whole data
          // gives every process the same metrics without any.
          const bool sharded = v->data.shards() > 1;
          Loop e =
              evaluator(owner->model, {.backend = owner->backend,
                                       .loss = owner->loss,
                                       .losses = owner->losses,
                                       .progress = ProgressMode::off,
                                       .communicator = sharded ? owner->communicator : nullptr});
          for (const LoopMetric& m : owner->metrics) {
            if (m.output.empty())
              e.metric(m.name, m.fn, m.how);
            else
              e.metric(m.output, m.metric, m.fn, m.how);
          }
          v->evaluator = std::make_shared<Loop>(std::move(e));
          v->version = owner->metrics_version;
        }
        LoopState r = v->evaluator->run(v->data, {.epochs = 1}, TrainState{.model = s.train.model});
        for (const auto& [name, value] : r.history.back()) s.metrics["validation_" + name] = value;
        return HandlerResult::continue_;
      },
      filter);
}

Loop& Loop::early_stop(EarlyStopOptions o) {
  check_monitor(o.monitor, o.patience, o.min_delta, "early_stop");
  auto p = std::make_shared<Plateau>();
  handle(Event::started, [p, o](LoopState& s) {
    *p = Plateau{.mode = o.mode, .min_delta = o.min_delta};
    replay(*p, s, o.monitor, o.patience, false);
    return HandlerResult::continue_;
  });
  return handle(Event::epoch_completed, [p, o](LoopState& s) {
    if (p->observe(monitored(s, o.monitor, "early_stop"))) return HandlerResult::continue_;
    return p->wait >= o.patience ? HandlerResult::halt_loop : HandlerResult::continue_;
  });
}

Loop& Loop::reduce_lr_on_plateau(ReduceLrOptions o) {
  check_monitor(o.monitor, o.patience, o.min_delta, "reduce_lr_on_plateau");
  check(o.factor > 0 && o.factor < 1, "reduce_lr_on_plateau: factor must be in (0, 1), got ",
        o.factor);
  check(o.min_scale >= 0, "reduce_lr_on_plateau: min_scale must be >= 0, got ", o.min_scale);
  auto p = std::make_shared<Plateau>();
  handle(Event::started, [p, o](LoopState& s) {
    *p = Plateau{.mode = o.mode, .min_delta = o.min_delta};
    replay(*p, s, o.monitor, o.patience, true);
    return HandlerResult::continue_;
  });
  return handle(Event::epoch_completed, [p, o](LoopState& s) {
    if (!p->observe(monitored(s, o.monitor, "reduce_lr_on_plateau")) && p->wait >= o.patience) {
      s.train.lr_scale = std::max(s.train.lr_scale * o.factor, o.min_scale);
      p->wait = 0;
    }
    return HandlerResult::continue_;
  });
}

Loop& Loop::terminate_on_nan() {
  return handle(Event::iteration_completed, [](LoopState& s) {
    if (std::isfinite(s.batch.loss)) return HandlerResult::continue_;
    // "nan" whatever its sign bit (printf's "-nan" says nothing a user can act on).
    std::string value = std::isnan(s.batch.loss) ? "nan" : cat(s.batch.loss);
    s.halt_reason = cat("the loss is ", value, " at epoch ", s.epoch + 1, ", iteration ",
                        s.iteration, " (step ", s.train.step, ")");
    return HandlerResult::halt_loop;
  });
}

namespace {

std::string numbered_path(const std::string& path, std::int64_t step) {
  std::filesystem::path p(path);
  char digits[32];
  std::snprintf(digits, sizeof digits, "%08lld", static_cast<long long>(step));
  std::string name = p.stem().string() + "-" + digits + p.extension().string();
  return (p.parent_path() / name).string();
}

// The monitored value a checkpoint was saved with: its epoch's (epoch events) or its
// epoch's so far (iteration events).
std::optional<double> saved_value(const Checkpoint& c, const CheckpointOptions& o) {
  const LoopState& s = c.loop;
  const std::map<std::string, double>* m = nullptr;
  if (epoch_event(o.event) || o.event == Event::completed)
    m = s.history.empty() ? nullptr : &s.history.back();
  else
    m = &s.metrics;
  if (m == nullptr) return std::nullopt;
  auto it = m->find(o.monitor);
  return it == m->end() ? std::nullopt : std::optional<double>(it->second);
}

}  // namespace

Loop& Loop::checkpoint(CheckpointOptions o) {
  check(impl_->training, "Loop::checkpoint: only a trainer saves checkpoints");
  check(!o.path.empty(), "Loop::checkpoint: the path is empty");
  check(o.keep_last >= 0, "Loop::checkpoint: keep_last must be >= 0 (0: one file), got ",
        o.keep_last);
  auto best = std::make_shared<std::optional<double>>();
  // A fresh run forgets the best value; a resumed one takes it from the last file it saved.
  handle(Event::started, [best, o](LoopState& s) {
    best->reset();
    if (o.monitor.empty() || (s.epoch == 0 && s.iteration == 0)) return HandlerResult::continue_;
    std::string last = o.path;
    if (o.keep_last > 0) {
      std::vector<std::string> files = checkpoint_files(o.path);
      last = files.empty() ? std::string() : files.back();
    }
    std::error_code ec;
    if (!last.empty() && std::filesystem::exists(last, ec))
      *best = saved_value(load_checkpoint(last), o);
    return HandlerResult::continue_;
  });
  const Impl* owner = impl_.get();  // the hook lives inside the Impl it points to
  return handle(
      o.event,
      [best, o, owner](LoopState& s) {
        if (!o.monitor.empty()) {
          double v = monitored(s, o.monitor, "Loop::checkpoint");
          bool better =
              !best->has_value() || (o.mode == MonitorMode::min ? v < **best : v > **best);
          if (!better) return HandlerResult::continue_;
          *best = v;
        }
        // Data parallel: every process holds the same state; rank 0 writes it.
        if (owner->rank() != 0) return HandlerResult::continue_;
        if (o.keep_last == 0) {
          save_checkpoint(o.path, owner->model, s, o.config);
          return HandlerResult::continue_;
        }
        save_checkpoint(numbered_path(o.path, s.train.step), owner->model, s, o.config);
        std::vector<std::string> files = checkpoint_files(o.path);
        std::error_code ec;
        for (std::size_t i = 0; i + static_cast<std::size_t>(o.keep_last) < files.size(); ++i)
          std::filesystem::remove(files[i], ec);
        return HandlerResult::continue_;
      },
      o.filter);
}

}  // namespace glia
