// The transformation API around the transformations: compose (order, state prefixes),
// apply_updates, the tree helpers, learning rates, stable state types across updates (so a
// training step keeps one signature), and hyperparameter errors.
#include "expect_error.hpp"
#include "glia/optim/optimizers.hpp"
#include "glia/optim/schedules.hpp"
#include "glia/optim/transforms.hpp"
#include "optim/transform_test_util.hpp"

namespace glia {
namespace {

using ::glia::testing::expect_error;

using namespace optim_test;
namespace tx = transforms;
using Vec = std::vector<double>;

ParamMap leaf(const Vec& v) { return {{"l", {{"w", Tensor::from(v)}}}}; }

TEST(Compose, AppliesInOrder) {
  ParamMap g = leaf({0.8, -0.3});
  Runner scale_then_clip(compose({tx::scale(2.0), tx::clip(1.0)}));
  Runner clip_then_scale(compose({tx::clip(1.0), tx::scale(2.0)}));
  auto first = std::get<0>(scale_then_clip.update(g, scale_then_clip.init(g), g));
  auto second = std::get<0>(clip_then_scale.update(g, clip_then_scale.init(g), g));
  expect_close(first.at("l").at("w"), {1.0, -0.6}, 1e-15, 0, "scale then clip");
  expect_close(second.at("l").at("w"), {1.6, -0.6}, 1e-15, 0, "clip then scale");
  Runner other(compose({tx::clip(0.5), tx::scale(-2.0), tx::clip(0.7)}));
  expect_close(std::get<0>(other.update(g, other.init(g), g)).at("l").at("w"), {-0.7, 0.6}, 1e-15,
               0, "three members");
}

TEST(Compose, PrefixesStateWithThePosition) {
  ParamMap p = leaf({1.0});
  Runner r(compose(
      {tx::trace(0.5), compose({tx::scale_by_adam(), tx::scale(1.0)}), tx::scale_by_state(3)}));
  TensorOptState s = r.init(p);
  std::vector<std::string> keys;
  for (const auto& [k, v] : s) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"0/trace/l/w", "1/0/count", "1/0/mu/l/w", "1/0/nu/l/w",
                                            "2/scale"}));
  s = std::get<1>(r.update(p, s, p));
  EXPECT_EQ(s.at("1/0/count").item<std::int64_t>(), 1);
  EXPECT_EQ(s.at("0/trace/l/w").item<double>(), 1.0);
}

TEST(Compose, EmptyIsTheIdentity) {
  ParamMap g = leaf({0.25, 4.0});
  Runner r(compose({}));
  expect_close(std::get<0>(r.update(g, r.init(g), g)).at("l").at("w"), {0.25, 4.0}, 0, 0,
               "identity");
}

TEST(ApplyUpdates, AddsLeafByLeafInTheParamsDtype) {
  ParamMap params{{"d", {{"k", Tensor::from(std::vector<float>{1.0f, 2.0f})}}}};
  ParamMap updates{{"d", {{"k", Tensor::from(Vec{0.5, -4.0})}}}};
  auto f = jit([](const ExprParamMap& p, const ExprParamMap& u) { return apply_updates(p, u); });
  ParamMap out = f(params, updates);
  EXPECT_EQ(out.at("d").at("k").dtype(), DType::f32);
  expect_close(out.at("d").at("k"), {1.5, -2.0}, 0, 0, "sum");
}

TEST(ApplyUpdates, DifferentStructuresAreAnError) {
  ParamMap params{{"d", {{"k", Tensor::zeros({2})}}}};
  ParamMap other{{"d", {{"bias", Tensor::zeros({2})}}}};
  auto f = jit([](const ExprParamMap& p, const ExprParamMap& u) { return apply_updates(p, u); });
  expect_error([&] { f(params, other); },
               "apply_updates: the two trees differ in structure: {d/k} vs {d/bias}");
  ParamMap wrong_shape{{"d", {{"k", Tensor::zeros({3})}}}};
  expect_error([&] { f(params, wrong_shape); },
               "apply_updates: a parameter of type f32[2] got an update of type f32[3]");
}

