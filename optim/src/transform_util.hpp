// Private helpers for writing transformations: hyperparameter checks whose errors name
// the transformation, leaf-shaped state values, the update count and scalars derived from
// it, and sub-state extraction by prefix (compose, accumulate_gradients).
#pragma once

#include <cmath>
#include <string>
#include <string_view>

#include "glia/optim/transform.hpp"

namespace glia::optim_detail {

inline void check_finite(double v, std::string_view who, std::string_view what) {
  check(std::isfinite(v), who, ": ", what, " must be a finite number, got ", v);
}
inline void check_non_negative(double v, std::string_view who, std::string_view what) {
  check(std::isfinite(v) && v >= 0, who, ": ", what, " must be a finite number >= 0, got ", v);
}
inline void check_positive(double v, std::string_view who, std::string_view what) {
  check(std::isfinite(v) && v > 0, who, ": ", what, " must be a finite number > 0, got ", v);
}
// Decay rates: in [0, 1).
inline void check_rate(double v, std::string_view who, std::string_view what) {
  check(std::isfinite(v) && v >= 0 && v < 1, who, ": ", what, " must lie in [0, 1), got ", v);
}

// A value of x's shape and dtype filled with `value`, in x's trace.
inline Expr full_like(const Expr& x, double value) {
  TraceScope scope(*x.graph());
  return full(x.shape(), value, x.dtype());
}
inline ExprParamMap full_like(const ExprParamMap& tree, double value) {
  return tree_map(tree, [value](const Expr& x) { return full_like(x, value); });
}

// The initial update count: an i64 scalar 0 of the trace being recorded.
inline Expr zero_count() { return scalar(0, DType::i64); }

// count + 1, staying i64 (a C++ 1 keeps the Expr's integer dtype; 1.0 would not).
inline Expr increment(const Expr& count) { return add(count, 1); }

// The dtype count-derived scalars are computed in for leaves of `leaf` dtype.
inline DType scalar_dtype(DType leaf) { return leaf == DType::f64 ? DType::f64 : DType::f32; }
// The widest such dtype over a tree's leaves (f32 for an empty tree).
inline DType scalar_dtype(const ExprParamMap& tree) {
  for (const auto& [layer, leaves] : tree)
    for (const auto& [name, leaf] : leaves)
      if (leaf.dtype() == DType::f64) return DType::f64;
  return DType::f32;
}
// x cast to `like`'s dtype when they differ.
inline Expr cast_like(const Expr& x, const Expr& like) {
  return x.dtype() == like.dtype() ? x : cast(x, like.dtype());
}

// 1 - decay^count, the bias correction of an EMA started at zero.
inline Expr bias_correction(double decay, const Expr& count_float) {
  return 1.0 - pow(decay, count_float);
}

// The entries of `state` under "<prefix>/", with the prefix removed.
inline OptState sub_state(const OptState& state, const std::string& prefix) {
  OptState out;
  const std::string p = prefix + "/";
  for (auto it = state.lower_bound(p); it != state.end() && it->first.starts_with(p); ++it)
    out.emplace(it->first.substr(p.size()), it->second);
  return out;
}
// Adds `sub`'s entries to `state` under "<prefix>/".
inline void put_sub_state(OptState& state, const std::string& prefix, const OptState& sub) {
  for (const auto& [key, value] : sub) state[prefix + "/" + key] = value;
}
// state.at(key), or glia::Error naming `who` and the missing entry.
const Expr& state_entry(const OptState& state, const std::string& key, std::string_view who);

}  // namespace glia::optim_detail
