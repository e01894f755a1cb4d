// Internal: a fused group compiled into sweeps over flat iteration domains. A sweep runs
// a short register program per tile of kTile consecutive elements (loads through index
// maps, element-wise instructions, stores and reduction accumulates); the sweeps of a
// group run in order, later ones reading what earlier ones reduced or stored.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "glia/core/graph.hpp"

namespace glia::detail::cpu::fused {

inline constexpr int kTile = 256;
// The widest compute type is 8 bytes; one cache line more keeps registers from starting
// at the same address modulo 4 KiB, where the CPU would take every load from one register
// as depending on the store just made to another (4K aliasing: a 5-10x slowdown).
inline constexpr int kRegBytes = kTile * 8 + 64;
inline constexpr int kMaxViewRank = 16;

// Where a load reads or a store writes: a kernel input, a kernel output, or a byte
// offset into the kernel's scratchpad.
struct Place {
  enum Kind : std::uint8_t { input, output, scratch } kind = input;
  int index = 0;
  std::int64_t offset = 0;
};

// Flat index t over `dims` (row-major) -> element offset + sum(index[d] * strides[d]),
// with adjacent axes merged where they step as one.
struct View {
  int rank = 0;
  std::array<std::int64_t, kMaxViewRank> dims{}, strides{};
  std::int64_t offset = 0;
  bool identity = false;  // element t at offset t
};

enum class Code : std::uint8_t {
  load,
  iota,
  random,
  unary,
  binary,
  compare,
  select,
  cast,
  store,
  reduce
};

struct Instr {
  Code code = Code::load;
  Op op = Op::add;
  DType dtype = DType::f32;      // the result's dtype (store, reduce: the value's)
  DType src_dtype = DType::f32;  // the operands' dtype (compare, cast)
  int dst = -1, a = -1, b = -1, c = -1;
  Place place;  // load, store, random (the key)
  View view;    // load; reduce: the map from the input's flat index to the output's
  std::int64_t iota_stride = 1, iota_dim = 1;
  int reduction = -1;  // reduce: index into Sweep::reductions
  // load: a scalar (all strides 0) is filled into its own buffer once per run, not per
  // tile; an identity load whose storage type is its compute type is not copied, its
  // operand reads go straight to memory (`direct`: no store of the sweep can overwrite
  // that memory before a store reads it).
  int scalar = -1;
  bool direct = false;
};

struct Reduction {
  Op op = Op::reduce_sum;
  DType dtype = DType::f32;
  std::int64_t numel = 0;  // of the result
  Place dest;
};

struct Sweep {
  std::int64_t numel = 0;  // the iteration domain's size
  std::vector<Instr> code;
  int registers = 0;
  int scalars = 0;  // scalar buffers after the registers
  std::vector<Reduction> reductions;
  std::vector<std::string> ops;  // the ops it computes, for describe()
};

// The places bound for one run (arrays owned by the caller, which fills them without
// allocating).
struct Bindings {
  const std::byte* const* inputs = nullptr;
  std::byte* const* outputs = nullptr;
  std::byte* scratch = nullptr;
};

// Runs one sweep on up to `threads` OpenMP threads (fewer for small domains).
void run_sweep(const Sweep& sweep, const Bindings& bindings, int threads);

// Views (fused_views.cpp): `shape` with these element strides, size-1 axes dropped and
// axes that step as one merged; a contiguous shape; how the result of view op `n`
// reads its operand of shape `in`; the map from a reduction input's flat index to its
// result's flat index.
View make_view(const Shape& shape, const std::vector<std::int64_t>& strides, std::int64_t offset);
View contiguous(const Shape& shape);
View operand_view(const Node& n, const Shape& in);
View reduce_map(const Shape& in, const Ints& axes);

}  // namespace glia::detail::cpu::fused