TEST(TreeHelpers, PutAndGetTreeUseLeafPaths) {
  auto f = jit([](const ExprParamMap& p) {
    OptState s;
    put_tree(s, "mu", p);
    put_tree(s, "", p);
    ExprParamMap back = get_tree(s, "mu", p);
    ExprParamMap doubled = tree_map(back, p, [](const Expr& a, const Expr& b) { return a + b; });
    return std::make_tuple(s, tree_map(doubled, [](const Expr& x) { return x * 3.0; }));
  });
  ParamMap p{{"d", {{"k", Tensor::from(Vec{1.0, 2.0})}}}};
  auto [s, tripled] = f(p);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(s.count("mu/d/k") && s.count("d/k"));
  expect_close(tripled.at("d").at("k"), {6.0, 12.0}, 0, 0, "tree_map");
}

TEST(TreeHelpers, MissingEntriesAndMismatchedTreesAreErrors) {
  ParamMap p{{"d", {{"k", Tensor::zeros({2})}}}};
  auto missing = jit([](const ExprParamMap& x) { return get_tree(OptState{}, "nu", x); });
  expect_error([&] { missing(p); }, "no entry 'nu/d/k'");
  auto mismatched = jit([](const ExprParamMap& x) {
    ExprParamMap y{{"e", x.at("d")}};
    return tree_map(x, y, [](const Expr& a, const Expr& b) { return a + b; });
  });
  expect_error([&] { mismatched(p); }, "tree_map: the two trees differ in structure");
}

TEST(LearningRateValue, NumberAndSchedule) {
  LearningRate number(0.25);
  EXPECT_FALSE(number.is_schedule());
  EXPECT_EQ(number.value(), 0.25);
  LearningRate scheduled(schedules::constant(0.5));
  EXPECT_TRUE(scheduled.is_schedule());
  auto at = jit([number, scheduled](const Expr& step) {
    return std::make_tuple(number.at(step), scheduled.at(step));
  });
  auto [a, b] = at(Tensor::scalar(3, DType::i64));
  EXPECT_EQ(a.type(), (TensorType{DType::f32, {}}));
  EXPECT_EQ(a.item<double>(), 0.25);
  EXPECT_EQ(b.item<double>(), 0.5);
  expect_error([] { LearningRate(Schedule{}); }, "LearningRate: the schedule is an empty function");
  LearningRate vector_valued(
      Schedule([](const Expr& s) { return zeros({2}) + cast(s, DType::f32); }));
  auto bad = jit([vector_valued](const Expr& step) { return vector_valued.at(step); });
  expect_error([&] { bad(Tensor::scalar(0, DType::i64)); },
               "a schedule must return a floating-point scalar, got f32[2]");
}

// Every transformation and optimizer keeps its state's types across an update, for f32 and
// f64 parameters (the training step is compiled once and its state updated in place).
TEST(StateTypes, AreStableAcrossUpdates) {
  std::vector<std::pair<std::string, Transformation>> all = {
      {"scale", tx::scale(2)},
      {"scale_by_state", tx::scale_by_state(1)},
      {"scale_by_adam", tx::scale_by_adam()},
      {"scale_by_rss", tx::scale_by_rss()},
      {"scale_by_rms", tx::scale_by_rms()},
      {"scale_by_belief", tx::scale_by_belief()},
      {"scale_by_stddev", tx::scale_by_stddev()},
      {"scale_by_schedule", tx::scale_by_schedule(schedules::cosine_decay(1, 10))},
      {"scale_by_radam", tx::scale_by_radam()},
      {"trace", tx::trace(0.9, true)},
      {"clip", tx::clip(1)},
      {"clip_by_global_norm", tx::clip_by_global_norm(1)},
      {"centralize", tx::centralize()},
      {"add_decayed_weights", tx::add_decayed_weights(0.1)},
      {"scale_by_trust_ratio", tx::scale_by_trust_ratio()},
      {"add_noise", tx::add_noise()},
      {"scale_by_yogi", tx::scale_by_yogi()},
      {"accumulate_gradients", tx::accumulate_gradients(optimizers::adam(), 2)},
      {"sgd", optimizers::sgd(0.1, 0.9)},
      {"adamw", optimizers::adamw()},
      {"adagrad", optimizers::adagrad()},
      {"lamb", optimizers::lamb()},
      {"noisy_sgd", optimizers::noisy_sgd()},
      {"rmsprop", optimizers::rmsprop(0.01, 0.9, 1e-8, true, 0.9)},
      {"yogi", optimizers::yogi()},
      {"adabelief", optimizers::adabelief()},
      {"radam", optimizers::radam()},
  };
  for (DType dtype : {DType::f32, DType::f64}) {
    ParamMap p{
        {"d",
         {{"kernel", Tensor::full({3, 2}, 0.5, dtype)}, {"bias", Tensor::full({2}, -1, dtype)}}}};
    for (const auto& [name, t] : all) {
      SCOPED_TRACE(cat(name, " ", dtype));
      Runner r(t);
      TensorOptState s0 = r.init(p);
      auto [u, s1] = r.update(p, s0, p);
      ASSERT_EQ(s0.size(), s1.size());
      for (const auto& [key, value] : s0) {
        ASSERT_TRUE(s1.count(key)) << key;
        EXPECT_EQ(s1.at(key).type(), value.type()) << key;
        if (key.ends_with("count") || key.ends_with("mini_step")) {
          EXPECT_EQ(value.dtype(), DType::i64) << key;
        } else if (key != "scale" && !key.ends_with("/scale")) {
          EXPECT_EQ(value.dtype(), dtype) << key;
        }
      }
      for (const auto& [layer, leaves] : u)
        for (const auto& [leaf_name, x] : leaves) {
          EXPECT_EQ(x.type(), p.at(layer).at(leaf_name).type()) << layer << "/" << leaf_name;
          for (double v : values(x)) EXPECT_TRUE(std::isfinite(v)) << layer << "/" << leaf_name;
        }
    }
  }
}

