// FusedSpec sweeps as CUDA kernels. Every thread runs the sweep's straight-line program
// for the flat indices t it is given; operands are read through their views (constant
// divisors and strides, so NVRTC turns the index arithmetic into multiplies and shifts),
// registers become locals. A sweep without reductions is a grid-stride loop over t. A
// sweep with reductions splits t into the result's index q (kept extents) and the
// reduced index r: with few reduced elements per result each thread folds whole results
// (thread per result); otherwise a block folds one result at a time and combines its
// threads' partial accumulators in shared memory (block per result). Where there are too
// few results to fill the device and many elements each (softmax over one long row, a
// convolution's bias gradient), each result's elements are split over several blocks,
// whose partials a second kernel combines in order (split). Every order of combination is
// fixed: results repeat bit for bit. Each reduction shape in a sweep gets a kernel.
#include <algorithm>
#include <map>

#include "backends/cuda/kernel_source.hpp"
#include "glia/core/elementwise.hpp"
#include "glia/core/error.hpp"
#include "glia/core/monoid.hpp"
#include "lowering/instr_text.hpp"

namespace glia::detail::cuda {

namespace {

using Code = FusedSpec::Code;

// Above this many reduced elements per result, a block (not a thread) folds each result.
constexpr std::int64_t kThreadFoldLimit = 32;
// A split reduction aims at this many blocks (an H100 has 132 multiprocessors), each
// folding at least kSplitChunk elements; kSplitBlocks / 4 results fill it unsplit.
constexpr std::int64_t kSplitBlocks = 1024;
constexpr std::int64_t kSplitChunk = 2048;

// The blocks each result's elements are split over (1: no split).
std::int64_t split_parts(std::int64_t q_count, std::int64_t r_count) {
  if (q_count == 0 || q_count >= kSplitBlocks / 4) return 1;
  const std::int64_t q = std::max<std::int64_t>(q_count, 1);
  return std::max<std::int64_t>(
      1, std::min((r_count + kSplitChunk - 1) / kSplitChunk, (kSplitBlocks + q - 1) / q));
}

// The monoid's stem in elementwise_math.h's glia_<m>_* names, from core's one list.
const char* monoid(Op op) {
#define GLIA_CUDA_MONOID_STEM(reduce_op, m) \
  if (op == Op::reduce_op) return #m;
  GLIA_REDUCTION_MONOIDS(GLIA_CUDA_MONOID_STEM)
#undef GLIA_CUDA_MONOID_STEM
  throw Error(cat("cuda: ", op_name(op), " is not a reduction monoid"));
}

std::string lit(std::int64_t v) { return int_literal(v); }

// The index type: 32-bit where every index and offset fits (faster division).
struct Index {
  bool wide = false;
  const char* type() const { return wide ? "unsigned long long" : "unsigned"; }
};

// offset + sum(((t / inner_i) % dims_i) * strides_i): element t of a (dims, strides) map.
std::string view_offset(const std::string& t, const std::vector<std::int64_t>& dims,
                        const std::vector<std::int64_t>& strides, std::int64_t offset) {
  std::string e = lit(offset);
  std::int64_t inner = 1;
  for (std::size_t i = dims.size(); i-- > 0;) {
    if (strides[i] != 0 && dims[i] != 1) {
      std::string digit = inner == 1 ? t : cat("(", t, " / ", lit(inner), ")");
      if (i > 0) digit = cat("(", digit, " % ", lit(dims[i]), ")");
      e += cat(" + ", digit, strides[i] == 1 ? "" : " * " + lit(strides[i]));
    }
    inner *= dims[i];
  }
  return e;
}

// Writes one sweep's kernels.
class SweepWriter {
 public:
  SweepWriter(const Graph& graph, const FusedSpec::Sweep& sweep, std::string name)
      : graph_(graph), s_(sweep), name_(std::move(name)) {}

