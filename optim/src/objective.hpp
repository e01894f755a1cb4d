// What a step computes from the model's output(s) and the targets: the loss it minimises
// (one function, or for an outputs() model a weighted loss per head) and the metrics. It
// also checks a batch's targets against the model's outputs before anything is traced.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "glia/optim/step.hpp"

namespace glia::detail {

using NamedExprs = std::map<std::string, Expr>;

class Objective {
 public:
  // Checks the losses and metrics against the model's heads; errors start with `who`.
  // A model with one output takes `loss` (may be null for an evaluator) and
  // options.metrics; one with several takes `losses` and options.output_metrics.
  Objective(const Model& model, LossFn loss, OutputLosses losses, const StepOptions& options,
            const char* who);
  bool has_loss() const { return static_cast<bool>(loss_) || !losses_.empty(); }

  // The scalar loss of a forward pass on targets y; each head's own loss goes to `parts`
  // as "<head>_loss" (several outputs).
  Expr loss(const Applied& forward, const Expr& y, NamedExprs& parts) const;
  Expr loss(const Applied& forward, const NamedExprs& y, NamedExprs& parts) const;
  NamedExprs metrics(const Applied& forward, const Expr& y) const;
  NamedExprs metrics(const Applied& forward, const NamedExprs& y) const;

  // A batch's targets: one tensor for a model with one output, else one per head that has
  // a loss or a metric; each with `examples` rows (examples < 0: not checked here).
  void check_targets(const Tensor& y, std::int64_t examples) const;
  void check_targets(const std::map<std::string, Tensor>& y, std::int64_t examples) const;

 private:
  std::string heads_text() const;

  const char* who_;
  std::vector<std::string> heads_;  // empty: one output
  LossFn loss_;
  OutputLosses losses_;
  std::map<std::string, MetricFn> metrics_;
  std::map<std::string, std::map<std::string, MetricFn>> output_metrics_;
};

}  // namespace glia::detail
