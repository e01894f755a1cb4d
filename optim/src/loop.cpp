// The loop itself: trainer and evaluator construction, filters, data sources, and run(),
// which fires the events in Axon's order around one compiled step per batch.
#include <chrono>

#include "loop_impl.hpp"

namespace glia {

const char* event_name(Event event) {
  switch (event) {
    case Event::started:
      return "started";
    case Event::epoch_started:
      return "epoch_started";
    case Event::iteration_started:
      return "iteration_started";
    case Event::iteration_completed:
      return "iteration_completed";
    case Event::epoch_completed:
      return "epoch_completed";
    case Event::epoch_halted:
      return "epoch_halted";
    case Event::completed:
      return "completed";
  }
  return "unknown";
}

// ---- Filters and data -----------------------------------------------------------------------

Filter Filter::always() { return {Kind::always, 1}; }
Filter Filter::once(std::int64_t n) {
  check(n >= 1, "Filter::once: n counts occurrences from 1, got ", n);
  return {Kind::once, n};
}
Filter Filter::every(std::int64_t n) {
  check(n >= 1, "Filter::every: n must be >= 1, got ", n);
  return {Kind::every, n};
}
bool Filter::matches(std::int64_t occurrence) const {
  switch (kind_) {
    case Kind::always:
      return true;
    case Kind::once:
      return occurrence == n_;
    case Kind::every:
      return occurrence % n_ == 0;
  }
  return false;
}

DataSource::DataSource(std::vector<Batch> batches)
    : batches_per_epoch_(static_cast<std::int64_t>(batches.size())) {
  auto shared = std::make_shared<const std::vector<Batch>>(std::move(batches));
  epoch_ = [shared](std::int64_t) -> Reader {
    return [shared, next = std::size_t{0}]() mutable -> std::optional<Batch> {
      if (next >= shared->size()) return std::nullopt;
      return (*shared)[next++];
    };
  };
}

DataSource::DataSource(std::function<Reader(std::int64_t)> epoch, std::int64_t batches_per_epoch)
    : epoch_(std::move(epoch)), batches_per_epoch_(batches_per_epoch) {
  check(static_cast<bool>(epoch_), "DataSource: the epoch function is null");
  check(batches_per_epoch >= 0, "DataSource: batches_per_epoch must be >= 0 (0: unknown), got ",
        batches_per_epoch);
}

// ---- Construction -------------------------------------------------------------------------

std::map<std::string, MetricFn> Loop::Impl::metric_fns() const {
  std::map<std::string, MetricFn> out;
  for (const LoopMetric& m : metrics) out[m.name] = m.fn;
  return out;
}

metrics::Aggregate Loop::Impl::aggregate_of(const std::string& name) const {
  for (const LoopMetric& m : metrics)
    if (m.name == name) return m.how;
  return metrics::Aggregate::running_average;
}

Loop trainer(Model model, LossFn loss, Transformation optimizer, TrainerOptions options) {
  check(model.defined(), "trainer: the model is undefined");
  check(static_cast<bool>(loss), "trainer: the loss is a null function");
  check(optimizer.init && optimizer.update, "trainer: the optimizer needs init and update");
  Loop loop;
  loop.impl_ = std::make_shared<Loop::Impl>();
  Loop::Impl& l = *loop.impl_;
  l.training = true;
  l.model = std::move(model);
  l.loss = std::move(loss);
  l.optimizer = std::move(optimizer);
  l.backend = options.backend;
  l.seed = options.seed;
  l.output = options.output;
  l.progress = options.progress;
  for (auto& [name, fn] : options.metrics) loop.metric(name, fn);
  return loop;
}

Loop evaluator(Model model, EvaluatorOptions options) {
  check(model.defined(), "evaluator: the model is undefined");
  Loop loop;
  loop.impl_ = std::make_shared<Loop::Impl>();
  Loop::Impl& l = *loop.impl_;
  l.training = false;
  l.model = std::move(model);
  l.loss = std::move(options.loss);
  l.backend = options.backend;
  l.output = options.output;
  l.progress = options.progress;
  for (auto& [name, fn] : options.metrics) loop.metric(name, fn);
  return loop;
}

Loop& Loop::metric(const std::string& name, MetricFn fn, metrics::Aggregate how) {
  check(!name.empty(), "Loop::metric: the name is empty");
  check(name != "loss", "Loop::metric: 'loss' is the loop's own loss; pick another name");
  check(static_cast<bool>(fn), "Loop::metric: '", name, "' is a null function");
  bool replaced = false;
  for (LoopMetric& m : impl_->metrics)
    if (m.name == name) {
      m = {name, std::move(fn), how};
      replaced = true;
    }
  if (!replaced) impl_->metrics.push_back({name, std::move(fn), how});
  ++impl_->metrics_version;
  return *this;
}

Loop& Loop::handle(Event event, Handler handler, Filter filter) {
  check(static_cast<bool>(handler), "Loop::handle: the handler for ", event_name(event),
        " is null");
  impl_->hooks.push_back({event, std::move(handler), filter});
  return *this;
}

// ---- Running ----------------------------------------------------------------------------------

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::int64_t batch_size(const Batch& b) {
  return b.x.defined() && b.x.rank() >= 1 ? b.x.shape()[0] : 1;
}

// The occurrence number a filter sees (see Filter).
std::int64_t occurrence(Event event, const LoopState& s) {
  switch (event) {
    case Event::iteration_started:
      return s.total_iterations + 1;  // the batch under way
    case Event::iteration_completed:
      return s.total_iterations;
    case Event::epoch_started:
    case Event::epoch_completed:
    case Event::epoch_halted:
      return s.epoch + 1;
    case Event::started:
    case Event::completed:
      return 1;
  }
  return 1;
}

void check_run_options(const RunOptions& options, const char* who) {
  check(options.epochs >= 0, who, ": epochs must be >= 0, got ", options.epochs);
  check(options.max_iterations_per_epoch >= 0, who,
        ": max_iterations_per_epoch must be >= 0 (0: all), got ", options.max_iterations_per_epoch);
}

std::int64_t capped_batches(const DataSource& data, const RunOptions& options) {
  std::int64_t n = data.batches_per_epoch();
  if (options.max_iterations_per_epoch > 0)
    n = n > 0 ? std::min(n, options.max_iterations_per_epoch) : 0;
  return n;
}

}  // namespace

