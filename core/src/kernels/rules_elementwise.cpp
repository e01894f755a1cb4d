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

// Which dtypes an element-wise op accepts.
enum class Accepts { floats, numeric, logical, any };

template <class T>
constexpr bool accepts(Accepts a) {
  constexpr DType d = dtype_of<T>();
  switch (a) {
    case Accepts::floats:
      return is_float(d);
    case Accepts::numeric:
      return d != DType::boolean;
    case Accepts::logical:
      return !is_float(d);
    case Accepts::any:
      return true;
  }
  return false;
}

bool accepts_dtype(Accepts a, DType d) {
  return visit_dtype(d, [&](auto tag) { return accepts<decltype(tag)>(a); });
}

std::string_view accepts_text(Accepts a) {
  switch (a) {
    case Accepts::floats:
      return "a floating-point dtype (f16, bf16, f32, f64)";
    case Accepts::numeric:
      return "a numeric dtype (not bool)";
    case Accepts::logical:
      return "bool or an integer dtype";
    case Accepts::any:
      return "any dtype";
  }
  return "";
}

template <Op kOp, Accepts kAccepts>
TensorType infer_unary(std::span<const TensorType> in, const Attrs&) {
  check(accepts_dtype(kAccepts, in[0].dtype), op_name(kOp), ": expected ", accepts_text(kAccepts),
        ", got ", in[0].to_string());
  return in[0];
}

template <Op kOp, Accepts kAccepts, class F>
Tensor kernel_unary(std::span<const Tensor> in, const Attrs&, const TensorType& out_type) {
  Tensor out(out_type.dtype, out_type.shape);
  visit_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (accepts<T>(kAccepts)) {
      using C = compute_t<T>;
      const T* x = in_ptr<T>(in[0]);
      T* y = out_ptr<T>(out);
      for (std::int64_t i = 0; i < out.numel(); ++i)
        y[i] = convert_element<T>(F{}(static_cast<C>(x[i])));
    }
  });
  return out;
}

TensorType check_binary(Op op, Accepts a, std::span<const TensorType> in) {
  check(in[0].shape == in[1].shape && in[0].dtype == in[1].dtype, op_name(op),
        ": operands must have one shape and dtype, got ", types_text(in));
  check(accepts_dtype(a, in[0].dtype), op_name(op), ": expected ", accepts_text(a), ", got ",
        in[0].to_string());
  return in[0];
}

template <Op kOp, Accepts kAccepts>
TensorType infer_binary(std::span<const TensorType> in, const Attrs&) {
  return check_binary(kOp, kAccepts, in);
}

template <Op kOp>
TensorType infer_compare(std::span<const TensorType> in, const Attrs&) {
  TensorType t = check_binary(kOp, Accepts::any, in);
  return {DType::boolean, t.shape};
}

// Binary and compare kernels: R is the result storage type's role (same as input,
// or bool for comparisons).
template <Accepts kAccepts, class F, bool kCompare>
Tensor kernel_binary(std::span<const Tensor> in, const Attrs&, const TensorType& out_type) {
  Tensor out(out_type.dtype, out_type.shape);
  visit_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (accepts<T>(kAccepts)) {
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

template <Op kOp, Accepts kAccepts, class F>
void unary(OpTable& t) {
  set_rule(t, kOp, &infer_unary<kOp, kAccepts>, &kernel_unary<kOp, kAccepts, F>);
}
template <Op kOp, Accepts kAccepts, class F>
void binary(OpTable& t) {
  set_rule(t, kOp, &infer_binary<kOp, kAccepts>, &kernel_binary<kAccepts, F, false>);
}
template <Op kOp, class F>
void compare(OpTable& t) {
  set_rule(t, kOp, &infer_compare<kOp>, &kernel_binary<Accepts::any, F, true>);
}

}  // namespace

void add_elementwise_rules(OpTable& t) {
  using A = Accepts;
  unary<Op::neg, A::numeric, ew::Neg>(t);
  unary<Op::abs, A::numeric, ew::Abs>(t);
  unary<Op::sign, A::numeric, ew::Sign>(t);
  unary<Op::exp, A::floats, ew::Exp>(t);
  unary<Op::expm1, A::floats, ew::Expm1>(t);
  unary<Op::log, A::floats, ew::Log>(t);
  unary<Op::log1p, A::floats, ew::Log1p>(t);
  unary<Op::sqrt, A::floats, ew::Sqrt>(t);
  unary<Op::rsqrt, A::floats, ew::Rsqrt>(t);
  unary<Op::tanh, A::floats, ew::Tanh>(t);
  unary<Op::logistic, A::floats, ew::Logistic>(t);
  unary<Op::erf, A::floats, ew::Erf>(t);
  unary<Op::sin, A::floats, ew::Sin>(t);
  unary<Op::cos, A::floats, ew::Cos>(t);
  unary<Op::floor, A::numeric, ew::Floor>(t);
  unary<Op::ceil, A::numeric, ew::Ceil>(t);
  unary<Op::round, A::numeric, ew::Round>(t);
  unary<Op::not_, A::logical, ew::Not>(t);
  binary<Op::add, A::numeric, ew::Add>(t);
  binary<Op::subtract, A::numeric, ew::Subtract>(t);
  binary<Op::multiply, A::numeric, ew::Multiply>(t);
  binary<Op::divide, A::numeric, ew::Divide>(t);
  binary<Op::pow, A::numeric, ew::Pow>(t);
  binary<Op::max, A::numeric, ew::Max>(t);
  binary<Op::min, A::numeric, ew::Min>(t);
  binary<Op::remainder, A::numeric, ew::Remainder>(t);
  binary<Op::atan2, A::floats, ew::Atan2>(t);
  binary<Op::and_, A::logical, ew::And>(t);
  binary<Op::or_, A::logical, ew::Or>(t);
  compare<Op::eq, ew::Eq>(t);
  compare<Op::ne, ew::Ne>(t);
  compare<Op::lt, ew::Lt>(t);
  compare<Op::le, ew::Le>(t);
  compare<Op::gt, ew::Gt>(t);
  compare<Op::ge, ew::Ge>(t);
  set_rule(t, Op::select, &infer_select, &kernel_select);
  set_rule(t, Op::cast, &infer_cast, &kernel_cast);
  set_rule(t, Op::stop_gradient, &infer_identity, &kernel_identity);
}

}  // namespace glia::detail
