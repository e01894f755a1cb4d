// Internal to the AOT exporter: the state kernels are emitted with, and the emitters of
// each spec (emit.cpp: the file and matmul/conv/pool/direct; emit_fused.cpp: sweeps).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "glia/compiler/program.hpp"

namespace glia::aot::detail {

// The C type of a dtype's values (f16 and bf16 are declined before emission).
std::string c_type(DType t);
// A C integer literal.
std::string lit(std::int64_t v);

struct Emitter {
  const Program& program;
  std::int64_t scratch_offset = 0;  // workspace bytes before a kernel's own scratch
  std::int64_t scratch_bytes = 0;   // the most scratch one kernel needs
  int temp = 0;                     // counter for unique C names

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

// A kernel's statements (the body of a function of input, output and ws).
std::string emit_fused(Emitter& e, const FusedSpec& spec);
std::string emit_matmul(Emitter& e, const Kernel& k, const MatmulSpec& spec);
std::string emit_conv(Emitter& e, const Kernel& k, const ConvSpec& spec);
std::string emit_pool(Emitter& e, const PoolSpec& spec);
std::string emit_direct(Emitter& e, const DirectSpec& spec);
// A convolution node no ConvSpec took (input dilation without autograd's reversed kernel:
// a transposed-convolution layer), as XLA's general dilated convolution in loops.
std::string emit_general_conv(Emitter& e, ValueId node);
// A dot_general whose axes do not fold into a strided matmul (a bilinear layer), as loops
// over the output and the contracted axes.
std::string emit_general_dot(Emitter& e, ValueId node);

// `for (int64_t v = 0; v < n; ++v) {`
std::string loop(const std::string& v, std::int64_t n);

}  // namespace glia::aot::detail