  // The sweep's element-wise program for flat index `t` (reductions in `folded` combine
  // into acc<i>; stores only when `stores`).
  std::string body(const std::vector<int>& folded, bool stores) {
    std::string b;
    for (const FusedSpec::Instr& in : s_.code) {
      const std::string d = cat("r", in.dst), a = cat("r", in.a), bb = cat("r", in.b),
                        c = cat("r", in.c);
      auto def = [&](DType t, const std::string& value) {
        // A 16-bit float result is rounded to its storage type, as the interpreter
        // stores it.
        std::string v = value;
        if (is_16bit_float(t))
          v = t == DType::f16 ? cat("glia_f32_from_f16(glia_f16_from_f32(", value, "))")
                              : cat("glia_f32_from_bf16(glia_bf16_from_f32(", value, "))");
        return cat("const ", compute_type(t), " ", d, " = ", v, ";\n");
      };
      switch (in.code) {
        case Code::load:
          if (in.view.scalar()) break;  // loaded once before the loop
          b += cat("const ", compute_type(in.dtype), " ", d, " = ",
                   read(in.value, in.dtype,
                        view_offset("t", in.view.dims, in.view.strides, in.view.offset)),
                   ";\n");
          break;
        case Code::iota:
          b += def(in.dtype, cat("(", compute_type(in.dtype), ")((t / ", lit(in.iota_stride),
                                 ") % ", lit(in.iota_dim), ")"));
          break;
        case Code::random:
          b += cat("const unsigned ", d, " = glia_random_word(key", in.value, "_0, key", in.value,
                   "_1, (glia_u64)t);\n");
          break;
        case Code::unary:
        case Code::binary:
        case Code::select:
        case Code::cast:
          b +=
              def(in.dtype, lowering::computed_value(in, a, bb, c, compute_type(in.dtype), "cuda"));
          break;
        case Code::compare:
          b += def(DType::boolean, lowering::computed_value(in, a, bb, c, "", "cuda"));
          break;
        case Code::store:
          if (stores) b += cat(write(in.value, in.dtype, "t", a), "\n");
          break;
        case Code::reduce: {
          if (std::find(folded.begin(), folded.end(), in.reduction) == folded.end()) break;
          const FusedSpec::Reduction& r = s_.reductions[std::size_t(in.reduction)];
          const std::string t(ew_c_type(r.dtype)), m = monoid(r.op);
          b += cat("acc", in.reduction, " = glia_", m, "_combine_", t, "(acc", in.reduction,
                   ", glia_", m, "_widen_", t, "(", a, "));\n");
          break;
        }
      }
    }
    return b;
  }

  // Scalar loads and random keys, read once per thread before any loop.
  std::string hoisted() {
    std::string h;
    std::map<ValueId, bool> keys;
    for (const FusedSpec::Instr& in : s_.code) {
      if (in.code == Code::load && in.view.scalar())
        h += cat("const ", compute_type(in.dtype), " r", in.dst, " = ",
                 read(in.value, in.dtype, lit(in.view.offset)), ";\n");
      if (in.code == Code::random && !keys[in.value]) {
        keys[in.value] = true;
        h += cat("const unsigned key", in.value, "_0 = ", ptr(in.value), "[0], key", in.value,
                 "_1 = ", ptr(in.value), "[1];\n");
      }
    }
    return h;
  }

  // An element-wise sweep: a grid-stride loop over t.
  GeneratedKernel elementwise() {
    Index ix{s_.numel > 2147483647 - kThreads * kMaxBlocks};
    std::string code = body({}, true);
    GeneratedKernel k;
    k.name = name_;
    k.blocks = blocks_for(s_.numel);
    k.what = cat("grid-stride over ", s_.numel);
    k.body =
        cat(hoisted(), "for (", ix.type(), " t = blockIdx.x * ", kThreads, "u + threadIdx.x; t < ",
            lit(s_.numel), "; t += gridDim.x * ", kThreads, "u) {\n", code, "}\n");
    return finish(std::move(k));
  }

