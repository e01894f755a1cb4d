// The limits of `glia bench`: oneDNN's GEMM rate on a case's own shapes and a triad's
// memory bandwidth, measured in the run, and a device's GEMM rate and copy bandwidth; the
// bound of each case from them.
#include "limits.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#endif

#include "glia/glia.hpp"
#include "stats.hpp"

#ifdef GLIA_BENCH_ONEDNN
#include <dnnl.hpp>
#endif

namespace glia::bench {

namespace {

constexpr std::int64_t kMnistTrain = 60000;

std::string gflops_text(double flops) { return cat(std::lround(flops / 1e9 * 10) / 10.0); }

// The GEMMs of one training step of batch b. MLP (784-128-10): two forward products, and
// backward the hidden layer's gradient and both weight gradients (the input needs none).
// CNN: its convolutions as im2col GEMMs (forward, the input gradient but for the first,
// the weight gradient; output positions x taps x channels) and its dense layers likewise.
// LSTM (28 steps of 28 pixels, 128 units, 4 gates): the input projection of all steps at
// once, then per step h · W_hh forward and dgates · W_hhᵀ backward (one after another:
// each needs the step before), the weight gradients of all steps as one product each.
std::vector<Gemm> step_gemms(const std::string& model, std::int64_t b) {
  auto dense = [&](std::int64_t in, std::int64_t out, bool input_gradient) {
    std::vector<Gemm> g = {{b, in, out}, {in, b, out, true, false}};
    if (input_gradient) g.push_back({b, out, in, false, true});
    return g;
  };
  std::vector<Gemm> all;
  auto add = [&](const std::vector<Gemm>& g) { all.insert(all.end(), g.begin(), g.end()); };
  if (model == "mlp") {
    add(dense(784, 128, false));
    add(dense(128, 10, true));
  } else if (model == "lstm") {
    constexpr std::int64_t kSteps = 28, kIn = 28, kUnits = 128, kGates = 4 * kUnits;
    const std::int64_t rows = b * kSteps;  // (B*T, C)
    add({{rows, kIn, kGates}, {kIn, rows, kGates, true, false}});
    all.insert(all.end(), kSteps, Gemm{b, kUnits, kGates});
    all.insert(all.end(), kSteps, Gemm{b, kGates, kUnits, false, true});
    all.push_back({kUnits, rows, kGates, true, false});
    add(dense(kUnits, 10, true));
  } else {
    add({{b * 26 * 26, 9, 32}, {9, b * 26 * 26, 32, true, false}});
    add({{b * 11 * 11, 288, 64},
         {b * 11 * 11, 64, 288, false, true},
         {288, b * 11 * 11, 64, true, false}});
    add(dense(1600, 128, true));
    add(dense(128, 10, true));
  }
  return all;
}

// Calls f(gemm, times) for each GEMM shape of an epoch (full batches, then the remainder).
template <class F>
void each_epoch_gemm(const CaseInfo& info, const F& f) {
  for (const Gemm& g : step_gemms(info.model, info.batch)) f(g, double(kMnistTrain / info.batch));
  if (kMnistTrain % info.batch != 0)
    for (const Gemm& g : step_gemms(info.model, kMnistTrain % info.batch)) f(g, 1.0);
}

// Predict's two products at batch b.
std::vector<Gemm> predict_gemms(std::int64_t b) { return {{b, 784, 128}, {b, 128, 10}}; }

std::string epoch_gemms_text(const CaseInfo& info) {
  return cat("the steps' GEMMs", info.model == "cnn"    ? " (convolutions as im2col)"
                                 : info.model == "lstm" ? " (the recurrent products step by step)"
                                                        : "");
}

// The bytes a bandwidth-bound case moves, and what they are; 0 for the others.
double case_bytes(const CaseInfo& info, std::string& what) {
  if (info.name == "adam_update") {  // parameters, gradients, both moments; three written back
    what = "read and written (7 floats a parameter)";
    return 101770.0 * 4 * 7;
  }
  if (info.name == "softmax_1m") {
    what = "read and written";
    return 8e6;
  }
  return 0;
}

// The fastest call of `call` over a short measurement: a limit is what the machine
// reaches, as the triad's best pass. The median of 0.2 s let a slow minute of a shared
// machine lower the bound below the case's own median (predict at batch 10,000 ran at
// 120% of the "bound" on a 2-core VM).
double fastest_seconds(const std::function<void()>& call) {
  MeasureOptions options;
  options.warmup_seconds = 0.05;
  options.time_seconds = 0.1;  // in each of a case's rounds
  options.min_samples = 5;
  return summarize(measure(call, options).per_call).min;
}

}  // namespace

#ifdef GLIA_BENCH_ONEDNN
bool Limits::measures_gemms() const { return true; }

double Limits::gemm_seconds(const Gemm& g) {
  auto key = std::make_tuple(g.m, g.k, g.n, g.trans_a, g.trans_b);
  Best& best = gemm_[key];
  if (best.round == round_) return best.value;
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  dnnl::memory::desc a({g.m, g.k}, dt::f32, g.trans_a ? tag::ba : tag::ab);
  dnnl::memory::desc b({g.k, g.n}, dt::f32, g.trans_b ? tag::ba : tag::ab);
  dnnl::memory::desc c({g.m, g.n}, dt::f32, tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), engine);
  dnnl::matmul matmul(pd);
  dnnl::memory am(a, engine), bm(b, engine), cm(c, engine);
  for (auto* m : {&am, &bm}) {
    auto* p = static_cast<float*>(m->get_data_handle());
    std::fill(p, p + m->get_desc().get_size() / sizeof(float), 0.5f);
  }
  const double seconds = fastest_seconds([&] {
    matmul.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    stream.wait();
  });
  best.value = best.round < 0 ? seconds : std::min(best.value, seconds);
  best.round = round_;
  return best.value;
}
#else
bool Limits::measures_gemms() const { return false; }
double Limits::gemm_seconds(const Gemm&) { return 0; }
#endif

