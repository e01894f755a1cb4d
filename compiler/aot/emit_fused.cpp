// FusedSpec sweeps as C loop nests (the nest's levels: loop_nest.hpp), so the innermost
// loop is a plain strided loop that compilers vectorise. Reductions accumulate where
// sweep_accumulators.hpp places them; a reduced innermost loop runs in blocks of lanes,
// or, too short for those, stores its operands in arrays combined after it. Virtual
// registers become const locals. Random words come a Threefry block (two words) at a
// time, a chunk of the innermost loop ahead.
#include <algorithm>
#include <set>

#include "aot/emitter.hpp"
#include "aot/loop_nest.hpp"
#include "aot/sweep_accumulators.hpp"
#include "glia/core/attrs.hpp"
#include "glia/core/elementwise.hpp"
#include "glia/core/error.hpp"
#include "lowering/instr_text.hpp"

namespace glia::aot::detail {

namespace {

using Code = FusedSpec::Code;

// Lanes of a reduced innermost loop's blocks (emit_sweep): 16 floats fill an AVX-512
// register. A block of kLanes * kLaneSets iterations keeps kLaneSets independent sets
// of lanes, so that each combine waits on the one kLaneSets before it, not on the last
// (a max over 1,000 floats: 140 -> 90 ns; the chain of dependent combines, not the
// loads, bounded it).
constexpr std::int64_t kLanes = 16;
constexpr int kLaneSets = 4;
// The shortest reduced innermost loop staged (emit_sweep): one of 8 floats is one vector.
constexpr std::int64_t kStagedMin = 8;
// The accumulators of reduction `ri` in lane set `u` of a block.
std::string lane_name(std::size_t ri, int u) { return cat("lane", ri, "_", u); }
// An f32 sum's lanes in set `u` over a chunk of kF32SumChunk iterations (emitter.hpp).
std::string chunk_part_name(std::size_t ri, int u) { return cat("part", ri, "_", u); }
// A virtual register's C type: bool registers are ints holding 0 or 1 (see emit_sweep).
std::string register_type(DType t) { return t == DType::boolean ? "int" : c_type(t); }

}  // namespace

SweepText emit_sweep(Emitter& e, const FusedSpec::Sweep& s, std::size_t si, bool ranged) {
  const Nest nest = make_nest(s);
  const std::size_t levels = nest.extent.size();
  std::set<ValueId> keys;  // random keys read before the loops
  std::string body;
  SweepText out;
  // Reductions: where each accumulates (sweep_accumulators.hpp).
  SweepAccumulators placed = place_accumulators(e, s, nest, ranged, out);
  const std::vector<SweepAccumulator>& accs = placed.accs;
  std::vector<std::string>&opened = placed.opened, &closed = placed.closed;
  const std::string &to_result = placed.to_result, &to_partial = placed.to_partial;
  const std::int64_t scratch = placed.scratch;
  const bool carried = placed.carried;
  std::string pre = placed.pre;
  e.scratch_bytes = std::max(e.scratch_bytes, scratch);
  // A reduced innermost loop (every local accumulates across it) runs in blocks of
  // kLanes * sets iterations, then of kLanes, each lane of each set with its own
  // accumulators, merged after the blocks.
  std::vector<std::size_t> locals;
  for (std::size_t ri = 0; ri < accs.size(); ++ri)
    if (accs[ri].level <= levels) locals.push_back(ri);
  const bool ivdep = e.ivdep && scratch == 0 && !carried;
  const bool lanes =
      ivdep && levels > 0 && !locals.empty() && nest.extent[levels - 1] >= 2 * kLanes;
  // Random words come from per-key chunk arrays (random_chunks) where the innermost loop
  // is a plain one (its flat index steps by 1).
  const bool paired = levels > 0 && !lanes &&
                      std::any_of(s.code.begin(), s.code.end(), [](const FusedSpec::Instr& in) {
                        return in.code == Code::random;
                      });
  // A reduced innermost loop too short for blocks of lanes (a row of 10 classes) stores
  // each iteration's operand of every local in an array (staged), combined in order after
  // the loop: the loop carries no dependence and vectorises, its vector-library calls
  // included, where GCC 12 unrolled it completely and called exp once an element. The
  // sums add in the same order as before.
  const std::int64_t inner = levels > 0 ? nest.extent[levels - 1] : 0;
  const bool staged = ivdep && levels >= 2 && !lanes && !paired && !locals.empty() &&
                      inner >= kStagedMin && inner < 2 * kLanes;
  std::string staged_arrays;
  for (std::size_t ri : locals) {
    if (!staged) break;
    staged_arrays += cat(register_type(s.reductions[ri].dtype), " s", ri, "[", lit(inner), "];\n");
    closed[levels - 1] = cat("for (int64_t q = 0; q < ", lit(inner), "; ++q) ", accs[ri].name,
                             " = ", accs[ri].fn("combine"), "(", accs[ri].name, ", ",
                             accs[ri].fn("widen"), "(s", ri, "[q]));\n", closed[levels - 1]);
  }
  // The body where a block's lanes accumulate (see `lanes`), for each set of lanes: one
  // set where the innermost loop is too short for a block of them all.
  const int sets = levels > 0 && nest.extent[levels - 1] >= kLanes * kLaneSets ? kLaneSets : 1;
  std::vector<std::string> lane_body(std::size_t(sets), "");
  // The same in a block of every set, where f32 sums add in f32 (chunk_part_name).
  std::vector<std::string> block_body(std::size_t(sets), "");
  auto f32_block_sum = [&](std::size_t ri) {
    return sets > 1 && accs[ri].level <= levels && s.reductions[ri].op == Op::reduce_sum &&
           s.reductions[ri].dtype == DType::f32;
  };
  for (const FusedSpec::Instr& in : s.code) {
    const std::size_t mark = body.size();
    const std::string d = in.dst >= 0 ? cat("r", in.dst) : "";
    // Bool registers are ints holding 0 or 1 (every bool value is made as one: comparisons,
    // casts to bool, mask bytes read != 0): GCC 12 vectorises no loop with a _Bool
    // register beside floats ("no vectype"; the loss gradient's selects on comparisons).
    auto def = [&](DType t, const std::string& value) {
      return cat("const ", register_type(t), " ", d, " = ", value, ";\n");
    };
    const std::string a = cat("r", in.a), b = cat("r", in.b), c = cat("r", in.c);
    switch (in.code) {
      case Code::load: {
        // A scalar read of a constant is its value, which the compiler folds (a divisor
        // of 256 becomes a shift).
        const Placement& pl = e.program.placement[std::size_t(in.value)];
        const Tensor* constant =
            pl.kind == Placement::Kind::constant && in.view.scalar()
                ? &std::get<ConstantAttrs>(e.graph().node(in.value).attrs).value
                : nullptr;
        const std::string p = constant != nullptr ? "" : e.ptr(in.value);
        if (in.view.scalar() && constant != nullptr)
          pre += def(in.dtype, element_literal(*constant, in.view.offset));
        else if (in.view.scalar())
          pre += def(in.dtype, cat(p, "[", lit(in.view.offset), "]"));
        else {
          // Bools are read and stored as bytes: GCC 12 vectorises no loop that loads or
          // stores a _Bool beside wider types (the dropout mask's select, the mask itself),
          // while a byte compared with 0, or a byte cast from 0 or 1, is a plain vector op.
          const std::string at = offset_expr(nest, in.view.dims, in.view.strides, in.view.offset);
          body += def(in.dtype, in.dtype == DType::boolean
                                    ? cat("((const unsigned char*)", p, ")[", at, "] != 0")
                                    : cat(p, "[", at, "]"));
        }
        break;
      }
      case Code::iota:
        body += def(in.dtype, cat("(", c_type(in.dtype), ")((", flat_expr(nest), ") / ",
                                  lit(in.iota_stride), " % ", lit(in.iota_dim), ")"));
        break;
      case Code::unary:
      case Code::binary:
      case Code::select:
      case Code::cast:
        body += def(in.dtype, lowering::computed_value(in, a, b, c, c_type(in.dtype), "export"));
        break;
      case Code::compare:
        body += def(DType::boolean, lowering::computed_value(in, a, b, c, "", "export"));
        break;
      case Code::store:
        if (in.dtype == DType::boolean)  // as bytes (see Code::load)
          body += cat("((unsigned char*)", e.ptr(in.value), ")[", flat_expr(nest),
                      "] = (unsigned char)", a, ";\n");
        else
          body += cat(e.ptr(in.value), "[", flat_expr(nest), "] = ", a, ";\n");
        break;
      case Code::reduce: {
        const SweepAccumulator& acc = accs[std::size_t(in.reduction)];
        auto update = [&](const std::string& name) {
          return cat(name, " = ", acc.fn("combine"), "(", name, ", ", acc.fn("widen"), "(", a,
                     "));\n");
        };
        const auto ri = std::size_t(in.reduction);
        if (staged && acc.level <= levels) {
          body += cat("s", ri, "[i", levels - 1, "] = ", a, ";\n");
          continue;
        }
        body += update(acc.name);
        for (int u = 0; u < sets; ++u) {
          const std::string lane =
              update(acc.level <= levels ? lane_name(ri, u) + "[g]" : acc.name);
          lane_body[std::size_t(u)] += lane;
          block_body[std::size_t(u)] +=
              !f32_block_sum(ri) ? lane : cat(chunk_part_name(ri, u), "[g] += ", a, ";\n");
        }
        continue;
      }
      case Code::random: {
        const std::string key = cat("key", in.value);
        if (keys.insert(in.value).second)
          pre += cat("const uint32_t ", key, "_0 = ", e.ptr(in.value), "[0], ", key,
                     "_1 = ", e.ptr(in.value), "[1];\n");
        if (paired)
          body += def(in.dtype, cat("words", in.value, "[1 + i", levels - 1, " - c]"));
        else
          body += def(in.dtype, cat("glia_random_word(", key, "_0, ", key, "_1, (uint64_t)(",
                                    flat_expr(nest), "))"));
        break;
      }
    }
    for (std::string& lb : lane_body) lb += body.substr(mark);
    for (std::string& bb : block_body) bb += body.substr(mark);
  }
  // Scalar loads hoisted before the loops may be read by the pre-loop code only after
  // they are defined: `pre` holds them first (accumulator arrays use none).
  std::string what;
  for (const std::string& op : s.ops) what += (what.empty() ? "" : " ") + op;
  out.outer = levels > 0 ? nest.extent[0] : 1;
  // Split by its outer loop only where every accumulator is a local (each outer index
  // then owns its results, or a thread's part of the outer loop its partials) and
  // nothing runs before or after it.
  out.splittable = levels > 0;
  for (const SweepAccumulator& a : accs)
    out.splittable =
        out.splittable &&
        (a.local_array || ((a.level >= 1 || (ranged && a.level == 0)) && a.level <= levels));
  if (out.partials > 0) {
    out.merge = cat("const int64_t stride = ", lit(8 * out.partials), ";\n", out.merge);
    closed[0] += cat("if (partial != 0) {\n", to_partial, "} else {\n", to_result, "}\n");
  }
  std::string text = cat("{ /* sweep ", si, ": ", what, " */\n", pre, opened[0]);
  const std::string flat_t = nest.chain ? "" : "const int64_t t = i0;\n";
  for (std::size_t l = 0; l < levels; ++l) {
    const bool ranged_loop = l == 0 && ranged && out.splittable;
    const std::string i = cat("i", l), lo = ranged_loop ? "lo" : "0",
                      hi = ranged_loop ? "hi" : lit(nest.extent[l]);
    const std::string header =
        cat("for (int64_t ", i, " = ", lo, "; ", i, " < ", hi, "; ++", i, ") {\n");
    if (l + 1 < levels) {
      text += header + opened[l + 1];
      continue;
    }
    if (lanes) {
      const std::string blk = cat("b", l), n = lit(kLanes);
      auto lane_sets = [&](std::size_t ri) { return f32_block_sum(ri) ? 1 : sets; };
      for (std::size_t ri : locals)
        for (int u = 0; u < lane_sets(ri); ++u)
          text += cat(accs[ri].type, " ", lane_name(ri, u), "[", n, "];\nfor (int g = 0; g < ", n,
                      "; ++g) ", lane_name(ri, u), "[g] = ", accs[ri].fn("identity"), "();\n");
      // The lanes of set u over iterations [blk + offset, blk + offset + kLanes).
      auto block = [&](const std::string& lanes_body, std::int64_t offset) {
        return cat("#pragma GCC unroll 1\n#pragma GCC ivdep\nfor (int64_t g = 0; g < ", n,
                   "; ++g) {\nconst int64_t ", i, " = ", blk, " + ", lit(offset), " + g;\n", flat_t,
                   lanes_body, "}\n");
      };
      text += cat("int64_t ", blk, " = ", lo, ";\n");
      if (sets > 1) {
        std::vector<std::size_t> parts;
        for (std::size_t ri : locals)
          if (f32_block_sum(ri)) parts.push_back(ri);
        const std::string step = lit(kLanes * sets), chunk = lit(kF32SumChunk);
        if (!parts.empty()) {
          text += cat("while (", blk, " + ", step, " <= ", hi, ") {\nconst int64_t stop = ", hi,
                      " - ", blk, " > ", chunk, " ? ", blk, " + ", chunk, " : ", hi, ";\n");
          for (std::size_t ri : parts)
            for (int u = 0; u < sets; ++u)
              text += cat("float ", chunk_part_name(ri, u), "[", n, "];\nfor (int g = 0; g < ", n,
                          "; ++g) ", chunk_part_name(ri, u), "[g] = 0.0f;\n");
        }
        text += cat("for (; ", blk, " + ", step, " <= ", parts.empty() ? hi : "stop", "; ", blk,
                    " += ", step, ") {\n");
        for (int u = 0; u < sets; ++u) text += block(block_body[std::size_t(u)], u * kLanes);
        text += "}\n";
        for (std::size_t ri : parts) {
          const SweepAccumulator& a = accs[ri];
          auto part = [&](int u) {
            return cat(a.fn("widen"), "(", chunk_part_name(ri, u), "[g])");
          };
          std::string sum = part(0);
          for (int u = 1; u < sets; ++u) sum = cat(a.fn("combine"), "(", sum, ", ", part(u), ")");
          text += cat("#pragma GCC unroll 16\nfor (int g = 0; g < ", n, "; ++g) ", lane_name(ri, 0),
                      "[g] = ", a.fn("combine"), "(", lane_name(ri, 0), "[g], ", sum, ");\n");
        }
        if (!parts.empty()) text += "}\n";
      }
      text += cat("for (; ", blk, " + ", n, " <= ", hi, "; ", blk, " += ", n, ") {\n",
                  block(lane_body[0], 0), "}\n");
      for (std::size_t ri : locals) {
        const SweepAccumulator& a = accs[ri];
        text += cat("for (int g = 0; g < ", n, "; ++g) {\n");
        for (int u = 1; u < lane_sets(ri); ++u)
          text += cat(lane_name(ri, 0), "[g] = ", a.fn("combine"), "(", lane_name(ri, 0), "[g], ",
                      lane_name(ri, u), "[g]);\n");
        text +=
            cat(a.name, " = ", a.fn("combine"), "(", a.name, ", ", lane_name(ri, 0), "[g]);\n}\n");
      }
      // The remaining iterations, fewer than a block.
      text += cat("for (int64_t ", i, " = ", blk, "; ", i, " < ", hi, "; ++", i, ") {\n");
    } else if (paired) {
      text += random_chunks(nest, std::vector<ValueId>(keys.begin(), keys.end()), lo, hi, flat_t);
      if (ivdep) text += "#pragma GCC ivdep\n";
      text += cat("for (int64_t ", i, " = c; ", i, " < c_end; ++", i, ") {\n");
    } else {
      if (staged) text += staged_arrays + "#pragma GCC unroll 1\n";
      if (ivdep) text += "#pragma GCC ivdep\n";
      text += header;
    }
    text += flat_t;
    text += opened[l + 1];
  }
  text += body;
  if (paired) text += "}\n";  // the chunk loop
  for (std::size_t l = levels; l-- > 0;) text += "}\n" + closed[l];
  if (levels == 0) text += closed[0];
  text += "}\n";
  out.text = std::move(text);
  return out;
}

std::string emit_fused(Emitter& e, const FusedSpec& spec) {
  std::string out;
  for (std::size_t si = 0; si < spec.sweeps.size(); ++si)
    if (spec.sweeps[si].numel > 0) out += emit_sweep(e, spec.sweeps[si], si, false).text;
  return out;
}

}  // namespace glia::aot::detail
