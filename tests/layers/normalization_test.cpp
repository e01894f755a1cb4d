// Normalization layers against a hand-written reference (statistics per group of
// elements, computed with loops), in train and inference mode; running statistics over
// two train steps; option and shape errors; gradients through every norm in both modes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "autograd/gradcheck.hpp"
#include "glia/layers.hpp"

namespace glia {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr double kEps = 1e-5;
using Index = std::vector<std::int64_t>;
using GroupFn = std::function<std::int64_t(const Index&)>;

NormOptions axis(std::int64_t a) {
  NormOptions o;
  o.axis = a;
  return o;
}
NormOptions momentum(double m) {
  NormOptions o;
  o.momentum = m;
  return o;
}
NormOptions epsilon(double e) {
  NormOptions o;
  o.epsilon = e;
  return o;
}

Index unravel(std::int64_t i, const Shape& s) {
  Index idx(static_cast<std::size_t>(s.rank()));
  for (int d = s.rank() - 1; d >= 0; --d) {
    idx[static_cast<std::size_t>(d)] = i % s[d];
    i /= s[d];
  }
  return idx;
}

struct Stats {
  std::map<std::int64_t, double> mean, var, unbiased, count;
};

// Mean and variances of the elements of each group.
Stats stats(const std::vector<double>& x, const Shape& s, const GroupFn& group) {
  Stats st;
  for (std::int64_t i = 0; i < s.numel(); ++i) {
    std::int64_t g = group(unravel(i, s));
    st.mean[g] += x[static_cast<std::size_t>(i)];
    st.count[g] += 1;
  }
  for (auto& [g, m] : st.mean) m /= st.count[g];
  for (std::int64_t i = 0; i < s.numel(); ++i) {
    std::int64_t g = group(unravel(i, s));
    double d = x[static_cast<std::size_t>(i)] - st.mean[g];
    st.var[g] += d * d;
  }
  for (auto& [g, v] : st.var) {
    st.unbiased[g] = v / (st.count[g] - 1);
    v /= st.count[g];
  }
  return st;
}

// (x - mean) / sqrt(var + eps) * gamma[c] + beta[c] with the given per-group statistics.
std::vector<double> normalized(const std::vector<double>& x, const Shape& s, const GroupFn& group,
                               const std::map<std::int64_t, double>& mean,
                               const std::map<std::int64_t, double>& var, int axis,
                               const std::vector<double>& gamma, const std::vector<double>& beta) {
  std::vector<double> y(x.size());
  for (std::int64_t i = 0; i < s.numel(); ++i) {
    Index idx = unravel(i, s);
    std::int64_t g = group(idx);
    std::size_t c = static_cast<std::size_t>(idx[static_cast<std::size_t>(axis)]);
    std::size_t k = static_cast<std::size_t>(i);
    y[k] =
        (x[k] - mean.at(g)) / std::sqrt(var.at(g) + kEps) * gamma[c] + (beta.empty() ? 0 : beta[c]);
  }
  return y;
}

void expect_near(const Tensor& got, const std::vector<double>& want, double tol = 2e-5) {
  std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol) << "element " << i;
}

Tensor f32(const std::vector<double>& v, const Shape& s) {
  return Tensor::from<double>(v, s).cast(DType::f32);
}

std::vector<double> values(std::int64_t n, double scale, double shift) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = scale * std::sin(1.7 * static_cast<double>(i) + 0.3) + shift +
           0.1 * static_cast<double>(i % 3);
  return v;
}