namespace {

// a[i] = b[i] + 3 c[i] over [lo, hi) in the widest vectors the machine has. GCC 12 at -O2
// left the plain loop scalar (one element a cycle and a core): the "bandwidth" it measured
// was its own instruction rate, two fifths of what the cache reached (72 against 176-179
// GB/s on a 2-core Zen 4 with 8 MB in L3), which flattered every bandwidth-bound case.
#if defined(__x86_64__)
#define GLIA_WIDEST_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GLIA_WIDEST_CLONES
#endif
using Floats16 = float __attribute__((vector_size(64)));
GLIA_WIDEST_CLONES void triad(float* a, const float* b, const float* c, std::size_t lo,
                              std::size_t hi) {
  for (; lo + 16 <= hi; lo += 16) {  // one zmm, two ymm or four xmm a step, as the clone
    Floats16 vb, vc;
    std::memcpy(&vb, b + lo, sizeof vb);
    std::memcpy(&vc, c + lo, sizeof vc);
    const Floats16 va = vb + 3.0f * vc;
    std::memcpy(a + lo, &va, sizeof va);
  }
  for (; lo < hi; ++lo) a[lo] = b[lo] + 3.0f * c[lo];
}

}  // namespace

double Limits::triad_bandwidth(double bytes) {
  const std::size_t n = std::max<std::size_t>(std::size_t(bytes / 12), 4096);
  Best& known = triad_[n];
  if (known.round == round_) return known.value;
  const int threads = std::max(threads_, 1);
  std::unique_ptr<float[]> a(new float[n]), b(new float[n]), c(new float[n]);
  // Each timed pass repeats the triad `reps` times on its threads (256 MB moved), so that
  // starting them costs ~1% even where the working set is cache-resident.
  const int reps = int(std::max<double>(1, 256e6 / (12.0 * double(n))));
  auto pass = [&](bool init) {
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&, t] {
        std::size_t lo = n * std::size_t(t) / std::size_t(threads);
        std::size_t hi = n * std::size_t(t + 1) / std::size_t(threads);
        if (init) {
          for (std::size_t i = lo; i < hi; ++i) a[i] = 0, b[i] = 1, c[i] = 2;
        } else {
          for (int r = 0; r < reps; ++r) {
            triad(a.get(), b.get(), c.get(), lo, hi);
            asm volatile("" : : "r"(a.get()) : "memory");  // every repetition stores
          }
        }
      });
    for (auto& w : workers) w.join();
  };
  pass(true);  // first touch on the threads that use the pages
  // Passes until 0.1 s are spent (at least 6).
  double best = 1e30, spent = 0;
  for (int r = 0; r < 6 || spent < 0.1; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    pass(false);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s);
    spent += s;
  }
  known.value = std::max(known.value, 12.0 * double(n) * reps / best);
  known.round = round_;
  return known.value;
}

