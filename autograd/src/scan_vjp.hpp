// Internal: reverse mode through loops. The nodes of one scan (its results) are
// differentiated together by one reverse scan whose body is the vector-Jacobian product of
// the forward body, recomputed at each step from the carries the forward loop stored.
#pragma once

#include <map>
#include <utility>
#include <vector>

#include "glia/core/scan.hpp"

namespace glia::detail {

// Reverse mode from several outputs, each with its cotangent (undefined: none), to xs
// (zeros for an x they do not depend on). gradients() is vjp({y}, {1}, xs).
std::vector<Expr> vjp(const std::vector<Expr>& ys, const std::vector<Expr>& seeds,
                      const std::vector<Expr>& xs);

// The nodes of each loop among a graph's first `end` values, found by the loop's first node.
class ScanGroups {
 public:
  ScanGroups(const Graph& g, std::size_t end);
  // The loop's nodes when `id` is its first node; null otherwise.
  const std::vector<ValueId>* at_first(ValueId id) const;

 private:
  std::map<ValueId, std::vector<ValueId>> groups_;
};

// The cotangents of the loop's inputs (undefined where none flows), given the cotangents
// of some of its nodes (node, cotangent); `wanted` says which inputs need one.
std::vector<Expr> scan_vjp(Graph& g, ValueId loop, const std::vector<std::pair<ValueId, Expr>>& cts,
                           const std::vector<bool>& wanted);

}  // namespace glia::detail
