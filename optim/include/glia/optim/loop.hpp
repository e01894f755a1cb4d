// The training loop (Axon.Loop): a trainer or an evaluator runs over batches for some
// epochs and fires events; handlers attached to events (with filters) may halt the epoch
// or the whole loop. Metrics are aggregated over each epoch; the final LoopState holds
// them per epoch with the times and the trained state.
//   glia::Loop loop = glia::trainer(model, loss, glia::optimizers::adam(1e-3));
//   loop.metric("accuracy", accuracy).validate(test).early_stop({.patience = 3});
//   glia::LoopState s = loop.run(train, {.epochs = 5});  // s.history[e]["validation_loss"]
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "glia/compiler/registry.hpp"
#include "glia/datasets/dataset.hpp"
#include "glia/optim/metrics.hpp"
#include "glia/optim/step.hpp"

namespace glia {

// In the order a run fires them: started; per epoch: epoch_started, then per batch
// iteration_started and iteration_completed, then epoch_completed (or epoch_halted when
// a handler halted the epoch); completed.
enum class Event {
  started,
  epoch_started,
  iteration_started,
  iteration_completed,
  epoch_completed,
  epoch_halted,
  completed
};
const char* event_name(Event event);

// What a handler asks for. halt_epoch ends the current epoch (epoch_halted fires instead
// of epoch_completed, the next epoch runs); it counts as continue_ from started,
// epoch_completed, epoch_halted and completed. halt_loop ends the run: no more events
// but completed. The first handler of an event that does not continue ends that event.
enum class HandlerResult { continue_, halt_epoch, halt_loop };

struct LoopState {
  std::int64_t epoch = 0;              // the epoch under way, from 0; after run: epochs run
  std::int64_t epochs = 0;             // epochs asked for
  std::int64_t iteration = 0;          // batches done in this epoch
  std::int64_t total_iterations = 0;   // batches done in the run
  std::int64_t batches_per_epoch = 0;  // the data's count, capped by the run options; 0: unknown
  Event event = Event::started;        // the event being handled
  StepOutput batch;                    // the last batch's loss and metrics
  // This epoch's aggregates so far: "loss" (when there is a loss) and each metric, plus
  // "validation_<name>" once validate() has run at epoch_completed.
  std::map<std::string, double> metrics;
  std::vector<std::map<std::string, double>> history;  // one entry per epoch run
  std::vector<double> epoch_seconds;                   // the batches' wall time per epoch
  std::int64_t samples = 0;                            // examples seen in the run
  double samples_per_second = 0;                       // over the epochs' time so far
  TrainState train;                                    // the model and optimizer state
  bool halted = false;                                 // a handler halted the loop
  std::string halt_reason;  // why, when the handler said (terminate_on_nan does)
  // The processes that trained it (data parallel: TrainerOptions::communicator); a run
  // resumes on as many.
  std::int64_t world_size = 1;
};

using Handler = std::function<HandlerResult(LoopState& state)>;

// Which occurrences of an event run a handler. An event's occurrences are counted from 1:
// iteration events count the run's iterations (not reset per epoch), epoch events count
// epochs, started and completed happen once.
class Filter {
 public:
  static Filter always();
  static Filter once(std::int64_t n = 1);  // the n-th occurrence only
  static Filter every(std::int64_t n);     // the n-th, 2n-th, 3n-th, ...
  bool matches(std::int64_t occurrence) const;

