// Gradient accumulation: the inner transformation runs once every N calls on the mean of
// the N gradients, the other calls give zero updates and leave its state alone.
#include <cmath>

#include "glia/optim/optimizers.hpp"
#include "glia/optim/transforms.hpp"
#include "optim/transform_test_util.hpp"

namespace glia {
namespace {

using namespace optim_test;
using Vec = std::vector<double>;

ParamMap leaf(const Vec& v) { return {{"l", {{"w", Tensor::from(v)}}}}; }
Vec w_of(const ParamMap& m) { return values(m.at("l").at("w")); }

const std::vector<Vec> kG = {{0.3, -0.6}, {0.9, 0.0},  {-0.3, 0.3},
                             {0.6, 0.6},  {0.0, -0.9}, {0.3, 0.3}};

struct Calls {
  std::vector<Vec> updates;
  std::vector<TensorOptState> states;
};

Calls run(const Transformation& t, const std::vector<Vec>& grads = kG) {
  Runner r(t);
  ParamMap p = leaf({1.0, 2.0});
  TensorOptState s = r.init(p);
  Calls out;
  out.states.push_back(s);
  for (const Vec& g : grads) {
    auto [u, next] = r.update(leaf(g), s, p);
    out.updates.push_back(w_of(u));
    out.states.push_back(next);
    s = next;
  }
  return out;
}

Vec mean_of(std::size_t first, std::size_t n) {
  Vec m(2, 0.0);
  for (std::size_t k = first; k < first + n; ++k)
    for (int j = 0; j < 2; ++j) m[j] += kG[k][j] / static_cast<double>(n);
  return m;
}

TEST(AccumulateGradients, SgdStepsEveryNthCallWithTheMean) {
  Calls c = run(transforms::accumulate_gradients(optimizers::sgd(1.0), 3));
  for (std::size_t k : {0u, 1u, 3u, 4u})
    expect_close(c.updates[k], {0.0, 0.0}, 0, 0, cat("call ", k + 1));
  Vec m1 = mean_of(0, 3), m2 = mean_of(3, 3);
  expect_close(c.updates[2], {-m1[0], -m1[1]}, 1e-12, 1e-15, "call 3");
  expect_close(c.updates[5], {-m2[0], -m2[1]}, 1e-12, 1e-15, "call 6");
  std::vector<std::int64_t> mini_steps;
  for (const TensorOptState& s : c.states)
    mini_steps.push_back(s.at("mini_step").item<std::int64_t>());
  EXPECT_EQ(mini_steps, (std::vector<std::int64_t>{0, 1, 2, 0, 1, 2, 0}));
  expect_close(c.states[2].at("acc/l/w"), {1.2, -0.6}, 1e-12, 1e-15, "sum after two calls");
  expect_close(c.states[3].at("acc/l/w"), {0.0, 0.0}, 0, 0, "reset after the step");
}

// Adam's count and moments advance only on the calls that step.
TEST(AccumulateGradients, InnerStateAdvancesOnlyWhenItSteps) {
  const double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  Calls c = run(transforms::accumulate_gradients(optimizers::adam(lr, b1, b2, eps), 2));
  std::vector<std::int64_t> counts;
  for (const TensorOptState& s : c.states)
    counts.push_back(s.at("inner/0/count").item<std::int64_t>());
  EXPECT_EQ(counts, (std::vector<std::int64_t>{0, 0, 1, 1, 2, 2, 3}));
  Vec m(2, 0), v(2, 0);
  for (std::size_t t = 1; t <= 3; ++t) {
    Vec g = mean_of(2 * (t - 1), 2), want(2);
    for (int j = 0; j < 2; ++j) {
      m[j] = b1 * m[j] + (1 - b1) * g[j];
      v[j] = b2 * v[j] + (1 - b2) * g[j] * g[j];
      want[j] =
          -lr * (m[j] / (1 - std::pow(b1, t))) / (std::sqrt(v[j] / (1 - std::pow(b2, t))) + eps);
    }
    expect_close(c.updates[2 * t - 2], {0.0, 0.0}, 0, 0, cat("call ", 2 * t - 1));
    expect_close(c.updates[2 * t - 1], want, 1e-7, 1e-12, cat("call ", 2 * t));
    expect_close(c.states[2 * t - 1].at("inner/0/mu/l/w"),
                 values(c.states[2 * t - 2].at("inner/0/mu/l/w")), 0, 0, "mu held between steps");
  }
}

TEST(AccumulateGradients, EveryOneIsTheInnerTransformation) {
  Calls c = run(transforms::accumulate_gradients(optimizers::sgd(0.5, 0.9), 1));
  Vec t(2, 0.0);
  for (std::size_t k = 0; k < kG.size(); ++k) {
    for (int j = 0; j < 2; ++j) t[j] = kG[k][j] + 0.9 * t[j];
    expect_close(c.updates[k], {-0.5 * t[0], -0.5 * t[1]}, 1e-12, 1e-15, cat("call ", k + 1));
  }
}

TEST(AccumulateGradients, StateLayout) {
  Calls c = run(transforms::accumulate_gradients(optimizers::sgd(0.1, 0.5), 4), {});
  std::vector<std::string> keys;
  for (const auto& [k, v] : c.states[0]) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"acc/l/w", "inner/0/trace/l/w", "mini_step"}));
  EXPECT_EQ(c.states[0].at("mini_step").type(), (TensorType{DType::i64, {}}));
}

TEST(AccumulateGradients, BadArgumentsAreErrors) {
  EXPECT_THAT([] { transforms::accumulate_gradients(optimizers::sgd(), 0); },
              ThrowsMessage<Error>(HasSubstr("accumulate_gradients: every must be >= 1, got 0")));
  EXPECT_THAT([] { transforms::accumulate_gradients(Transformation{}, 2); },
              ThrowsMessage<Error>(
                  HasSubstr("accumulate_gradients: the inner transformation has no init")));
}

}  // namespace
}  // namespace glia
