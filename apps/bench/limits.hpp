// The machine's limits, measured in the same run as the cases (issue 14): oneDNN's f32
// GEMM rate on the shapes a case multiplies, and memory bandwidth by a STREAM-style triad
// over the case's own working-set size. A case's bound is the least time those limits
// allow one call: its GEMMs at oneDNN's measured rate (training and large predict), or
// its bytes at the triad's bandwidth (softmax over 1M, the optimizer update); the report
// prints each contender's fraction of it.
//   glia::bench::Limits limits(2);
//   if (auto b = glia::bench::case_bound(info, limits)) std::cout << b->what;
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "cases.hpp"

namespace glia::bench {

// out[m, n] = a[m, k] · b[k, n], a and b read transposed where asked.
struct Gemm {
  std::int64_t m = 1, k = 1, n = 1;
  bool trans_a = false, trans_b = false;
  double flops() const { return 2.0 * double(m) * double(k) * double(n); }
  auto key() const { return std::tie(m, k, n, trans_a, trans_b); }
};

class Limits {
 public:
  explicit Limits(int threads) : threads_(threads) {}
  // Seconds per call of oneDNN's f32 matmul on the shape (the fastest of repeated calls);
  // 0 where glia was built without oneDNN.
  double gemm_seconds(const Gemm& g);
  // Bytes per second of a[i] = b[i] + s * c[i] on the bench's threads over three arrays of
  // `bytes` in all (12 bytes an element; the best of several passes): the bandwidth of the
  // cache level (or memory) a working set of that size sits in.
  double triad_bandwidth(double bytes);
  bool measures_gemms() const;  // built with oneDNN
  // Seconds for one thread to hand a cache line to another and have it back (two threads
  // spinning on it, the median of batches; 0 with one thread or one core): how far apart the cores
  // are. A VM's two vCPUs sit on one die (~55 ns on the EPYC measured) or, for minutes at
  // a time, apart (~320 ns), and every kernel that hands data between threads slows then.
  double round_trip_seconds() const;
  // Each limit is measured once a round, when first asked, and the best of all rounds is
  // kept: the bench starts a round after each of a case's turns, so that a slow minute of
  // a shared machine (its cores at half speed for a while) does not set a bound the
  // contenders' faster minutes pass.
  void new_round() { ++round_; }

 private:
  struct Best {
    double value = 0;  // seconds (a GEMM) or bytes per second (the triad)
    int round = -1;    // the round that measured it last
  };
  int threads_;
  int round_ = 0;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, bool, bool>, Best> gemm_;
  std::map<std::size_t, Best> triad_;  // by element count
};

// The cuda device's limits, measured once through glia on cuda:0 when first asked: the
// f32 GEMM rate of a large product (8192 x 8192 x 8192 on cuBLASLt, CUBLAS_COMPUTE_32F: no
// TF32), and the bandwidth of a device-to-device copy of 256 MiB (bytes read plus
// written). A case's device bound is its FLOPs or bytes at those rates.
class DeviceLimits {
 public:
  double gemm_flops_per_second();
  double copy_bytes_per_second();

 private:
  double gemm_ = 0, copy_ = 0;  // 0: not measured yet
};

struct Bound {
  double seconds = 0;  // per call
  std::string what;    // how it was reached: "5 GEMMs per step, 24.5 GFLOP at 350 GFLOP/s"
};
// The bound of a case, or nullopt where none applies (calls bound by overhead: tiny
// models, short softmax, batch-1 predict).
std::optional<Bound> case_bound(const CaseInfo& info, Limits& limits);
// The same on a device: FLOPs at the device's large-GEMM rate (training, large predict),
// bytes at its copy bandwidth (softmax over 1M, the optimizer update).
std::optional<Bound> device_case_bound(const CaseInfo& info, DeviceLimits& limits);

}  // namespace glia::bench
