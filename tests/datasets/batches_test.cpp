// Batches and BatchIterator: batch sizes, the last partial batch and drop_last, seeded
// shuffling (deterministic, a permutation, uniform), prefetch giving the same batches as
// none, early destruction, moving, zero-size data and errors from the batch function.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <numeric>
#include <thread>

#include "batch_iterator.hpp"
#include "datasets/batch_util.hpp"
#include "glia/datasets/dataset.hpp"

namespace glia {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

std::vector<Batch> all_batches(const Batches& batches, std::int64_t epoch) {
  std::vector<Batch> out;
  for (BatchIterator it = batches.epoch(epoch); std::optional<Batch> b = it.next();)
    out.push_back(std::move(*b));
  return out;
}

// The example ids of an epoch, in order, after checking each x row matches its id.
std::vector<std::int64_t> order_of(const std::vector<Batch>& batches) {
  std::vector<std::int64_t> ids;
  for (const Batch& b : batches) {
    std::vector<std::int64_t> y = b.y.to_vector<std::int64_t>();
    std::vector<double> x = b.x.to_vector<double>();
    EXPECT_EQ(x.size(), 2 * y.size());
    for (std::size_t k = 0; k < y.size(); ++k) {
      EXPECT_EQ(x[2 * k], 2.0 * static_cast<double>(y[k]));
      EXPECT_EQ(x[2 * k + 1], 2.0 * static_cast<double>(y[k]) + 1);
    }
    ids.insert(ids.end(), y.begin(), y.end());
  }
  return ids;
}

std::vector<std::int64_t> sizes_of(const std::vector<Batch>& batches) {
  std::vector<std::int64_t> out;
  for (const Batch& b : batches) out.push_back(b.x.shape()[0]);
  return out;
}

std::vector<std::int64_t> range(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(Batches, SizesLastPartialBatchAndDropLast) {
  for (bool prefetch : {false, true}) {
    SCOPED_TRACE(prefetch ? "prefetch" : "no prefetch");
    Batches b(counting_dataset(10), {.batch_size = 4, .prefetch = prefetch});
    EXPECT_EQ(b.batches_per_epoch(), 3);
    std::vector<Batch> epoch = all_batches(b, 0);
    EXPECT_EQ(sizes_of(epoch), (std::vector<std::int64_t>{4, 4, 2}));
    EXPECT_EQ(order_of(epoch), range(10));
    ASSERT_EQ(epoch.size(), 3U);
    EXPECT_EQ(epoch[2].x.type(), (TensorType{f32, {2, 2}}));
    EXPECT_EQ(epoch[2].y.type(), (TensorType{i64, {2}}));
    EXPECT_EQ(epoch[2].x.to_vector<float>(), (std::vector<float>{16, 17, 18, 19}));

    Batches dropped(counting_dataset(10),
                    {.batch_size = 4, .drop_last = true, .prefetch = prefetch});
    EXPECT_EQ(dropped.batches_per_epoch(), 2);
    EXPECT_EQ(sizes_of(all_batches(dropped, 0)), (std::vector<std::int64_t>{4, 4}));
    Batches exact(counting_dataset(10), {.batch_size = 5, .drop_last = true, .prefetch = prefetch});
    EXPECT_EQ(sizes_of(all_batches(exact, 0)), (std::vector<std::int64_t>{5, 5}));
    Batches big(counting_dataset(10), {.batch_size = 32, .prefetch = prefetch});
    EXPECT_EQ(sizes_of(all_batches(big, 0)), (std::vector<std::int64_t>{10}));
    Batches none(counting_dataset(10), {.batch_size = 32, .drop_last = true, .prefetch = prefetch});
    EXPECT_EQ(none.batches_per_epoch(), 0);
    EXPECT_TRUE(all_batches(none, 0).empty());
  }
}

TEST(Batches, GathersRowsOfAnyDtype) {
  // u8 images [n][2][2] whose pixels all equal 3 * id, and bool / f16 targets.
  const std::int64_t n = 7;
  std::vector<std::uint8_t> pixels;
  std::vector<bool> odd;
  std::vector<Half> halves;
  for (std::int64_t i = 0; i < n; ++i) {
    for (int k = 0; k < 4; ++k) pixels.push_back(static_cast<std::uint8_t>(3 * i));
    odd.push_back(i % 2 == 1);
    halves.push_back(Half(static_cast<float>(i) + 0.5F));
  }
  Tensor x = Tensor::from<std::uint8_t>(pixels, Shape{n, 2, 2});
  for (const Tensor& y : {Tensor::from<bool>(odd), Tensor::from<Half>(halves)}) {
    SCOPED_TRACE(y.type().to_string());
    Batches b({x, y}, {.batch_size = 3, .shuffle = true, .seed = 11});
    std::int64_t seen = 0;
    for (const Batch& batch : all_batches(b, 0)) {
      EXPECT_EQ(batch.x.dtype(), u8);
      EXPECT_EQ(batch.y.dtype(), y.dtype());
      std::vector<double> xs = batch.x.to_vector<double>(), ys = batch.y.to_vector<double>();
      for (std::size_t k = 0; k < ys.size(); ++k) {
        const double id = xs[4 * k] / 3;
        for (int p = 1; p < 4; ++p) EXPECT_EQ(xs[4 * k + static_cast<std::size_t>(p)], 3 * id);
        EXPECT_EQ(ys[k], y.dtype() == DType::boolean ? std::fmod(id, 2.0) : id + 0.5);
      }
      seen += batch.x.shape()[0];
    }
    EXPECT_EQ(seen, n);
  }
}

TEST(Batches, ShuffleIsDeterministicAndAPermutationPerEpoch) {
  const std::int64_t n = 100;
  Batches a(counting_dataset(n), {.batch_size = 8, .shuffle = true, .seed = 42});
  Batches again(counting_dataset(n),
                {.batch_size = 8, .shuffle = true, .seed = 42, .prefetch = false});
  Batches other_seed(counting_dataset(n), {.batch_size = 8, .shuffle = true, .seed = 43});
  std::vector<std::vector<std::int64_t>> orders;
  for (std::int64_t epoch = 0; epoch < 4; ++epoch) {
    std::vector<std::int64_t> order = order_of(all_batches(a, epoch));
    EXPECT_EQ(order, order_of(all_batches(a, epoch))) << "epoch " << epoch << " twice";
    EXPECT_EQ(order, order_of(all_batches(again, epoch))) << "another Batches, same seed";
    EXPECT_NE(order, order_of(all_batches(other_seed, epoch))) << "another seed";
    EXPECT_NE(order, range(n)) << "shuffled";
    std::vector<std::int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, range(n)) << "every example exactly once in epoch " << epoch;
    for (const auto& earlier : orders) EXPECT_NE(order, earlier) << "epochs differ";
    orders.push_back(order);
  }
  // drop_last drops the tail of the shuffled order: 96 distinct examples.
  Batches dropped(counting_dataset(n),
                  {.batch_size = 8, .shuffle = true, .seed = 42, .drop_last = true});
  std::vector<std::int64_t> order = order_of(all_batches(dropped, 1));
  EXPECT_EQ(order, std::vector<std::int64_t>(orders[1].begin(), orders[1].begin() + 96));
}

TEST(Batches, ShuffleDrawsEveryPermutationEquallyOften) {
  // 6,000 epochs of 3 examples: each of the 6 orders about 1,000 times (sd ~29). A biased
  // shuffle (j drawn from the whole range, or Sattolo's j < i) fails this by far.
  Batches b(counting_dataset(3), {.batch_size = 3, .shuffle = true, .seed = 7, .prefetch = false});
  std::map<std::vector<std::int64_t>, int> counts;
  for (std::int64_t epoch = 0; epoch < 6000; ++epoch) {
    BatchIterator it = b.epoch(epoch);
    counts[it.next()->y.to_vector<std::int64_t>()]++;
  }
  EXPECT_EQ(counts.size(), 6U);
  for (const auto& [order, count] : counts) {
    EXPECT_GT(count, 850);
    EXPECT_LT(count, 1150);
  }
}

TEST(Batches, PrefetchGivesTheSameBatchesAsNone) {
  BatchOptions opts{.batch_size = 7, .shuffle = true, .seed = 3, .prefetch = false};
  Batches plain(counting_dataset(50), opts);
  opts.prefetch = true;
  Batches prefetched(counting_dataset(50), opts);
  for (std::int64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<Batch> a = all_batches(plain, epoch), b = all_batches(prefetched, epoch);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_TRUE(equal(a[i].x, b[i].x));
      EXPECT_TRUE(equal(a[i].y, b[i].y));
    }
  }
}

