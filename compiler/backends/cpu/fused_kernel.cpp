// FusedSpecs on the cpu backend: each sweep as C compiled for the machine (native_fused.cpp,
// native_module.hpp) where it has the work to gain from it, else on the tile executor
// (fused_exec.cpp): the spec's views in fixed storage, its virtual registers given
// physical tile buffers (reused once dead), scalar loads filled once per run, identity
// loads read straight from memory where no store of the tile can overwrite them first.
#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "backends/cpu/fused_program.hpp"
#include "backends/cpu/native_module.hpp"
#include "backends/cpu/realise.hpp"
#include "backends/cpu/spin_team.hpp"
#include "glia/compiler/fusion.hpp"

namespace glia::detail::cpu {

namespace fused {

namespace {

bool to_view(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& strides,
             std::int64_t offset, View& v) {
  if (dims.size() > std::size_t(kMaxViewRank)) return false;
  v.rank = int(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) v.dims[i] = dims[i], v.strides[i] = strides[i];
  v.offset = offset;
  return true;
}

// The map from a reduction input's flat index to its result's flat index: kept extents
// step through the result row-major, reduced ones stand still.
bool reduce_map(const FusedSpec::Reduction& r, View& v) {
  std::vector<std::int64_t> dims, strides(r.extents.size(), 0);
  std::int64_t step = 1;
  for (std::size_t i = r.extents.size(); i-- > 0;) {
    if (r.extents[i].reduced) continue;
    strides[i] = step;
    step *= r.extents[i].size;
  }
  for (const auto& e : r.extents) dims.push_back(e.size);
  return to_view(dims, strides, 0, v);
}

// What an element of an instruction costs against a simple op (a vector add over L1):
// Threefry's 20 rounds for half a pair, a vector-library call, a divide.
int cost_of(const Instr& in) {
  switch (in.code) {
    case Code::random:
      return 16;
    case Code::unary:
      return transcendental_op(in.op) ? 8 : in.op == Op::sqrt || in.op == Op::rsqrt ? 2 : 1;
    case Code::binary:
      return in.op == Op::divide || in.op == Op::pow || in.op == Op::remainder || in.op == Op::atan2
                 ? 4
                 : 1;
    case Code::load:
      return in.direct || in.scalar >= 0 ? 0 : 1;
    default:
      return 1;
  }
}

// The tile: the longest (1,024, 512, 256) whose written buffers fit kL1Budget, and the
// sweep's cost an element.
void size_tile(Sweep& s) {
  std::vector<bool> written(std::size_t(s.registers), false);
  int width = 4;  // bytes of the widest compute type written
  s.cost = 0;
  for (const Instr& in : s.code) {
    s.cost += cost_of(in);
    if (in.dst < 0 || (in.code == Code::load && (in.direct || in.scalar >= 0))) continue;
    written[std::size_t(in.dst)] = true;
    if (dtype_size(in.dtype) == 8) width = 8;
  }
  s.cost = std::max(s.cost, 1);
  const auto buffers = std::count(written.begin(), written.end(), true);
  s.tile = kTile;
  while (s.tile > kMinTile && buffers * s.tile * width > kL1Budget) s.tile /= 2;
}

}  // namespace

std::vector<Sweep> realise_sweeps(const FusedSpec& spec) {
  std::vector<Sweep> sweeps;
  for (const FusedSpec::Sweep& from : spec.sweeps) {
    Sweep s;
    s.numel = from.numel;
    std::vector<Instr> code;
    for (const FusedSpec::Instr& f : from.code) {
      Instr in;
      in.code = f.code;
      in.op = f.op;
      in.dtype = f.dtype;
      in.src_dtype = f.src_dtype;
      in.dst = f.dst, in.a = f.a, in.b = f.b, in.c = f.c;
      in.value = f.value;
      in.iota_stride = f.iota_stride, in.iota_dim = f.iota_dim;
      in.reduction = f.reduction;
      if (f.code == Code::load) {
        if (!to_view(f.view.dims, f.view.strides, f.view.offset, in.view)) return {};
        in.view.identity = f.view.identity();
        if (f.view.scalar()) in.scalar = s.scalars++;
      }
      if (f.code == Code::reduce && !reduce_map(from.reductions[std::size_t(f.reduction)], in.view))
        return {};
      code.push_back(in);
    }
    for (const auto& r : from.reductions)
      s.reductions.push_back({r.op, r.dtype, r.numel, r.result});
    // A load read straight from memory is read when used: only by the first store, before
    // any store of the tile wrote (a later store may write where it reads, in place).
    const int vregs = from.registers;
    std::vector<bool> late(std::size_t(vregs), false);
    bool first_store = true;
    for (const Instr& in : code)
      if (in.code == Code::store) {
        if (!first_store) late[std::size_t(in.a)] = true;
        first_store = false;
      }
    for (Instr& in : code)
      if (in.code == Code::load) in.direct = in.view.identity && !late[std::size_t(in.dst)];
    // Binary ops take splats by value.
    std::vector<int> scalar_of(std::size_t(vregs), -1);
    for (Instr& in : code) {
      if (in.code == Code::load) scalar_of[std::size_t(in.dst)] = in.scalar;
      if (in.code != Code::binary) continue;
      in.a_scalar = scalar_of[std::size_t(in.a)];
      in.b_scalar = scalar_of[std::size_t(in.b)];
    }
    // Registers: each virtual register gets a physical one from its definition to its last
    // use; an instruction's result never shares a register with its operands.
    std::vector<int> last(std::size_t(vregs), -1), phys(std::size_t(vregs), -1);
    for (std::size_t i = 0; i < code.size(); ++i)
      for (int r : {code[i].a, code[i].b, code[i].c})
        if (r >= 0) last[std::size_t(r)] = int(i);
    std::vector<int> free_regs;
    int count = 0;
    for (std::size_t i = 0; i < code.size(); ++i) {
      Instr& in = code[i];
      int operands[3] = {in.a, in.b, in.c};
      if (in.dst >= 0) {
        int p;
        if (!free_regs.empty()) {
          p = free_regs.back();
          free_regs.pop_back();
        } else {
          p = count++;
        }
        phys[std::size_t(in.dst)] = p;
        in.dst = p;
      }
      for (int j = 0; j < 3; ++j) {
        int r = operands[j];
        if (r < 0) continue;
        (j == 0 ? in.a : j == 1 ? in.b : in.c) = phys[std::size_t(r)];
        if (last[std::size_t(r)] == int(i) && std::find(operands, operands + j, r) == operands + j)
          free_regs.push_back(phys[std::size_t(r)]);
      }
    }
    s.code = std::move(code);
    s.registers = count;
    size_tile(s);
    sweeps.push_back(std::move(s));
  }
  return sweeps;
}

}  // namespace fused

namespace {

// An executable whose sweeps all have less work than this (elements times Sweep::cost)
// runs them on the tile executor, unless every sweep is to be compiled; where one has
// more, the rest join its library (Offer::small). Compiled loops beat the tile executor at every
// size (softmax over 1,000 f32: 1.18 -> 0.88 us a call); what bounds it is the compiler
// run (~0.1 s an executable, then cached): at 2K, the test suite with a cold cache builds
// ~370 libraries and takes 33 s (30 s at 32K), at 0 ~2,500 and 2 min 17 s.
constexpr std::int64_t kCompileWork = 2 * 1024;

// A sweep over no more elements than this runs compiled even where its loop stayed
// scalar: the tile executor's set-up costs more than the loop.
constexpr std::int64_t kFewElements = 256;

// A kernel may take its compiled sweeps while other threads run it (the executable's
// tier-up, cpu_backend.cpp): run() reads a sweep's NativeSweep only once its function is
// published (release, after every field is written), and nothing else of it before.
class FusedKernel final : public CpuKernel {
 public:
  FusedKernel(const Kernel& kernel, std::vector<fused::Sweep> sweeps)
      : spec_(std::get<FusedSpec>(kernel.spec)),
        sweeps_(std::move(sweeps)),
        native_(sweeps_.size()),
        published_(std::make_unique<std::atomic<fused::NativeFn>[]>(sweeps_.size())) {
    for (const auto& [input, output] : kernel.in_place) in_place_.insert({input, output});
  }

