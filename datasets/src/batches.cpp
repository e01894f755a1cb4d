// Batches: checks the dataset and options, orders the examples of an epoch (a seeded
// Fisher-Yates shuffle that gives the same order on every platform) and gathers the rows
// of each batch into new tensors.
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "batch_iterator.hpp"
#include "glia/datasets/dataset.hpp"

namespace glia {
namespace {

// SplitMix64's finalizer: spreads (seed, epoch) over all 64 bits of the generator's seed.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Uniform in [0, bound], by rejection: std::uniform_int_distribution's algorithm is
// implementation-defined, this one is not.
std::uint64_t draw_upto(std::mt19937_64& gen, std::uint64_t bound) {
  if (bound == std::numeric_limits<std::uint64_t>::max()) return gen();
  const std::uint64_t range = bound + 1;
  const std::uint64_t reject_below = (0 - range) % range;  // 2^64 mod range
  std::uint64_t x = gen();
  while (x < reject_below) x = gen();
  return x % range;
}

// The order of epoch `epoch`: a permutation of 0..n-1 from mt19937_64 (fully specified by
// the standard) seeded from (seed, epoch), shuffled by Fisher-Yates.
std::vector<std::int64_t> epoch_order(std::int64_t n, bool shuffle, std::uint64_t seed,
                                      std::int64_t epoch) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  if (!shuffle) return order;
  std::mt19937_64 gen(mix(mix(seed) ^ static_cast<std::uint64_t>(epoch)));
  for (std::size_t i = order.size(); i > 1; --i) {
    std::size_t j = static_cast<std::size_t>(draw_upto(gen, i - 1));
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

// A gather this large runs on every OpenMP thread (a batch of 128 MNIST images: 400 KB).
constexpr std::int64_t kParallelBytes = 64 * 1024;

// Rows `rows` of t (along axis 0) as a new tensor of t's dtype.
Tensor gather_rows(const Tensor& t, const std::int64_t* rows, std::int64_t count) {
  std::vector<std::int64_t> dims = t.shape().dims();
  std::int64_t row_elements = 1;
  for (std::size_t i = 1; i < dims.size(); ++i) row_elements *= dims[i];
  const auto row_bytes = static_cast<std::size_t>(row_elements * dtype_size(t.dtype()));
  dims[0] = count;
  // Every row is copied over: no zero fill first (a batch of 128 MNIST images: 400 KB
  // written twice, the first time for nothing).
  Tensor out = Tensor::uninitialized(t.dtype(), Shape(std::move(dims)));
  const auto* src = static_cast<const std::byte*>(t.raw_data());
  auto* dst = static_cast<std::byte*>(out.raw_data());
  // Rows of a shuffled batch come from all over the dataset: the copy waits on memory, and
  // more cores wait in parallel. The OpenMP pool is the one the cpu backend's kernels
  // keep spinning between calls, so a large gather starts at once on every core.
#pragma omp parallel for schedule(static) if (count * static_cast <std::int64_t>(row_bytes) >= \
                                              kParallelBytes)
  for (std::int64_t i = 0; i < count; ++i)
    std::memcpy(dst + static_cast<std::size_t>(i) * row_bytes,
                src + static_cast<std::size_t>(rows[i]) * row_bytes, row_bytes);
  return out;
}

// Every tensor of a dataset or batch with its role, for the checks.
std::vector<std::pair<std::string, Tensor>> parts(const Dataset& d) {
  std::vector<std::pair<std::string, Tensor>> out;
  if (d.x.defined()) out.emplace_back("x", d.x);
  if (d.y.defined()) out.emplace_back("y", d.y);
  for (const auto& [name, t] : d.inputs) out.emplace_back(cat("input '", name, "'"), t);
  for (const auto& [name, t] : d.targets) out.emplace_back(cat("target '", name, "'"), t);
  return out;
}

// The examples of the first tensor with an examples axis (all have the same count).
std::int64_t examples(const Tensor& x, const Tensor& y, const TensorMap& inputs,
                      const TensorMap& targets) {
  auto rows = [](const Tensor& t) { return t.defined() && t.rank() >= 1 ? t.shape()[0] : -1; };
  for (const Tensor* t : {&x, &y})
    if (rows(*t) >= 0) return rows(*t);
  for (const TensorMap* m : {&inputs, &targets})
    for (const auto& [name, t] : *m)
      if (rows(t) >= 0) return rows(t);
  return 0;
}
}  // namespace

std::int64_t Dataset::size() const { return examples(x, y, inputs, targets); }
std::int64_t Batch::size() const { return examples(x, y, inputs, targets); }

Batches::Batches(Dataset data, BatchOptions options) : data_(std::move(data)), options_(options) {
  check(options_.batch_size > 0, "Batches: batch_size must be positive, got ", options_.batch_size);
  check(options_.shards >= 1, "Batches: shards must be >= 1, got ", options_.shards);
  check(options_.shard >= 0 && options_.shard < options_.shards, "Batches: shard ", options_.shard,
        " is not in [0, ", options_.shards, ")");
  check(options_.shards <= options_.batch_size, "Batches: ", options_.shards,
        " shards of a batch of ", options_.batch_size, " would leave some empty");
  check(!(data_.x.defined() && !data_.inputs.empty()),
        "Batches: the dataset has both x and named inputs; give one or the other");
  check(!(data_.y.defined() && !data_.targets.empty()),
        "Batches: the dataset has both y and named targets; give one or the other");
  check(data_.x.defined() || !data_.inputs.empty(), "Batches: the dataset's ",
        "x is an undefined tensor (and it has no named inputs)");
  check(data_.y.defined() || !data_.targets.empty(), "Batches: the dataset's ",
        "y is an undefined tensor (and it has no named targets)");
  std::vector<std::pair<std::string, Tensor>> ps = parts(data_);
  const auto& [first_role, first] = ps.front();
  for (const auto& [role, t] : ps) {
    check(t.defined(), "Batches: the dataset's ", role, " is an undefined tensor");
    check(t.rank() >= 1, "Batches: the dataset's tensors need an examples axis (rank >= 1); ", role,
          " is ", t.type());
    check(t.shape()[0] == first.shape()[0], "Batches: ", first_role, " has ", first.shape()[0],
          " examples (", first.type(), ") but ", role, " has ", t.shape()[0], " (", t.type(), ")");
  }
}

std::int64_t Batches::batches_per_epoch() const {
  const std::int64_t n = data_.size(), b = options_.batch_size;
  if (options_.drop_last) return n / b;
  // Sharded, a last batch too small to give every shard an example is dropped.
  return n / b + (n % b >= options_.shards ? 1 : 0);
}

BatchIterator Batches::epoch(std::int64_t epoch) const {
  check(epoch >= 0, "Batches::epoch: the epoch must be >= 0, got ", epoch);
  auto order = std::make_shared<const std::vector<std::int64_t>>(
      epoch_order(data_.size(), options_.shuffle, options_.seed, epoch));
  const std::int64_t n = data_.size(), size = options_.batch_size;
  const std::int64_t shard = options_.shard, shards = options_.shards;
  // The closure holds its own references to x and y, so the iterator may outlive *this.
  auto make_batch = [data = data_, order, n, size, shard, shards](std::int64_t b) {
    const std::int64_t global_begin = b * size, global = std::min(size, n - global_begin);
    // This shard's contiguous share of the global batch.
    const std::int64_t begin = global_begin + global * shard / shards;
    const std::int64_t count = global_begin + global * (shard + 1) / shards - begin;
    const std::int64_t* rows = order->data() + begin;
    Batch batch;
    if (shards > 1) batch.global_size = global;
    if (data.x.defined()) batch.x = gather_rows(data.x, rows, count);
    if (data.y.defined()) batch.y = gather_rows(data.y, rows, count);
    for (const auto& [name, t] : data.inputs) batch.inputs[name] = gather_rows(t, rows, count);
    for (const auto& [name, t] : data.targets) batch.targets[name] = gather_rows(t, rows, count);
    return batch;
  };
  return BatchIterator(std::make_unique<BatchIterator::Impl>(
      batches_per_epoch(), std::move(make_batch), options_.prefetch));
}

}  // namespace glia