void Loop::Impl::prepare_steps() {
  if (steps_version == metrics_version) return;
  StepOptions so{.backend = backend, .metrics = metric_fns()};
  if (training)
    train_step = std::make_shared<TrainStep>(model, loss, optimizer, so);
  else
    eval_step = std::make_shared<EvalStep>(model, loss, so);
  steps_version = metrics_version;
}

LoopState resume_position(LoopState s) {
  switch (s.event) {
    case Event::epoch_completed:
    case Event::epoch_halted:
      // Handlers of the epoch's end run before the loop records it.
      if (static_cast<std::int64_t>(s.history.size()) == s.epoch) s.history.push_back(s.metrics);
      s.epoch = static_cast<std::int64_t>(s.history.size());
      s.iteration = 0;
      s.metrics.clear();
      break;
    case Event::completed:
      s.epoch = static_cast<std::int64_t>(s.history.size());
      s.iteration = 0;
      s.metrics.clear();
      break;
    case Event::epoch_started:
      s.iteration = 0;
      s.metrics.clear();
      break;
    case Event::started:
    case Event::iteration_started:
    case Event::iteration_completed:
      break;
  }
  s.event = Event::started;
  s.batch = {};
  s.halted = false;
  return s;
}

LoopState Loop::run(const DataSource& data, RunOptions options,
                    std::optional<TrainState> initial) const {
  Impl& l = *impl_;
  check_run_options(options, "Loop::run");
  l.prepare_steps();
  LoopState s;
  s.epochs = options.epochs;
  s.batches_per_epoch = capped_batches(data, options);
  if (l.training) {
    if (!initial) {
      s.train = l.train_step->init(l.seed);
    } else if (initial->optimizer.empty()) {
      s.train = l.train_step->init(std::move(initial->model), initial->seed);
      s.train.step = initial->step;
      s.train.lr_scale = initial->lr_scale;
    } else {
      s.train = std::move(*initial);
    }
  } else {
    check(initial.has_value(),
          "evaluator: run needs the model state to evaluate; pass a "
          "TrainState (e.g. TrainState{.model = state})");
    s.train = std::move(*initial);
  }
  return l.drive(data, options, std::move(s));
}

