// The gradient check of every op, parameterised over the op table: each differentiable
// op's cases must match central differences (and an op with a rule but no case fails);
// every other op must say why it has no rule, and zero-gradient ops must give exact zeros.
#include <algorithm>
#include <cmath>
#include <exception>

#include <iomanip>
#include <iostream>
#include <sstream>

#include "autograd/op_cases.hpp"

namespace glia::testing {

namespace {

const OpCases& registry() {
  static const OpCases cases = [] {
    OpCases c;
    add_elementwise_cases(c);
    add_structure_cases(c);
    add_contraction_cases(c);
    add_control_cases(c);
    return c;
  }();
  return cases;
}

// The loss sum(result * w): a fixed random weight, so a gradient that is transposed,
// mirrored or summed in the wrong place shows (a plain sum would hide it).
ScalarFn weighted_loss(const ScalarFn& build) {
  return [build](const std::vector<Expr>& in) {
    Expr r = build(in);
    Tensor w = random_tensor(r.shape(), -1, 1, 977).cast(r.dtype());
    return sum(r * Expr(w));
  };
}

std::vector<TensorType> types_of(const std::vector<Tensor>& inputs) {
  std::vector<TensorType> types;
  for (const Tensor& t : inputs) types.push_back(t.type());
  return types;
}

// Whether building the case really emits the op (the Expr API may lower or skip it).
bool emits(const OpCase& c, Op op) {
  Graph g = trace([&](const std::vector<Expr>& in) { return std::vector<Expr>{c.build(in)}; },
                  types_of(c.inputs));
  for (const Node& node : g.nodes())
    if (node.op == op) return true;
  return false;
}

// A case where some checked input gets an all-zero gradient checks nothing about it
// (e.g. a strided convolution whose windows only ever see padding and holes).
void expect_every_input_reached(const OpCase& c) {
  std::vector<bool> which = c.options.check;
  if (which.empty())
    for (const Tensor& t : c.inputs) which.push_back(is_float(t.dtype()));
  std::vector<Tensor> grads = analytic_gradients(weighted_loss(c.build), c.inputs, which);
  for (const Tensor& g : grads) {
    std::vector<double> v = g.to_vector<double>();
    EXPECT_TRUE(v.empty() || std::any_of(v.begin(), v.end(), [](double e) { return e != 0; }))
        << "a checked input gets an all-zero gradient: " << g;
    EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](double e) { return std::isfinite(e); }))
        << "a gradient is not finite: " << g;
  }
}

// Builders of the ops through which no gradient flows although they take floats: the
// zero-gradient ops, and comparisons and arg-reductions (cast back to f64 to be summed).
ScalarFn flat_op(Op op) {
  using In = const std::vector<Expr>&;
  auto compare = [](Expr (*fn)(const Operand&, const Operand&)) {
    return [fn](In in) { return cast(fn(in[0], 0.3), DType::f64); };
  };
  switch (op) {
    case Op::sign:
      return [](In in) { return sign(in[0]); };
    case Op::floor:
      return [](In in) { return floor(in[0]); };
    case Op::ceil:
      return [](In in) { return ceil(in[0]); };
    case Op::round:
      return [](In in) { return round(in[0]); };
    case Op::stop_gradient:
      return [](In in) { return stop_grad(in[0]); };
    case Op::eq:
      return compare(&equal);
    case Op::ne:
      return compare(&not_equal);
    case Op::lt:
      return compare(&less);
    case Op::le:
      return compare(&less_equal);
    case Op::gt:
      return compare(&greater);
    case Op::ge:
      return compare(&greater_equal);
    case Op::argmax:
      return [](In in) { return cast(argmax(in[0], -1, true), DType::f64); };
    case Op::argmin:
      return [](In in) { return cast(argmin(in[0], -1, true), DType::f64); };
    default:
      return nullptr;
  }
}

std::string op_test_name(const ::testing::TestParamInfo<int>& info) {
  return std::string(op_name(static_cast<Op>(info.param)));
}

// Every case of a differentiable op matches central differences.
void check_cases(Op op) {
  auto it = registry().find(op);
  ASSERT_TRUE(it != registry().end() && !it->second.empty())
      << op << " has a gradient rule but no gradient-check case: add one to op_gradcheck_*";
  for (const OpCase& c : it->second) {
    SCOPED_TRACE(std::string(op_name(op)) + "/" + c.name);
    // An exception in one case (a rule building an ill-typed cotangent) fails that case only.
    try {
      EXPECT_TRUE(emits(c, op)) << "the case does not emit " << op;
      expect_gradients_match(weighted_loss(c.build), c.inputs, c.options);
      expect_every_input_reached(c);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw: " << e.what();
    }
  }
}

// The op contributes exactly nothing, alone or beside a differentiable path:
// d/dx sum(op(x) * w) == 0 and d/dx (sum(op(x) * w) + sum(x * v)) == v.
void check_flat(Op op, const ScalarFn& fn) {
  for (const Shape& shape : {Shape{2, 3}, Shape{}, Shape{1, 4, 1}}) {
    if (shape.rank() == 0 && (op == Op::argmax || op == Op::argmin)) continue;
    SCOPED_TRACE("shape " + shape.to_string());
    Tensor x = random_tensor(shape, -2.5, 2.5, 31);
    Tensor v = random_tensor(shape, -1, 1, 32);
    ASSERT_TRUE(emits({"", {x}, fn}, op)) << "the check does not emit " << op;
    std::vector<double> alone =
        analytic_gradients(weighted_loss(fn), {x}, {true})[0].to_vector<double>();
    EXPECT_EQ(alone, std::vector<double>(alone.size(), 0.0));
    auto beside = [&](const std::vector<Expr>& in) {
      return weighted_loss(fn)(in) + sum(in[0] * Expr(v));
    };
    EXPECT_EQ(analytic_gradients(beside, {x}, {true})[0].to_vector<double>(),
              v.to_vector<double>());
  }
}

