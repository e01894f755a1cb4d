// Inference and kernels of the leaf ops: parameter (bound to a graph input by the
// interpreter, which passes the bound tensor as the single input), constant and iota.
#include "kernels/kernel_util.hpp"
#include "rules.hpp"

namespace glia::detail {

namespace {

TensorType infer_parameter(std::span<const TensorType>, const Attrs& attrs) {
  return attrs_as<ParameterAttrs>(attrs).type;
}

Tensor kernel_parameter(std::span<const Tensor> in, const Attrs& attrs, const TensorType& out) {
  const auto& p = attrs_as<ParameterAttrs>(attrs);
  check(in.size() == 1, "parameter ", p.index, ": no input tensor was bound");
  check(in[0].type() == out, "parameter ", p.index, (p.name.empty() ? "" : " '"), p.name,
        (p.name.empty() ? "" : "'"), ": expected ", out.to_string(), ", got ", in[0].type());
  return in[0];
}

TensorType infer_constant(std::span<const TensorType>, const Attrs& attrs) {
  const Tensor& v = attrs_as<ConstantAttrs>(attrs).value;
  check(v.defined(), "constant: the value is an undefined tensor");
  return v.type();
}

Tensor kernel_constant(std::span<const Tensor>, const Attrs& attrs, const TensorType&) {
  return attrs_as<ConstantAttrs>(attrs).value;
}

TensorType infer_iota(std::span<const TensorType>, const Attrs& attrs) {
  const auto& a = attrs_as<IotaAttrs>(attrs);
  check(a.dtype != DType::boolean, "iota: bool is not a counting dtype");
  if (a.shape.rank() > 0)
    a.shape.normalize_axis(a.axis, "iota");
  else
    check(a.axis == 0, "iota: a scalar iota has only axis 0, got ", a.axis);
  return {a.dtype, a.shape};
}

Tensor kernel_iota(std::span<const Tensor>, const Attrs& attrs, const TensorType&) {
  const auto& a = attrs_as<IotaAttrs>(attrs);
  if (a.shape.rank() == 0) return Tensor::zeros(a.shape, a.dtype);
  return Tensor::iota(a.shape, static_cast<int>(a.axis), a.dtype);
}

}  // namespace

void add_leaf_rules(OpTable& t) {
  set_rule(t, Op::parameter, &infer_parameter, &kernel_parameter);
  set_rule(t, Op::constant, &infer_constant, &kernel_constant);
  set_rule(t, Op::iota, &infer_iota, &kernel_iota);
}

}  // namespace glia::detail
