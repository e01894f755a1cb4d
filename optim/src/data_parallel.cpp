#include "data_parallel.hpp"

#include <algorithm>
#include <tuple>
#include <vector>

namespace glia::detail {

DataParallel data_parallel(const StepOptions& options, const char* who) {
  DataParallel dp;
  if (!options.communicator || options.communicator->size() == 1) return dp;
  check(options.bucket_bytes > 0, who, ": bucket_bytes must be positive, got ",
        options.bucket_bytes);
  dp.communicator = options.communicator;
  dp.id = register_communicator(options.communicator);
  dp.bucket_bytes = options.bucket_bytes;
  dp.summed = options.summed_metrics;
  return dp;
}

GlobalStats reduce_stats(const DataParallel& dp, double n, const Expr& loss,
                         const NamedExprs& metrics) {
  std::vector<Expr> parts{scalar(n)};
  if (loss.defined()) parts.push_back(cast(loss, DType::f32) * n);
  for (const auto& [name, m] : metrics)
    parts.push_back(dp.summed.count(name) ? cast(m, DType::f32) : cast(m, DType::f32) * n);
  for (Expr& p : parts) p = reshape(p, {1});
  Expr sums = all_reduce(concatenate(parts), dp.id, 0);
  auto at = [&](std::int64_t i) { return reshape(slice(sums, {i}, {i + 1}), {}); };
  GlobalStats out;
  out.total = at(0);
  std::int64_t i = 1;
  if (loss.defined()) out.loss = at(i++) / out.total;
  for (const auto& [name, m] : metrics) {
    Expr s = at(i++);
    out.metrics[name] = dp.summed.count(name) ? s : s / out.total;
  }
  return out;
}

namespace {

// A float value's dtype on the wire: 16-bit floats travel as f32 (MPI sums no f16).
DType wire_dtype(DType d) { return d == DType::f16 || d == DType::bf16 ? DType::f32 : d; }

struct Entry {
  Expr* value;
  DType wire;
};

}  // namespace

void reduce_buckets(const DataParallel& dp, ExprParamMap& grads, ExprParamMap& weighted_state,
                    const Expr& total) {
  std::vector<Entry> entries;
  for (ExprParamMap* m : {&weighted_state, &grads})
    for (auto& [layer, values] : *m)
      for (auto& [name, e] : values)
        if (is_float(e.dtype())) entries.push_back({&e, wire_dtype(e.dtype())});
  // The earliest-computed first: backward yields the last layers' gradients first, and the
  // model state is ready after the forward pass, so early buckets can go while the rest of
  // backward runs. Graph ids are the same on every process (the same trace).
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tuple(a.wire, a.value->id()) < std::tuple(b.wire, b.value->id());
  });
  // The first bucket small (1 MiB) so that it starts early, as PyTorch DDP's does.
  const std::int64_t first_cap = std::min<std::int64_t>(dp.bucket_bytes, 1 << 20);
  std::int64_t bucket = 1;
  std::size_t begin = 0;
  while (begin < entries.size()) {
    const DType wire = entries[begin].wire;
    const std::int64_t cap = bucket == 1 ? first_cap : dp.bucket_bytes;
    std::int64_t bytes = 0;
    std::size_t end = begin;
    while (end < entries.size() && entries[end].wire == wire &&
           (end == begin || bytes + entries[end].value->shape().numel() * dtype_size(wire) <= cap))
      bytes += entries[end++].value->shape().numel() * dtype_size(wire);
    std::vector<Expr> flat;
    for (std::size_t i = begin; i < end; ++i)
      flat.push_back(reshape(cast(*entries[i].value, wire), {-1}));
    Expr sums = all_reduce(flat.size() == 1 ? flat[0] : concatenate(flat), dp.id, bucket++);
    Expr scale = 1.0 / cast(total, wire);
    std::int64_t offset = 0;
    for (std::size_t i = begin; i < end; ++i) {
      Expr& e = *entries[i].value;
      const std::int64_t count = e.shape().numel();
      Expr part = slice(sums, {offset}, {offset + count});
      offset += count;
      e = cast(reshape(part * scale, e.shape().dims()), e.dtype());
    }
    begin = end;
  }
}

}  // namespace glia::detail
