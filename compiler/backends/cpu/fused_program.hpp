// Internal: a FusedSpec (glia/compiler/program.hpp) as the cpu tile executor runs it. A
// sweep runs its instructions per tile of consecutive flat indices over registers that
// are tile buffers; the realisation gives the spec's virtual registers physical ones,
// fills scalar loads once per run, passes them to binary ops as values, reads identity
// loads straight from memory, and sizes the tile so that the buffers a tile touches stay
// in L1.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "glia/compiler/program.hpp"

namespace glia::detail::cpu {
class SpinTeam;
}

namespace glia::detail::cpu::fused {

// Tiles of up to 1,024 elements: each instruction's vector loop long enough to amortise
// its dispatch (softmax over 1M and over 1,000 ran ~20% faster than with 256), shortened
// (to no less than kMinTile) while the buffers the sweep writes would not fit in
// kL1Budget: the Adam update's 10 live f32 buffers of 4 KiB each spilled to L2.
inline constexpr int kTile = 1024;
inline constexpr int kMinTile = 256;
inline constexpr int kL1Budget = 24 * 1024;
// A register's stride in bytes for a tile: the widest compute type is 8 bytes; one cache
// line more keeps registers from starting at the same address modulo 4 KiB, where the
// CPU would take every load from one register as depending on the store just made to
// another (4K aliasing: a 5-10x slowdown).
constexpr int register_bytes(int tile) { return tile * 8 + 64; }
inline constexpr int kMaxViewRank = 16;

// FusedSpec::View in fixed storage, so the tile loops read it without indirection.
struct View {
  int rank = 0;
  std::array<std::int64_t, kMaxViewRank> dims{}, strides{};
  std::int64_t offset = 0;
  bool identity = false;  // element t at offset t
};

using Code = FusedSpec::Code;

struct Instr {
  Code code = Code::load;
  Op op = Op::add;
  DType dtype = DType::f32;
  DType src_dtype = DType::f32;
  int dst = -1, a = -1, b = -1, c = -1;  // physical registers
  ValueId value = -1;                    // load, store: the value; random: its key
  View view;  // load; reduce: the map from the input's flat index to the result's
  std::int64_t iota_stride = 1, iota_dim = 1;
  int reduction = -1;
  // load: a scalar (all strides 0) is filled into its own buffer once per run, not per
  // tile; an identity load whose storage type is its compute type is not copied, its
  // operand reads go straight to memory (`direct`: no store of the sweep can overwrite
  // that memory before a store reads it).
  int scalar = -1;
  bool direct = false;
  // binary: the scalar buffer an operand reads (a splat), passed to the op as a value so
  // the loop reads one stream less (and a power-of-two integer divisor becomes a shift).
  int a_scalar = -1, b_scalar = -1;
};

struct Reduction {
  Op op = Op::reduce_sum;
  DType dtype = DType::f32;
  std::int64_t numel = 0;  // of the result
  ValueId dest = 0;
};

struct Sweep {
  std::int64_t numel = 0;
  std::vector<Instr> code;
  int registers = 0;
  int scalars = 0;  // scalar buffers after the registers
  std::vector<Reduction> reductions;
  int tile = kTile;  // elements a tile: a multiple of kMinTile
  // Work an element costs, in units of a simple op: a sweep worth less than the team's
  // wake-up runs on the calling thread.
  int cost = 1;
};

// Below this much work (elements times Sweep::cost) a sweep runs on the calling thread:
// waking the team costs more than the work.
inline constexpr std::int64_t kParallelWork = 96 * 1024;

// A sweep as a C function compiled for this machine (native_module.hpp): over its outer
// loop's indices [lo, hi), all of them where it is not `split`table. A sweep with
// `partials` (reductions over its outer loop: a whole-array sum) writes its results where
// `partial` is null; otherwise its accumulators, 8 bytes each, to `partial`, and the
// `merge` function combines `count` threads' blocks of them into the results.
using NativeFn = void (*)(std::byte* const* values, std::int64_t lo, std::int64_t hi,
                          void* partial);
using NativeMerge = void (*)(std::byte* const* values, const void* partials, int count);
struct NativeSweep {
  int function = -1;  // in the executable's NativeModule
  bool split = false;
  std::int64_t outer = 1;
  int partials = 0;
  bool small = false;     // few elements: runs compiled even where its loop is scalar
  NativeFn fn = nullptr;  // once the module is built
  NativeMerge merge = nullptr;
};
// Sweep `index` of `spec` as the C function named `name`, in `text`; nothing where it has
// no C form here (16-bit floats, accumulators in a workspace). `in_place`: the kernel's
// (input, output) pairs that may share storage in a run (Kernel::in_place).
std::optional<NativeSweep> native_sweep(const Program& program, const FusedSpec& spec,
                                        std::size_t index,
                                        const std::set<std::pair<ValueId, ValueId>>& in_place,
                                        const std::string& name, std::string& text);

// Where each value of the program lives in this run, by value id.
struct Bindings {
  std::byte* const* values = nullptr;
};

// Runs one sweep on up to `threads` threads (fewer for small domains): on `team` where it
// is given (run_parts), else OpenMP's.
void run_sweep(const Sweep& sweep, const Bindings& bindings, int threads, SpinTeam* team);

// The executor's form of a spec's sweeps, or an empty vector when a view or a reduction
// map has more than kMaxViewRank axes (the cpu backend then declines the group).
std::vector<Sweep> realise_sweeps(const FusedSpec& spec);

}  // namespace glia::detail::cpu::fused
