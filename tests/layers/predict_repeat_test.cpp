// Repeated predict calls on the `cpu` backend, as a serving loop makes them: after the
// first call a signature seen before is a jit cache hit, so these check that values
// follow the state given (never a cached one), that a new batch size or new parameter
// names compile afresh, and that bad input still fails with glia::Error.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/test_util.hpp"
#include "glia/compiler/registry.hpp"
#include "glia/layers.hpp"

namespace glia::testing {
namespace {

bool have_cpu() {
  auto names = backend_names();
  return std::find(names.begin(), names.end(), "cpu") != names.end();
}

// relu(x . W1 + b1) . W2 + b2, by loops over the state's tensors.
Tensor by_hand(const ModelState& s, const Tensor& x) {
  const Tensor& w1 = s.params.at("dense_0").at("kernel");
  const Tensor& b1 = s.params.at("dense_0").at("bias");
  const Tensor& w2 = s.params.at("dense_1").at("kernel");
  const Tensor& b2 = s.params.at("dense_1").at("bias");
  const std::int64_t n = x.shape()[0], k = x.shape()[1], h = w1.shape()[1], o = w2.shape()[1];
  std::vector<float> out(static_cast<std::size_t>(n * o));
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t j = 0; j < o; ++j) {
      double acc = b2.element(j);
      for (std::int64_t q = 0; q < h; ++q) {
        double hidden = b1.element(q);
        for (std::int64_t i = 0; i < k; ++i) hidden += x.element(r * k + i) * w1.element(i * h + q);
        acc += std::max(hidden, 0.0) * w2.element(q * o + j);
      }
      out[static_cast<std::size_t>(r * o + j)] = static_cast<float>(acc);
    }
  return Tensor::from<float>(out, Shape{n, o});
}

Tensor ramp(std::int64_t n, std::int64_t k, float scale) {
  std::vector<float> v(static_cast<std::size_t>(n * k));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = scale * (float(i % 7) - 3.0f);
  return Tensor::from<float>(v, Shape{n, k});
}

TEST(PredictRepeat, FollowsStateAndSignature) {
  if (!have_cpu()) GTEST_SKIP() << "glia was built without oneDNN";
  Model x = input("x", {-1, 6});
  Model m = dense(dense(x, 5, {.activation = "relu"}), 3);
  auto [init, predict] = build(m, {.backend = "cpu"});
  ModelState a = init(0), b = init(1);
  Tensor x2 = ramp(2, 6, 0.25f), x5 = ramp(5, 6, -0.5f);
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    EXPECT_TRUE(allclose(predict(a, x2), by_hand(a, x2), 1e-5, 1e-5));
    EXPECT_TRUE(allclose(predict(b, x2), by_hand(b, x2), 1e-5, 1e-5));  // other values
    EXPECT_TRUE(allclose(predict(a, x5), by_hand(a, x5), 1e-5, 1e-5));  // other batch
  }
  // Values changed in place between calls are read, not remembered.
  a.params["dense_1"]["bias"] = Tensor::from<float>({10.0f, -10.0f, 0.5f});
  EXPECT_TRUE(allclose(predict(a, x2), by_hand(a, x2), 1e-5, 1e-5));
  // Wrong features, after the signature was seen: the same error as on a first call.
  EXPECT_THROW(predict(a, ramp(2, 7, 1.0f)), Error);
  EXPECT_THROW(predict(a, Tensor()), Error);
  EXPECT_TRUE(allclose(predict(a, x2), by_hand(a, x2), 1e-5, 1e-5));
}

TEST(PredictRepeat, OtherParameterNamesAreNotTakenForTheCachedOnes) {
  if (!have_cpu()) GTEST_SKIP() << "glia was built without oneDNN";
  Model x = input("x", {-1, 6});
  Model m = dense(dense(x, 5, {.activation = "relu"}), 3);
  auto [init, predict] = build(m, {.backend = "cpu"});
  ModelState s = init(0);
  Tensor x2 = ramp(2, 6, 0.25f);
  Tensor want = by_hand(s, x2);
  EXPECT_TRUE(allclose(predict(s, x2), want, 1e-5, 1e-5));
  // A renamed layer: same leaf types, other names; the model finds no "dense_1".
  ModelState renamed = s;
  renamed.params["other"] = renamed.params["dense_1"];
  renamed.params.erase("dense_1");
  EXPECT_THROW(predict(renamed, x2), Error);
  EXPECT_TRUE(allclose(predict(s, x2), want, 1e-5, 1e-5));
}

}  // namespace
}  // namespace glia::testing
