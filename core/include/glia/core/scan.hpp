// Structured loops in a trace. scan runs a body over the leading axis of its sequences with
// carried state as ONE node of the graph (JAX's lax.scan): the graph does not grow with the
// sequence length, and reverse mode differentiates it with a reverse scan.
//   // A running sum: carry s, output the sum so far at every step.
//   glia::ScanResult r = glia::scan(
//       [](const auto& carry, const auto& row, const auto&) {
//         glia::Expr s = carry[0] + row[0];
//         return glia::ScanResult{{s}, {s}};
//       },
//       {glia::zeros({3})}, {xs});  // xs: [T, 3]; r.outputs[0]: [T, 3]; r.carries[0]: [3]
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "glia/core/expr.hpp"

namespace glia {

struct ScanResult {
  std::vector<Expr> carries;  // the body: new carries; scan: the final carries
  std::vector<Expr> outputs;  // the body: this step's outputs; scan: them stacked, [T, ...]
};
// One step: (carries, row t of each sequence, the loop constants) -> (new carries, outputs).
// The body is traced into a graph of its own: values of the enclosing trace must come in as
// constants (the third argument), not be captured.
using ScanBody =
    std::function<ScanResult(const std::vector<Expr>& carries, const std::vector<Expr>& rows,
                             const std::vector<Expr>& constants)>;
struct ScanOptions {
  bool reverse = false;      // steps run from the last row to the first (rows keep their place)
  std::int64_t length = -1;  // the number of steps; -1: the sequences' leading dimension
  std::string name = "scan_body";  // the body graph's name in the graph's text
};
ScanResult scan(const ScanBody& body, const std::vector<Expr>& init,
                const std::vector<Expr>& sequences, const std::vector<Expr>& constants = {},
                const ScanOptions& options = {});

// Result `result` (attrs.hpp, ScanAttrs) of the loop of `inputs` and `attrs`: the nodes of
// one loop share inputs and attributes but `result`, and run as one loop.
Expr scan_result(const std::vector<Expr>& inputs, ScanAttrs attrs, std::int64_t result);

// Whether two nodes are results of one loop: scan nodes with the same inputs and the same
// attributes but `result`.
bool same_loop(const Node& a, const Node& b);

// Inlines the graph `fn` into the trace of `args`, its parameters replaced by `args` (of
// the parameters' types); returns its outputs. `substitute` (optional) sees each copied
// value with the id it has in `fn`, and returns what the copy's users read instead (or
// the copy itself).
using CallSubstitute = std::function<Expr(ValueId in_fn, const Expr& copy)>;
std::vector<Expr> call(const Graph& fn, const std::vector<Expr>& args,
                       const CallSubstitute& substitute = {});

// The types of every result of a loop, in result order; glia::Error when the inputs do
// not fit the body.
std::vector<TensorType> scan_result_types(std::span<const TensorType> inputs, const ScanAttrs& a);
// Runs a loop on the reference interpreter; returns the results `wanted` says (by result
// index; the others undefined).
std::vector<Tensor> run_scan(std::span<const Tensor> inputs, const ScanAttrs& a,
                             const std::vector<bool>& wanted);

}  // namespace glia
