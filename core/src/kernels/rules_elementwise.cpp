// Inference and reference kernels of the element-wise ops: unary, binary, compare,
// select and cast. Binary ops take operands of one shape and dtype (the tracing API
// inserts broadcasts and casts); comparisons give bool.
#include <cstring>
#include <string>

#include "glia/core/elementwise.hpp"
#include "kernels/kernel_util.hpp"
#include "rules.hpp"

namespace glia::detail {

namespace {

template <class T>
constexpr bool accepts(EwDomain d) {
  return ew_accepts(d, dtype_of<T>());
}

template <Op kOp, EwDomain kDomain>
TensorType infer_unary(std::span<const TensorType> in, const Attrs&) {
  check(ew_accepts(kDomain, in[0].dtype), op_name(kOp), ": expected ", ew_domain_text(kDomain),
        ", got ", in[0].to_string());
  return in[0];
}

template <Op kOp, EwDomain kDomain, class F>
Tensor kernel_unary(std::span<const Tensor> in, const Attrs&, const TensorType& out_type) {
  Tensor out(out_type.dtype, out_type.shape);
  visit_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (accepts<T>(kDomain)) {
      using C = compute_t<T>;
      const T* x = in_ptr<T>(in[0]);
      T* y = out_ptr<T>(out);
      for (std::int64_t i = 0; i < out.numel(); ++i)
        y[i] = convert_element<T>(F{}(static_cast<C>(x[i])));
    }
  });
  return out;
}

TensorType check_binary(Op op, EwDomain d, std::span<const TensorType> in) {
  check(in[0].shape == in[1].shape && in[0].dtype == in[1].dtype, op_name(op),
        ": operands must have one shape and dtype, got ", types_text(in));
  check(ew_accepts(d, in[0].dtype), op_name(op), ": expected ", ew_domain_text(d), ", got ",
        in[0].to_string());
  return in[0];
}

template <Op kOp, EwDomain kDomain>
TensorType infer_binary(std::span<const TensorType> in, const Attrs&) {
  return check_binary(kOp, kDomain, in);
}

template <Op kOp, EwDomain kDomain>
TensorType infer_compare(std::span<const TensorType> in, const Attrs&) {
  TensorType t = check_binary(kOp, kDomain, in);
  return {DType::boolean, t.shape};
}

// Binary and compare kernels: R is the result storage type's role (same as input,
// or bool for comparisons).
template <EwDomain kDomain, class F, bool kCompare>
Tensor kernel_binary(std::span<const Tensor> in, const Attrs&, const TensorType& out_type) {
  Tensor out(out_type.dtype, out_type.shape);
  visit_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (accepts<T>(kDomain)) {
      using C = compute_t<T>;
      const T* a = in_ptr<T>(in[0]);
      const T* b = in_ptr<T>(in[1]);
      if constexpr (kCompare) {
        bool* y = out_ptr<bool>(out);
        for (std::int64_t i = 0; i < out.numel(); ++i)
          y[i] = F{}(static_cast<C>(a[i]), static_cast<C>(b[i]));
      } else {
        T* y = out_ptr<T>(out);
        for (std::int64_t i = 0; i < out.numel(); ++i)
          y[i] = convert_element<T>(F{}(static_cast<C>(a[i]), static_cast<C>(b[i])));
      }
    }
  });
  return out;
}

TensorType infer_select(std::span<const TensorType> in, const Attrs&) {
  check(in[0].dtype == DType::boolean, "select: the predicate must be bool, got ",
        in[0].to_string());
  check(in[0].shape == in[1].shape && in[1] == in[2],
        "select: predicate and branches must have one shape and the branches one dtype, got ",
        types_text(in));
  return in[1];
}

Tensor kernel_select(std::span<const Tensor> in, const Attrs&, const TensorType& out_type) {
  Tensor out(out_type.dtype, out_type.shape);
  const bool* p = in_ptr<bool>(in[0]);
  auto size = static_cast<std::int64_t>(dtype_size(out_type.dtype));
  const auto* a = static_cast<const std::byte*>(in[1].raw_data());
  const auto* b = static_cast<const std::byte*>(in[2].raw_data());
  auto* y = static_cast<std::byte*>(out.raw_data());
  for (std::int64_t i = 0; i < out.numel(); ++i)
    std::memcpy(y + i * size, (p[i] ? a : b) + i * size, static_cast<std::size_t>(size));
  return out;
}

TensorType infer_cast(std::span<const TensorType> in, const Attrs& attrs) {
  return {attrs_as<CastAttrs>(attrs).to, in[0].shape};
}

// stop_gradient is the identity; only autograd treats it differently (zero gradient).
TensorType infer_identity(std::span<const TensorType> in, const Attrs&) { return in[0]; }

Tensor kernel_identity(std::span<const Tensor> in, const Attrs&, const TensorType&) {
  return in[0];
}

Tensor kernel_cast(std::span<const Tensor> in, const Attrs&, const TensorType& out_type) {
  return in[0].cast(out_type.dtype);
}

// The registration of one row of GLIA_ELEMENTWISE_OPS, by its class.
template <Op kOp, EwDomain kDomain, class F>
void add_unary(OpTable& t) {
  set_rule(t, kOp, &infer_unary<kOp, kDomain>, &kernel_unary<kOp, kDomain, F>);
}
template <Op kOp, EwDomain kDomain, class F>
void add_binary(OpTable& t) {
  set_rule(t, kOp, &infer_binary<kOp, kDomain>, &kernel_binary<kDomain, F, false>);
}
template <Op kOp, EwDomain kDomain, class F>
void add_compare(OpTable& t) {
  set_rule(t, kOp, &infer_compare<kOp, kDomain>, &kernel_binary<kDomain, F, true>);
}

}  // namespace

void add_elementwise_rules(OpTable& t) {
#define GLIA_EW_ADD_RULE(op, F, cls, domain, stem) add_##cls<Op::op, EwDomain::domain, ew::F>(t);
  GLIA_ELEMENTWISE_OPS(GLIA_EW_ADD_RULE)
#undef GLIA_EW_ADD_RULE
  set_rule(t, Op::select, &infer_select, &kernel_select);
  set_rule(t, Op::cast, &infer_cast, &kernel_cast);
  set_rule(t, Op::stop_gradient, &infer_identity, &kernel_identity);
}

}  // namespace glia::detail