LoopState Loop::resume(const DataSource& data, RunOptions options, LoopState from) const {
  Impl& l = *impl_;
  check(l.training, "Loop::resume: only a trainer resumes a run (an evaluator has none)");
  check_run_options(options, "Loop::resume");
  l.prepare_steps();
  LoopState s = resume_position(std::move(from));
  check(s.epoch >= 0 && s.iteration >= 0, "Loop::resume: the state's position (epoch ", s.epoch,
        ", iteration ", s.iteration, ") is negative");
  check(s.epoch < options.epochs || (s.epoch == options.epochs && s.iteration == 0),
        "Loop::resume: the state has completed ", s.epoch, " epochs",
        s.iteration > 0 ? cat(" and ", s.iteration, " batches of the next") : std::string(),
        " but the run asks for ", options.epochs,
        " epochs in all (RunOptions::epochs counts from the run's start)");
  check_model_entries(l.model, s.train.model, "Loop::resume");
  {
    // Scoped: its references to the parameters must not outlive the check (a step may
    // update parameters in place only when nothing else holds them).
    TrainState expected = l.train_step->init(s.train.model, s.train.seed);
    check_optimizer_entries(expected.optimizer, s.train.optimizer, "Loop::resume");
  }
  s.epochs = options.epochs;
  s.batches_per_epoch = capped_batches(data, options);
  return l.drive(data, options, std::move(s));
}

LoopState Loop::Impl::drive(const DataSource& data, const RunOptions& options, LoopState s) {
  Impl& l = *this;
  // Runs the event's handlers; the first that does not continue decides.
  auto fire = [&](Event event) {
    s.event = event;
    for (const LoopHook& h : l.hooks) {
      if (h.event != event || !h.filter.matches(occurrence(event, s))) continue;
      HandlerResult r = h.handler(s);
      if (r == HandlerResult::halt_epoch &&
          (event == Event::started || event == Event::epoch_completed ||
           event == Event::epoch_halted || event == Event::completed))
        r = HandlerResult::continue_;
      if (r != HandlerResult::continue_) return r;
    }
    return HandlerResult::continue_;
  };

  Progress progress(l.output, l.progress);
  double run_seconds = 0;
  std::int64_t run_samples = 0;
  // A resumed run may start inside an epoch: its first `skip` batches were done before.
  std::int64_t skip = s.iteration;
  bool stop = fire(Event::started) == HandlerResult::halt_loop;
  for (std::int64_t e = s.epoch; e < options.epochs && !stop; ++e) {
    s.epoch = e;
    HandlerResult r = HandlerResult::continue_;
    if (skip == 0) {
      s.iteration = 0;
      s.metrics.clear();
      s.batch = {};
      r = fire(Event::epoch_started);
    }
    stop = r == HandlerResult::halt_loop;
    bool halted_epoch = r == HandlerResult::halt_epoch;
    std::int64_t epoch_samples = 0;
    Clock::time_point start = Clock::now();
    DataSource::Reader next = data.epoch(e);
    for (std::int64_t i = 0; i < skip; ++i)
      check(next().has_value(), "Loop::resume: the state is at batch ", skip, " of epoch ", e + 1,
            " but the data has only ", i, " batches in that epoch");
    skip = 0;
    while (
        !stop && !halted_epoch &&
        (options.max_iterations_per_epoch == 0 || s.iteration < options.max_iterations_per_epoch)) {
      std::optional<Batch> batch = next();
      if (!batch) break;
      r = fire(Event::iteration_started);
      stop = r == HandlerResult::halt_loop;
      halted_epoch = r == HandlerResult::halt_epoch;
      if (stop || halted_epoch) break;
      s.batch = l.training ? (*l.train_step)(s.train, batch->x, batch->y)
                           : (*l.eval_step)(s.train.model, batch->x, batch->y);
      ++s.iteration;
      ++s.total_iterations;
      epoch_samples += batch_size(*batch);
      s.samples += batch_size(*batch);
      if (l.loss)
        s.metrics["loss"] = metrics::aggregate(metrics::Aggregate::running_average,
                                               s.metrics["loss"], s.batch.loss, s.iteration);
      for (const auto& [name, v] : s.batch.metrics)
        s.metrics[name] = metrics::aggregate(l.aggregate_of(name), s.metrics[name], v, s.iteration);
      progress.iteration(s, since(start), epoch_samples);
      r = fire(Event::iteration_completed);
      stop = r == HandlerResult::halt_loop;
      halted_epoch = r == HandlerResult::halt_epoch;
    }
    double seconds = since(start);
    s.epoch_seconds.push_back(seconds);
    run_seconds += seconds;
    run_samples += epoch_samples;
    s.samples_per_second = run_seconds > 0 ? static_cast<double>(run_samples) / run_seconds : 0;
    bool cut_short = halted_epoch || stop;
    if (!stop)
      stop = fire(halted_epoch ? Event::epoch_halted : Event::epoch_completed) ==
             HandlerResult::halt_loop;
    s.history.push_back(s.metrics);
    progress.epoch_end(s, seconds, epoch_samples, cut_short);
  }
  s.halted = stop;
  s.epoch = static_cast<std::int64_t>(s.history.size());
  fire(Event::completed);
  return s;
}

}  // namespace glia
