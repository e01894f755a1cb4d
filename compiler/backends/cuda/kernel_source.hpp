// Internal to the `cuda` backend: CUDA C++ source for the kernels NVRTC compiles — fused
// groups from FusedSpecs, direct kernels (gather, scatter_add, pad, concatenate, argmax,
// argmin, window_sum, average pooling's sums) — written from the Program's specs with
// core's element-wise source, so every backend computes the same functions. No CUDA
// header is needed to write them: this code builds and is tested where no GPU is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "glia/compiler/program.hpp"

namespace glia::detail::cuda {

inline constexpr int kThreads = 256;  // threads per block of every generated kernel

// Parameters that are not values: the kernel's own scratch (scratch_bytes, 256-byte
// aligned) and the executable's status word, where a kernel records a bad index (1 +
// the position of the op that met it) for the host to report after the run.
inline constexpr ValueId kScratchParam = -1;
inline constexpr ValueId kStatusParam = -2;

// One generated kernel: an `extern "C" __global__` function taking one device pointer per
// entry of `params` (the storage of that value, in order), launched on `blocks` blocks of
// kThreads threads. Its source is the body alone: kernel_program() wraps it in the
// prelude for NVRTC.
struct GeneratedKernel {
  std::string name;
  std::string body;
  std::vector<ValueId> params;
  std::int64_t blocks = 1;
  std::int64_t scratch_bytes = 0;
  std::string what;  // for describe(): "sweep 0 (block per row): exp, reduce_sum"
};

// The kernels of one fused group, in launch order: a sweep with reductions of different
// shapes becomes one kernel per shape (the element-wise part recomputed, its stores made
// by the first), others one kernel each. `stem` names them ("k3": k3_s0, k3_s1_r1).
std::vector<GeneratedKernel> fused_kernels(const Graph& graph, const FusedSpec& spec,
                                           const std::string& stem);

// The kernels of a direct spec, in launch order (scatter_add: widen the target into
// scratch accumulators, add the updates atomically, narrow into the result).
std::vector<GeneratedKernel> direct_kernels(const Graph& graph, const DirectSpec& spec,
                                            const std::string& stem);

// Max pooling (pool_source.cpp), as the other backends compute it: `max` writes each
// window's maximum (NaN beats numbers; padding never wins), `max_backward` sends each
// window's source value to the window's first maximum in row-major window order, summed
// where windows overlap. pool_declines says why a spec is not generated ("" when it is);
// pool_fallback why a window_max/select_and_scatter node the lowering left runs on the
// reference kernel.
std::vector<GeneratedKernel> pool_kernels(const Graph& graph, const PoolSpec& spec,
                                          const std::string& stem);
std::string pool_declines(const Graph& graph, const PoolSpec& spec);
std::string pool_fallback(const Graph& graph, ValueId node);

// The pieces the writers share (kernel_text.cpp).
inline constexpr std::int64_t kMaxBlocks = 1 << 16;  // a grid-stride kernel's most blocks
std::string int_literal(std::int64_t v);
// Blocks for a grid-stride kernel over n elements.
std::int64_t blocks_for(std::int64_t n);
// A grid-stride loop over [0, n) in `var` (64-bit indices).
std::string grid_loop(const std::string& var, std::int64_t n, const std::string& body);
// A grid-stride kernel over `work` elements, `written` saying which params it writes.
GeneratedKernel grid_kernel(const Graph& graph, std::string name, std::vector<ValueId> params,
                            std::vector<bool> written, std::int64_t work, const std::string& body,
                            std::string what);
// A value's element at `at` in its compute type, and a store of `value` at `at`.
std::string read_element(const std::string& ptr, DType dtype, const std::string& at);
std::string write_element(const std::string& ptr, DType dtype, const std::string& at,
                          const std::string& value);
// The kernel's signature around `body`, `written` saying which params it writes.
std::string kernel_text(const Graph& graph, const std::string& name,
                        const std::vector<ValueId>& params, const std::vector<bool>& written,
                        const std::string& body);

// The complete NVRTC source of `kernels`: the element-wise source, the storage helpers,
// then each kernel's body.
std::string kernel_program(const std::vector<GeneratedKernel>& kernels);

// f16 and bf16: stored as their bits, computed in float.
inline bool is_16bit_float(DType t) { return t == DType::f16 || t == DType::bf16; }

// The CUDA type a dtype's elements are stored as (f16 and bf16: their bits, glia_u16),
// and the one they compute in (f16 and bf16: float).
const char* storage_type(DType t);
const char* compute_type(DType t);

}  // namespace glia::detail::cuda
