// Reverse-mode automatic differentiation as a transform on the graph being traced:
// gradients() appends the backward pass as ordinary IR nodes, so it composes with
// itself (higher order), with jit, and with the compiler's fusion.
//   auto df = glia::grad([](const glia::Expr& x) { return glia::sum(x * x); });
//   glia::Expr g = df(x);  // 2x, inside a trace
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "glia/core/expr.hpp"
#include "glia/core/tree.hpp"

namespace glia {

// d(y)/d(x_i) for each x_i, appended to y's graph. y must be a floating-point scalar;
// each x_i a floating-point traced value of the same graph (not a constant). An x that
// y does not depend on gets zeros. Only nodes on a path from some x to y are
// differentiated; a floating-point value on such a path whose op has no rule
// (vjp_rule(op).kind == non_differentiable) is a glia::Error, never a silent zero.
std::vector<Expr> gradients(const Expr& y, const std::vector<Expr>& xs);

// The identity whose gradient is zero.
Expr stop_grad(const Expr& x);

// The value x, whose gradient is given by `vjp` instead of x's own rule: on the
// backward pass, vjp(cotangent of x) returns one cotangent per entry of `inputs`
// (an undefined Expr for none), and nothing flows into x's own computation.
using CustomVjp = std::function<std::vector<Expr>(const Expr& cotangent)>;
Expr custom_grad(const Expr& x, const std::vector<Expr>& inputs, CustomVjp vjp);

// ---- Function transforms over trees -----------------------------------------------------
// value_and_grad<K>(fn) is a function taking fn's arguments (Exprs or trees of them, inside
// a trace) and returning {fn(args...), gradient of fn with respect to argument K}, the
// gradient shaped like argument K (a tensor, a parameter map, ...). fn must return a
// floating-point scalar Expr. As in JAX, values fn captures from outside count as
// constants: only the paths through argument K are differentiated.
//   auto vg = glia::value_and_grad([](const std::map<std::string, glia::Expr>& p,
//                                     const glia::Expr& x) { return glia::sum(p.at("w") * x); });
//   auto [loss, grads] = vg(params, x);  // grads.at("w") == x
namespace detail {
// A fresh identity node for x, so only the uses made after this point are differentiated.
Expr differentiable_copy(const Expr& x);
// glia::Error naming the leaf of argument `arg` (by its path in `structure`) that is
// undefined, not floating point, or of another trace than the first leaf.
void check_grad_leaves(std::size_t arg, const std::string& structure,
                       const std::vector<Expr>& leaves);

template <std::size_t kArg, class Fn, class Args, class Replacement, std::size_t... I>
decltype(auto) call_replacing(const Fn& fn, const Args& args, const Replacement& r,
                              std::index_sequence<I...>) {
  auto pick = [&](auto index, const auto& original) -> decltype(auto) {
    if constexpr (decltype(index)::value == kArg)
      return (r);
    else
      return (original);
  };
  return fn(pick(std::integral_constant<std::size_t, I>{}, std::get<I>(args))...);
}
}  // namespace detail

template <std::size_t kArg = 0, class Fn>
auto value_and_grad(Fn fn) {
  return [fn](const auto&... args) {
    static_assert(kArg < sizeof...(args), "value_and_grad: no argument with that index");
    auto all = std::forward_as_tuple(args...);
    const auto& target = std::get<kArg>(all);
    using Target = std::remove_cvref_t<decltype(target)>;
    static_assert(is_tree_of_v<Target, Expr>,
                  "value_and_grad: the differentiated argument must be an Expr or a tree of them");
    std::vector<Expr> leaves = tree_leaves<Expr>(target);
    detail::check_grad_leaves(kArg, tree_structure(target), leaves);
    for (Expr& leaf : leaves) leaf = detail::differentiable_copy(leaf);
    Target marked = tree_unflatten<Expr>(target, std::span<const Expr>(leaves));
    Expr value =
        detail::call_replacing<kArg>(fn, all, marked, std::index_sequence_for<decltype(args)...>{});
    std::vector<Expr> grads = gradients(value, leaves);
    return std::pair<Expr, Target>{value,
                                   tree_unflatten<Expr>(target, std::span<const Expr>(grads))};
  };
}

// grad<K>(fn): the gradient part of value_and_grad<K>(fn).
template <std::size_t kArg = 0, class Fn>
auto grad(Fn fn) {
  return [vg = value_and_grad<kArg>(std::move(fn))](const auto&... args) {
    return vg(args...).second;
  };
}

}  // namespace glia
