// Pieces shared by the loss functions: argument checks that name the loss, the float
// dtype a loss computes in, the per-example mean over the non-batch axes, the
// reduction, and a softplus that stays finite at extreme arguments.
#pragma once

#include <utility>

#include <string_view>

#include "glia/optim/losses.hpp"

namespace glia::losses::detail {

// y_pred's dtype when it is floating point, f32 otherwise.
DType float_dtype(const Expr& y_pred);
// Both operands defined and of one graph, y_pred of rank >= min_rank (the batch axis,
// plus a class axis for the categorical losses).
void check_operands(std::string_view loss, const Expr& y_true, const Expr& y_pred,
                    int min_rank = 1);
// check_operands, and y_true shaped like y_pred.
void check_same_shape(std::string_view loss, const Expr& y_true, const Expr& y_pred,
                      int min_rank = 1);
// x cast to dtype (a no-op when it already has it).
Expr as(const Expr& x, DType dtype);
// y_true and y_pred in y_pred's float dtype, after check_same_shape.
std::pair<Expr, Expr> float_operands(std::string_view loss, const Expr& y_true, const Expr& y_pred,
                                     int min_rank = 1);
// [batch, ...] -> [batch]: the mean over every axis but the first.
Expr per_example(const Expr& values);
// [batch] -> [batch] (none), or the scalar mean or sum.
Expr reduce(const Expr& per_example, Reduction reduction);
// log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): exp never overflows.
Expr softplus(const Expr& x);

}  // namespace glia::losses::detail