  void run(RunContext& ctx) const override {
    fused::Bindings b{ctx.values};
    const int threads = run_threads();
    for (std::size_t i = 0; i < sweeps_.size(); ++i) {
      const fused::NativeFn fn = published_[i].load(std::memory_order_acquire);
      if (fn == nullptr) {
        fused::run_sweep(sweeps_[i], b, threads, ctx.team);
        continue;
      }
      const fused::NativeSweep& n = native_[i];
      const bool wide = n.split && sweeps_[i].numel * sweeps_[i].cost >= fused::kParallelWork;
      const int team = wide ? int(std::min<std::int64_t>(threads, n.outer)) : 1;
      if (team <= 1) {
        fn(ctx.values, 0, n.outer, nullptr);
        continue;
      }
      // A whole-array reduction's threads each write their accumulators (8 bytes each) to
      // their block of `partials`, which merge combines in thread order.
      constexpr int kStackPartials = 64;
      std::uint64_t stack[kStackPartials];
      std::vector<std::uint64_t> heap;
      std::uint64_t* partials = stack;
      if (n.partials * team > kStackPartials) {
        heap.resize(std::size_t(n.partials) * std::size_t(team));
        partials = heap.data();
      }
      run_parts(ctx.team, team, [&](std::int64_t t) {
        fn(ctx.values, n.outer * t / team, n.outer * (t + 1) / team,
           n.partials > 0 ? partials + t * n.partials : nullptr);
      });
      if (n.partials > 0) n.merge(ctx.values, partials, team);
    }
  }