double Limits::round_trip_seconds() const {
  if (threads_ < 2) return 0;
  constexpr std::uint64_t kTrips = 2000, kBatches = 9;
  alignas(64) std::atomic<std::uint64_t> ball{
      0};  // odd: the second thread's turn; even: the first's
  auto wait_for = [&ball](std::uint64_t value) {
    for (int spins = 0; ball.load(std::memory_order_acquire) != value;) {
#if defined(__x86_64__)
      __builtin_ia32_pause();  // without it the reads flood the line: ~125 ns, not ~60
#endif
      if (++spins > 4096) std::this_thread::yield();  // both threads on one core
    }
  };
  // Each thread on one of the first two cores this thread may use, where the bench's
  // two threads run on a 2-core machine (measured unpinned, a thread that started on its
  // partner's core moved over while the batches ran). With fewer than two there is no
  // distance to measure: 0.
  std::vector<int> cores;
#ifdef __linux__
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
    for (int c = 0; c < CPU_SETSIZE && cores.size() < 2; ++c)
      if (CPU_ISSET(c, &allowed)) cores.push_back(c);
#else
  if (std::thread::hardware_concurrency() >= 2) cores = {0, 1};  // not pinned
#endif
  if (cores.size() < 2) return 0;
  auto pin = [&cores](int which) {
#ifdef __linux__
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cores[std::size_t(which)], &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
#else
    (void)which;
#endif
  };
  // The pools' threads spin for a while after the last call: let them settle first.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::vector<double> batches;
  std::thread first([&] {
    pin(0);
    std::uint64_t v = 0;
    for (std::uint64_t b = 0; b < kBatches; ++b) {
      auto t0 = std::chrono::steady_clock::now();
      for (std::uint64_t i = 0; i < kTrips; ++i, v += 2) {
        ball.store(v + 1, std::memory_order_release);
        wait_for(v + 2);
      }
      batches.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
          double(kTrips));
    }
  });
  std::thread second([&] {
    pin(1);
    for (std::uint64_t v = 1; v < 2 * kTrips * kBatches; v += 2) {
      wait_for(v);
      ball.store(v + 1, std::memory_order_release);
    }
  });
  first.join();
  second.join();
  std::sort(batches.begin(), batches.end());
  return batches[batches.size() / 2];
}

namespace {
// The bound of moving `bytes` at a triad's bandwidth over the same working set.
Bound bandwidth_bound(double bytes, const std::string& what, Limits& limits) {
  double bw = limits.triad_bandwidth(bytes);
  return Bound{bytes / bw, cat(std::lround(bytes / 1e5) / 10.0, " MB ", what, " at ",
                               std::lround(bw / 1e8) / 10.0,
                               " GB/s, a triad's over a working set of that size")};
}
}  // namespace

