// Loss functions (Axon's 14), written with Expr ops. Each takes (y_true, y_pred) and a
// reduction: none (per-example values over the batch axis 0), mean (default) or sum.
// An example's value is the mean over its non-batch axes (after the sum over the last,
// class axis for categorical_cross_entropy, categorical_hinge, kl_divergence and
// cosine_similarity), so mean equals PyTorch's mean and sum adds per-example values.
// Numerically stable at extreme logits (+-1e4 give finite values and gradients; the one
// exception is poisson from log-rates, whose exp(x) is +inf beyond x ~ 709 in f64).
// Probabilities are clipped to at least 1e-7 before a log (binary_cross_entropy: to
// [1e-7, 1 - 1e-7], as Axon and Keras do), so 0 and 1 give finite values and gradients.
//   glia::Expr l = glia::losses::categorical_cross_entropy(labels, logits,
//                                                          {.from_logits = true});
// Each (but CTC, which takes lengths too) is a PairFunction: usable directly as a loss
// function (trainer(model, glia::losses::mean_squared_error, ...)), and with options
// fixed by `.with({...})`.
#pragma once

#include <optional>
#include <vector>

#include "glia/core/expr.hpp"
#include "glia/optim/pair_function.hpp"

namespace glia::losses {

enum class Reduction { none, mean, sum };

struct LossOptions {
  Reduction reduction = Reduction::mean;
};

struct CrossEntropyOptions {
  Reduction reduction = Reduction::mean;
  bool from_logits = false;
  bool sparse = false;  // y_true holds integer class indices [batch] instead of one-hot rows
  // Empty: all 1. categorical: one per class, each example's loss times its true class's
  // weight, and mean = sum(w_i l_i) / sum(w_i) (PyTorch's weighted mean); binary: {w0, w1}
  // for the negative and positive term.
  std::vector<double> class_weights;
  double label_smoothing = 0;  // y_true * (1 - s) + s / classes
};
namespace impl {
Expr categorical_cross_entropy(const Expr& y_true, const Expr& y_pred,
                               const CrossEntropyOptions& o);
}
inline constexpr PairFunction<CrossEntropyOptions, &impl::categorical_cross_entropy>
    categorical_cross_entropy{};
namespace impl {
Expr binary_cross_entropy(const Expr& y_true, const Expr& y_pred, const CrossEntropyOptions& o);
}
inline constexpr PairFunction<CrossEntropyOptions, &impl::binary_cross_entropy>
    binary_cross_entropy{};
namespace impl {
Expr categorical_hinge(const Expr& y_true, const Expr& y_pred, const LossOptions& o);
}
inline constexpr PairFunction<LossOptions, &impl::categorical_hinge> categorical_hinge{};
namespace impl {
Expr hinge(const Expr& y_true, const Expr& y_pred, const LossOptions& o);
}
inline constexpr PairFunction<LossOptions, &impl::hinge> hinge{};
namespace impl {
Expr kl_divergence(const Expr& y_true, const Expr& y_pred, const LossOptions& o);
}
inline constexpr PairFunction<LossOptions, &impl::kl_divergence> kl_divergence{};
namespace impl {
Expr log_cosh(const Expr& y_true, const Expr& y_pred, const LossOptions& o);
}
inline constexpr PairFunction<LossOptions, &impl::log_cosh> log_cosh{};
struct MarginOptions {
  Reduction reduction = Reduction::mean;
  double margin = 0;
};
// max(0, -y_true * (x1 - x2) + margin); y_pred is the pair stacked on a leading axis [2, ...].
namespace impl {
Expr margin_ranking(const Expr& y_true, const Expr& y_pred, const MarginOptions& o);
}
inline constexpr PairFunction<MarginOptions, &impl::margin_ranking> margin_ranking{};
namespace impl {
Expr soft_margin(const Expr& y_true, const Expr& y_pred, const LossOptions& o);
}
inline constexpr PairFunction<LossOptions, &impl::soft_margin> soft_margin{};
namespace impl {
Expr mean_absolute_error(const Expr& y_true, const Expr& y_pred, const LossOptions& o);
}
inline constexpr PairFunction<LossOptions, &impl::mean_absolute_error> mean_absolute_error{};
namespace impl {
Expr mean_squared_error(const Expr& y_true, const Expr& y_pred, const LossOptions& o);
}
inline constexpr PairFunction<LossOptions, &impl::mean_squared_error> mean_squared_error{};
struct CosineOptions {
  Reduction reduction = Reduction::mean;
  double epsilon = 1e-8;
};
// Axon's sign: the similarity itself (a value to maximise; Keras' loss is its negative),
// sum(y p) / max(|y| |p|, epsilon) along the last axis.
namespace impl {
Expr cosine_similarity(const Expr& y_true, const Expr& y_pred, const CosineOptions& o);
}
inline constexpr PairFunction<CosineOptions, &impl::cosine_similarity> cosine_similarity{};
struct PoissonOptions {
  Reduction reduction = Reduction::mean;
  bool from_logits = false;  // y_pred is log(rate)
};
namespace impl {
Expr poisson(const Expr& y_true, const Expr& y_pred, const PoissonOptions& o);
}
inline constexpr PairFunction<PoissonOptions, &impl::poisson> poisson{};
struct HuberOptions {
  Reduction reduction = Reduction::mean;
  double delta = 1.0;
};
namespace impl {
Expr huber(const Expr& y_true, const Expr& y_pred, const HuberOptions& o);
}
inline constexpr PairFunction<HuberOptions, &impl::huber> huber{};
struct CtcOptions {
  Reduction reduction = Reduction::mean;  // mean: PyTorch's, each loss / its label length
  std::int64_t blank = 0;
  bool zero_infinity = false;  // impossible alignments give 0 (and a zero gradient), not inf
};
// Connectionist temporal classification: y_pred log-probabilities [batch, time, classes],
// y_true labels [batch, max_label_length] (entries past an example's label length are
// ignored), with input and label lengths [batch] (integer).
Expr connectionist_temporal_classification(const Expr& y_true, const Expr& y_pred,
                                           const Expr& input_lengths, const Expr& label_lengths,
                                           const CtcOptions& o = {});

// CTC as a training loop's (y_true, y_pred) loss, the lengths travelling with the labels
// as Axon's {lengths, labels} target does: y_true is integer [batch, 2 + max_label_length],
// column 0 each example's input length, column 1 its label length, then its labels
// (ctc_targets packs them).
//   Dataset d{.x = features, .y = losses::ctc_targets(input_lengths, label_lengths, labels)};
//   Loop loop = trainer(model, losses::ctc, optimizers::adam(1e-3));
namespace impl {
Expr ctc(const Expr& y_true, const Expr& y_pred, const CtcOptions& o);
}
inline constexpr PairFunction<CtcOptions, &impl::ctc> ctc{};
// [batch, 2 + max_label_length] i64 from input lengths [batch], label lengths [batch] and
// labels [batch, max_label_length] (integer tensors); glia::Error on other shapes.
Tensor ctc_targets(const Tensor& input_lengths, const Tensor& label_lengths, const Tensor& labels);

}  // namespace glia::losses
