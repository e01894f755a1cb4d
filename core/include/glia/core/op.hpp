// The op table: every primitive of the IR, declared once in GLIA_OPS. Each row says
// the op's name, arity (-1: one or more), attribute kind and class; op.cpp fills in
// its shape/dtype inference and its reference kernel.
//   const glia::OpInfo& info = glia::op_info(glia::Op::add);  // info.name == "add"
#pragma once

#include <cstdint>
#include <iosfwd>
#include <span>
#include <string_view>

#include "glia/core/attrs.hpp"

namespace glia {

// X(enumerator, printed name, arity, attribute kind, class)
#define GLIA_OPS(X)                                              \
  X(parameter, "parameter", 0, parameter, leaf)                  \
  X(constant, "constant", 0, constant, leaf)                     \
  X(iota, "iota", 0, iota, leaf)                                 \
  X(neg, "neg", 1, none, unary)                                  \
  X(abs, "abs", 1, none, unary)                                  \
  X(sign, "sign", 1, none, unary)                                \
  X(exp, "exp", 1, none, unary)                                  \
  X(expm1, "expm1", 1, none, unary)                              \
  X(log, "log", 1, none, unary)                                  \
  X(log1p, "log1p", 1, none, unary)                              \
  X(sqrt, "sqrt", 1, none, unary)                                \
  X(rsqrt, "rsqrt", 1, none, unary)                              \
  X(tanh, "tanh", 1, none, unary)                                \
  X(logistic, "logistic", 1, none, unary)                        \
  X(erf, "erf", 1, none, unary)                                  \
  X(sin, "sin", 1, none, unary)                                  \
  X(cos, "cos", 1, none, unary)                                  \
  X(floor, "floor", 1, none, unary)                              \
  X(ceil, "ceil", 1, none, unary)                                \
  X(round, "round", 1, none, unary)                              \
  X(not_, "not", 1, none, unary)                                 \
  X(add, "add", 2, none, binary)                                 \
  X(subtract, "subtract", 2, none, binary)                       \
  X(multiply, "multiply", 2, none, binary)                       \
  X(divide, "divide", 2, none, binary)                           \
  X(pow, "pow", 2, none, binary)                                 \
  X(max, "max", 2, none, binary)                                 \
  X(min, "min", 2, none, binary)                                 \
  X(remainder, "remainder", 2, none, binary)                     \
  X(atan2, "atan2", 2, none, binary)                             \
  X(and_, "and", 2, none, binary)                                \
  X(or_, "or", 2, none, binary)                                  \
  X(eq, "eq", 2, none, compare)                                  \
  X(ne, "ne", 2, none, compare)                                  \
  X(lt, "lt", 2, none, compare)                                  \
  X(le, "le", 2, none, compare)                                  \
  X(gt, "gt", 2, none, compare)                                  \
  X(ge, "ge", 2, none, compare)                                  \
  X(select, "select", 3, none, select)                           \
  X(cast, "cast", 1, cast, unary)                                \
  X(broadcast, "broadcast", 1, broadcast, layout)                \
  X(reshape, "reshape", 1, reshape, layout)                      \
  X(transpose, "transpose", 1, transpose, layout)                \
  X(slice, "slice", 1, slice, layout)                            \
  X(pad, "pad", 2, pad, layout)                                  \
  X(concatenate, "concatenate", -1, axis, layout)                \
  X(reverse, "reverse", 1, axes, layout)                         \
  X(gather, "gather", 2, axis, indexing)                         \
  X(scatter_add, "scatter_add", 3, axis, indexing)               \
  X(reduce_sum, "reduce_sum", 1, reduce, reduction)              \
  X(reduce_max, "reduce_max", 1, reduce, reduction)              \
  X(reduce_min, "reduce_min", 1, reduce, reduction)              \
  X(reduce_prod, "reduce_prod", 1, reduce, reduction)            \
  X(argmax, "argmax", 1, arg_reduce, reduction)                  \
  X(argmin, "argmin", 1, arg_reduce, reduction)                  \
  X(dot_general, "dot_general", 2, dot, contraction)             \
  X(convolution, "convolution", 2, conv, contraction)            \
  X(window_sum, "window_sum", 1, window, window)                 \
  X(window_max, "window_max", 1, window, window)                 \
  X(select_and_scatter, "select_and_scatter", 2, window, window) \
  X(random_bits, "random_bits", 1, random_bits, random)          \
  X(stop_gradient, "stop_gradient", 1, none, unary)              \
  X(scan, "scan", -1, scan, control)                             \
  X(all_reduce, "all_reduce", 1, collective, collective)

enum class Op : std::uint8_t {
#define GLIA_OP_ENUM(e, name, arity, attr, cls) e,
  GLIA_OPS(GLIA_OP_ENUM)
#undef GLIA_OP_ENUM
};
inline constexpr int kOpCount = 0
#define GLIA_OP_COUNT(e, name, arity, attr, cls) +1
    GLIA_OPS(GLIA_OP_COUNT)
#undef GLIA_OP_COUNT
    ;

// What kind of computation an op is; the compiler and autograd group ops by it.
enum class OpClass : std::uint8_t {
  leaf,
  unary,
  binary,
  compare,
  select,
  layout,
  indexing,
  reduction,
  contraction,
  window,
  random,
  control,    // structured loops: a body graph run by the op
  collective  // a sum over the processes of a Communicator (collective.hpp)
};

// Shape/dtype inference: the result type of the op on these input types, or glia::Error
// naming the op, the shapes and what was expected. Attributes are already of the op's kind.
using InferFn = TensorType (*)(std::span<const TensorType> inputs, const Attrs& attrs);
// Reference kernel: plain loops producing a new tensor of type `out`.
using KernelFn = Tensor (*)(std::span<const Tensor> inputs, const Attrs& attrs,
                            const TensorType& out);

struct OpInfo {
  Op op;
  std::string_view name;
  int arity;  // -1: one or more inputs
  AttrKind attr_kind;
  OpClass op_class;
  InferFn infer;
  KernelFn kernel;
};

const OpInfo& op_info(Op op);
inline std::string_view op_name(Op op) { return op_info(op).name; }
Op op_from_name(std::string_view name);  // throws glia::Error for an unknown name
std::ostream& operator<<(std::ostream& out, Op op);

}  // namespace glia
