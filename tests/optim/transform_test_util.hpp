// Test helpers for transformations and optimizers: running one on concrete tensors
// (init and update each traced and compiled with glia::jit), host-side leaf access, and
// comparison with tolerances.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "glia/compiler/jit.hpp"
#include "glia/optim/transform.hpp"

namespace glia::optim_test {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// A transformation bound to concrete tensors: state, init and one update at a time.
class Runner {
  using InitFn = std::function<std::tuple<OptState, ExprParamMap>(const ExprParamMap&)>;
  using UpdateFn = std::function<std::tuple<ExprParamMap, OptState>(
      const ExprParamMap&, const OptState&, const ExprParamMap&)>;
  using StepFn = std::function<std::tuple<ExprParamMap, OptState>(
      const ExprParamMap&, const ExprParamMap&, const OptState&)>;

 public:
  explicit Runner(Transformation t)
      : init_(InitFn([t](const ExprParamMap& p) {
                // The params ride along so that a stateless init still has an output.
                return std::make_tuple(t.init(p), p);
              }),
              {.name = "init"}),
        update_(UpdateFn([t](const ExprParamMap& g, const OptState& s, const ExprParamMap& p) {
                  auto [u, next] = t.update(g, s, p);
                  return std::make_tuple(u, next);
                }),
                {.name = "update"}),
        step_(StepFn([t](const ExprParamMap& p, const ExprParamMap& g, const OptState& s) {
                auto [u, next] = t.update(g, s, p);
                return std::make_tuple(apply_updates(p, u), next);
              }),
              {.name = "step"}) {}

  TensorOptState init(const ParamMap& params) const { return std::get<0>(init_(params)); }
  // (updates, new state).
  std::tuple<ParamMap, TensorOptState> update(const ParamMap& grads, const TensorOptState& state,
                                              const ParamMap& params) const {
    return update_(grads, state, params);
  }
  // (params + updates, new state), apply_updates in the same graph.
  std::tuple<ParamMap, TensorOptState> step(const ParamMap& params, const ParamMap& grads,
                                            const TensorOptState& state) const {
    return step_(params, grads, state);
  }

 private:
  Jitted<InitFn> init_;
  Jitted<UpdateFn> update_;
  Jitted<StepFn> step_;
};

// The parameters after each step (apply_updates in the traced step), from `params`.
inline std::vector<ParamMap> trajectory(const Transformation& t, ParamMap params,
                                        const std::vector<ParamMap>& grads,
                                        TensorOptState* final_state = nullptr) {
  Runner runner(t);
  TensorOptState state = runner.init(params);
  std::vector<ParamMap> out;
  for (const ParamMap& g : grads) {
    auto [next_params, next_state] = runner.step(params, g, state);
    params = std::move(next_params);
    state = std::move(next_state);
    out.push_back(params);
  }
  if (final_state) *final_state = state;
  return out;
}

// One-layer tree {"dense": {"kernel": w, "bias": b}}.
inline ParamMap dense_tree(const Tensor& w, const Tensor& b) {
  return ParamMap{{"dense", {{"kernel", w}, {"bias", b}}}};
}

inline std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

// |actual - expected| <= atol + rtol * |expected| elementwise, with a message naming `what`.
inline void expect_close(const std::vector<double>& actual, const std::vector<double>& expected,
                         double rtol, double atol, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], atol + rtol * std::abs(expected[i]))
        << what << " element " << i;
}
inline void expect_close(const Tensor& actual, const std::vector<double>& expected, double rtol,
                         double atol, const std::string& what) {
  expect_close(values(actual), expected, rtol, atol, what);
}

}  // namespace glia::optim_test
