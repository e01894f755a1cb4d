// CTC through the training loop: losses::ctc reads the lengths packed with the labels
// (ctc_targets), equals the four-argument loss on the same values, rejects bad packing, and
// trains an lstm on sequences of variable length until its greedy decoding spells the
// labels.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "autograd/gradcheck.hpp"
#include "glia/layers.hpp"
#include "glia/optim/loop.hpp"
#include "glia/optim/losses.hpp"
#include "glia/optim/optimizers.hpp"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace glia {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

Tensor i64s(const std::vector<std::int64_t>& v, const Shape& s) { return Tensor::from(v, s); }

TEST(CtcLoss, PackedTargetsGiveTheFourArgumentLoss) {
  Tensor labels = i64s({1, 2, 2, 3, 1, 0}, Shape{2, 3});
  Tensor in = i64s({7, 5}, Shape{2}), len = i64s({3, 2}, Shape{2});
  Tensor packed = losses::ctc_targets(in, len, labels);
  EXPECT_EQ(packed.to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{7, 3, 1, 2, 2, 5, 2, 3, 1, 0}));
  Tensor logits = testing::random_tensor({2, 7, 4}, -2, 1, 31);
  auto run = [&](const std::function<Expr(const std::vector<Expr>&)>& fn) {
    Graph g = trace([&](const std::vector<Expr>& x) { return std::vector<Expr>{fn(x)}; },
                    {packed.type(), logits.type(), labels.type(), in.type(), len.type()});
    return interpret(g, std::vector<Tensor>{packed, logits, labels, in, len})[0];
  };
  for (losses::Reduction r : {losses::Reduction::none, losses::Reduction::mean}) {
    Tensor a = run([&](const std::vector<Expr>& x) {
      return losses::ctc(x[0], log_softmax(x[1]), {.reduction = r});
    });
    Tensor b = run([&](const std::vector<Expr>& x) {
      return losses::connectionist_temporal_classification(x[2], log_softmax(x[1]), x[3], x[4],
                                                           {.reduction = r});
    });
    EXPECT_TRUE(equal(a, b)) << a << "\n" << b;
  }
}

TEST(CtcLoss, BadPackingIsAnError) {
  Tensor len = i64s({1, 1}, Shape{2});
  EXPECT_THAT(
      [&] {
        losses::ctc_targets(len, len, i64s({1, 2, 3}, Shape{3, 1}));
      },
      ThrowsMessage<Error>(HasSubstr("need one entry per row of labels")));
  EXPECT_THAT(
      [&] {
        losses::ctc_targets(len.cast(DType::f32), len, i64s({1, 2}, Shape{2, 1}));
      },
      ThrowsMessage<Error>(HasSubstr("input_lengths f32[2] must be an integer tensor")));
  EXPECT_THAT(
      [] {
        trace([](const std::vector<Expr>& x) { return std::vector<Expr>{losses::ctc(x[0], x[1])}; },
              {{DType::i64, {2, 1}}, {DType::f32, {2, 3, 4}}});
      },
      ThrowsMessage<Error>(HasSubstr("ctc: y_true i64[2][1] must be integer [batch, 2 + ")));
}

// Sequences of 6 to 8 steps (zero rows past their length) spelling 1 or 2 labels from
// {1, 2, 3}, each label shown for two steps and followed by a blank step (class 0).
struct Sequences {
  Tensor x, targets;
  std::vector<std::vector<std::int64_t>> labels;
  std::vector<std::int64_t> lengths;
};

Sequences make_sequences(std::int64_t n, std::int64_t T, std::int64_t classes) {
  Sequences s;
  std::vector<float> x(static_cast<std::size_t>(n * T * classes), 0.0f);
  std::vector<std::int64_t> in, len, lab;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t length = 6 + i % 3, count = 1 + (i / 3) % 2;
    std::vector<std::int64_t> labels, align;
    for (std::int64_t k = 0; k < count; ++k) {
      labels.push_back(1 + (i * 7 + k * 5) % (classes - 1));
      align.insert(align.end(), {labels.back(), labels.back(), 0});
    }
    align.resize(static_cast<std::size_t>(length), 0);
    for (std::int64_t t = 0; t < length; ++t)
      x[static_cast<std::size_t>((i * T + t) * classes + align[static_cast<std::size_t>(t)])] = 1;
    in.push_back(length);
    len.push_back(count);
    for (std::int64_t k = 0; k < 2; ++k)
      lab.push_back(k < count ? labels[static_cast<std::size_t>(k)] : 0);
    s.labels.push_back(labels);
    s.lengths.push_back(length);
  }
  s.x = Tensor::from(x, Shape{n, T, classes});
  s.targets = losses::ctc_targets(i64s(in, Shape{n}), i64s(len, Shape{n}), i64s(lab, Shape{n, 2}));
  return s;
}

// Best path: the most likely class each step within the length, repeats merged, blanks out.
std::vector<std::int64_t> greedy(const Tensor& log_probs, std::int64_t n, std::int64_t length) {
  const std::int64_t T = log_probs.shape()[1], C = log_probs.shape()[2];
  std::vector<float> p = log_probs.to_vector<float>();
  std::vector<std::int64_t> out;
  std::int64_t previous = 0;
  for (std::int64_t t = 0; t < length; ++t) {
    const float* row = p.data() + (n * T + t) * C;
    std::int64_t best = std::max_element(row, row + C) - row;
    if (best != 0 && best != previous) out.push_back(best);
    previous = best;
  }
  return out;
}

TEST(CtcLoss, TrainsAnLstmThroughTheLoop) {
  const std::int64_t n = 48, T = 8, classes = 4;
  Sequences data = make_sequences(n, T, classes);
  Model x = input("x", {-1, T, classes});
  Model model = dense(lstm(x, 16), classes, {.activation = "log_softmax"});
  Loop loop = trainer(model, losses::ctc, optimizers::adam(2e-2), {.progress = ProgressMode::off});
  LoopState s =
      loop.run(Batches({.x = data.x, .y = data.targets}, {.batch_size = 16}), {.epochs = 20});
  const double first = s.history.front().at("loss"), last = s.history.back().at("loss");
  EXPECT_LT(last, 0.1 * first) << "first epoch " << first << ", last " << last;
  Tensor log_probs = build(model).predict(s.train.model, data.x);
  int right = 0;
  for (std::int64_t i = 0; i < n; ++i)
    right += greedy(log_probs, i, data.lengths[static_cast<std::size_t>(i)]) ==
             data.labels[static_cast<std::size_t>(i)];
  EXPECT_EQ(right, n) << "greedy decoding spelled " << right << " of " << n;
}

}  // namespace
}  // namespace glia
