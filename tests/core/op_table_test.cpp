// The op table is complete: every op has a row with inference and a reference kernel,
// names are unique, and the attribute kind matches the row.
#include <set>

#include "core/test_util.hpp"

namespace glia {
namespace {

// Adding an op to GLIA_OPS changes this count: update it together with the op's
// inference, kernel, autograd rule and backend lowerings.
static_assert(kOpCount == 64, "a new op needs inference, a reference kernel and tests");

TEST(OpTable, EveryOpHasInferenceAndKernel) {
  for (int i = 0; i < kOpCount; ++i) {
    const OpInfo& info = op_info(static_cast<Op>(i));
    SCOPED_TRACE(std::string(info.name));
    EXPECT_EQ(static_cast<int>(info.op), i);
    EXPECT_NE(info.infer, nullptr) << info.name << " has no shape/dtype inference";
    EXPECT_NE(info.kernel, nullptr) << info.name << " has no reference kernel";
  }
}

TEST(OpTable, NamesAreUniqueAndRoundTrip) {
  std::set<std::string_view> names;
  for (int i = 0; i < kOpCount; ++i) {
    auto op = static_cast<Op>(i);
    EXPECT_TRUE(names.insert(op_name(op)).second) << op_name(op);
    EXPECT_EQ(op_from_name(op_name(op)), op);
  }
  EXPECT_EQ(op_name(Op::not_), "not");
  EXPECT_GLIA_ERROR(op_from_name("matmul3"), "unknown op 'matmul3'");
}

TEST(OpTable, IssueOpSetIsPresent) {
  for (const char* name : {"neg",
                           "abs",
                           "sign",
                           "exp",
                           "expm1",
                           "log",
                           "log1p",
                           "sqrt",
                           "rsqrt",
                           "tanh",
                           "logistic",
                           "erf",
                           "sin",
                           "cos",
                           "floor",
                           "ceil",
                           "round",
                           "not",
                           "add",
                           "subtract",
                           "multiply",
                           "divide",
                           "pow",
                           "max",
                           "min",
                           "remainder",
                           "atan2",
                           "and",
                           "or",
                           "eq",
                           "ne",
                           "lt",
                           "le",
                           "gt",
                           "ge",
                           "select",
                           "cast",
                           "constant",
                           "iota",
                           "broadcast",
                           "reshape",
                           "transpose",
                           "slice",
                           "pad",
                           "concatenate",
                           "reverse",
                           "gather",
                           "scatter_add",
                           "reduce_sum",
                           "reduce_max",
                           "reduce_min",
                           "reduce_prod",
                           "argmax",
                           "argmin",
                           "dot_general",
                           "convolution",
                           "window_sum",
                           "window_max",
                           "select_and_scatter",
                           "random_bits"})
    EXPECT_NO_THROW(op_from_name(name)) << name;
}

}  // namespace
}  // namespace glia