std::optional<Bound> case_bound(const CaseInfo& info, Limits& limits) {
  if (info.epoch && limits.measures_gemms()) {
    double flops = 0, seconds = 0;
    each_epoch_gemm(info, [&](const Gemm& g, double times) {
      seconds += times * limits.gemm_seconds(g);
      flops += times * g.flops();
    });
    // The first layer's products skip the zero pixels on glia's cpu backend
    // (zero_skip_matmul.hpp): it does fewer flops than the dense GEMMs counted here.
    const char* skipped =
        info.model == "mlp" ? "; glia's cpu backend skips the zero pixels (81% of MNIST's)" : "";
    return Bound{seconds, cat(epoch_gemms_text(info),
                              " at oneDNN's rate on their shapes: ", gflops_text(flops),
                              " GFLOP at ", gflops_text(flops / seconds), " GFLOP/s", skipped)};
  }
  if (info.name == "mlp_predict_b10000" && limits.measures_gemms()) {
    double seconds = 0, flops = 0;
    for (const Gemm& g : predict_gemms(info.batch)) {
      seconds += limits.gemm_seconds(g);
      flops += g.flops();
    }
    return Bound{seconds, cat("its 2 GEMMs at oneDNN's rate on their shapes: ", gflops_text(flops),
                              " GFLOP at ", gflops_text(flops / seconds),
                              " GFLOP/s; glia's cpu backend skips the zero pixels of MNIST's "
                              "test images (uniform ones have none)")};
  }
  std::string what;
  if (double bytes = case_bytes(info, what); bytes > 0) return bandwidth_bound(bytes, what, limits);
  return std::nullopt;
}

double DeviceLimits::gemm_flops_per_second() {
  if (gemm_ > 0) return gemm_;
  constexpr std::int64_t n = 8192;
  auto product = jit([](const Expr& a, const Expr& b) { return matmul(a, b); },
                     {.backend = "cuda", .name = "device_limit_gemm"});
  const Device device = Device::cuda(0);
  // Random operands: a product of zeros runs faster than real data does.
  Tensor a = uniform_tensor({n, n}, 1).to(device);
  Tensor b = uniform_tensor({n, n}, 2).to(device);
  return gemm_ = 2.0 * double(n) * double(n) * double(n) / fastest_seconds([&] { product(a, b); });
}

double DeviceLimits::copy_bytes_per_second() {
  if (copy_ > 0) return copy_;
  constexpr std::int64_t n = std::int64_t{64} << 20;  // 256 MiB of f32
  Tensor x = Tensor::zeros({n}).to(Device::cuda(0));  // a copy's speed is the data's alone
  return copy_ = 2.0 * double(n) * 4 / fastest_seconds([&] { x.clone(); });
}

std::optional<Bound> device_case_bound(const CaseInfo& info, DeviceLimits& limits) {
  auto at_gemm_rate = [&](double flops, const std::string& what) {
    double rate = limits.gemm_flops_per_second();
    return Bound{flops / rate,
                 cat(what, ": ", gflops_text(flops), " GFLOP at the device's f32 rate (",
                     std::lround(rate / 1e11) / 10.0, " TFLOP/s on an 8192^3 product, no TF32)")};
  };
  double flops = 0;
  if (info.epoch) {
    each_epoch_gemm(info, [&](const Gemm& g, double times) { flops += times * g.flops(); });
    return at_gemm_rate(flops, epoch_gemms_text(info));
  }
  if (info.name == "mlp_predict_b10000") {
    for (const Gemm& g : predict_gemms(info.batch)) flops += g.flops();
    return at_gemm_rate(flops, "its 2 GEMMs");
  }
  std::string what;
  if (double bytes = case_bytes(info, what); bytes > 0) {
    double bw = limits.copy_bytes_per_second();
    return Bound{bytes / bw,
                 cat(std::lround(bytes / 1e5) / 10.0, " MB ", what, " at ", std::lround(bw / 1e9),
                     " GB/s, a 256 MiB device-to-device copy's")};
  }
  return std::nullopt;
}

}  // namespace glia::bench