TEST(BatchNorm, TrainStatisticsAndRunningUpdatesOverTwoSteps) {
  Shape s{4, 3};
  Model m = batch_norm(input("x", {4, 3}));
  auto [init, predict] = build(m);
  ModelState st = init();
  EXPECT_EQ(st.state.at("batch_norm_0").at("running_mean").to_vector<float>(),
            (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(st.state.at("batch_norm_0").at("running_var").to_vector<float>(),
            (std::vector<float>{1, 1, 1}));
  std::vector<double> gamma = {1.5, -0.5, 2}, beta = {0.1, 0.2, -0.3};
  st.params["batch_norm_0"]["gamma"] = f32(gamma, {3});
  st.params["batch_norm_0"]["beta"] = f32(beta, {3});
  GroupFn channel = [](const Index& i) { return i[1]; };

  std::vector<double> x1 = values(12, 2, 1);
  TrainResult r1 = predict.train(st, f32(x1, s), random::key(0));
  Stats s1 = stats(x1, s, channel);
  expect_near(r1.output, normalized(x1, s, channel, s1.mean, s1.var, 1, gamma, beta));
  std::vector<double> rm1(3), rv1(3);
  for (int c = 0; c < 3; ++c) {
    rm1[c] = 0.9 * 0 + 0.1 * s1.mean[c];
    rv1[c] = 0.9 * 1 + 0.1 * s1.unbiased[c];  // unbiased, as PyTorch
  }
  expect_near(r1.state.at("batch_norm_0").at("running_mean"), rm1, 1e-6);
  expect_near(r1.state.at("batch_norm_0").at("running_var"), rv1, 1e-6);

  // Feed the state back for a second step.
  st.state = r1.state;
  std::vector<double> x2 = values(12, 0.5, -2);
  TrainResult r2 = predict.train(st, f32(x2, s), random::key(1));
  Stats s2 = stats(x2, s, channel);
  std::vector<double> rm2(3), rv2(3);
  for (int c = 0; c < 3; ++c) {
    rm2[c] = 0.9 * rm1[c] + 0.1 * s2.mean[c];
    rv2[c] = 0.9 * rv1[c] + 0.1 * s2.unbiased[c];
  }
  expect_near(r2.state.at("batch_norm_0").at("running_mean"), rm2, 1e-6);
  expect_near(r2.state.at("batch_norm_0").at("running_var"), rv2, 1e-6);

  // Inference mode normalises with the running statistics.
  st.state = r2.state;
  std::map<std::int64_t, double> mean, var;
  for (int c = 0; c < 3; ++c) mean[c] = rm2[c], var[c] = rv2[c];
  expect_near(predict(st, f32(x1, s)), normalized(x1, s, channel, mean, var, 1, gamma, beta));
}

TEST(BatchNorm, ChannelsLastRank4AndChannelsFirstAxis) {
  // [N=2, H=2, W=2, C=3]: statistics over N, H, W.
  Shape s4{2, 2, 2, 3};
  std::vector<double> x4 = values(24, 1.5, 0.5);
  auto [init, predict] = build(batch_norm(input("x", {2, 2, 2, 3}), momentum(0.3)));
  ModelState st = init();
  TrainResult r = predict.train(st, f32(x4, s4), random::key(0));
  GroupFn last = [](const Index& i) { return i[3]; };
  Stats s = stats(x4, s4, last);
  expect_near(r.output, normalized(x4, s4, last, s.mean, s.var, 3, {1, 1, 1}, {0, 0, 0}));
  std::vector<double> rm(3);
  for (int c = 0; c < 3; ++c) rm[c] = 0.3 * s.mean[c];
  expect_near(r.state.at("batch_norm_0").at("running_mean"), rm, 1e-6);

  // axis = 1: [N=2, C=3, L=2] channels-first.
  Shape s3{2, 3, 2};
  std::vector<double> x3 = values(12, 1, 0);
  auto built = build(batch_norm(input("x", {2, 3, 2}), axis(1)));
  ModelState st3 = built.init();
  EXPECT_EQ(st3.params.at("batch_norm_0").at("gamma").shape(), (Shape{3}));
  GroupFn second = [](const Index& i) { return i[1]; };
  Stats t = stats(x3, s3, second);
  expect_near(built.predict.train(st3, f32(x3, s3), random::key(0)).output,
              normalized(x3, s3, second, t.mean, t.var, 1, {1, 1, 1}, {0, 0, 0}));
  // Fresh running statistics (0, 1) at inference: x / sqrt(1 + eps).
  std::vector<double> want(x3.size());
  for (std::size_t i = 0; i < x3.size(); ++i) want[i] = x3[i] / std::sqrt(1 + kEps);
  expect_near(built.predict(st3, f32(x3, s3)), want);
}

TEST(InstanceNorm, PerSampleStatisticsAndBatchAveragedRunningStats) {
  Shape s{2, 4, 3};  // [N, L, C]
  std::vector<double> x = values(24, 2, 0.5);
  auto [init, predict] = build(instance_norm(input("x", {2, 4, 3})));
  ModelState st = init();
  std::vector<double> gamma = {0.5, 1, 2}, beta = {0, 1, -1};
  st.params["instance_norm_0"]["gamma"] = f32(gamma, {3});
  st.params["instance_norm_0"]["beta"] = f32(beta, {3});
  GroupFn instance = [](const Index& i) { return i[0] * 3 + i[2]; };
  Stats t = stats(x, s, instance);
  TrainResult r = predict.train(st, f32(x, s), random::key(0));
  expect_near(r.output, normalized(x, s, instance, t.mean, t.var, 2, gamma, beta));
  std::vector<double> rm(3), rv(3);
  for (int c = 0; c < 3; ++c) {
    rm[c] = 0.1 * (t.mean[c] + t.mean[3 + c]) / 2;
    rv[c] = 0.9 + 0.1 * (t.unbiased[c] + t.unbiased[3 + c]) / 2;
  }
  expect_near(r.state.at("instance_norm_0").at("running_mean"), rm, 1e-6);
  expect_near(r.state.at("instance_norm_0").at("running_var"), rv, 1e-6);
  // Inference: the running statistics, per channel.
  st.state = r.state;
  GroupFn channel = [](const Index& i) { return i[2]; };
  std::map<std::int64_t, double> mean, var;
  for (int c = 0; c < 3; ++c) mean[c] = rm[c], var[c] = rv[c];
  expect_near(predict(st, f32(x, s)), normalized(x, s, channel, mean, var, 2, gamma, beta));
}

TEST(LayerNorm, OverTheLastAxisInBothModes) {
  Shape s{2, 3, 4};
  std::vector<double> x = values(24, 3, 1);
  auto [init, predict] = build(layer_norm(input("x", {2, 3, 4})));
  ModelState st = init();
  EXPECT_TRUE(st.state.empty());
  std::vector<double> gamma = {1, 2, 0.5, -1}, beta = {0.5, 0, 0, 1};
  st.params["layer_norm_0"]["gamma"] = f32(gamma, {4});
  st.params["layer_norm_0"]["beta"] = f32(beta, {4});
  GroupFn row = [](const Index& i) { return i[0] * 3 + i[1]; };
  Stats t = stats(x, s, row);
  std::vector<double> want = normalized(x, s, row, t.mean, t.var, 2, gamma, beta);
  expect_near(predict(st, f32(x, s)), want);
  expect_near(predict.train(st, f32(x, s), random::key(0)).output, want);
}

TEST(GroupNorm, TwoGroupsOfChannels) {
  Shape s{2, 3, 4};  // [N, L, C=4]: groups {0, 1} and {2, 3}, 6 values each
  std::vector<double> x = values(24, 2, -1);
  Model m = group_norm(input("x", {2, 3, 4}), 2);
  EXPECT_EQ(m.node().options, "num_groups=2, axis=-1, epsilon=1e-05");
  auto [init, predict] = build(m);
  ModelState st = init();
  std::vector<double> gamma = {1, 2, 3, 4}, beta = {0.1, 0.2, 0.3, 0.4};
  st.params["group_norm_0"]["gamma"] = f32(gamma, {4});
  st.params["group_norm_0"]["beta"] = f32(beta, {4});
  GroupFn group = [](const Index& i) { return i[0] * 2 + i[2] / 2; };
  Stats t = stats(x, s, group);
  EXPECT_EQ(t.count[0], 6);
  std::vector<double> want = normalized(x, s, group, t.mean, t.var, 2, gamma, beta);
  expect_near(predict(st, f32(x, s)), want);
  expect_near(predict.train(st, f32(x, s), random::key(0)).output, want);
}

TEST(RmsNorm, ScalesByTheRootMeanSquare) {
  Shape s{2, 3};
  std::vector<double> x = {1, -2, 3, 0.5, 0.25, -4};
  auto [init, predict] = build(rms_norm(input("x", {2, 3})));
  ModelState st = init();
  ASSERT_EQ(st.params.at("rms_norm_0").size(), 1u);  // gamma only
  std::vector<double> gamma = {2, 1, -1};
  st.params["rms_norm_0"]["gamma"] = f32(gamma, {3});
  std::vector<double> want(6);
  for (int r = 0; r < 2; ++r) {
    double ms = 0;
    for (int c = 0; c < 3; ++c) ms += x[r * 3 + c] * x[r * 3 + c] / 3;
    for (int c = 0; c < 3; ++c) want[r * 3 + c] = x[r * 3 + c] / std::sqrt(ms + kEps) * gamma[c];
  }
  expect_near(predict(st, f32(x, s)), want);
}

TEST(Norms, Errors) {
  Model x = input("x", {2, 4});
  EXPECT_THAT([&] { build(group_norm(x, 3)).init(); },
              ThrowsMessage<Error>(HasSubstr(
                  "layer 'group_norm_0' (group_norm) with input(s) f32[2][4]: num_groups (3) must "
                  "divide the 4 channels")));
  EXPECT_THAT([&] { group_norm(x, 0); },
              ThrowsMessage<Error>(HasSubstr("group_norm: num_groups must be >= 1, got 0")));
  EXPECT_THAT([&] { build(batch_norm(x, axis(2))).init(); },
              ThrowsMessage<Error>(HasSubstr("batch_norm: axis 2 is out of range")));
  EXPECT_THAT([&] { build(layer_norm(x, axis(-3))).init(); },
              ThrowsMessage<Error>(HasSubstr("layer_norm: axis -3 is out of range")));
  EXPECT_THAT([&] { batch_norm(x, momentum(1.5)); },
              ThrowsMessage<Error>(HasSubstr("batch_norm: momentum must be in [0, 1], got 1.5")));
  EXPECT_THAT([&] { rms_norm(x, epsilon(-1)); },
              ThrowsMessage<Error>(HasSubstr("rms_norm: epsilon must be >= 0")));
  EXPECT_THAT([&] { build(instance_norm(x)).init(); },
              ThrowsMessage<Error>(HasSubstr("expected an input of rank >= 3")));
  EXPECT_THAT([&] { build(group_norm(x, 2, axis(0))).init(); },
              ThrowsMessage<Error>(HasSubstr("the feature axis must not be the batch axis 0")));
  // One value per channel: no batch variance (PyTorch refuses too).
  auto [init, predict] = build(batch_norm(input("v", {1, 3})));
  EXPECT_THAT(
      [&] {
        predict.train(init(), Tensor::ones({1, 3}), random::key(0));
      },
      ThrowsMessage<Error>(HasSubstr("expected more than 1 value per channel")));
}

// sum(w * norm(x)) differentiated in f64 with respect to x, the parameters and the state.
void check_gradients(const std::function<Model(const Model&)>& make, const Shape& shape, Mode mode,
                     const std::vector<std::string>& param_names,
                     const std::vector<std::string>& state_names) {
  Model m = make(input("x", shape.dims(), DType::f64));
  std::string name = resolve_layers(m).back().name;
  std::int64_t c = shape[shape.rank() - 1];
  std::vector<Tensor> inputs{testing::random_tensor(shape, -1, 1, 1)};
  unsigned seed = 2;
  for (const std::string& p : param_names)
    inputs.push_back(testing::random_tensor({c}, p == "gamma" ? 0.5 : -1, 1.5, seed++));
  for (const std::string& p : state_names)
    inputs.push_back(testing::random_tensor({c}, p == "running_var" ? 0.5 : -1, 2, seed++));
  inputs.push_back(testing::random_tensor(shape, -1, 1, 99));  // output weights
  std::vector<bool> check(inputs.size(), true);
  check.back() = false;
  testing::GradCheckOptions options;
  options.check = check;
  testing::expect_gradients_match(
      [&](const std::vector<Expr>& in) {
        ExprParamMap params, state;
        std::size_t k = 1;
        for (const std::string& p : param_names) params[name][p] = in[k++];
        for (const std::string& p : state_names) state[name][p] = in[k++];
        Expr y = apply(m, params, state, {{"x", in[0]}}, mode).output;
        return sum(y * in.back());
      },
      inputs, options);
}

TEST(Norms, GradientsMatchFiniteDifferences) {
  const std::vector<std::string> affine = {"gamma", "beta"},
                                 running = {"running_mean", "running_var"};
  for (Mode mode : {Mode::train, Mode::inference}) {
    SCOPED_TRACE(mode == Mode::train ? "train" : "inference");
    check_gradients([](const Model& x) { return batch_norm(x); }, {4, 3}, mode, affine, running);
    check_gradients([](const Model& x) { return batch_norm(x); }, {2, 2, 3}, mode, affine, running);
    check_gradients([](const Model& x) { return instance_norm(x); }, {2, 3, 2}, mode, affine,
                    running);
    check_gradients([](const Model& x) { return layer_norm(x); }, {3, 4}, mode, affine, {});
    check_gradients([](const Model& x) { return group_norm(x, 2); }, {2, 3, 4}, mode, affine, {});
    check_gradients([](const Model& x) { return rms_norm(x); }, {3, 4}, mode, {"gamma"}, {});
  }
}

}  // namespace
}  // namespace glia
