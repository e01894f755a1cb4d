// THE list of element-wise ops (GLIA_ELEMENTWISE_OPS): every element-wise op of the op
// table has exactly one row, rows agree with the op table, and each op's reference rule
// accepts exactly the dtypes of its row's domain.
#include <map>
#include <set>

#include "core/test_util.hpp"

namespace glia {
namespace {

constexpr DType kAllDTypes[] = {boolean, u8, u32, i32, i64, f16, bf16, f32, f64};

// Ops of the unary class that are not element-wise math: a conversion with an attribute
// and the identity that autograd treats specially. Any other unary, binary or compare
// op must have a row.
bool is_elementwise_math(const OpInfo& info) {
  if (info.op == Op::cast || info.op == Op::stop_gradient) return false;
  return info.op_class == OpClass::unary || info.op_class == OpClass::binary ||
         info.op_class == OpClass::compare;
}

TEST(ElementwiseList, EveryElementwiseOpHasExactlyOneRow) {
  int elementwise_ops = 0;
  for (int i = 0; i < kOpCount; ++i) {
    const OpInfo& info = op_info(static_cast<Op>(i));
    int rows = 0;
    for (const EwRow& row : kElementwiseOps) rows += row.op == info.op;
    if (is_elementwise_math(info)) {
      ++elementwise_ops;
      EXPECT_EQ(rows, 1) << info.name << " needs one row in GLIA_ELEMENTWISE_OPS";
    } else {
      EXPECT_EQ(rows, 0) << info.name << " is not element-wise math";
    }
  }
  EXPECT_EQ(elementwise_ops, 35);  // 18 unary, 11 binary, 6 comparisons
  EXPECT_EQ(std::size(kElementwiseOps), std::size_t(elementwise_ops));
}

TEST(ElementwiseList, RowsAgreeWithTheOpTable) {
  for (const EwRow& row : kElementwiseOps) {
    const OpInfo& info = op_info(row.op);
    SCOPED_TRACE(std::string(info.name));
    EXPECT_EQ(row.op_class, info.op_class);
    EXPECT_EQ(row.c_stem, info.name);  // glia_<op name>_<t>
    EXPECT_EQ(info.arity, row.op_class == OpClass::unary ? 1 : 2);
    EXPECT_EQ(ew_row(row.op), &row);
  }
  EXPECT_EQ(ew_row(Op::select), nullptr);
  EXPECT_EQ(ew_row(Op::cast), nullptr);
  EXPECT_EQ(ew_row(Op::reduce_sum), nullptr);
  EXPECT_EQ(ew_row(Op::not_)->c_stem, "not");
  EXPECT_EQ(ew_row(Op::and_)->domain, EwDomain::logical);
}

// Written out by hand, not through ew_accepts: the dtypes each domain holds.
const std::map<EwDomain, std::set<DType>>& domain_dtypes() {
  static const std::map<EwDomain, std::set<DType>> m = {
      {EwDomain::floats, {f16, bf16, f32, f64}},
      {EwDomain::numeric, {u8, u32, i32, i64, f16, bf16, f32, f64}},
      {EwDomain::logical, {boolean, u8, u32, i32, i64}},
      {EwDomain::any, {boolean, u8, u32, i32, i64, f16, bf16, f32, f64}},
  };
  return m;
}

TEST(ElementwiseList, DomainsHoldTheirDTypes) {
  for (const auto& [domain, dtypes] : domain_dtypes())
    for (DType t : kAllDTypes)
      EXPECT_EQ(ew_accepts(domain, t), dtypes.count(t) == 1)
          << ew_domain_text(domain) << " and " << t;
  // A few rows spelled out: the domains the reference kernels always had.
  EXPECT_EQ(ew_row(Op::exp)->domain, EwDomain::floats);
  EXPECT_EQ(ew_row(Op::atan2)->domain, EwDomain::floats);
  EXPECT_EQ(ew_row(Op::round)->domain, EwDomain::numeric);
  EXPECT_EQ(ew_row(Op::remainder)->domain, EwDomain::numeric);
  EXPECT_EQ(ew_row(Op::not_)->domain, EwDomain::logical);
  EXPECT_EQ(ew_row(Op::ge)->domain, EwDomain::any);
}

// The reference rule of each row accepts exactly its domain's dtypes, and a rejected
// dtype is a glia::Error naming the op and what it expected.
TEST(ElementwiseList, ReferenceRulesAcceptExactlyTheDomain) {
  for (const EwRow& row : kElementwiseOps) {
    const OpInfo& info = op_info(row.op);
    const std::set<DType>& accepted = domain_dtypes().at(row.domain);
    for (DType t : kAllDTypes) {
      SCOPED_TRACE(std::string(info.name) + " on " + std::string(dtype_name(t)));
      std::vector<TensorType> in(static_cast<std::size_t>(info.arity), TensorType{t, Shape{3}});
      if (accepted.count(t)) {
        TensorType out = info.infer(in, Attrs{});
        EXPECT_EQ(out.dtype, row.op_class == OpClass::compare ? boolean : t);
        EXPECT_EQ(out.shape, Shape{3});
      } else {
        EXPECT_GLIA_ERROR(info.infer(in, Attrs{}), std::string(info.name) + ": expected " +
                                                       std::string(ew_domain_text(row.domain)));
      }
    }
  }
}

TEST(ElementwiseList, CTypeSuffixes) {
  EXPECT_EQ(ew_c_type(f16), "f32");  // 16-bit floats compute in f32
  EXPECT_EQ(ew_c_type(bf16), "f32");
  EXPECT_EQ(ew_c_type(f32), "f32");
  EXPECT_EQ(ew_c_type(f64), "f64");
  EXPECT_EQ(ew_c_type(i32), "i32");
  EXPECT_EQ(ew_c_type(i64), "i64");
  EXPECT_EQ(ew_c_type(u8), "u8");
  EXPECT_EQ(ew_c_type(u32), "u32");
  EXPECT_EQ(ew_c_type(boolean), "bool");
}

}  // namespace
}  // namespace glia
