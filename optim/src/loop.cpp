// The loop itself: trainer and evaluator construction, metrics, and run(), which fires
// the events in Axon's order around one compiled step per batch.
#include <chrono>

#include "glia/optim/distributed.hpp"
#include "loop_impl.hpp"

namespace glia {

// ---- Construction -------------------------------------------------------------------------

StepOptions Loop::Impl::step_options() const {
  StepOptions o{.backend = backend, .communicator = communicator};
  for (const LoopMetric& m : metrics) {
    if (m.how == metrics::Aggregate::running_sum) o.summed_metrics.insert(m.name);
    if (m.output.empty())
      o.metrics[m.name] = m.fn;
    else
      o.output_metrics[m.output][m.metric] = m.fn;
  }
  return o;
}

metrics::Aggregate Loop::Impl::aggregate_of(const std::string& name) const {
  for (const LoopMetric& m : metrics)
    if (m.name == name) return m.how;
  return metrics::Aggregate::running_average;
}

namespace {
Loop& add_metrics(Loop& loop, const TrainerOptions& options) {
  for (auto& [name, fn] : options.metrics) loop.metric(name, fn);
  for (auto& [head, fns] : options.output_metrics)
    for (auto& [name, fn] : fns) loop.metric(head, name, fn);
  return loop;
}
}  // namespace

Loop trainer(Model model, LossFn loss, Transformation optimizer, TrainerOptions options) {
  check(static_cast<bool>(loss), "trainer: the loss is a null function");
  return detail::make_trainer(std::move(model), std::move(loss), {}, std::move(optimizer),
                              std::move(options));
}

Loop trainer(Model model, OutputLosses losses, Transformation optimizer, TrainerOptions options) {
  check(!losses.empty(), "trainer: give a loss for at least one output");
  return detail::make_trainer(std::move(model), nullptr, std::move(losses), std::move(optimizer),
                              std::move(options));
}

Loop detail::make_trainer(Model model, LossFn loss, OutputLosses losses, Transformation optimizer,
                          TrainerOptions options) {
  check(model.defined(), "trainer: the model is undefined");
  check(optimizer.init && optimizer.update, "trainer: the optimizer needs init and update");
  Loop loop;
  loop.impl_ = std::make_shared<Loop::Impl>();
  Loop::Impl& l = *loop.impl_;
  l.training = true;
  l.model = std::move(model);
  l.loss = std::move(loss);
  l.losses = std::move(losses);
  l.optimizer = std::move(optimizer);
  l.backend = options.backend;
  l.seed = options.seed;
  l.output = options.output;
  l.progress = options.progress;
  l.communicator = std::move(options.communicator);
  return add_metrics(loop, options);
}

Loop evaluator(Model model, EvaluatorOptions options) {
  check(model.defined(), "evaluator: the model is undefined");
  Loop loop;
  loop.impl_ = std::make_shared<Loop::Impl>();
  Loop::Impl& l = *loop.impl_;
  l.training = false;
  l.model = std::move(model);
  l.loss = std::move(options.loss);
  l.losses = std::move(options.losses);
  l.backend = options.backend;
  l.output = options.output;
  l.progress = options.progress;
  l.communicator = std::move(options.communicator);
  for (auto& [name, fn] : options.metrics) loop.metric(name, fn);
  for (auto& [head, fns] : options.output_metrics)
    for (auto& [name, fn] : fns) loop.metric(head, name, fn);
  return loop;
}

namespace {
void add_metric(std::vector<LoopMetric>& metrics, LoopMetric metric) {
  check(static_cast<bool>(metric.fn), "Loop::metric: '", metric.name, "' is a null function");
  check(metric.name != "loss", "Loop::metric: 'loss' is the loop's own loss; pick another name");
  for (LoopMetric& m : metrics)
    if (m.name == metric.name) {
      m = std::move(metric);
      return;
    }
  metrics.push_back(std::move(metric));
}
}  // namespace

Loop& Loop::metric(const std::string& name, MetricFn fn, metrics::Aggregate how) {
  check(!name.empty(), "Loop::metric: the name is empty");
  add_metric(impl_->metrics, {name, std::move(fn), how, "", name});
  ++impl_->metrics_version;
  return *this;
}

Loop& Loop::metric(const std::string& output, const std::string& name, MetricFn fn,
                   metrics::Aggregate how) {
  check(!output.empty() && !name.empty(), "Loop::metric: the output and the name must be given");
  add_metric(impl_->metrics, {output + "_" + name, std::move(fn), how, output, name});
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

// The examples of the whole batch (a shard's counts those of every shard).
std::int64_t batch_size(const Batch& b) {
  return std::max<std::int64_t>(b.global_size > 0 ? b.global_size : b.size(), 1);
}

// One step on a batch, with its x or named inputs and its y or named targets.
template <class Step, class State>
StepOutput run_step(const Step& step, State& state, const Batch& b) {
  const bool named_x = !b.x.defined() && !b.inputs.empty();
  const bool named_y = !b.y.defined() && !b.targets.empty();
  if (named_x && named_y) return step(state, b.inputs, b.targets);
  if (named_x) return step(state, b.inputs, b.y);
  if (named_y) return step(state, b.x, b.targets);
  return step(state, b.x, b.y);
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
  StepOptions so = step_options();
  if (training && loss)
    train_step = std::make_shared<TrainStep>(model, loss, optimizer, so);
  else if (training)
    train_step = std::make_shared<TrainStep>(model, losses, optimizer, so);
  else if (!output_names(model).empty())
    eval_step = std::make_shared<EvalStep>(model, losses, so);
  else
    eval_step = std::make_shared<EvalStep>(model, loss, so);
  steps_version = metrics_version;
}

void Loop::Impl::check_shards(const DataSource& data, const char* who) const {
  const std::int64_t shards = data.shards();
  if (shards == 0 || shards == world_size()) return;
  throw Error(cat(
      who, ": the data is cut into ", shards, " shard(s) but the communicator has ", world_size(),
      " process(es); give Batches BatchOptions{.shard = rank, .shards = ", world_size(), "}"));
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
  s.halt_reason.clear();
  return s;
}

LoopState Loop::run(const DataSource& data, RunOptions options,
                    std::optional<TrainState> initial) const {
  Impl& l = *impl_;
  check_run_options(options, "Loop::run");
  l.check_shards(data, "Loop::run");
  l.prepare_steps();
  LoopState s;
  s.world_size = l.world_size();
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
  // Every process starts from rank 0's parameters (a trainer's; an evaluator's agree).
  if (l.training && l.communicator) broadcast_state(s.train, *l.communicator);
  return l.drive(data, options, std::move(s));
}

LoopState Loop::resume(const DataSource& data, RunOptions options, LoopState from) const {
  Impl& l = *impl_;
  check(l.training, "Loop::resume: only a trainer resumes a run (an evaluator has none)");
  check_run_options(options, "Loop::resume");
  l.check_shards(data, "Loop::resume");
  check(from.world_size == l.world_size(), "Loop::resume: the state was saved by a run on ",
        from.world_size, " process(es) and this one has ", l.world_size(),
        "; resume it with mpirun -np ", from.world_size,
        " (a run resumes on the number of processes it started on)");
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
  if (l.communicator) {
    broadcast_state(s.train, *l.communicator);
    // Every process must stand at the same batch, or their collectives would not pair up.
    const std::int64_t position[3] = {s.epoch, s.iteration, s.total_iterations};
    const std::int64_t differ = processes_differing(*l.communicator, position, sizeof position);
    check(differ == 0, "Loop::resume: ", differ,
          " process(es) resume from another position than rank 0 (epoch ", position[0],
          ", iteration ", position[1], " here): every process must load the same checkpoint");
  }
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

  Progress progress(l.output, l.rank() == 0 ? l.progress : ProgressMode::off);
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
      s.batch = l.training ? run_step(*l.train_step, s.train, *batch)
                           : run_step(*l.eval_step, s.train.model, *batch);
      ++s.iteration;
      ++s.total_iterations;
      epoch_samples += batch_size(*batch);
      s.samples += batch_size(*batch);
      if (l.has_loss())
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
