// Each gradient transformation against a closed form computed here with plain loops, for
// two or three updates, and the names of its state entries.
#include <cmath>
#include <numeric>

#include "glia/optim/transforms.hpp"
#include "optim/transform_test_util.hpp"

namespace glia {
namespace {

using namespace optim_test;
namespace tx = transforms;

using Vec = std::vector<double>;

// {"l": {"w": values}} in f64.
ParamMap leaf(const Vec& v, const Shape& shape) { return {{"l", {{"w", Tensor::from(v, shape)}}}}; }
ParamMap leaf(const Vec& v) { return leaf(v, Shape{static_cast<std::int64_t>(v.size())}); }
Vec w_of(const ParamMap& m) { return values(m.at("l").at("w")); }

std::vector<std::string> keys(const TensorOptState& s) {
  std::vector<std::string> out;
  for (const auto& [k, v] : s) out.push_back(k);
  return out;
}

const Vec kP = {0.5, -1.0, 2.0};
const std::vector<Vec> kG = {{0.3, -0.2, 0.05}, {-0.4, 0.1, 0.6}, {0.2, 0.2, -0.3}};

// Runs `t` on the gradients kG from params kP and returns the updates of each call.
std::vector<Vec> updates_of(const Transformation& t, TensorOptState* final_state = nullptr,
                            const std::vector<Vec>& grads = kG) {
  Runner r(t);
  ParamMap params = leaf(kP);
  TensorOptState s = r.init(params);
  std::vector<Vec> out;
  for (const Vec& g : grads) {
    auto [u, next] = r.update(leaf(g), s, params);
    out.push_back(w_of(u));
    s = next;
  }
  if (final_state) *final_state = s;
  return out;
}

void expect_updates(const std::vector<Vec>& got, const std::vector<Vec>& want,
                    double rtol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < got.size(); ++k)
    expect_close(got[k], want[k], rtol, 1e-14, cat("update ", k + 1));
}

TEST(Scale, MultipliesByTheStep) {
  TensorOptState s;
  std::vector<Vec> got = updates_of(tx::scale(-0.5), &s);
  EXPECT_TRUE(s.empty());
  std::vector<Vec> want;
  for (const Vec& g : kG) want.push_back({-0.5 * g[0], -0.5 * g[1], -0.5 * g[2]});
  expect_updates(got, want);
}

TEST(ScaleByState, MultipliesByTheScaleInTheState) {
  Runner r(tx::scale_by_state(0.5));
  ParamMap params = leaf(kP);
  TensorOptState s = r.init(params);
  ASSERT_EQ(keys(s), std::vector<std::string>{"scale"});
  EXPECT_EQ(s.at("scale").type(), (TensorType{DType::f32, {}}));
  auto [u, next] = r.update(leaf(kG[0]), s, params);
  expect_close(w_of(u), {0.15, -0.1, 0.025}, 1e-7, 0, "scale 0.5");
  EXPECT_EQ(next.at("scale").item<double>(), 0.5) << "update leaves the scale alone";
  next["scale"] = Tensor::scalar(-2.0);  // changed from outside, as reduce_lr_on_plateau would
  expect_close(w_of(std::get<0>(r.update(leaf(kG[0]), next, params))), {-0.6, 0.4, -0.1}, 1e-12, 0,
               "scale -2");
}

TEST(ScaleByAdam, MatchesClosedForm) {
  const double b1 = 0.8, b2 = 0.9, eps = 1e-4, eps_root = 1e-3;
  TensorOptState s;
  std::vector<Vec> got = updates_of(tx::scale_by_adam(b1, b2, eps, eps_root), &s);
  Vec m(3, 0), v(3, 0);
  std::vector<Vec> want;
  for (std::size_t k = 1; k <= kG.size(); ++k) {
    Vec u(3);
    for (int j = 0; j < 3; ++j) {
      double g = kG[k - 1][j];
      m[j] = b1 * m[j] + (1 - b1) * g;
      v[j] = b2 * v[j] + (1 - b2) * g * g;
      u[j] = (m[j] / (1 - std::pow(b1, k))) /
             (std::sqrt(v[j] / (1 - std::pow(b2, k)) + eps_root) + eps);
    }
    want.push_back(u);
  }
  expect_updates(got, want);
  EXPECT_EQ(keys(s), (std::vector<std::string>{"count", "mu/l/w", "nu/l/w"}));
  EXPECT_EQ(s.at("count").type(), (TensorType{DType::i64, {}}));
  EXPECT_EQ(s.at("count").item<std::int64_t>(), 3);
  expect_close(s.at("mu/l/w"), m, 1e-12, 0, "mu");
}

// The bias corrections are scalars: each multiplies its moment by its reciprocal, so the
// traced update divides once an element (m / (sqrt(v) + eps)), as PyTorch's Adam does.
TEST(ScaleByAdam, DividesOnceAnElement) {
  const Shape shape{4, 5};
  Graph g = trace(
      [](const std::vector<Expr>& in) {
        ExprParamMap grads{{"l", {{"w", in[0]}}}};
        OptState state{{"count", in[1]}, {"mu/l/w", in[2]}, {"nu/l/w", in[3]}};
        auto [u, next] = tx::scale_by_adam(0.9, 0.999, 1e-8, 0.0).update(grads, state, grads);
        return std::vector<Expr>{u.at("l").at("w")};
      },
      {{DType::f32, shape}, {DType::i64, {}}, {DType::f32, shape}, {DType::f32, shape}}, "adam");
  int divides = 0;
  for (const Node& n : g.nodes()) divides += int(n.op == Op::divide && n.type.shape == shape);
  EXPECT_EQ(divides, 1);
}

TEST(ScaleByRss, MatchesClosedFormAndKeepsZeroSumsAtZero) {
  TensorOptState s;
  std::vector<Vec> got = updates_of(tx::scale_by_rss(0.1, 1e-7), &s);
  Vec acc(3, 0.1);
  std::vector<Vec> want;
  for (const Vec& g : kG) {
    Vec u(3);
    for (int j = 0; j < 3; ++j) acc[j] += g[j] * g[j], u[j] = g[j] / std::sqrt(acc[j] + 1e-7);
    want.push_back(u);
  }
  expect_updates(got, want);
  EXPECT_EQ(keys(s), std::vector<std::string>{"sum_of_squares/l/w"});
  // No accumulator and a zero gradient: a zero update, not g / sqrt(eps) or NaN.
  std::vector<Vec> zero = updates_of(tx::scale_by_rss(0.0, 1e-7), nullptr, {{0.0, 2.0, 0.0}});
  expect_close(zero[0], {0.0, 2.0 / std::sqrt(4.0 + 1e-7), 0.0}, 1e-12, 0, "zero sums");
}

TEST(ScaleByRms, MatchesClosedForm) {
  const double decay = 0.7, eps = 1e-3, init = 0.5;
  std::vector<Vec> got = updates_of(tx::scale_by_rms(decay, eps, init));
  Vec nu(3, init);
  std::vector<Vec> want;
  for (const Vec& g : kG) {
    Vec u(3);
    for (int j = 0; j < 3; ++j)
      nu[j] = decay * nu[j] + (1 - decay) * g[j] * g[j], u[j] = g[j] / std::sqrt(nu[j] + eps);
    want.push_back(u);
  }
  expect_updates(got, want);
}

TEST(ScaleByStddev, MatchesClosedForm) {
  const double decay = 0.7, eps = 1e-3, init = 0.5;
  TensorOptState s;
  std::vector<Vec> got = updates_of(tx::scale_by_stddev(decay, eps, init), &s);
  Vec mu(3, 0.0), nu(3, init);
  std::vector<Vec> want;
  for (const Vec& g : kG) {
    Vec u(3);
    for (int j = 0; j < 3; ++j) {
      mu[j] = decay * mu[j] + (1 - decay) * g[j];
      nu[j] = decay * nu[j] + (1 - decay) * g[j] * g[j];
      u[j] = g[j] / std::sqrt(nu[j] - mu[j] * mu[j] + eps);
    }
    want.push_back(u);
  }
  expect_updates(got, want);
  EXPECT_EQ(keys(s), (std::vector<std::string>{"mu/l/w", "nu/l/w"}));
}

TEST(ScaleByBelief, MatchesClosedForm) {
  const double b1 = 0.5, b2 = 0.8, eps = 1e-3, eps_root = 1e-4;
  std::vector<Vec> got = updates_of(tx::scale_by_belief(b1, b2, eps, eps_root));
  Vec m(3, 0), s(3, 0);
  std::vector<Vec> want;
  for (std::size_t k = 1; k <= kG.size(); ++k) {
    Vec u(3);
    for (int j = 0; j < 3; ++j) {
      double g = kG[k - 1][j], e = g - m[j];
      m[j] = b1 * m[j] + (1 - b1) * g;
      s[j] = b2 * s[j] + (1 - b2) * e * e + eps_root;
      u[j] = (m[j] / (1 - std::pow(b1, k))) / (std::sqrt(s[j] / (1 - std::pow(b2, k))) + eps);
    }
    want.push_back(u);
  }
  expect_updates(got, want);
}

TEST(ScaleBySchedule, ScalesByTheScheduleOfTheCount) {
  Schedule s = [](const Expr& count) { return cast(count, DType::f32) * 0.5 + 1.0; };
  TensorOptState state;
  std::vector<Vec> got = updates_of(tx::scale_by_schedule(s), &state);
  std::vector<Vec> want;
  for (std::size_t k = 0; k < kG.size(); ++k) {
    double f = 1.0 + 0.5 * static_cast<double>(k);
    want.push_back({f * kG[k][0], f * kG[k][1], f * kG[k][2]});
  }
  expect_updates(got, want, 1e-7);
  EXPECT_EQ(state.at("count").item<std::int64_t>(), 3);
}

// b2 = 0.9: the SMA length passes threshold 4.5 at the 5th step, so both branches run.
TEST(ScaleByRadam, MatchesClosedFormOnBothSidesOfTheThreshold) {
  const double b1 = 0.9, b2 = 0.9, eps = 1e-6, threshold = 4.5;
  std::vector<Vec> grads = kG;
  grads.push_back({0.1, -0.3, 0.2});
  grads.push_back({-0.2, 0.4, 0.1});
  std::vector<Vec> got =
      updates_of(tx::scale_by_radam(b1, b2, eps, 0.0, threshold), nullptr, grads);
  Vec m(3, 0), v(3, 0);
  const double ro_inf = 2 / (1 - b2) - 1;
  int rectified = 0;
  std::vector<Vec> want;
  for (std::size_t k = 1; k <= grads.size(); ++k) {
    double b2t = std::pow(b2, k), ro = ro_inf - 2.0 * k * b2t / (1 - b2t);
    Vec u(3);
    for (int j = 0; j < 3; ++j) {
      double g = grads[k - 1][j];
      m[j] = b1 * m[j] + (1 - b1) * g;
      v[j] = b2 * v[j] + (1 - b2) * g * g;
      double mh = m[j] / (1 - std::pow(b1, k)), vh = v[j] / (1 - b2t);
      double r = std::sqrt((ro - 4) * (ro - 2) * ro_inf / ((ro_inf - 4) * (ro_inf - 2) * ro));
      u[j] = ro >= threshold ? r * mh / (std::sqrt(vh) + eps) : mh;
    }
    rectified += ro >= threshold;
    want.push_back(u);
  }
  EXPECT_EQ(rectified, 1);
  expect_updates(got, want, 1e-6);  // ro is computed in f32
}

TEST(Trace, MatchesMomentumAndNesterov) {
  for (bool nesterov : {false, true}) {
    std::vector<Vec> got = updates_of(tx::trace(0.6, nesterov));
    Vec t(3, 0);
    std::vector<Vec> want;
    for (const Vec& g : kG) {
      Vec u(3);
      for (int j = 0; j < 3; ++j)
        t[j] = g[j] + 0.6 * t[j], u[j] = nesterov ? g[j] + 0.6 * t[j] : t[j];
      want.push_back(u);
    }
    expect_updates(got, want);
  }
}

TEST(Clip, ClipsEachElement) {
  std::vector<Vec> got = updates_of(tx::clip(0.25));
  expect_updates(got, {{0.25, -0.2, 0.05}, {-0.25, 0.1, 0.25}, {0.2, 0.2, -0.25}});
}

TEST(ClipByGlobalNorm, RescalesAllLeavesOnlyAboveTheNorm) {
  Runner r(tx::clip_by_global_norm(1.0));
  auto run = [&](const Vec& a, const Vec& b) {
    ParamMap g{{"x", {{"a", Tensor::from(a)}}}, {"y", {{"b", Tensor::from(b)}}}};
    ParamMap u = std::get<0>(r.update(g, r.init(g), g));
    return std::pair{values(u.at("x").at("a")), values(u.at("y").at("b"))};
  };
  auto [a1, b1] = run({0.3, 0.4}, {0.5});  // norm sqrt(0.5) < 1: unchanged
  expect_close(a1, {0.3, 0.4}, 0, 0, "below");
  expect_close(b1, {0.5}, 0, 0, "below");
  auto [a2, b2] = run({3.0, 4.0}, {12.0});  // norm 13
  expect_close(a2, {3.0 / 13, 4.0 / 13}, 1e-12, 0, "above");
  expect_close(b2, {12.0 / 13}, 1e-12, 0, "above");
}

TEST(Centralize, SubtractsTheMeanOverAllButTheLastAxis) {
  Runner r(tx::centralize());
  auto run = [&](const Vec& v, const Shape& s) {
    ParamMap g = leaf(v, s);
    return w_of(std::get<0>(r.update(g, r.init(g), g)));
  };
  // [3, 2]: column means 3 and 30.
  expect_close(run({1, 10, 3, 30, 5, 50}, {3, 2}), {-2, -20, 0, 0, 2, 20}, 1e-12, 1e-12, "rank 2");
  expect_close(run({1, 2, 6}, {3}), {1, 2, 6}, 0, 0, "rank 1 unchanged");
  // [2, 2, 2]: the means over axes 0 and 1 of the last-axis columns are 4 and 40.
  expect_close(run({1, 10, 3, 30, 5, 50, 7, 70}, {2, 2, 2}), {-3, -30, -1, -10, 1, 10, 3, 30},
               1e-12, 1e-12, "rank 3");
}

TEST(AddDecayedWeights, AddsDecayTimesParamsWhereTheMaskSays) {
  ParamMap params{
      {"d", {{"kernel", Tensor::from(Vec{1.0, -2.0})}, {"bias", Tensor::from(Vec{4.0})}}}};
  ParamMap g{{"d", {{"kernel", Tensor::from(Vec{0.5, 0.5})}, {"bias", Tensor::from(Vec{0.5})}}}};
  Runner all(tx::add_decayed_weights(0.1));
  ParamMap u = std::get<0>(all.update(g, all.init(params), params));
  expect_close(u.at("d").at("kernel"), {0.6, 0.3}, 1e-12, 0, "kernel");
  expect_close(u.at("d").at("bias"), {0.9}, 1e-12, 0, "bias");
  Runner masked(tx::add_decayed_weights(
      0.1, [](const std::string&, const std::string& name) { return name == "kernel"; }));
  u = std::get<0>(masked.update(g, masked.init(params), params));
  expect_close(u.at("d").at("kernel"), {0.6, 0.3}, 1e-12, 0, "masked kernel");
  expect_close(u.at("d").at("bias"), {0.5}, 0, 0, "bias left out by the mask");
}

TEST(ScaleByTrustRatio, ScalesEachLeafByItsNormRatio) {
  ParamMap params{{"a", {{"w", Tensor::from(Vec{3.0, 4.0})}}},
                  {"b", {{"w", Tensor::from(Vec{0.0, 0.0})}}},
                  {"c", {{"w", Tensor::from(Vec{0.03, 0.04})}}}};
  ParamMap g{{"a", {{"w", Tensor::from(Vec{1.0, 0.0})}}},
             {"b", {{"w", Tensor::from(Vec{1.0, 2.0})}}},
             {"c", {{"w", Tensor::from(Vec{2.0, 0.0})}}}};
  Runner r(tx::scale_by_trust_ratio(/*min_norm=*/0.1, /*trust_coefficient=*/2.0, /*eps=*/0.5));
  ParamMap u = std::get<0>(r.update(g, r.init(params), params));
  // a: 2 * 5 / (1 + 0.5); b: zero param norm is below min_norm, so 2 * 0.1 / (sqrt(5) + 0.5);
  // c: |p| = 0.05 < min_norm = 0.1, so 2 * 0.1 / (2 + 0.5).
  double ra = 2 * 5 / 1.5, rb = 2 * 0.1 / (std::sqrt(5.0) + 0.5), rc = 2 * 0.1 / 2.5;
  expect_close(u.at("a").at("w"), {ra, 0.0}, 1e-12, 0, "a");
  expect_close(u.at("b").at("w"), {rb, 2 * rb}, 1e-12, 0, "b");
  expect_close(u.at("c").at("w"), {2 * rc, 0.0}, 1e-12, 0, "c");
  // Without min_norm a zero parameter leaves the update alone (ratio 1).
  Runner plain(tx::scale_by_trust_ratio());
  u = std::get<0>(plain.update(g, plain.init(params), params));
  expect_close(u.at("b").at("w"), {1.0, 2.0}, 0, 0, "zero param norm");
  expect_close(u.at("a").at("w"), {5.0, 0.0}, 1e-12, 0, "|p| / |u| = 5");
}

TEST(AddNoise, ZeroEtaIsTheIdentityAndNoiseDiffersPerLeaf) {
  TensorOptState s;
  expect_updates(updates_of(tx::add_noise(0.0, 0.55, 1), &s), kG);
  EXPECT_EQ(keys(s), std::vector<std::string>{"count"});
  EXPECT_EQ(s.at("count").item<std::int64_t>(), 3);
  ParamMap zero{{"a", {{"w", Tensor::zeros({4}, DType::f64)}}},
                {"b", {{"w", Tensor::zeros({4}, DType::f64)}}}};
  Runner r(tx::add_noise(1.0, 0.55, 1));
  ParamMap u = std::get<0>(r.update(zero, r.init(zero), zero));
  EXPECT_NE(values(u.at("a").at("w")), values(u.at("b").at("w")));
  EXPECT_NE(values(u.at("a").at("w")), Vec(4, 0.0));
}

TEST(ScaleByYogi, StateStartsAtTheInitialAccumulator) {
  TensorOptState s;
  Runner r(tx::scale_by_yogi(0.9, 0.999, 1e-3, 0.0, 0.25));
  s = r.init(leaf(kP));
  EXPECT_EQ(keys(s), (std::vector<std::string>{"count", "mu/l/w", "nu/l/w"}));
  expect_close(s.at("mu/l/w"), Vec(3, 0.25), 0, 0, "mu");
  expect_close(s.at("nu/l/w"), Vec(3, 0.25), 0, 0, "nu");
  // One step: nu moves by (1 - b2) g^2 toward g^2 (down here, since 0.25 > g^2).
  Vec g = kG[0], want(3);
  for (int j = 0; j < 3; ++j) {
    double m = 0.9 * 0.25 + 0.1 * g[j], v = 0.25 - 0.001 * g[j] * g[j];
    want[j] = (m / 0.1) / (std::sqrt(v / 0.001) + 1e-3);
  }
  expect_close(w_of(std::get<0>(r.update(leaf(g), s, leaf(kP)))), want, 1e-10, 0, "step 1");
}

}  // namespace
}  // namespace glia