TEST(Batches, IteratorsStopCleanlyMidEpochAndMove) {
  Batches b(counting_dataset(1000), {.batch_size = 2, .shuffle = true});
  for (int round = 0; round < 50; ++round) {
    BatchIterator untouched = b.epoch(round);  // destroyed before any next()
    BatchIterator it = b.epoch(round);
    ASSERT_TRUE(it.next().has_value());
  }
  // The iterator keeps its data alive: the Batches may go first.
  BatchIterator it = Batches(counting_dataset(5), {.batch_size = 2}).epoch(0);
  ASSERT_TRUE(it.next().has_value());
  BatchIterator moved = std::move(it);
  EXPECT_EQ(moved.next()->y.to_vector<std::int64_t>(), (std::vector<std::int64_t>{2, 3}));
  EXPECT_THAT([&] { it.next(); }, ThrowsMessage<Error>(HasSubstr("was moved from")));
  moved = b.epoch(0);  // the old iterator's worker is stopped and joined here
  EXPECT_EQ(moved.next()->y.shape()[0], 2);
}

TEST(Batches, ZeroSizeDataset) {
  for (bool prefetch : {false, true}) {
    Batches b({Tensor(f32, Shape{0, 3}), Tensor(u8, Shape{0})},
              {.batch_size = 4, .shuffle = true, .prefetch = prefetch});
    EXPECT_EQ(b.batches_per_epoch(), 0);
    BatchIterator it = b.epoch(0);
    EXPECT_FALSE(it.next().has_value());
    EXPECT_FALSE(it.next().has_value());
  }
}