 private:
  enum class Kind { always, once, every };
  Filter(Kind kind, std::int64_t n) : kind_(kind), n_(n) {}
  Kind kind_;
  std::int64_t n_;
};

// The batches a loop runs over: per epoch, a reader giving the next batch (nullopt at the
// end). Made from glia::Batches, from a fixed list of batches, or from a function.
class DataSource {
 public:
  using Reader = std::function<std::optional<Batch>()>;
  DataSource(const Batches& batches)  // NOLINT(google-explicit-constructor)
      : epoch_([batches](std::int64_t e) -> Reader {
          auto it = std::make_shared<BatchIterator>(batches.epoch(e));
          return [it] { return it->next(); };
        }),
        batches_per_epoch_(batches.batches_per_epoch()),
        shards_(batches.options().shards) {}
  DataSource(std::vector<Batch> batches);  // NOLINT: the same batches in every epoch
  DataSource(std::function<Reader(std::int64_t epoch)> epoch, std::int64_t batches_per_epoch = 0);
  Reader epoch(std::int64_t epoch) const { return epoch_(epoch); }
  std::int64_t batches_per_epoch() const { return batches_per_epoch_; }  // 0: unknown
  // Into how many shards its batches are cut (BatchOptions::shards); 0: unknown.
  std::int64_t shards() const { return shards_; }

 private:
  std::function<Reader(std::int64_t)> epoch_;
  std::int64_t batches_per_epoch_ = 0;
  std::int64_t shards_ = 0;
};

// automatic: a redrawn bar when the output is std::cout on a terminal and the CI
// environment variable is not "true"; periodic lines otherwise.
enum class ProgressMode { automatic, bar, lines, off };

struct TrainerOptions {
  std::string backend = default_backend();
  std::uint64_t seed = 0;                   // parameters and dropout keys
  std::map<std::string, MetricFn> metrics;  // aggregated as running averages
  // Several outputs: head -> metric name -> function, reported as "<head>_<name>".
  std::map<std::string, std::map<std::string, MetricFn>> output_metrics;
  std::ostream* output = nullptr;  // progress output; nullptr: std::cout
  ProgressMode progress = ProgressMode::automatic;
  // Data-parallel training (distributed.hpp): every process runs the same loop on its
  // shard of the batches (BatchOptions::shard, shards); rank 0's initial state goes to
  // all; the step sums the gradients; the history holds global losses and metrics; only
  // rank 0 shows progress, logs and writes checkpoints. Null: one process.
  std::shared_ptr<Communicator> communicator;
};

struct EvaluatorOptions {
  std::string backend = default_backend();
  std::map<std::string, MetricFn> metrics;  // aggregated as running averages
  std::map<std::string, std::map<std::string, MetricFn>> output_metrics;  // several outputs
  LossFn loss;                                                            // optional: adds "loss"
  OutputLosses losses;  // several outputs: adds "loss" and "<head>_loss"
  std::ostream* output = nullptr;
  ProgressMode progress = ProgressMode::automatic;
  // Sharded data over processes: global metrics, progress on rank 0 only.
  std::shared_ptr<Communicator> communicator;
};

struct RunOptions {
  std::int64_t epochs = 1;
  std::int64_t max_iterations_per_epoch = 0;  // 0: all batches
};

enum class MonitorMode { min, max };

struct EarlyStopOptions {
  std::string monitor = "validation_loss";
  std::int64_t patience = 3;  // epochs without improvement before halting the loop
  MonitorMode mode = MonitorMode::min;
  double min_delta = 0;  // an improvement must beat the best by more than this
};

struct ReduceLrOptions {
  std::string monitor = "validation_loss";
  double factor = 0.1;        // lr_scale *= factor
  std::int64_t patience = 3;  // epochs without improvement before reducing
  MonitorMode mode = MonitorMode::min;
  double min_delta = 0;
  double min_scale = 0;  // lr_scale never goes below this
};

// Loop::checkpoint. With keep_last = 0 each save replaces `path`; with keep_last = K each
// save writes a numbered file beside it (checkpoint_files) and deletes all but the newest K.
struct CheckpointOptions {
  std::string path;
  Event event = Event::epoch_completed;  // iteration_completed: every N iterations
  Filter filter = Filter::always();      // e.g. Filter::every(5)
  // Non-empty: save only when this metric of the epoch (or of the epoch so far, at
  // iteration events) beats the best saved one, so the file holds the best model.
  std::string monitor;
  MonitorMode mode = MonitorMode::min;
  std::int64_t keep_last = 0;
  std::map<std::string, std::string> config;  // metadata stored in every file
};

class Loop;
namespace detail {
Loop make_trainer(Model model, LossFn loss, OutputLosses losses, Transformation optimizer,
                  TrainerOptions options);
}  // namespace detail

class Loop {
 public:
  // An extra metric computed in the step and aggregated over each epoch.
  Loop& metric(const std::string& name, MetricFn fn,
               metrics::Aggregate how = metrics::Aggregate::running_average);
  // A metric of one output of an outputs() model, reported as "<output>_<name>".
  Loop& metric(const std::string& output, const std::string& name, MetricFn fn,
               metrics::Aggregate how = metrics::Aggregate::running_average);
  // Handlers of an event run in the order they were attached.
  Loop& handle(Event event, Handler handler, Filter filter = Filter::always());

