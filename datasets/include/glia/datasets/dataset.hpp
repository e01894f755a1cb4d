// In-memory datasets and the batching iterator: shuffles with a seed, drops or keeps
// the last partial batch, and prepares the next batch on a background thread.
//   glia::Dataset train{images, labels};
//   glia::Batches batches(train, {.batch_size = 32, .shuffle = true, .seed = 0});
//   for (auto it = batches.epoch(0); auto b = it.next();) step(b->x, b->y);
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "glia/core/tensor.hpp"

namespace glia {

// Named tensors: a model's several inputs (by input name) or targets (by output name).
using TensorMap = std::map<std::string, Tensor>;

// Examples along axis 0 of every tensor (all the same length): x and y for a model with
// one input and one output; `inputs` in place of x for several inputs, `targets` in place
// of y for several outputs (outputs()).
//   glia::Dataset pairs{.y = same, .inputs = {{"left", a}, {"right", b}}};
struct Dataset {
  Tensor x, y;
  TensorMap inputs, targets;
  std::int64_t size() const;
};

struct Batch {
  Tensor x, y;
  TensorMap inputs, targets;  // as in Dataset
  std::int64_t size() const;  // examples in the batch
  // A shard's batch (BatchOptions::shards > 1): the examples of the whole batch, over
  // every shard; 0 otherwise (the batch is whole).
  std::int64_t global_size = 0;
};

struct BatchOptions {
  std::int64_t batch_size = 32;
  bool shuffle = false;
  std::uint64_t seed = 0;  // epoch e shuffles with a generator seeded from (seed, e)
  bool drop_last = false;
  // Prepare the next batch on a background thread: worth it where a core idles while a
  // step runs (training on a GPU). Where the step keeps every core busy, as on the cpu
  // backend, that thread takes one from it (MNIST MLP, batch 128, 2 cores: 500 -> 567 us
  // a batch), so batches are gathered in next() unless asked for, as PyTorch's DataLoader
  // does by default.
  bool prefetch = false;
  // Data-parallel training: process `shard` of `shards` takes its contiguous share of every
  // batch of batch_size (the global batch) of the epoch's one order, which every process
  // computes alike; the shares of one batch differ by at most one example. With shards > 1
  // a last batch of fewer than `shards` examples is dropped, so no share is empty and
  // every process runs the same number of steps.
  std::int64_t shard = 0, shards = 1;
};

class BatchIterator {
 public:
  // The next batch, or nullopt at the end of the epoch.
  std::optional<Batch> next();
  ~BatchIterator();
  BatchIterator(BatchIterator&&) noexcept;
  BatchIterator& operator=(BatchIterator&&) noexcept;
  struct Impl;  // opaque
  explicit BatchIterator(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

class Batches {
 public:
  Batches(Dataset data, BatchOptions options = {});  // glia::Error on bad options or sizes
  BatchIterator epoch(std::int64_t epoch) const;
  std::int64_t batches_per_epoch() const;
  const Dataset& data() const { return data_; }
  const BatchOptions& options() const { return options_; }

 private:
  Dataset data_;
  BatchOptions options_;
};

// u8 pixels -> f32 in [0, 1]; labels -> one-hot rows of `classes` (f32).
Tensor normalize_pixels(const Tensor& pixels);
Tensor one_hot_labels(const Tensor& labels, std::int64_t classes);

}  // namespace glia