TEST(Batches, RejectsBadOptionsAndData) {
  Dataset d = counting_dataset(4);
  EXPECT_THAT([&] { Batches(d, {.batch_size = 0}); },
              ThrowsMessage<Error>(HasSubstr("batch_size must be positive, got 0")));
  EXPECT_THAT([&] { Batches(d, {.batch_size = -3}); }, ThrowsMessage<Error>(HasSubstr("got -3")));
  EXPECT_THAT(
      [&] {
        Batches({d.x, Tensor(i64, Shape{5})});
      },
      ThrowsMessage<Error>(HasSubstr("x has 4 examples (f32[4][2]) but y has 5 (i64[5])")));
  EXPECT_THAT(
      [&] {
        Batches({Tensor(), d.y});
      },
      ThrowsMessage<Error>(HasSubstr("the dataset's x is an undefined tensor")));
  EXPECT_THAT(
      [&] {
        Batches({d.x, Tensor::scalar(1)});
      },
      ThrowsMessage<Error>(HasSubstr("need an examples axis (rank >= 1)")));
  EXPECT_THAT([&] { Batches(d).epoch(-1); },
              ThrowsMessage<Error>(HasSubstr("the epoch must be >= 0, got -1")));
}

// ---- The iterator itself, driven by a batch function ----------------------------------

Batch numbered(std::int64_t i) { return {Tensor::scalar(static_cast<double>(i)), Tensor()}; }

TEST(BatchIterator, ErrorsFromTheBatchFunctionComeOutOfNextInOrder) {
  for (bool prefetch : {false, true}) {
    SCOPED_TRACE(prefetch ? "prefetch" : "no prefetch");
    BatchIterator it(std::make_unique<BatchIterator::Impl>(
        5,
        [](std::int64_t i) {
          check(i != 2, "batch ", i, " is broken");
          return numbered(i);
        },
        prefetch));
    EXPECT_EQ(it.next()->x.item<int>(), 0);
    EXPECT_EQ(it.next()->x.item<int>(), 1);
    EXPECT_THAT([&] { it.next(); }, ThrowsMessage<Error>(HasSubstr("batch 2 is broken")));
    EXPECT_FALSE(it.next().has_value());  // the epoch ends at the error
  }
}

TEST(BatchIterator, PrefetchStaysABoundedNumberOfBatchesAhead) {
  std::atomic<int> made{0};
  BatchIterator it(std::make_unique<BatchIterator::Impl>(
      100,
      [&](std::int64_t i) {
        ++made;
        return numbered(i);
      },
      true));
  // The worker fills the queue, then must wait for next() to make room.
  const int ahead = static_cast<int>(BatchIterator::Impl::kQueueCapacity);
  while (made.load() < ahead) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(made.load(), ahead);
  EXPECT_EQ(it.next()->x.item<int>(), 0);
  while (made.load() < ahead + 1) std::this_thread::yield();  // room for one more
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(made.load(), ahead + 1);
}

TEST(BatchIterator, DestructionWaitsForABatchInTheMaking) {
  std::atomic<int> made{0};
  {
    BatchIterator it(std::make_unique<BatchIterator::Impl>(
        10,
        [&](std::int64_t i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          ++made;
          return numbered(i);
        },
        true));
    EXPECT_EQ(it.next()->x.item<int>(), 0);
  }
  const int after = made.load();  // the worker is joined: nothing more is made
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(made.load(), after);
  EXPECT_LT(after, 10);
}

}  // namespace
}  // namespace glia