  // The reductions `group` (one shape of extents); stores when `stores`. One kernel, or
  // two where the reduction is split.
  std::vector<GeneratedKernel> reduction(const std::vector<int>& group, bool stores) {
    const FusedSpec::Reduction& shape = s_.reductions[std::size_t(group.front())];
    const std::int64_t q_count = shape.numel;  // also when some extent is empty
    std::int64_t r_count = 1;
    for (const auto& e : shape.extents)
      if (e.reduced) r_count *= e.size;
    Index ix{s_.numel > 2147483647 - kThreads * kMaxBlocks || q_count > 2147483647 - kMaxBlocks};
    // t from (q, r): the extents' digits, innermost first.
    std::string t_expr = "0";
    {
      std::int64_t inner = 1, q_inner = 1, r_inner = 1;
      for (std::size_t i = shape.extents.size(); i-- > 0;) {
        const auto& e = shape.extents[i];
        const std::string src = e.reduced ? "r" : "q";
        std::int64_t& below = e.reduced ? r_inner : q_inner;
        std::string digit = below == 1 ? src : cat("(", src, " / ", lit(below), ")");
        digit = cat("(", digit, " % ", lit(e.size), ")");
        if (inner != 1) digit += " * " + lit(inner);
        t_expr += " + " + digit;
        below *= e.size;
        inner *= e.size;
      }
    }
    std::string open;
    for (int ri : group) {
      const FusedSpec::Reduction& r = s_.reductions[std::size_t(ri)];
      const std::string t(ew_c_type(r.dtype)), m = monoid(r.op);
      open += cat("glia_", m, "_acc_", t, " acc", ri, " = glia_", m, "_identity_", t, "();\n");
    }
    const std::string code = body(group, stores);
    GeneratedKernel k;
    k.name = name_;
    const bool per_thread = r_count <= kThreadFoldLimit;
    if (per_thread) {
      k.blocks = blocks_for(q_count);
      k.what = cat("thread per result: ", q_count, " x ", r_count);
      k.body = cat(hoisted(), "for (", ix.type(), " q = blockIdx.x * ", kThreads,
                   "u + threadIdx.x; q < ", lit(q_count), "; q += gridDim.x * ", kThreads, "u) {\n",
                   open, "for (", ix.type(), " r = 0; r < ", lit(r_count), "; ++r) {\nconst ",
                   ix.type(), " t = ", t_expr, ";\n", code, "}\n", results(group, false), "}\n");
      return {finish(std::move(k))};
    }
    if (const std::int64_t parts = split_parts(q_count, r_count); parts > 1)
      return split(group, ix, t_expr, code, open, q_count, r_count, parts);
    // Block per result: each thread folds a strided share of r, then the block combines
    // the partials in shared memory, halving the active threads each step.
    k.blocks = std::clamp<std::int64_t>(q_count, 1, kMaxBlocks);
    k.what = cat("block per result: ", q_count, " x ", r_count);
    k.body =
        cat(block_shared(group), hoisted(), "for (", ix.type(), " q = blockIdx.x; q < ",
            lit(q_count), "; q += gridDim.x) {\n", open, "for (", ix.type(),
            " r = threadIdx.x; r < ", lit(r_count), "; r += ", kThreads, "u) {\nconst ", ix.type(),
            " t = ", t_expr, ";\n", code, "}\n", block_combine(group, results(group)), "}\n");
    return {finish(std::move(k))};
  }

