// Connectionist temporal classification: the CTC forward algorithm in log space over the
// extended label sequence (a blank before, between and after the labels), one scan over
// time. Matches torch.nn.functional.ctc_loss (log-probs [batch, time,
// classes] here, [time, batch, classes] there).
#include <limits>

#include "glia/core/scan.hpp"
#include "losses_util.hpp"

namespace glia::losses {

namespace {

constexpr std::string_view kName = "connectionist_temporal_classification";
// log(0) as a finite number: -inf would make logsumexp of all-impossible states (and its
// gradient) NaN. A total below kNeg / 2 marks an impossible alignment.
constexpr double kNeg = -1e30;

void check_lengths(const Expr& lengths, std::string_view what, std::int64_t batch) {
  check(lengths.defined(), kName, ": ", what, " must be a defined Expr");
  check(is_integer(lengths.dtype()) && lengths.rank() == 1 && lengths.dim(0) == batch, kName, ": ",
        what, " ", lengths.type(), " must be integer [", batch, "]");
}

// x [batch, states] moved `by` states to the right, kNeg shifted in.
Expr shift_right(const Expr& x, std::int64_t by) {
  std::int64_t states = x.dim(1);
  if (by >= states) return full(x.shape(), kNeg, x.dtype());
  return pad(slice_axis(x, 0, states - by, 1), kNeg, {0, by}, {0, 0});
}

// log(exp(a) + exp(b) + ...) element-wise, shifted by the maximum.
Expr log_add_exp(const std::vector<Expr>& xs) {
  Expr m = xs[0];
  for (std::size_t i = 1; i < xs.size(); ++i) m = max(m, xs[i]);
  Expr total = exp(xs[0] - m);
  for (std::size_t i = 1; i < xs.size(); ++i) total = total + exp(xs[i] - m);
  return m + log(total);
}

// The extended labels [batch, 2L + 1]: blank, l1, blank, l2, ..., blank. Labels past an
// example's length become blanks, so any padding value is harmless.
Expr extended_labels(const Expr& labels, const Expr& label_lengths, std::int64_t blank) {
  const std::int64_t batch = labels.dim(0), length = labels.dim(1);
  Expr blank_column = full({batch, 1}, static_cast<double>(blank), DType::i64);
  if (length == 0) return blank_column;
  Expr in_label = less(iota({batch, length}, 1), reshape(label_lengths, {batch, 1}));
  Expr kept = select(in_label, labels, blank_column);
  Expr blanks = full({batch, length}, static_cast<double>(blank), DType::i64);
  Expr interleaved = reshape(stack({blanks, kept}, 2), {batch, 2 * length});
  return concatenate({interleaved, blank_column}, 1);
}

}  // namespace

Expr connectionist_temporal_classification(const Expr& y_true, const Expr& y_pred,
                                           const Expr& input_lengths, const Expr& label_lengths,
                                           const CtcOptions& o) {
  check(y_true.defined() && y_pred.defined(), kName, ": y_true and y_pred must be defined Exprs");
  check(is_float(y_pred.dtype()) && y_pred.rank() == 3, kName, ": y_pred ", y_pred.type(),
        " must be floating-point log-probabilities [batch, time, classes]");
  const std::int64_t batch = y_pred.dim(0), time = y_pred.dim(1), classes = y_pred.dim(2);
  check(time >= 1 && classes >= 1, kName, ": y_pred ", y_pred.type(),
        " needs at least one time step and one class");
  check(is_integer(y_true.dtype()) && y_true.rank() == 2 && y_true.dim(0) == batch, kName,
        ": y_true ", y_true.type(), " must be integer labels [", batch, ", max_label_length]");
  check_lengths(input_lengths, "input_lengths", batch);
  check_lengths(label_lengths, "label_lengths", batch);
  check(o.blank >= 0 && o.blank < classes, kName, ": blank ", o.blank, " is not a class of y_pred ",
        y_pred.type());
  check(y_true.graph() == y_pred.graph() && input_lengths.graph() == y_pred.graph() &&
            label_lengths.graph() == y_pred.graph(),
        kName, ": the operands belong to different traces");
  TraceScope scope(*y_pred.graph());
  const DType ft = y_pred.dtype() == DType::f64 ? DType::f64 : DType::f32;
  Expr log_probs = detail::as(y_pred, ft);
  Expr in_lengths = detail::as(input_lengths, DType::i64);
  Expr lab_lengths = detail::as(label_lengths, DType::i64);

  Expr ext = extended_labels(detail::as(y_true, DType::i64), lab_lengths, o.blank);
  const std::int64_t states = ext.dim(1);
  // A state may skip the blank before it unless it is a blank or repeats the label two
  // states back (a repeated label needs a blank between its two occurrences).
  Expr skip_allowed = full({batch, states}, 0, DType::boolean);
  if (states >= 3) {
    Expr two_back = pad(slice_axis(ext, 0, states - 2, 1), o.blank, {0, 2}, {0, 0});
    skip_allowed = logical_and(not_equal(ext, o.blank), not_equal(ext, two_back));
  }
  // emit[b, t, s] = log_probs[b, t, ext[b, s]], gathered from the flattened log-probs.
  Shape bts{batch, time, states};
  Expr flat_index =
      add(add(multiply(iota(bts, 0), time * classes), multiply(iota(bts, 1), classes)),
          broadcast(ext, bts, {0, 2}));
  Expr emit = max(take(reshape(log_probs, {batch * time * classes}), flat_index, 0), kNeg);

  // alpha[b, s]: log-probability of the prefixes ending in state s at the current step,
  // carried by one loop over steps 1..time-1 (the graph does not grow with the time).
  Expr alpha0 =
      select(less(iota({states}, 0), 2), reshape(slice_axis(emit, 0, 1, 1), {batch, states}), kNeg);
  Expr later_emits = transpose(slice_axis(emit, 1, time - 1, 1), {1, 0, 2});  // [time-1, b, s]
  Expr steps = iota({time - 1}, 0, DType::i64) + std::int64_t{1};
  Expr lengths_column = reshape(in_lengths, {batch, 1});
  ScanResult forward = scan(
      [](const std::vector<Expr>& carry, const std::vector<Expr>& row, const std::vector<Expr>& k) {
        const Expr& alpha = carry[0];
        Expr from_skip = select(k[0], shift_right(alpha, 2), kNeg);
        Expr next = log_add_exp({alpha, shift_right(alpha, 1), from_skip}) + row[0];
        // Past an example's input length its alphas stay those of its last step.
        return ScanResult{{select(less(row[1], k[1]), next, alpha)}, {}};
      },
      {alpha0}, {later_emits, steps}, {skip_allowed, lengths_column}, {.name = "ctc_alpha"});
  Expr alpha = forward.carries[0];

  // A path ends in the last label or the final blank: states 2L and 2L - 1.
  Expr state = iota({batch, states}, 1);
  Expr last_blank = reshape(multiply(lab_lengths, std::int64_t{2}), {batch, 1});
  auto alpha_at = [&](const Expr& position) {
    return reduce_max(select(equal(state, position), alpha, kNeg), {1});
  };
  Expr log_likelihood =
      log_add_exp({alpha_at(last_blank), alpha_at(subtract(last_blank, std::int64_t{1}))});
  // No time steps: only the empty label sequence is possible, with probability 1.
  log_likelihood = select(equal(in_lengths, std::int64_t{0}),
                          select(equal(lab_lengths, std::int64_t{0}), 0.0, kNeg), log_likelihood);
  Expr impossible = less(log_likelihood, kNeg / 2);
  double impossible_loss = o.zero_infinity ? 0.0 : std::numeric_limits<double>::infinity();
  Expr losses = select(impossible, impossible_loss, neg(log_likelihood));

  Expr result;
  if (o.reduction == Reduction::mean)
    result = mean(losses / max(cast(lab_lengths, ft), 1.0));
  else
    result = detail::reduce(losses, o.reduction);
  return detail::as(result, y_pred.dtype());
}

Expr impl::ctc(const Expr& y_true, const Expr& y_pred, const CtcOptions& o) {
  check(y_true.defined() && is_integer(y_true.dtype()) && y_true.rank() == 2 && y_true.dim(1) >= 2,
        "ctc: y_true ", y_true.defined() ? y_true.type().to_string() : "undefined",
        " must be integer [batch, 2 + max_label_length]: input length, label length, labels ",
        "(losses::ctc_targets packs them)");
  const std::int64_t batch = y_true.dim(0), labels = y_true.dim(1) - 2;
  auto column = [&](std::int64_t c) { return reshape(slice_axis(y_true, c, 1, 1), {batch}); };
  return connectionist_temporal_classification(slice_axis(y_true, 2, labels, 1), y_pred, column(0),
                                               column(1), o);
}

Tensor ctc_targets(const Tensor& input_lengths, const Tensor& label_lengths, const Tensor& labels) {
  auto integer_rank = [](const Tensor& t, int rank, const char* what) {
    check(is_integer(t.dtype()) && t.rank() == rank, "ctc_targets: ", what, " ", t.type(),
          " must be an integer tensor of rank ", rank);
  };
  integer_rank(input_lengths, 1, "input_lengths");
  integer_rank(label_lengths, 1, "label_lengths");
  integer_rank(labels, 2, "labels");
  const std::int64_t batch = labels.shape()[0], width = labels.shape()[1];
  check(input_lengths.shape()[0] == batch && label_lengths.shape()[0] == batch,
        "ctc_targets: input_lengths ", input_lengths.type(), " and label_lengths ",
        label_lengths.type(), " need one entry per row of labels ", labels.type());
  std::vector<std::int64_t> in = input_lengths.cast(DType::i64).to_vector<std::int64_t>();
  std::vector<std::int64_t> len = label_lengths.cast(DType::i64).to_vector<std::int64_t>();
  std::vector<std::int64_t> lab = labels.cast(DType::i64).to_vector<std::int64_t>();
  std::vector<std::int64_t> packed;
  packed.reserve(static_cast<std::size_t>(batch * (width + 2)));
  for (std::int64_t b = 0; b < batch; ++b) {
    packed.push_back(in[static_cast<std::size_t>(b)]);
    packed.push_back(len[static_cast<std::size_t>(b)]);
    packed.insert(packed.end(), lab.begin() + b * width, lab.begin() + (b + 1) * width);
  }
  return Tensor::from(packed, Shape{batch, width + 2});
}

}  // namespace glia::losses
