// What the checkpoint tests share: a temporary folder, a small model with dropout, a
// small synthetic classification set, and bitwise comparisons of saved states.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "glia/datasets.hpp"
#include "glia/layers.hpp"
#include "glia/optim.hpp"

namespace glia::testing {

// A fresh folder under the system's temporary folder, removed with its files at the end.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "glia_ckpt_XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// 6 features -> dense 8 relu -> dropout 0.25 -> dense 3 softmax.
inline Model small_classifier() {
  Model x = input("features", {-1, 6});
  Model h = dense(x, 8, {.activation = "relu"});
  h = dropout(h, {.rate = 0.25});
  return dense(h, 3, {.activation = "softmax"});
}

// `n` examples whose class is the index of the largest of the first three features.
inline Dataset synthetic_classes(std::int64_t n, std::uint32_t seed) {
  std::vector<float> x;
  std::vector<float> y;
  std::uint32_t state = seed * 2654435761u + 1;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
  };
  for (std::int64_t i = 0; i < n; ++i) {
    float f[6];
    for (float& v : f) v = next();
    int best = 0;
    for (int k = 1; k < 3; ++k)
      if (f[k] > f[best]) best = k;
    x.insert(x.end(), f, f + 6);
    for (int k = 0; k < 3; ++k) y.push_back(k == best ? 1.0f : 0.0f);
  }
  return {Tensor::from(x, Shape{n, 6}), Tensor::from(y, Shape{n, 3})};
}

inline Expr cross_entropy(const Expr& y, const Expr& p) {
  return losses::categorical_cross_entropy(y, p);
}
inline Expr accuracy(const Expr& y, const Expr& p) { return metrics::accuracy(y, p); }

inline void expect_same(const ParamMap& a, const ParamMap& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (const auto& [layer, entries] : a) {
    ASSERT_EQ(b.count(layer), 1u) << what << ": " << layer;
    ASSERT_EQ(entries.size(), b.at(layer).size()) << what << ": " << layer;
    for (const auto& [name, t] : entries) {
      ASSERT_EQ(b.at(layer).count(name), 1u) << what << ": " << layer << "/" << name;
      EXPECT_TRUE(equal(t, b.at(layer).at(name))) << what << ": " << layer << "/" << name;
    }
  }
}

inline void expect_same(const TensorOptState& a, const TensorOptState& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [key, t] : a) {
    ASSERT_EQ(b.count(key), 1u) << key;
    EXPECT_TRUE(equal(t, b.at(key))) << "optimizer " << key;
  }
}

// Parameters, model state, optimizer state and counters, bit for bit.
inline void expect_same(const TrainState& a, const TrainState& b) {
  expect_same(a.model.params, b.model.params, "params");
  expect_same(a.model.state, b.model.state, "state");
  expect_same(a.optimizer, b.optimizer);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.lr_scale, b.lr_scale);
  EXPECT_EQ(a.seed, b.seed);
}

}  // namespace glia::testing