 private:
  // The shared-memory partials of a block that folds a result.
  std::string block_shared(const std::vector<int>& group) {
    std::string shared;
    for (int ri : group) {
      const FusedSpec::Reduction& r = s_.reductions[std::size_t(ri)];
      shared += cat("__shared__ glia_", monoid(r.op), "_acc_", ew_c_type(r.dtype), " part", ri, "[",
                    kThreads, "];\n");
    }
    return shared;
  }
  // The block's threads' accumulators combined in shared memory (halving the active
  // threads each step), then `finish` on thread 0 with part<i>[0] the block's fold.
  std::string block_combine(const std::vector<int>& group, const std::string& finish) {
    std::string fold, combine;
    for (int ri : group) {
      const FusedSpec::Reduction& r = s_.reductions[std::size_t(ri)];
      const std::string t(ew_c_type(r.dtype)), m = monoid(r.op);
      fold += cat("part", ri, "[threadIdx.x] = acc", ri, ";\n");
      combine += cat("part", ri, "[threadIdx.x] = glia_", m, "_combine_", t, "(part", ri,
                     "[threadIdx.x], part", ri, "[threadIdx.x + s]);\n");
    }
    return cat(fold, "__syncthreads();\nfor (unsigned s = ", kThreads / 2,
               "u; s > 0; s >>= 1) {\nif (threadIdx.x < s) {\n", combine,
               "}\n__syncthreads();\n}\nif (threadIdx.x == 0) {\n", finish,
               "}\n__syncthreads();\n");
  }
  // Each reduction's result q, narrowed from the thread's acc<i> or the block's part<i>[0].
  std::string results(const std::vector<int>& group, bool block = true) {
    std::string out;
    for (int ri : group) {
      const FusedSpec::Reduction& r = s_.reductions[std::size_t(ri)];
      const std::string t(ew_c_type(r.dtype)), m = monoid(r.op);
      const std::string from = block ? cat("part", ri, "[0]") : cat("acc", ri);
      out +=
          cat(write(r.result, r.dtype, "q", cat("glia_", m, "_narrow_", t, "(", from, ")")), "\n");
    }
    return out;
  }

  // A split reduction: block b = q * parts + p folds result q's elements
  // [p * chunk, (p + 1) * chunk) (and makes the sweep's stores for them) into partial b of
  // the scratch; the second kernel's block q combines its `parts` partials in order and
  // writes the results. Each reduction's partials take parts * q_count accumulators (8
  // bytes at most) at a 256-byte boundary.
  std::vector<GeneratedKernel> split(const std::vector<int>& group, const Index& ix,
                                     const std::string& t_expr, const std::string& code,
                                     const std::string& open, std::int64_t q_count,
                                     std::int64_t r_count, std::int64_t parts) {
    const std::int64_t chunk = (r_count + parts - 1) / parts, blocks = q_count * parts;
    const std::int64_t stride = (blocks * 8 + 255) / 256 * 256;
    std::string partials;
    for (std::size_t i = 0; i < group.size(); ++i) {
      const FusedSpec::Reduction& r = s_.reductions[std::size_t(group[i])];
      const std::string acc = cat("glia_", monoid(r.op), "_acc_", ew_c_type(r.dtype));
      partials += cat(acc, "* partial", group[i], " = (", acc, "*)(scratch + ",
                      lit(std::int64_t(i) * stride), ");\n");
    }
    const std::int64_t scratch = std::int64_t(group.size()) * stride;
    const std::string u = ix.type();
    GeneratedKernel fold;
    fold.name = name_;
    fold.blocks = std::min(blocks, kMaxBlocks);
    fold.scratch_bytes = scratch;
    fold.what = cat("split: ", q_count, " x ", r_count, " over ", parts, " blocks a result");
    params_.push_back(kScratchParam);
    std::string save;
    for (int ri : group) save += cat("partial", ri, "[b] = part", ri, "[0];\n");
    const std::string end = cat("(p + 1) * ", lit(chunk));
    fold.body = cat(block_shared(group), hoisted(), partials, "for (", u, " b = blockIdx.x; b < ",
                    lit(blocks), "; b += gridDim.x) {\nconst ", u, " q = b / ", lit(parts),
                    ", p = b % ", lit(parts), ", r_end = ", end, " < ", lit(r_count), " ? ", end,
                    " : ", lit(r_count), ";\n", open, "for (", u, " r = p * ", lit(chunk),
                    " + threadIdx.x; r < r_end; r += ", kThreads, "u) {\nconst ", u,
                    " t = ", t_expr, ";\n", code, "}\n", block_combine(group, save), "}\n");
    std::vector<GeneratedKernel> made{finish(std::move(fold))};

    GeneratedKernel combine;
    combine.name = name_ + "_c";
    combine.blocks = std::clamp<std::int64_t>(q_count, 1, kMaxBlocks);
    combine.scratch_bytes = scratch;
    combine.what = cat("split: ", q_count, " results from ", parts, " partials each");
    params_.push_back(kScratchParam);
    std::string gather;
    for (int ri : group) {
      const FusedSpec::Reduction& r = s_.reductions[std::size_t(ri)];
      gather += cat("acc", ri, " = glia_", monoid(r.op), "_combine_", ew_c_type(r.dtype), "(acc",
                    ri, ", partial", ri, "[q * ", lit(parts), " + p]);\n");
    }
    combine.body = cat(block_shared(group), partials, "for (", u, " q = blockIdx.x; q < ",
                       lit(q_count), "; q += gridDim.x) {\n", open,
                       "for (unsigned p = threadIdx.x; p < ", lit(parts), "; p += ", kThreads,
                       "u) {\n", gather, "}\n", block_combine(group, results(group)), "}\n");
    made.push_back(finish(std::move(combine)));
    return made;
  }

