// What the batching tests share (batches_test.cpp, batches_shard_test.cpp).
#pragma once

#include "glia/datasets/dataset.hpp"

namespace glia {

// n examples: y[i] = i (i64) and x[i] = [2i, 2i + 1] (f32), so every row of a batch
// names its example and the x row can be checked against it.
inline Dataset counting_dataset(std::int64_t n) {
  return {Tensor::iota(Shape{n, 2}, std::nullopt, f32), Tensor::iota(Shape{n}, 0, i64)};
}

}  // namespace glia
