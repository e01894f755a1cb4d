// The training step: forward pass, loss, value_and_grad, optimizer update and parameter
// update traced into ONE graph, compiled once per input signature and called once per
// batch. An evaluation step likewise (forward, loss and metrics).
//   glia::TrainStep step(model, loss, glia::optimizers::adam(1e-3));
//   glia::TrainState s = step.init(/*seed=*/0);
//   glia::StepOutput out = step(s, x, y);  // s is updated
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "glia/compiler/jit.hpp"
#include "glia/compiler/registry.hpp"
#include "glia/core/collective.hpp"
#include "glia/layers/build.hpp"
#include "glia/optim/transform.hpp"

namespace glia {

// (y_true, y_pred) -> scalar loss.
using LossFn = std::function<Expr(const Expr& y_true, const Expr& y_pred)>;
// (y_true, y_pred) -> scalar metric for the batch.
using MetricFn = std::function<Expr(const Expr& y_true, const Expr& y_pred)>;

struct TrainState {
  ModelState model;
  TensorOptState optimizer;
  std::int64_t step = 0;   // updates applied so far
  double lr_scale = 1.0;   // multiplies every update (reduce_lr_on_plateau lowers it)
  std::uint64_t seed = 0;  // dropout keys are derived from (seed, step)
};
// A step's random key: random::fold_in(random::fold_in(random::key(seed), kDropoutStream),
// step), traced with `step` as a run-time input; stochastic layers fold in their position
// in the model, as apply() does. The stream keeps these keys apart from init's.
inline constexpr std::uint32_t kDropoutStream = 0x64726f70;  // "drop"

struct StepOutput {
  double loss = 0;
  std::map<std::string, double> metrics;  // batch values, by metric name
};

// A model with several outputs (outputs()): a loss per head with its weight. The step's
// loss is the weighted sum; each head's own loss is also reported as "<head>_loss".
struct OutputLoss {
  LossFn loss;
  double weight = 1;
};
using OutputLosses = std::map<std::string, OutputLoss>;

struct StepOptions {
  std::string backend = default_backend();
  std::map<std::string, MetricFn> metrics;  // computed in the same graph
  // Several outputs: head -> metric name -> function, reported as "<head>_<name>".
  std::map<std::string, std::map<std::string, MetricFn>> output_metrics;
  // Data parallelism (distributed.hpp): every process of the communicator calls the step
  // on its shard of the batch, with the same model and options; the step sums n-weighted
  // gradients, loss and metrics over them (so the loss must be a mean over the batch, the
  // losses' default) and returns the global loss and metrics. Null or one process: off.
  std::shared_ptr<Communicator> communicator;
  // Gradients are summed in buckets of at most this many bytes, earliest-computed first,
  // the first one at most 1 MiB (PyTorch DDP's sizes).
  std::int64_t bucket_bytes = std::int64_t{25} << 20;
  // Metrics whose batch values are summed over the processes (counts, aggregated as
  // running sums) instead of averaged by example count.
  std::set<std::string> summed_metrics;
};

class TrainStep {
 public:
  TrainStep(Model model, LossFn loss, Transformation optimizer, StepOptions options = {});
  // A model with several outputs; y then maps each head with a loss or metric to its targets.
  TrainStep(Model model, OutputLosses losses, Transformation optimizer, StepOptions options = {});
  TrainState init(std::uint64_t seed = 0) const;  // model init + optimizer init
  TrainState init(ModelState model, std::uint64_t seed = 0) const;
  // One update on a batch; replaces the state's tensors with the updated ones. The state
  // is donated to the compiled step: tensors of it that nobody else holds are updated in
  // place (copy a TrainState to keep the old values). A batch of the wrong shape or dtype
  // throws before the state is touched.
  StepOutput operator()(TrainState& state, const Tensor& x, const Tensor& y) const;
  // A model with several inputs: x maps each input layer's name to its batch.
  StepOutput operator()(TrainState& state, const std::map<std::string, Tensor>& x,
                        const Tensor& y) const;
  // Several outputs: y maps head names to their targets (x a tensor or named tensors).
  StepOutput operator()(TrainState& state, const Tensor& x,
                        const std::map<std::string, Tensor>& y) const;
  StepOutput operator()(TrainState& state, const std::map<std::string, Tensor>& x,
                        const std::map<std::string, Tensor>& y) const;
  const Model& model() const;
  std::string graph_text(const TrainState& state, const Tensor& x, const Tensor& y) const;
  // The compiled program for these arguments: its kernels, fused groups and arena.
  std::string describe(const TrainState& state, const Tensor& x, const Tensor& y) const;
  // The compiled step's cache: one miss (trace and compile) per input signature.
  CacheStats cache_stats() const;
  struct Impl;  // opaque

 private:
  std::shared_ptr<Impl> impl_;
};

class EvalStep {
 public:
  // A null loss computes metrics only (StepOutput::loss stays 0).
  EvalStep(Model model, LossFn loss, StepOptions options = {});
  // Several outputs (empty losses: metrics only).
  EvalStep(Model model, OutputLosses losses, StepOptions options = {});
  StepOutput operator()(const ModelState& state, const Tensor& x, const Tensor& y) const;
  StepOutput operator()(const ModelState& state, const std::map<std::string, Tensor>& x,
                        const Tensor& y) const;
  StepOutput operator()(const ModelState& state, const Tensor& x,
                        const std::map<std::string, Tensor>& y) const;
  StepOutput operator()(const ModelState& state, const std::map<std::string, Tensor>& x,
                        const std::map<std::string, Tensor>& y) const;
  CacheStats cache_stats() const;
  struct Impl;  // opaque

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace glia
