// The backend-neutral lowering: a graph into a Program (program.hpp) — kernel specs and a
// placement for every value — done once, above the backends. A backend takes part through
// a LoweringTarget: whether it realises a spec, and why a node it leaves runs on the
// reference kernel.
//   glia::Program p = glia::lower(graph, target);
//   std::cout << p.describe();
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "glia/compiler/program.hpp"

namespace glia {

class LoweringTarget {
 public:
  virtual ~LoweringTarget() = default;
  virtual std::string_view name() const = 0;
  // Whether the backend realises `kernel` (spec, inputs, outputs and covered nodes set),
  // asked before the lowering claims its nodes. A declined contraction is asked again
  // without its epilogue; what stays declined goes on to the later stages (fused groups,
  // direct kernels) and at last to the reference kernel.
  virtual bool accepts(const Graph& graph, const Kernel& kernel) const = 0;
  // Why `node` runs on its op's reference kernel on this backend ("f64 matmul: oneDNN
  // multiplies f32 only"); empty when the backend does not expect it to.
  virtual std::string fallback_reason(const Graph& graph, ValueId node) const = 0;
  // Whether a fused group stores a transcendental value that a later sweep of the group
  // reads (softmax's exponentials: the sum's sweep and the division's) and loads it there,
  // rather than computing it again: a store and a load an element against a call of a
  // vector math library on a CPU (softmax over 1,000 floats ran 31% faster).
  virtual bool stores_costly_values() const { return true; }
};

// Lowers a verified graph for `target`, in stages, each claiming only what earlier ones
// left: contractions (dot_general as a strided matmul, autograd's three convolution forms,
// max pooling and its adjoint, each with its epilogue and the transposes it reads or
// writes through), fused element-wise/reduction groups (passes/fusion.hpp), direct
// kernels, then one reference kernel per node left. The kernels are ordered (producers
// first, graph order where free) and placed: graph outputs get buffers of their own, or a
// donated input's storage where an input of their type dies at or before their kernel;
// the rest share one arena packed from their lifetimes.
Program lower(const Graph& graph, const LoweringTarget& target);

// The (batched) matrix-product view of a dot_general on operands of these shapes (lhs, rhs
// and dtype left unset), or nullopt when its free or contracting axes do not fold through
// strides, or some dimension is zero. Strides of size-1 dimensions are whatever folding left.
std::optional<MatmulSpec> matmul_view(const DotAttrs& attrs, const Shape& lhs, const Shape& rhs);

// The program of a backend that runs every node on its reference kernel (interp).
class ReferenceTarget final : public LoweringTarget {
 public:
  explicit ReferenceTarget(std::string reason) : reason_(std::move(reason)) {}
  std::string_view name() const override { return "reference"; }
  bool accepts(const Graph&, const Kernel&) const override { return false; }
  std::string fallback_reason(const Graph&, ValueId) const override { return reason_; }

 private:
  std::string reason_;
};

}  // namespace glia
