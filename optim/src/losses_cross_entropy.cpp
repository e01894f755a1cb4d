// The probabilistic losses: categorical and binary cross-entropy (from probabilities or
// logits, sparse labels, class weights, label smoothing) and the KL divergence.
// Probabilities are clipped to [kEpsilon, 1 - kEpsilon] before their log (Axon, Keras),
// so predictions of exactly 0 or 1 give finite values and finite gradients.
#include <cmath>

#include "losses_util.hpp"

namespace glia::losses {

namespace {

using detail::as;

constexpr double kEpsilon = 1e-7;

void check_smoothing(std::string_view loss, double s) {
  check(s >= 0 && s <= 1, loss, ": label_smoothing must be in [0, 1], got ", s);
}

// The class weights as a [classes] constant, after checking their number.
Expr class_weight_vector(std::string_view loss, const std::vector<double>& w, std::int64_t classes,
                         DType dtype, const char* what) {
  check(static_cast<std::int64_t>(w.size()) == classes, loss, ": class_weights has ", w.size(),
        " entries, expected ", classes, " (", what, ")");
  for (double v : w)
    check(std::isfinite(v) && v >= 0, loss, ": class weight ", v, " must be finite and >= 0");
  return constant(Tensor::from<double>(w).cast(dtype));
}

// From probabilities, y_pred straight from a matmul or a convolution (its bias added or
// not) holds logits: their log would train on the wrong loss without a word (a model
// ending in dense(h, 10) with the probability loss). That is an error naming the fix.
void check_not_logits(std::string_view loss, const Expr& y_pred, const char* activation) {
  const Graph& g = *y_pred.graph();
  ValueId v = y_pred.id();
  if (g.node(v).op == Op::add) {  // a bias: the operand that is not a broadcast
    const std::vector<ValueId>& in = g.node(v).inputs;
    const bool a = g.node(in[0]).op == Op::broadcast, b = g.node(in[1]).op == Op::broadcast;
    if (a != b) v = a ? in[1] : in[0];
  }
  const Op op = g.node(v).op;
  check(op != Op::dot_general && op != Op::convolution, loss, ": y_pred ", y_pred.type(),
        " comes straight from a ", op_name(op),
        " (a dense or convolution layer without an activation): those are logits, not "
        "probabilities; pass {.from_logits = true} or end the model in a ",
        activation);
}

}  // namespace

// Per example: -sum_c w_c q_c log p_c over the class axis, q the (smoothed) target; with
// class weights the mean is PyTorch's weighted mean sum(l_i) / sum(w_{y_i}), y_i the
// example's (unsmoothed) class, for one-hot and sparse labels alike.
Expr impl::categorical_cross_entropy(const Expr& y_true, const Expr& y_pred,
                                     const CrossEntropyOptions& o) {
  constexpr std::string_view kName = "categorical_cross_entropy";
  detail::check_operands(kName, y_true, y_pred, 2);
  check_smoothing(kName, o.label_smoothing);
  if (!o.from_logits) check_not_logits(kName, y_pred, "softmax");
  TraceScope scope(*y_pred.graph());
  const DType ft = detail::float_dtype(y_pred);
  const std::int64_t classes = y_pred.dim(-1);
  Expr pred = as(y_pred, ft);
  Expr target;
  if (o.sparse) {
    check(is_integer(y_true.dtype()), kName, ": sparse labels must have an integer dtype, got ",
          y_true.type());
    Ints rows(y_pred.shape().dims().begin(), y_pred.shape().dims().end() - 1);
    check(y_true.shape() == Shape(rows), kName, ": sparse y_true ", y_true.type(),
          " must hold one class index per row of y_pred ", y_pred.type(), " (shape ",
          Shape(rows).to_string(), ")");
    target = one_hot(y_true, classes, ft);
  } else {
    check(y_true.shape() == y_pred.shape(), kName, ": y_true ", y_true.type(), " and y_pred ",
          y_pred.type(), " must have the same shape (integer class indices need sparse = true)");
    target = as(y_true, ft);
  }
  Expr log_p = o.from_logits ? log_softmax(pred, -1) : log(max(pred, kEpsilon));
  Expr q = target;
  if (o.label_smoothing > 0)
    q = target * (1.0 - o.label_smoothing) + o.label_smoothing / static_cast<double>(classes);
  if (o.class_weights.empty())
    return detail::reduce(detail::per_example(neg(sum(q * log_p, {-1}))), o.reduction);

  Expr w = class_weight_vector(kName, o.class_weights, classes, ft, "one per class");
  Expr rows = neg(sum(q * w * log_p, {-1}));
  if (o.reduction != Reduction::mean) return detail::reduce(detail::per_example(rows), o.reduction);
  return sum(rows) / sum(target * w);
}

// Per element: -(w1 y log p + w0 (1 - y) log(1 - p)), averaged over the non-batch axes.
// From logits, log p = -softplus(-x) and log(1 - p) = -softplus(x): stable for any x.
// class_weights, if given, are {w0, w1}: the weights of the negative and positive class.
// Label smoothing moves y towards 1/2: y (1 - s) + s / 2.
Expr impl::binary_cross_entropy(const Expr& y_true, const Expr& y_pred,
                                const CrossEntropyOptions& o) {
  constexpr std::string_view kName = "binary_cross_entropy";
  detail::check_same_shape(kName, y_true, y_pred);
  check(!o.sparse, kName,
        ": sparse labels do not apply (y_true holds 0/1 targets shaped like "
        "y_pred)");
  check_smoothing(kName, o.label_smoothing);
  if (!o.from_logits) check_not_logits(kName, y_pred, "sigmoid");
  TraceScope scope(*y_pred.graph());
  const DType ft = detail::float_dtype(y_pred);
  Expr y = as(y_true, ft), pred = as(y_pred, ft);
  if (o.label_smoothing > 0) y = y * (1.0 - o.label_smoothing) + o.label_smoothing / 2;
  Expr log_p, log_not_p;
  if (o.from_logits) {
    log_p = neg(detail::softplus(neg(pred)));
    log_not_p = neg(detail::softplus(pred));
  } else {
    Expr p = clip(pred, kEpsilon, 1.0 - kEpsilon);
    log_p = log(p);
    log_not_p = log(1.0 - p);
  }
  Expr positive = y * log_p, negative = (1.0 - y) * log_not_p;
  if (!o.class_weights.empty()) {
    check(o.class_weights.size() == 2, kName, ": class_weights has ", o.class_weights.size(),
          " entries, expected 2 ({negative, positive})");
    for (double v : o.class_weights)
      check(std::isfinite(v) && v >= 0, kName, ": class weight ", v, " must be finite and >= 0");
    negative = negative * o.class_weights[0];
    positive = positive * o.class_weights[1];
  }
  return detail::reduce(detail::per_example(neg(positive + negative)), o.reduction);
}

// Per example: sum_c y_c log(y_c / p_c) over the class axis, with 0 log 0 = 0 and p
// clipped below at kEpsilon (Axon).
Expr impl::kl_divergence(const Expr& y_true, const Expr& y_pred, const LossOptions& o) {
  constexpr std::string_view kName = "kl_divergence";
  detail::check_same_shape(kName, y_true, y_pred, 2);
  TraceScope scope(*y_pred.graph());
  const DType ft = detail::float_dtype(y_pred);
  Expr y = as(y_true, ft), p = max(as(y_pred, ft), kEpsilon);
  Expr present = greater(y, 0.0);
  // log of 1 where y == 0: no -inf, so no NaN in the value or the gradient.
  Expr log_y = log(select(present, y, 1.0));
  Expr terms = select(present, y * (log_y - log(p)), 0.0);
  return detail::reduce(detail::per_example(sum(terms, {-1})), o.reduction);
}

}  // namespace glia::losses