class OpGradCheck : public ::testing::TestWithParam<int> {};

// Differentiable ops: their cases match finite differences (none is a failure). Others:
// the table says why not; and zero-gradient ops give exact zeros.
TEST_P(OpGradCheck, GradientMatchesOrRuleSaysWhyNot) {
  auto op = static_cast<Op>(GetParam());
  const VjpRule& rule = vjp_rule(op);
  if (rule.kind == GradKind::differentiable) {
    ASSERT_NE(rule.vjp, nullptr);
    check_cases(op);
    return;
  }
  EXPECT_FALSE(rule.why.empty()) << op << " has no gradient rule and does not say why";
  EXPECT_EQ(rule.vjp, nullptr);
  EXPECT_EQ(registry().count(op), 0u) << op << " has gradient-check cases but no rule";
  ScalarFn flat = flat_op(op);
  if (rule.kind == GradKind::zero) {
    ASSERT_TRUE(flat) << op << " is a zero-gradient op without an exact-zero check here";
  }
  if (flat) check_flat(op, flat);
}

INSTANTIATE_TEST_SUITE_P(EveryOp, OpGradCheck, ::testing::Range(0, kOpCount), op_test_name);

// Zero-size operands: each rule must still give cotangents of the right (empty) shapes,
// and zeros, or the pad value's sum, to the non-empty operands beside them.
TEST(OpGradCheckZeroSize, RulesHandleEmptyOperands) {
  using In = const std::vector<Expr>&;
  const std::vector<OpCase> cases = {
      {"exp", {random_tensor({0, 3})}, [](In in) { return exp(in[0]); }},
      {"add_broadcast",
       {random_tensor({0, 3}), random_tensor({3})},
       [](In in) { return in[0] + in[1]; }},
      {"sum_over_empty_axis", {random_tensor({0, 3})}, [](In in) { return sum(in[0], {0}); }},
      {"dot_general_empty_contraction",
       {random_tensor({2, 0}), random_tensor({0, 3})},
       [](In in) { return dot_general(in[0], in[1], {1}, {0}); }},
      {"concatenate_with_empty",
       {random_tensor({2, 0}), random_tensor({2, 3})},
       [](In in) {
         return concatenate({in[0], in[1]}, 1);
       }},
      {"empty_slice", {random_tensor({4})}, [](In in) { return slice(in[0], {2}, {2}); }},
      {"pad_empty_operand",
       {random_tensor({0, 2}), random_tensor({})},
       [](In in) {
         return pad(in[0], in[1], {1, 0}, {1, 1});
       }},
      {"take_no_indices",
       {random_tensor({3, 2})},
       [](In in) { return take(in[0], Expr(Tensor(DType::i64, Shape{0})), 0); }},
      {"transpose",
       {random_tensor({0, 2, 3})},
       [](In in) {
         return transpose(in[0], {2, 0, 1});
       }},
      {"conv_empty_batch",
       {random_tensor({0, 2, 4}), random_tensor({3, 2, 2})},
       [](In in) { return conv(in[0], in[1]); }},
      {"window_sum",
       {random_tensor({0, 4})},
       [](In in) {
         return window_sum(in[0], {1, 2});
       }},
      {"select_and_scatter",
       {random_tensor({0, 4}), random_tensor({0, 2})},
       [](In in) {
         return select_and_scatter(in[0], in[1], {1, 2});
       }},
  };
  for (const OpCase& c : cases) {
    SCOPED_TRACE(c.name);
    try {
      expect_gradients_match(weighted_loss(c.build), c.inputs);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw: " << e.what();
    }
  }
}

// Says which: every op, its gradient kind and its number of cases (or why it has none).
TEST(OpGradCheckSummary, EveryOpHasAKind) {
  std::ostringstream table;
  int differentiable = 0, cases = 0;
  for (int i = 0; i < kOpCount; ++i) {
    auto op = static_cast<Op>(i);
    const VjpRule& rule = vjp_rule(op);
    auto it = registry().find(op);
    std::size_t n = it == registry().end() ? 0 : it->second.size();
    table << "  " << std::left << std::setw(20) << op_name(op) << std::setw(20)
          << grad_kind_name(rule.kind);
    if (rule.kind == GradKind::differentiable) {
      table << n << " cases";
      ++differentiable;
      cases += static_cast<int>(n);
      EXPECT_GT(n, 0u) << op;
    } else {
      table << rule.why;
      EXPECT_FALSE(rule.why.empty()) << op;
    }
    table << "\n";
  }
  std::cout << "Gradient rules of the " << kOpCount << " ops (" << differentiable
            << " differentiable, " << cases << " gradient-check cases):\n"
            << table.str();
}

}  // namespace

}  // namespace glia::testing
