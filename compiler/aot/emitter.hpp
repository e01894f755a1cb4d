// Internal to the AOT exporter: the state kernels are emitted with, and the emitters of
// each spec, and the C text they share.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "glia/compiler/aot.hpp"
#include "glia/compiler/program.hpp"

namespace glia::aot::detail {

// An f32 sum over a long innermost loop adds its values in f32 lanes over chunks of this
// many iterations (16 values a lane in four sets of 16 lanes), then widens the chunk into
// its f64 lanes (a relative error below 1e-6). Widening each value took two conversions
// and two f64 adds a vector, with four sets of f64 lanes spilled around each vector exp
// call (1,000 exponentials summed: 410 -> 300 ns). The cpu backend's softmax rows kernel
// sums in the same chunks.
inline constexpr std::int64_t kF32SumChunk = 1024;

// ---- C text (c_text.cpp) ----------------------------------------------------------------
// The C type of a dtype's values (f16 and bf16 are declined before emission).
std::string c_type(DType t);
// A C integer literal.
std::string lit(std::int64_t v);
// Element i of a constant as a C literal (hex floats: exact).
std::string element_literal(const Tensor& t, std::int64_t i);
// `text` as a C string literal, a line of source per line of text.
std::string c_string_literal(const std::string& text);
// Generated statements indented two spaces per open brace, from `depth`.
std::string indent(const std::string& code, int depth);
std::string upper(std::string s);
// sum(names[i] * strides[i]) over the non-zero strides, from `base`.
std::string index_expr(const std::vector<std::string>& names,
                       const std::vector<std::int64_t>& strides, std::string base = "0");
// `for (int64_t v = 0; v < n; ++v) {`
std::string loop(const std::string& v, std::int64_t n);

struct Emitter {
  const Program& program;
  std::int64_t scratch_offset = 0;  // workspace bytes before a kernel's own scratch
  std::int64_t scratch_bytes = 0;   // the most scratch one kernel needs
  int temp = 0;                     // counter for unique C names
  // Fused sweeps' innermost loops marked `#pragma GCC ivdep` (they carry no dependence
  // through memory where no accumulator array is used), and reduced innermost loops run
  // in blocks of lanes, each with its own accumulator, that the compiler vectorises
  // (the C compiler of the cpu backend; exported C keeps the plain loop).
  bool ivdep = false;

  const Graph& graph() const { return program.graph; }
  std::set<ValueId> used;  // values the kernel being emitted names

  // The C name of `v`'s storage in the kernel being emitted (a restrict pointer of its
  // dtype's C type, declared by the kernel's function).
  std::string ptr(ValueId v) {
    used.insert(v);
    return "v" + std::to_string(v);
  }
  std::string fresh(const char* stem) { return stem + std::to_string(temp++); }
};

// ---- Kernels (emit_fused.cpp, emit_contraction.cpp, emit_window.cpp) -------------------
// A kernel's statements (the body of a function of input, output and ws).
std::string emit_fused(Emitter& e, const FusedSpec& spec);
// One sweep of a FusedSpec (sweep `index`, for the comment) as a block of statements.
// `ranged`: a splittable sweep's outer loop runs over [lo, hi) (int64_t variables the
// caller declares), so that threads may split it; others ignore lo and hi. A ranged sweep
// whose reductions run over its outer loop (a whole-array sum) also takes `partial`
// (a `void*` the caller declares): where it is not null, the sweep writes its
// accumulators there, 8 bytes each, for `merge` to combine.
struct SweepText {
  std::string text;
  std::int64_t outer = 1;   // the outer loop's extent
  bool splittable = false;  // outer indices write disjoint results; no workspace
  int partials = 0;         // accumulators written to `partial` (8 bytes each)
  // Statements that combine `count` (an int) blocks of partials, one after another from
  // `partials` (a `const unsigned char*`), and write the results.
  std::string merge;
};
SweepText emit_sweep(Emitter& e, const FusedSpec::Sweep& sweep, std::size_t index, bool ranged);
std::string emit_matmul(Emitter& e, const Kernel& k, const MatmulSpec& spec);
std::string emit_conv(Emitter& e, const ConvSpec& spec);
std::string emit_pool(Emitter& e, const PoolSpec& spec);
std::string emit_direct(Emitter& e, const DirectSpec& spec);
// A convolution node no ConvSpec took (input dilation without autograd's reversed kernel:
// a transposed-convolution layer), as XLA's general dilated convolution in loops.
std::string emit_general_conv(Emitter& e, ValueId node);
// A dot_general whose axes do not fold into a strided matmul (a bilinear layer), as loops
// over the output and the contracted axes.
std::string emit_general_dot(Emitter& e, ValueId node);

// ---- The file around the kernels (abi.cpp) ------------------------------------------------
// NAME.h: the ABI, its constants and its documentation.
std::string header_text(const CSource& c, const CSourceOptions& options);
// NAME.c's entry points after the kernels: NAME_load_weights (reading each weight with
// `load_reads`, statements of glia_read calls), NAME_predict_ws running `calls`,
// NAME_predict on the static workspace, NAME_info.
std::string entry_points(const CSource& c, const CSourceOptions& options, const std::string& calls,
                         const std::string& load_reads);
// The weights file's 24-byte head: magic, payload bytes, hash (little-endian).
std::string weights_head(const CSource& c);
// The Makefile and CMakeLists.txt that build libNAME.so.
std::string makefile_text(const std::string& name);
std::string cmake_text(const std::string& name);

}  // namespace glia::aot::detail
