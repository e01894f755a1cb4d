// Inference and reference kernel of all_reduce: the identity's type, and a copy of the
// input summed in place over the processes of the communicator the node names.
#include "glia/core/collective.hpp"
#include "kernels/kernel_util.hpp"
#include "rules.hpp"

#include <cstring>

namespace glia::detail {

namespace {

bool reducible(DType d) {
  return d == DType::f32 || d == DType::f64 || d == DType::i32 || d == DType::i64;
}

TensorType infer_all_reduce(std::span<const TensorType> in, const Attrs&) {
  check(reducible(in[0].dtype), "all_reduce: sums f32, f64, i32 or i64 values, got ",
        in[0].to_string(), " (cast 16-bit floats to f32 first)");
  return in[0];
}

Tensor kernel_all_reduce(std::span<const Tensor> in, const Attrs& attrs,
                         const TensorType& out_type) {
  const auto& a = attrs_as<CollectiveAttrs>(attrs);
  std::shared_ptr<Communicator> comm = registered_communicator(a.communicator);
  Tensor out(out_type.dtype, out_type.shape);
  if (out.nbytes() > 0) std::memcpy(out.raw_data(), in[0].raw_data(), out.nbytes());
  comm->all_reduce_sum(out.raw_data(), out.numel(), out.dtype());
  return out;
}

}  // namespace

void add_collective_rules(OpTable& t) {
  set_rule(t, Op::all_reduce, &infer_all_reduce, &kernel_all_reduce);
}

}  // namespace glia::detail
