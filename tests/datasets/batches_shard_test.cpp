// Batches cut into shards for data-parallel training: each global batch of one epoch order
// split into contiguous shares, the shares' union that order, a last batch too small for
// every shard dropped, and bad shard options refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "datasets/batch_util.hpp"

namespace glia {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

std::vector<std::vector<std::int64_t>> batches_of(const Batches& b, std::int64_t epoch,
                                                  std::vector<std::int64_t>* global = nullptr) {
  std::vector<std::vector<std::int64_t>> out;
  for (BatchIterator it = b.epoch(epoch); std::optional<Batch> batch = it.next();) {
    out.push_back(batch->y.to_vector<std::int64_t>());
    std::vector<float> x = batch->x.to_vector<float>();
    for (std::size_t i = 0; i < out.back().size(); ++i)
      EXPECT_EQ(x[2 * i], 2.0f * float(out.back()[i]));  // the rows travel together
    if (global) global->push_back(batch->global_size);
  }
  return out;
}

TEST(BatchesShards, SharesOfEachBatchMakeTheOneProcessOrder) {
  // 23 examples in batches of 8: 8, 8, 7; three shards get 2/3/3, 2/3/3 and 2/2/3.
  Dataset d = counting_dataset(23);
  BatchOptions o{.batch_size = 8, .shuffle = true, .seed = 5};
  std::vector<std::vector<std::int64_t>> whole = batches_of(Batches(d, o), 2);
  std::vector<std::vector<std::vector<std::int64_t>>> parts;
  std::vector<std::int64_t> global;
  for (std::int64_t r = 0; r < 3; ++r) {
    BatchOptions s = o;
    s.shard = r;
    s.shards = 3;
    Batches sharded(d, s);
    EXPECT_EQ(sharded.batches_per_epoch(), 3);
    parts.push_back(batches_of(sharded, 2, r == 0 ? &global : nullptr));
  }
  EXPECT_EQ(global, (std::vector<std::int64_t>{8, 8, 7}));
  const std::vector<std::vector<std::size_t>> sizes = {{2, 3, 3}, {2, 3, 3}, {2, 2, 3}};
  ASSERT_EQ(whole.size(), 3u);
  for (std::size_t b = 0; b < 3; ++b) {
    std::vector<std::int64_t> joined;
    for (std::size_t r = 0; r < 3; ++r) {
      ASSERT_EQ(parts[r].size(), 3u);
      EXPECT_EQ(parts[r][b].size(), sizes[b][r]) << "batch " << b << " shard " << r;
      joined.insert(joined.end(), parts[r][b].begin(), parts[r][b].end());
    }
    EXPECT_EQ(joined, whole[b]);
  }
}

TEST(BatchesShards, ALastBatchTooSmallForEveryShardIsDropped) {
  // 17 in batches of 8 over 2 shards: the last batch of 1 example is dropped...
  Batches a(counting_dataset(17), {.batch_size = 8, .shard = 1, .shards = 2});
  EXPECT_EQ(a.batches_per_epoch(), 2);
  EXPECT_EQ(batches_of(a, 0).size(), 2u);
  // ... one of 2 is kept, an example each.
  Batches b(counting_dataset(18), {.batch_size = 8, .shard = 1, .shards = 2});
  std::vector<std::vector<std::int64_t>> got = batches_of(b, 0);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got.back(), (std::vector<std::int64_t>{17}));
  // Unsharded, a last batch of one example stays.
  EXPECT_EQ(Batches(counting_dataset(17), {.batch_size = 8}).batches_per_epoch(), 3);
  EXPECT_EQ(Batches(counting_dataset(17), {.batch_size = 8}).epoch(0).next()->global_size, 0);
}

TEST(BatchesShards, BadShardOptionsAreRefused) {
  Dataset d = counting_dataset(10);
  EXPECT_THAT([&] { Batches(d, {.batch_size = 4, .shard = 2, .shards = 2}); },
              ThrowsMessage<Error>(HasSubstr("shard 2 is not in [0, 2)")));
  EXPECT_THAT([&] { Batches(d, {.batch_size = 4, .shard = -1, .shards = 2}); },
              ThrowsMessage<Error>(HasSubstr("shard -1 is not in [0, 2)")));
  EXPECT_THAT([&] { Batches(d, {.batch_size = 4, .shards = 0}); },
              ThrowsMessage<Error>(HasSubstr("shards must be >= 1")));
  EXPECT_THAT([&] { Batches(d, {.batch_size = 2, .shards = 3}); },
              ThrowsMessage<Error>(HasSubstr("3 shards of a batch of 2 would leave some empty")));
}

}  // namespace
}  // namespace glia
