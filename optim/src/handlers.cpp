// The loop's built-in handlers: log, validate, early_stop, reduce_lr_on_plateau and the
// checkpoint hook point. Each is an ordinary handler attached with Loop::handle.
#include <algorithm>
#include <ostream>

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

void check_monitor(const std::string& monitor, std::int64_t patience, double min_delta,
                   const char* who) {
  check(!monitor.empty(), who, ": the monitored metric's name is empty");
  check(patience >= 0, who, ": patience must be >= 0, got ", patience);
  check(min_delta >= 0, who, ": min_delta must be >= 0, got ", min_delta);
}

}  // namespace

Loop& Loop::log(std::ostream& out, Filter filter, Event event) {
  std::ostream* stream = &out;
  return handle(
      event,
      [stream](LoopState& s) {
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
          Loop e = evaluator(
              owner->model,
              {.backend = owner->backend, .loss = owner->loss, .progress = ProgressMode::off});
          for (const LoopMetric& m : owner->metrics) e.metric(m.name, m.fn, m.how);
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
  handle(Event::started, [p, o](LoopState&) {
    *p = Plateau{.mode = o.mode, .min_delta = o.min_delta};
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
  handle(Event::started, [p, o](LoopState&) {
    *p = Plateau{.mode = o.mode, .min_delta = o.min_delta};
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

Loop& Loop::checkpoint(std::function<void(const LoopState&)> save, Filter filter, Event event) {
  check(static_cast<bool>(save), "Loop::checkpoint: the save function is null");
  return handle(
      event,
      [save = std::move(save)](LoopState& s) {
        save(s);
        return HandlerResult::continue_;
      },
      filter);
}

}  // namespace glia