TEST(TransformErrors, BadHyperparametersNameTheTransformation) {
  expect_error([] { tx::scale(INFINITY); }, "scale: step must be a finite number");
  expect_error([] { tx::scale_by_state(NAN); }, "scale_by_state: init_value");
  expect_error([] { tx::scale_by_adam(-0.1); }, "scale_by_adam: b1 must lie in [0, 1), got -0.1");
  expect_error([] { tx::scale_by_adam(0.9, 0.999, -1); },
               "scale_by_adam: eps must be a finite number >= 0");
  expect_error([] { tx::scale_by_adam(0.9, 0.999, 1e-8, -1); }, "scale_by_adam: eps_root");
  expect_error([] { tx::scale_by_rss(-1); }, "scale_by_rss: initial_accumulator_value");
  expect_error([] { tx::scale_by_rms(1.0); }, "scale_by_rms: decay must lie in [0, 1), got 1");
  expect_error([] { tx::scale_by_rms(0.9, 1e-8, -2); }, "scale_by_rms: initial_scale");
  expect_error([] { tx::scale_by_belief(0.9, 1.1); }, "scale_by_belief: b2");
  expect_error([] { tx::scale_by_stddev(-0.5); }, "scale_by_stddev: decay");
  expect_error([] { tx::scale_by_schedule(Schedule{}); },
               "scale_by_schedule: the schedule is an empty function");
  expect_error([] { tx::scale_by_radam(0.9, 0.999, 1e-8, 0, NAN); }, "scale_by_radam: threshold");
  expect_error([] { tx::trace(1.0); }, "trace: decay must lie in [0, 1)");
  expect_error([] { tx::clip(-1); }, "clip: max_delta must be a finite number >= 0, got -1");
  expect_error([] { tx::clip_by_global_norm(0); },
               "clip_by_global_norm: max_norm must be a finite number > 0, got 0");
  expect_error([] { tx::add_decayed_weights(-0.1); }, "add_decayed_weights: decay");
  expect_error([] { tx::scale_by_trust_ratio(-1); }, "scale_by_trust_ratio: min_norm");
  expect_error([] { tx::scale_by_trust_ratio(0, 0); }, "scale_by_trust_ratio: trust_coefficient");
  expect_error([] { tx::add_noise(0.01, -1); }, "add_noise: gamma");
  expect_error([] { tx::scale_by_yogi(0.9, 0.999, 1e-3, 0, -1e-6); },
               "scale_by_yogi: initial_accumulator_value");
  expect_error([] { compose({Transformation{}}); },
               "compose: transformation 0 has no init or update function");
}

}  // namespace
}  // namespace glia