  std::string ptr(ValueId v) {
    if (std::find(params_.begin(), params_.end(), v) == params_.end()) params_.push_back(v);
    return cat("v", v);
  }
  std::string read(ValueId v, DType dtype, const std::string& at) {
    return read_element(ptr(v), dtype, at);
  }
  std::string write(ValueId v, DType dtype, const std::string& at, const std::string& value) {
    return write_element(ptr(v), dtype, at, value);
  }
  // The kernel's signature around its body: one pointer per value it names, const for
  // values it only reads (no __restrict__: an output may take an input's storage).
  GeneratedKernel finish(GeneratedKernel k) {
    std::map<ValueId, bool> written;
    for (const FusedSpec::Instr& in : s_.code)
      if (in.code == Code::store) written[in.value] = true;
    for (const auto& r : s_.reductions) written[r.result] = true;
    std::vector<bool> writes;
    for (ValueId v : params_) writes.push_back(written[v]);
    k.params = params_;
    k.body = kernel_text(graph_, k.name, params_, writes, k.body);
    params_.clear();
    std::string ops;
    for (const std::string& op : s_.ops) ops += (ops.empty() ? "" : " ") + op;
    k.what = cat(k.what, ": ", ops);
    return k;
  }

  const Graph& graph_;
  const FusedSpec::Sweep& s_;
  std::string name_;
  std::vector<ValueId> params_;
};

bool same_extents(const FusedSpec::Reduction& a, const FusedSpec::Reduction& b) {
  if (a.extents.size() != b.extents.size() || a.numel != b.numel) return false;
  for (std::size_t i = 0; i < a.extents.size(); ++i)
    if (a.extents[i].size != b.extents[i].size || a.extents[i].reduced != b.extents[i].reduced)
      return false;
  return true;
}

}  // namespace

std::vector<GeneratedKernel> fused_kernels(const Graph& graph, const FusedSpec& spec,
                                           const std::string& stem) {
  std::vector<GeneratedKernel> kernels;
  for (std::size_t si = 0; si < spec.sweeps.size(); ++si) {
    const FusedSpec::Sweep& s = spec.sweeps[si];
    if (s.reductions.empty()) {
      if (s.numel == 0) continue;
      kernels.push_back(SweepWriter(graph, s, cat(stem, "_s", si)).elementwise());
      continue;
    }
    // Reductions grouped by shape, in order of first appearance.
    std::vector<std::vector<int>> groups;
    for (std::size_t ri = 0; ri < s.reductions.size(); ++ri) {
      auto g = std::find_if(groups.begin(), groups.end(), [&](const std::vector<int>& gr) {
        return same_extents(s.reductions[std::size_t(gr.front())], s.reductions[ri]);
      });
      if (g == groups.end())
        groups.push_back({int(ri)});
      else
        g->push_back(int(ri));
    }
    for (std::size_t gi = 0; gi < groups.size(); ++gi)
      for (GeneratedKernel& k :
           SweepWriter(graph, s, gi == 0 ? cat(stem, "_s", si) : cat(stem, "_s", si, "_r", gi))
               .reduction(groups[gi], gi == 0))
        kernels.push_back(std::move(k));
  }
  return kernels;
}

}  // namespace glia::detail::cuda
