// What grad refuses, each with a glia::Error that says why (non-scalar or integer
// outputs, integer or constant inputs, values of another trace, undefined Exprs),
// the rule table's completeness, and integer paths that carry no gradient.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "autograd/grad_test_util.hpp"

namespace glia {
namespace {

using ::testing::AllOf;
using testing::expect_values;
using ::testing::HasSubstr;
using testing::run;
using ::testing::ThrowsMessage;

Tensor vec(std::vector<double> v) { return Tensor::from<double>(v); }

// Traces fn on an f64[3] and an i32[3] parameter, expecting a glia::Error.
template <class M>
void expect_trace_error(const TracedFn& fn, const M& matcher) {
  std::vector<Tensor> in{vec({1, 2, 3}), Tensor::from<std::int32_t>({1, 2, 3})};
  EXPECT_THAT([&] { testing::traced(fn, in); }, ThrowsMessage<Error>(matcher));
}

TEST(GradErrors, NonScalarOutput) {
  expect_trace_error(
      [](const std::vector<Expr>& in) {
        return std::vector{grad([](const Expr& x) { return x * 2.0; })(in[0])};
      },
      AllOf(HasSubstr("grad: the output must be a scalar, got f64[3]"),
            HasSubstr("reduce it first, e.g. with glia::sum")));
}

TEST(GradErrors, IntegerOutput) {
  expect_trace_error(
      [](const std::vector<Expr>& in) {
        return std::vector{grad([](const Expr& x) { return sum(cast(x, DType::i32)); })(in[0])};
      },
      HasSubstr("grad: the output must be floating point, got i64"));
}

TEST(GradErrors, IntegerInput) {
  expect_trace_error(
      [](const std::vector<Expr>& in) {
        return std::vector{grad([](const Expr& k) { return sum(cast(k, DType::f32)); })(in[1])};
      },
      HasSubstr("grad: argument 0 is i32[3]: gradients exist only for floating-point values"));
  // Inside a tree the message names the leaf.
  expect_trace_error(
      [](const std::vector<Expr>& in) {
        std::map<std::string, Expr> p{{"w", in[0]}, {"steps", in[1]}};
        auto f = [](const Expr& x, const std::map<std::string, Expr>& p) {
          return sum(x * p.at("w"));
        };
        return std::vector{grad<1>(f)(in[0], p).at("w")};
      },
      HasSubstr("grad: argument 1 leaf .steps is i32[3]: gradients exist only for floating-point"));
  expect_trace_error(
      [](const std::vector<Expr>& in) { return gradients(sum(cast(in[1], DType::f64)), {in[1]}); },
      HasSubstr("grad: input 0 is i32[3]: gradients exist only for floating-point inputs"));
}

TEST(GradErrors, ConstantInput) {
  expect_trace_error(
      [](const std::vector<Expr>& in) {
        Expr c = constant(vec({4, 5, 6}));
        return gradients(sum(in[0] * c), {in[0], c});
      },
      AllOf(HasSubstr("grad: input 1"), HasSubstr("f64[3]) is a constant, not a traced input"),
            HasSubstr("differentiate with respect to a function's arguments")));
}

TEST(GradErrors, ValueOfAnotherTrace) {
  Graph other("other");
  Expr foreign;
  {
    TraceScope scope(other);
    foreign = parameter({DType::f64, {3}}, "z");
  }
  expect_trace_error([&](const std::vector<Expr>& in) { return gradients(sum(in[0]), {foreign}); },
                     HasSubstr("grad: input 0 belongs to another trace than the output"));
  expect_trace_error(
      [&](const std::vector<Expr>& in) {
        auto f = [](const std::vector<Expr>& v) { return sum(v[0]); };
        return grad(f)(std::vector<Expr>{in[0], foreign});
      },
      HasSubstr("grad: argument 0 leaf [1] belongs to another trace than leaf [0]"));
  // The output of another trace than the differentiated argument.
  expect_trace_error(
      [&](const std::vector<Expr>& in) {
        return std::vector{grad([&](const Expr&) { return sum(foreign); })(in[0])};
      },
      HasSubstr("belongs to another trace than the output"));
}

TEST(GradErrors, UndefinedExprs) {
  EXPECT_THAT([] { gradients(Expr(), {}); },
              ThrowsMessage<Error>(HasSubstr("grad: the output is an undefined Expr")));
  expect_trace_error(
      [](const std::vector<Expr>& in) {
        return gradients(sum(in[0]), {in[0], Expr()});
      },
      HasSubstr("grad: input 1 is an undefined Expr"));
  expect_trace_error(
      [](const std::vector<Expr>&) {
        return std::vector{grad([](const Expr& x) { return sum(x); })(Expr())};
      },
      HasSubstr("grad: argument 0 is an undefined Expr"));
  expect_trace_error(
      [](const std::vector<Expr>& in) {
        std::map<std::string, Expr> p{{"a", in[0]}, {"b", Expr()}};
        return std::vector{
            grad([](const std::map<std::string, Expr>& q) { return sum(q.at("a")); })(p).at("a")};
      },
      HasSubstr("grad: argument 0 leaf .b is an undefined Expr"));
  expect_trace_error(
      [](const std::vector<Expr>& in) {
        return std::vector{grad([](const Expr&) { return Expr(); })(in[0])};
      },
      HasSubstr("grad: the output is an undefined Expr"));
}

TEST(GradKindTable, EveryOpHasARuleOrAReason) {
  std::set<std::string_view> names;
  for (int i = 0; i < kOpCount; ++i) {
    auto op = static_cast<Op>(i);
    const VjpRule& rule = vjp_rule(op);
    names.insert(grad_kind_name(rule.kind));
    if (rule.kind == GradKind::differentiable) {
      EXPECT_NE(rule.vjp, nullptr) << op_name(op);
    } else {
      EXPECT_EQ(rule.vjp, nullptr) << op_name(op);
      EXPECT_FALSE(rule.why.empty()) << op_name(op) << " (" << grad_kind_name(rule.kind) << ")";
    }
  }
  EXPECT_EQ(names.size(), 4u);  // every kind occurs and has its own name
  EXPECT_EQ(vjp_rule(Op::parameter).kind, GradKind::leaf);
  EXPECT_EQ(vjp_rule(Op::constant).kind, GradKind::leaf);
  EXPECT_EQ(vjp_rule(Op::floor).kind, GradKind::zero);
  EXPECT_EQ(vjp_rule(Op::stop_gradient).kind, GradKind::zero);
  EXPECT_EQ(vjp_rule(Op::argmax).kind, GradKind::non_differentiable);
  EXPECT_EQ(vjp_rule(Op::eq).kind, GradKind::non_differentiable);
  for (Op op : {Op::exp, Op::dot_general, Op::convolution, Op::window_max, Op::select_and_scatter,
                Op::gather, Op::scatter_add, Op::reduce_prod, Op::cast, Op::select})
    EXPECT_EQ(vjp_rule(op).kind, GradKind::differentiable) << op_name(op);
  EXPECT_THAT([] { vjp_rule(static_cast<Op>(kOpCount)); },
              ThrowsMessage<Error>(HasSubstr("vjp_rule: invalid op")));
}

TEST(GradKindTable, IntegerPathBlocksTheGradient) {
  Tensor x = vec({1.7, -2.2, 3.5});
  auto out = run(
      [](const std::vector<Expr>& in) {
        auto through_int = [](const Expr& x) { return sum(cast(cast(x, DType::i32), DType::f64)); };
        // Only the float factor carries a gradient: d/dx sum(trunc(x) * x) = trunc(x).
        auto mixed = [](const Expr& x) { return sum(cast(cast(x, DType::i32), DType::f64) * x); };
        // A float-to-float cast does carry it.
        auto through_f32 = [](const Expr& x) {
          return sum(cast(cast(x, DType::f32), DType::f64) * 2.0);
        };
        return std::vector{grad(through_int)(in[0]), grad(mixed)(in[0]), grad(through_f32)(in[0])};
      },
      {x});
  expect_values(out[0], {0, 0, 0});
  expect_values(out[1], {1, -2, 3});
  expect_values(out[2], {2, 2, 2});
}

TEST(GradKindTable, BooleanPathBlocksTheGradient) {
  // The mask is a function of x but a boolean: only select's branches carry gradients.
  Tensor x = vec({-1, 0.5, 2});
  auto out = run(
      [](const std::vector<Expr>& in) {
        auto f = [](const Expr& x) { return sum(select(greater(x, 0.0), x * x, x * 3.0)); };
        return std::vector{grad(f)(in[0])};
      },
      {x});
  expect_values(out[0], {3, 1, 4});
}

}  // namespace
}  // namespace glia
