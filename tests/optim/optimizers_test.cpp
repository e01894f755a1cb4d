// The optimizers: parameter trajectories against PyTorch's optimizers on the same
// gradients (tests/optim/golden, written by generate.py there), closed forms written here
// for those PyTorch lacks (AdaBelief, LAMB, Yogi, noisy SGD), schedules as learning rates,
// and hyperparameter errors naming the optimizer.
#include <cmath>
#include <functional>

#include "expect_error.hpp"
#include "glia/optim/optimizers.hpp"
#include "glia/optim/schedules.hpp"
#include "golden_fixture.hpp"
#include "optim/transform_test_util.hpp"

namespace glia {
namespace {

using ::glia::testing::expect_error;

using namespace optim_test;

// The golden problem: initial w [3, 2], b [2] and the gradient maps, in `dtype`.
struct Problem {
  ParamMap params;
  std::vector<ParamMap> grads;
};

Problem load_problem(DType dtype, std::size_t steps = 10) {
  golden::Fixture f = golden::load_fixture("problem");
  auto get = [&](const std::string& name) { return golden::tensor(f, name).cast(dtype); };
  Problem p{dense_tree(get("w.0"), get("b.0")), {}};
  for (std::size_t k = 0; k < steps; ++k)
    p.grads.push_back(dense_tree(get(cat("grad.", k, ".w")), get(cat("grad.", k, ".b"))));
  return p;
}

struct GoldenCase {
  std::string name;  // the fixture
  std::function<Transformation()> make;
  double rtol64 = 1e-10;  // f64 run; larger where PyTorch places eps differently
  double atol64 = 1e-12;
};

void PrintTo(const GoldenCase& c, std::ostream* out) { *out << c.name; }

class GoldenTrajectory : public ::testing::TestWithParam<GoldenCase> {};

void check_trajectory(const GoldenCase& c, DType dtype, double rtol, double atol) {
  Problem p = load_problem(dtype);
  golden::Fixture want = golden::load_fixture(c.name);
  std::vector<ParamMap> got = trajectory(c.make(), p.params, p.grads);
  ASSERT_EQ(got.size(), 10u);
  for (std::size_t k = 0; k < got.size(); ++k) {
    const Tensor& w = got[k].at("dense").at("kernel");
    const Tensor& b = got[k].at("dense").at("bias");
    EXPECT_EQ(w.dtype(), dtype);
    expect_close(w, values(golden::tensor(want, cat("w.", k + 1))), rtol, atol,
                 cat(c.name, " w after step ", k + 1));
    expect_close(b, values(golden::tensor(want, cat("b.", k + 1))), rtol, atol,
                 cat(c.name, " b after step ", k + 1));
  }
}

TEST_P(GoldenTrajectory, F64MatchesPyTorch) {
  check_trajectory(GetParam(), DType::f64, GetParam().rtol64, GetParam().atol64);
}

TEST_P(GoldenTrajectory, F32MatchesPyTorch) {
  check_trajectory(GetParam(), DType::f32, 2e-5, 2e-6);
}

// PyTorch's hyperparameters (generate.py) mapped onto Optax's parameterisation.
INSTANTIATE_TEST_SUITE_P(
    Optimizers, GoldenTrajectory,
    ::testing::Values(
        GoldenCase{"sgd", [] { return optimizers::sgd(0.1); }},
        GoldenCase{"sgd_momentum", [] { return optimizers::sgd(0.1, 0.9); }},
        GoldenCase{"sgd_nesterov", [] { return optimizers::sgd(0.1, 0.9, true); }},
        GoldenCase{"adam", [] { return optimizers::adam(0.01); }},
        GoldenCase{"adam_betas", [] { return optimizers::adam(0.05, 0.8, 0.99, 1e-6); }},
        // AdamW: decay * p joins the Adam direction before -lr: PyTorch's lr * wd * p.
        GoldenCase{"adamw", [] { return optimizers::adamw(0.01, 0.9, 0.999, 1e-8, 0, 0.1); }},
        // eps inside (Optax) vs outside (PyTorch) the square root: ~1e-10 relative here.
        GoldenCase{"adagrad", [] { return optimizers::adagrad(0.1, 0.1, 1e-10); }, 1e-8},
        // RMSProp: sqrt(v + eps) (Optax) vs sqrt(v) + eps (PyTorch) moves these trajectories
        // by up to 3e-7 after 10 steps (a numpy model with Optax's placement reproduces
        // glia's to rounding), far below the motion of ~1e-2 a step.
        GoldenCase{"rmsprop", [] { return optimizers::rmsprop(0.01, 0.9, 1e-8); }, 0, 1e-6},
        GoldenCase{"rmsprop_centered", [] { return optimizers::rmsprop(0.01, 0.9, 1e-8, true); }, 0,
                   1e-6},
        GoldenCase{"rmsprop_momentum",
                   [] { return optimizers::rmsprop(0.01, 0.9, 1e-8, false, 0.5); }, 0, 1e-6},
        GoldenCase{"rmsprop_centered_momentum",
                   [] { return optimizers::rmsprop(0.01, 0.9, 1e-8, true, 0.5); }, 0, 1e-6},
        // PyTorch scales RAdam's eps by sqrt(1 - b2^t): ~1e-8 relative here.
        GoldenCase{"radam", [] { return optimizers::radam(0.01, 0.9, 0.999, 1e-8); }, 1e-7},
        GoldenCase{"radam_b2", [] { return optimizers::radam(0.01, 0.9, 0.9, 1e-8); }, 1e-7}),
    [](const auto& info) { return info.param.name; });

// ---- Closed forms (optimizers PyTorch does not have) -------------------------------------

// Flat copies of the problem's leaves (kernel, then bias) for host-side reference loops.
struct Leaf {
  std::vector<double> p;
  std::vector<std::vector<double>> g;  // per step
};
std::vector<Leaf> leaves_of(const Problem& pr, std::size_t steps) {
  std::vector<Leaf> out(2);
  const char* names[] = {"kernel", "bias"};
  for (int i = 0; i < 2; ++i) {
    out[i].p = values(pr.params.at("dense").at(names[i]));
    for (std::size_t k = 0; k < steps; ++k)
      out[i].g.push_back(values(pr.grads[k].at("dense").at(names[i])));
  }
  return out;
}

// Runs `t` for `steps` steps in f64 and compares both leaves with `reference`, which
// advances the host copy by one step (k counts from 1).
void check_closed_form(const Transformation& t, std::size_t steps,
                       const std::function<void(std::vector<Leaf>&, std::size_t k)>& reference,
                       double rtol = 1e-10) {
  Problem pr = load_problem(DType::f64, steps);
  std::vector<Leaf> host = leaves_of(pr, steps);
  std::vector<ParamMap> got = trajectory(t, pr.params, pr.grads);
  for (std::size_t k = 1; k <= steps; ++k) {
    reference(host, k);
    expect_close(got[k - 1].at("dense").at("kernel"), host[0].p, rtol, 1e-12,
                 cat("kernel, step ", k));
    expect_close(got[k - 1].at("dense").at("bias"), host[1].p, rtol, 1e-12, cat("bias, step ", k));
  }
}

TEST(Adabelief, MatchesClosedForm) {
  const double lr = 0.02, b1 = 0.8, b2 = 0.95, eps = 1e-6, eps_root = 1e-10;
  std::vector<std::vector<double>> m(2), s(2);
  check_closed_form(optimizers::adabelief(lr, b1, b2, eps, eps_root), 3,
                    [&](std::vector<Leaf>& leaves, std::size_t k) {
                      for (int i = 0; i < 2; ++i) {
                        Leaf& L = leaves[i];
                        m[i].resize(L.p.size(), 0.0), s[i].resize(L.p.size(), 0.0);
                        for (std::size_t j = 0; j < L.p.size(); ++j) {
                          double g = L.g[k - 1][j];
                          double err = g - m[i][j];  // against the previous mean
                          m[i][j] = b1 * m[i][j] + (1 - b1) * g;
                          s[i][j] = b2 * s[i][j] + (1 - b2) * err * err + eps_root;
                          double mh = m[i][j] / (1 - std::pow(b1, k));
                          double sh = s[i][j] / (1 - std::pow(b2, k));
                          L.p[j] -= lr * mh / (std::sqrt(sh) + eps);
                        }
                      }
                    });
}

TEST(Yogi, MatchesClosedForm) {
  const double lr = 0.05, b1 = 0.9, b2 = 0.99, eps = 1e-3, init = 1e-6;
  std::vector<std::vector<double>> m(2), v(2);
  check_closed_form(optimizers::yogi(lr, b1, b2, eps, 0.0, init), 3,
                    [&](std::vector<Leaf>& leaves, std::size_t k) {
                      for (int i = 0; i < 2; ++i) {
                        Leaf& L = leaves[i];
                        m[i].resize(L.p.size(), init), v[i].resize(L.p.size(), init);
                        for (std::size_t j = 0; j < L.p.size(); ++j) {
                          double g = L.g[k - 1][j], g2 = g * g;
                          m[i][j] = b1 * m[i][j] + (1 - b1) * g;
                          double d = v[i][j] - g2;
                          v[i][j] -= (1 - b2) * (d > 0 ? 1.0 : d < 0 ? -1.0 : 0.0) * g2;
                          double mh = m[i][j] / (1 - std::pow(b1, k));
                          double vh = v[i][j] / (1 - std::pow(b2, k));
                          L.p[j] -= lr * mh / (std::sqrt(vh) + eps);
                        }
                      }
                    });
}

TEST(Lamb, MatchesClosedForm) {
  const double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-6, decay = 0.01;
  std::vector<std::vector<double>> m(2), v(2);
  check_closed_form(optimizers::lamb(lr, b1, b2, eps, 0.0, decay), 3,
                    [&](std::vector<Leaf>& leaves, std::size_t k) {
                      for (int i = 0; i < 2; ++i) {
                        Leaf& L = leaves[i];
                        m[i].resize(L.p.size(), 0.0), v[i].resize(L.p.size(), 0.0);
                        std::vector<double> u(L.p.size());
                        double pn = 0, un = 0;
                        for (std::size_t j = 0; j < L.p.size(); ++j) {
                          double g = L.g[k - 1][j];
                          m[i][j] = b1 * m[i][j] + (1 - b1) * g;
                          v[i][j] = b2 * v[i][j] + (1 - b2) * g * g;
                          double mh = m[i][j] / (1 - std::pow(b1, k));
                          double vh = v[i][j] / (1 - std::pow(b2, k));
                          u[j] = mh / (std::sqrt(vh) + eps) + decay * L.p[j];
                          pn += L.p[j] * L.p[j], un += u[j] * u[j];
                        }
                        double ratio = std::sqrt(pn) / std::sqrt(un);  // per leaf
                        for (std::size_t j = 0; j < L.p.size(); ++j) L.p[j] -= lr * ratio * u[j];
                      }
                    });
}

TEST(NoisySgd, WithoutNoiseIsSgd) {
  check_closed_form(optimizers::noisy_sgd(0.1, 0.0), 3,
                    [](std::vector<Leaf>& leaves, std::size_t k) {
                      for (Leaf& L : leaves)
                        for (std::size_t j = 0; j < L.p.size(); ++j) L.p[j] -= 0.1 * L.g[k - 1][j];
                    });
}

// Zero gradients on a large leaf: the update is -lr * noise, whose sample variance must be
// lr^2 * eta / (1 + t)^gamma at step t (counting from 0).
TEST(NoisySgd, NoiseHasTheAnnealedVariance) {
  const double lr = 2.0, eta = 0.3, gamma = 0.55;
  const std::int64_t n = 40000;
  ParamMap params{{"l", {{"w", Tensor::zeros({n})}}}};
  ParamMap zero{{"l", {{"w", Tensor::zeros({n})}}}};
  Runner r(optimizers::noisy_sgd(lr, eta, gamma, /*seed=*/7));
  TensorOptState state = r.init(params);
  std::vector<double> previous;
  for (int t = 0; t < 3; ++t) {
    auto [u, next] = r.update(zero, state, params);
    std::vector<double> x = values(u.at("l").at("w"));
    double mean = 0, var = 0;
    for (double v : x) mean += v;
    mean /= n;
    for (double v : x) var += (v - mean) * (v - mean);
    var /= n;
    double want = lr * lr * eta / std::pow(1.0 + t, gamma);
    EXPECT_NEAR(mean, 0.0, 5 * std::sqrt(want / n)) << "step " << t;
    EXPECT_NEAR(var, want, 0.04 * want) << "step " << t;
    if (!previous.empty()) {
      EXPECT_NE(previous, x) << "the noise must change from step to step";
    }
    previous = x;
    state = next;
  }
}

TEST(NoisySgd, SameSeedSameNoiseOtherSeedOther) {
  ParamMap params{{"l", {{"w", Tensor::zeros({8})}}}};
  auto first_update = [&](std::uint64_t seed) {
    Runner r(optimizers::noisy_sgd(1.0, 0.1, 0.55, seed));
    return values(std::get<0>(r.update(params, r.init(params), params)).at("l").at("w"));
  };
  EXPECT_EQ(first_update(3), first_update(3));
  EXPECT_NE(first_update(3), first_update(4));
}

// ---- Learning-rate schedules inside optimizers --------------------------------------------

TEST(ScheduledLearningRate, ConstantScheduleGivesTheGoldenAdam) {
  GoldenCase c{"adam", [] { return optimizers::adam(schedules::constant(0.01)); }};
  check_trajectory(c, DType::f64, 1e-7, 1e-12);  // a schedule's rate is f32
}

TEST(ScheduledLearningRate, SgdFollowsLinearDecay) {
  // lr_k = 0.1 * (1 - k / 4) at count k, 0 from k = 4 on.
  check_closed_form(
      optimizers::sgd(schedules::linear_decay(0.1, 0.0, 4)), 6,
      [](std::vector<Leaf>& leaves, std::size_t k) {
        double lr = 0.1 * std::max(0.0, 1.0 - static_cast<double>(k - 1) / 4.0);
        for (Leaf& L : leaves)
          for (std::size_t j = 0; j < L.p.size(); ++j) L.p[j] -= lr * L.g[k - 1][j];
      },
      1e-6);  // the schedule is computed in f32
}

TEST(ScheduledLearningRate, MomentumWithExponentialDecay) {
  std::vector<std::vector<double>> tr(2);
  check_closed_form(
      optimizers::sgd(schedules::exponential_decay(0.1, 2, 0.5), 0.9), 5,
      [&](std::vector<Leaf>& leaves, std::size_t k) {
        double lr = 0.1 * std::pow(0.5, static_cast<double>(k - 1) / 2.0);
        for (int i = 0; i < 2; ++i) {
          Leaf& L = leaves[i];
          tr[i].resize(L.p.size(), 0.0);
          for (std::size_t j = 0; j < L.p.size(); ++j) {
            tr[i][j] = L.g[k - 1][j] + 0.9 * tr[i][j];
            L.p[j] -= lr * tr[i][j];
          }
        }
      },
      1e-6);
}

TEST(ScheduledLearningRate, TheCountIsKeptInTheState) {
  ParamMap params = dense_tree(Tensor::zeros({3, 2}), Tensor::zeros({2}));
  Runner r(optimizers::adam(schedules::cosine_decay(1e-3, 100)));
  TensorOptState s = r.init(params);
  ASSERT_TRUE(s.count("1/count"));
  EXPECT_EQ(s.at("1/count").dtype(), DType::i64);
  s = std::get<1>(r.update(params, s, params));
  EXPECT_EQ(s.at("1/count").item<std::int64_t>(), 1);
  EXPECT_EQ(s.at("0/count").item<std::int64_t>(), 1);
}

// ---- Errors -----------------------------------------------------------------------------

TEST(OptimizerErrors, BadHyperparametersNameTheOptimizer) {
  expect_error([] { optimizers::sgd(-0.1); },
               "sgd: learning_rate must be a finite number >= 0, got -0.1");
  expect_error([] { optimizers::sgd(0.1, 1.5); }, "sgd: momentum must lie in [0, 1), got 1.5");
  expect_error([] { optimizers::adam(NAN); }, "adam: learning_rate");
  expect_error([] { optimizers::adam(1e-3, 1.0); },
               "adam: scale_by_adam: b1 must lie in [0, 1), got 1");
  expect_error([] { optimizers::adam(1e-3, 0.9, -0.1); }, "adam: scale_by_adam: b2");
  expect_error([] { optimizers::adamw(1e-3, 0.9, 0.999, 1e-8, 0, -1); },
               "adamw: add_decayed_weights: decay must be a finite number >= 0, got -1");
  expect_error([] { optimizers::adabelief(1e-3, 0.9, 0.999, -1e-16); },
               "adabelief: scale_by_belief: eps");
  expect_error([] { optimizers::adagrad(-1); }, "adagrad: learning_rate");
  expect_error([] { optimizers::adagrad(0.1, -0.1); },
               "adagrad: scale_by_rss: initial_accumulator_value");
  expect_error([] { optimizers::lamb(1e-3, 0.9, 2.0); },
               "lamb: scale_by_adam: b2 must lie in [0, 1)");
  expect_error([] { optimizers::noisy_sgd(0.1, -0.01); }, "noisy_sgd: add_noise: eta");
  expect_error([] { optimizers::radam(1e-3, 0.9, 0.999, 1e-8, 0, INFINITY); },
               "radam: scale_by_radam: threshold");
  expect_error([] { optimizers::rmsprop(0.01, 1.0); },
               "rmsprop: scale_by_rms: decay must lie in [0, 1)");
  expect_error([] { optimizers::rmsprop(0.01, 1.0, 1e-8, true); },
               "rmsprop: scale_by_stddev: decay");
  expect_error([] { optimizers::rmsprop(0.01, 0.9, 1e-8, false, -0.5); }, "rmsprop: momentum");
  expect_error([] { optimizers::yogi(0.01, 0.9, 0.999, 1e-3, 0, -1); },
               "yogi: scale_by_yogi: initial_accumulator_value");
}

TEST(OptimizerErrors, MismatchedStateIsAnError) {
  ParamMap params = dense_tree(Tensor::zeros({3, 2}), Tensor::zeros({2}));
  ParamMap other{{"other", {{"w", Tensor::zeros({2})}}}};
  Runner adam(optimizers::adam());
  TensorOptState s = Runner(optimizers::adam()).init(other);
  expect_error([&] { adam.update(params, s, params); }, "no entry 'mu/dense/bias'");
}

}  // namespace
}  // namespace glia
