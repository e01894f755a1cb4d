// What the loop's sources share: the loop's configuration (Loop::Impl) and the progress
// display that the loop drives.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "glia/optim/loop.hpp"

namespace glia {

struct LoopHook {
  Event event;
  Handler handler;
  Filter filter;
};

struct LoopMetric {
  std::string name;  // as reported: "<output>_<metric>" for an output's metric
  MetricFn fn;
  metrics::Aggregate how;
  std::string output;  // several outputs: the head it reads; empty otherwise
  std::string metric;  // the name given with the head
};

struct Loop::Impl {
  bool training = true;
  Model model;
  LossFn loss;          // an evaluator may have none
  OutputLosses losses;  // several outputs: a loss per head
  Transformation optimizer;
  std::string backend = "interp";
  std::uint64_t seed = 0;
  std::vector<LoopMetric> metrics;
  std::int64_t metrics_version = 0;  // bumped by metric(): compiled steps are stale
  std::ostream* output = nullptr;
  ProgressMode progress = ProgressMode::automatic;
  std::vector<LoopHook> hooks;
  std::shared_ptr<Communicator> communicator;  // data parallel; null: one process
  int rank() const { return communicator ? communicator->rank() : 0; }
  int world_size() const { return communicator ? communicator->size() : 1; }
  // Checks that sharded data fits the communicator (who: "Loop::run", ...).
  void check_shards(const DataSource& data, const char* who) const;

  // Built at the first run after the metrics last changed.
  std::shared_ptr<TrainStep> train_step;
  std::shared_ptr<EvalStep> eval_step;
  std::int64_t steps_version = -1;

  bool has_loss() const { return static_cast<bool>(loss) || !losses.empty(); }
  // The metrics as the steps take them: StepOptions' metrics and output_metrics.
  StepOptions step_options() const;
  metrics::Aggregate aggregate_of(const std::string& name) const;  // loss: running average
  // (Re)builds the compiled steps when the metrics changed since the last run.
  void prepare_steps();
  // Fires the events and runs the batches from s.epoch (and s.iteration batches into it).
  LoopState drive(const DataSource& data, const RunOptions& options, LoopState s);
};

// The state as a run resuming from it sees it: epoch counts the completed epochs (an
// epoch_completed state's epoch is recorded in the history) and iteration the batches done
// in the next one; event becomes started.
LoopState resume_position(LoopState s);

// Checks a state against the model's declared parameters and state (layer_shapes) and
// an optimizer's expected entries: the same names, shapes and dtypes. glia::Error, starting
// with `who`, names the first mismatch.
void check_model_entries(const Model& model, const ModelState& got, const std::string& who);
void check_optimizer_entries(const TensorOptState& expected, const TensorOptState& got,
                             const std::string& who);

// "loss 0.2345 accuracy 0.93 validation_loss 0.31": loss first, validation_ entries last.
std::string metrics_text(const std::map<std::string, double>& metrics);
// Four significant digits: 0.2345, 0.93, 1234, 1.5e-05.
std::string number_text(double value);

// The progress display: a bar redrawn with '\r' on a terminal, or plain lines every 10% of
// an epoch and at its end.
class Progress {
 public:
  Progress(std::ostream* output, ProgressMode mode);
  // After each batch: `seconds` since the epoch's first batch started.
  void iteration(const LoopState& s, double seconds, std::int64_t epoch_samples);
  // After epoch_completed (or epoch_halted) handlers ran, so validation metrics show.
  void epoch_end(const LoopState& s, double seconds, std::int64_t epoch_samples, bool halted);

 private:
  std::string line(const LoopState& s, double seconds, std::int64_t epoch_samples,
                   bool finished) const;
  void draw(const std::string& text);

  std::ostream* out_;
  ProgressMode mode_;
  double last_draw_ = -1;
  std::size_t drawn_width_ = 0;
};

}  // namespace glia
