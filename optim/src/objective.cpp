// The step's objective: the loss and metrics over one output or an outputs() model's heads.
#include "objective.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace glia::detail {

namespace {

void check_scalar(const Expr& e, const std::string& what) {
  check(e.defined(), what, " returned an undefined Expr");
  check(e.rank() == 0, what, " must return a scalar, got ", e.type(),
        " (reduce it, e.g. with mean)");
}

Expr scalar_loss(const LossFn& fn, const Expr& y, const Expr& y_pred, const std::string& what) {
  Expr l = fn(y, y_pred);
  check_scalar(l, what);
  check(is_float(l.dtype()), what, " must be floating point, got ", l.type());
  return l;
}

void add_metrics(const std::map<std::string, MetricFn>& fns, const std::string& prefix,
                 const Expr& y, const Expr& y_pred, NamedExprs& out) {
  for (const auto& [name, fn] : fns) {
    Expr m = fn(y, y_pred);
    check_scalar(m, cat("metric '", prefix, name, "'"));
    out[prefix + name] = m;
  }
}

}  // namespace

Objective::Objective(const Model& model, LossFn loss, OutputLosses losses,
                     const StepOptions& options, const char* who)
    : who_(who),
      heads_(output_names(model)),
      loss_(std::move(loss)),
      losses_(std::move(losses)),
      metrics_(options.metrics),
      output_metrics_(options.output_metrics) {
  for (const auto& [name, fn] : metrics_)
    check(static_cast<bool>(fn), who, ": metric '", name, "' is a null function");
  for (const auto& [head, fns] : output_metrics_)
    for (const auto& [name, fn] : fns)
      check(static_cast<bool>(fn), who, ": metric '", name, "' of output '", head,
            "' is a null function");
  if (heads_.empty()) {
    check(losses_.empty(), who, ": the model has one output; give one loss function, not a ",
          "loss per output");
    check(output_metrics_.empty(), who, ": the model has one output; give its metrics in ",
          "StepOptions::metrics, not output_metrics");
    return;
  }
  check(!loss_, who, ": the model has several outputs (", heads_text(),
        "); give a loss per output (OutputLosses: head -> {loss, weight})");
  check(metrics_.empty(), who, ": the model has several outputs (", heads_text(),
        "); give each metric with its output (output_metrics)");
  auto known = [&](const std::string& head, const char* what) {
    check(std::find(heads_.begin(), heads_.end(), head) != heads_.end(), who, ": ", what,
          " for output '", head, "', which the model does not have (its outputs: ", heads_text(),
          ")");
  };
  for (const auto& [head, l] : losses_) {
    known(head, "a loss");
    check(static_cast<bool>(l.loss), who, ": the loss of output '", head, "' is a null function");
    check(std::isfinite(l.weight) && l.weight >= 0, who, ": the loss weight of output '", head,
          "' must be finite and >= 0, got ", l.weight);
  }
  for (const auto& [head, fns] : output_metrics_) known(head, "metrics");
}

std::string Objective::heads_text() const {
  std::string s;
  for (const std::string& h : heads_) s += (s.empty() ? "" : ", ") + h;
  return s;
}

Expr Objective::loss(const Applied& forward, const Expr& y, NamedExprs&) const {
  return scalar_loss(loss_, y, forward.output, cat(who_, ": the loss"));
}

Expr Objective::loss(const Applied& forward, const NamedExprs& y, NamedExprs& parts) const {
  Expr total;
  for (const auto& [head, l] : losses_) {
    Expr part = scalar_loss(l.loss, y.at(head), forward.outputs.at(head),
                            cat(who_, ": the loss of output '", head, "'"));
    parts[head + "_loss"] = part;
    Expr weighted = l.weight == 1 ? part : part * l.weight;
    total = total.defined() ? total + weighted : weighted;
  }
  return total;
}

NamedExprs Objective::metrics(const Applied& forward, const Expr& y) const {
  NamedExprs out;
  add_metrics(metrics_, "", y, forward.output, out);
  return out;
}

NamedExprs Objective::metrics(const Applied& forward, const NamedExprs& y) const {
  NamedExprs out;
  for (const auto& [head, fns] : output_metrics_)
    add_metrics(fns, head + "_", y.at(head), forward.outputs.at(head), out);
  return out;
}

void Objective::check_targets(const Tensor& y, std::int64_t examples) const {
  check(heads_.empty(), who_, ": the model has several outputs (", heads_text(),
        "): pass y as a map from output name to targets");
  check(y.defined(), who_, ": y must be a defined tensor");
  check(examples < 0 || (y.rank() >= 1 && y.shape()[0] == examples), who_, ": the inputs hold ",
        examples, " examples but y is ", y.type(),
        " (x and y must hold the same number of examples)");
}

void Objective::check_targets(const std::map<std::string, Tensor>& y, std::int64_t examples) const {
  check(!heads_.empty(), who_,
        ": the model has one output: pass y as a tensor, not a map of targets");
  std::set<std::string> wanted;
  for (const auto& [head, l] : losses_) wanted.insert(head);
  for (const auto& [head, fns] : output_metrics_) wanted.insert(head);
  for (const auto& [head, t] : y) {
    check(wanted.count(head) != 0, who_, ": targets for '", head,
          "', which has no loss or metric (outputs: ", heads_text(), ")");
    check(t.defined(), who_, ": the targets of '", head, "' are an undefined tensor");
    check(examples < 0 || (t.rank() >= 1 && t.shape()[0] == examples), who_, ": the inputs hold ",
          examples, " examples but the targets of '", head, "' are ", t.type(),
          " (x and y must hold the same number of examples)");
  }
  for (const std::string& head : wanted)
    check(y.count(head) != 0, who_, ": no targets for output '", head, "'");
}

}  // namespace glia::detail