  void offer(const Program& program, Offer which, NativeModule& module) override {
    const bool every = which == Offer::every;
    every_ = every;
    for (std::size_t i = 0; i < sweeps_.size(); ++i) {
      const std::int64_t work = sweeps_[i].numel * sweeps_[i].cost;
      if (sweeps_[i].numel == 0 || native_[i].function >= 0) continue;
      if (which == Offer::large && work < kCompileWork) continue;
      if (which == Offer::small && work >= kCompileWork) continue;
      std::string text;
      auto n = fused::native_sweep(program, spec_, i, in_place_, NativeModule::name(module.next()),
                                   text);
      // A large sweep that threads cannot split runs on the tile executor's threads.
      if (!n || (!every && !n->split && work >= fused::kParallelWork)) continue;
      n->function = module.add(std::move(text));
      n->small = which == Offer::small && sweeps_[i].numel <= kFewElements;
      native_[i] = *n;
    }
  }

  void adopt(const NativeModule& module) override {
    for (std::size_t i = 0; i < native_.size(); ++i) {
      fused::NativeSweep& n = native_[i];
      if (n.function >= 0 && published_[i].load(std::memory_order_relaxed) == nullptr) {
        // A loop the compiler left scalar is slower than the tile executor's vector loops
        // (a clamp feeding a select, where GCC 12 gives up on if-conversion), except over
        // a few elements (a sum of 10), where the tile executor's overhead is the cost.
        if (!every_ && !n.small && module.scalar(n.function)) continue;
        n.fn = reinterpret_cast<fused::NativeFn>(module.symbol(n.function));
        if (n.partials > 0)
          n.merge = reinterpret_cast<fused::NativeMerge>(module.symbol(n.function, "_merge"));
        if (n.partials > 0 && n.merge == nullptr) {
          n.fn = nullptr;  // a library without the merge: the tile executor runs the sweep
          continue;
        }
        library_ = module.library().filename().string();
        published_[i].store(n.fn, std::memory_order_release);
      }
    }
  }

  bool uses_openmp() const override { return false; }

  std::string describe() const override {
    int registers = 0, compiled = 0;
    for (std::size_t i = 0; i < sweeps_.size(); ++i) {
      if (published_[i].load(std::memory_order_acquire) != nullptr) {
        ++compiled;
        continue;
      }
      registers = std::max(registers, sweeps_[i].registers + sweeps_[i].scalars);
    }
    const int total = int(sweeps_.size());
    if (compiled == total) return cat("compiled C (", library_, ")");
    std::string tile = cat("glia tile executor, ", registers, " tile register(s)");
    if (compiled == 0) return tile;
    return cat("compiled C for ", compiled, " of ", total, " sweeps (", library_, "), ", tile);
  }

 private:
  FusedSpec spec_;
  std::vector<fused::Sweep> sweeps_;
  std::vector<fused::NativeSweep> native_;  // by sweep: fn null where the tile executor runs it
  std::unique_ptr<std::atomic<fused::NativeFn>[]> published_;  // by sweep: native_'s fn, once set
  std::set<std::pair<ValueId, ValueId>> in_place_;             // the kernel's (input, output) pairs
  std::string library_;
  bool every_ = false;  // every sweep with a C form runs compiled
};

}  // namespace

std::unique_ptr<CpuKernel> realise_fused(const Kernel& kernel) {
  if (auto softmax = realise_softmax_rows(kernel)) return softmax;
  std::vector<fused::Sweep> sweeps = fused::realise_sweeps(std::get<FusedSpec>(kernel.spec));
  if (sweeps.empty()) return nullptr;
  return std::make_unique<FusedKernel>(kernel, std::move(sweeps));
}

}  // namespace glia::detail::cpu