  // ---- Built-in handlers ----------------------------------------------------------------
  // One line per matching event: "Epoch 1, iteration 100: loss 0.2345 accuracy 0.91".
  Loop& log(std::ostream& out, Filter filter = Filter::every(100),
            Event event = Event::iteration_completed);
  // At epoch_completed: evaluates the model on `data` with the loop's loss and metrics and
  // adds them to the epoch's metrics as validation_<name>. Attach before handlers that
  // monitor validation metrics.
  Loop& validate(DataSource data, Filter filter = Filter::always());
  // At epoch_completed: halts the loop after `patience` epochs without improvement.
  Loop& early_stop(EarlyStopOptions options = {});
  // At epoch_completed: multiplies TrainState::lr_scale by `factor` after `patience`
  // epochs without improvement.
  Loop& reduce_lr_on_plateau(ReduceLrOptions options = {});
  // At iteration_completed: halts the loop when the batch's loss is not finite (NaN or
  // +-inf, like Keras's TerminateOnNaN), with halt_reason naming the epoch, the iteration
  // and the optimizer step: "the loss is nan at epoch 2, iteration 57 (step 526)". Attach
  // it before checkpoint() so no non-finite state is saved at that iteration.
  Loop& terminate_on_nan();
  // Saves checkpoints (glia/optim/checkpoint.hpp) at matching events: every N epochs or
  // iterations, only when a monitored metric improves, keeping the last K files. Attach it
  // after validate() so the saved metrics include the validation ones.
  Loop& checkpoint(CheckpointOptions options);

  // Runs the loop. A trainer starts from `initial` (or from init with the options' seed;
  // a state without optimizer entries gets them from the optimizer's init); an evaluator
  // needs `initial` for the model to evaluate and leaves it unchanged.
  LoopState run(const DataSource& data, RunOptions options = {},
                std::optional<TrainState> initial = std::nullopt) const;
  // Continues a trainer's run from a state it reached (a checkpoint's, or one a handler
  // copied) as if it had never stopped: the same epochs and batches (the data's epoch e
  // must give the same batches as before), step, dropout keys, metric aggregates and
  // history. options.epochs counts from the run's start. Parameters, model state and
  // optimizer state must match this loop's model and optimizer (names, shapes, dtypes).
  // `started` and `completed` fire again; epoch_started does not for a partly done epoch.
  LoopState resume(const DataSource& data, RunOptions options, LoopState from) const;

  struct Impl;  // opaque; copies of a Loop share it

 private:
  Loop() = default;  // made by trainer() and evaluator()
  friend Loop detail::make_trainer(Model, LossFn, OutputLosses, Transformation, TrainerOptions);
  friend Loop evaluator(Model, EvaluatorOptions);
  std::shared_ptr<Impl> impl_;
};

Loop trainer(Model model, LossFn loss, Transformation optimizer, TrainerOptions options = {});
// A model with several outputs (outputs()): a weighted loss per head; batches carry their
// targets by head name (Dataset::targets).
Loop trainer(Model model, OutputLosses losses, Transformation optimizer,
             TrainerOptions options = {});
Loop evaluator(Model model, EvaluatorOptions options = {});

}  // namespace glia
