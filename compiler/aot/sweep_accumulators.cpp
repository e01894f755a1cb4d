// Where each reduction of a fused sweep accumulates (sweep_accumulators.hpp).
#include "aot/sweep_accumulators.hpp"

#include "glia/core/elementwise.hpp"

namespace glia::aot::detail {

namespace {

// The most elements a ranged sweep's accumulator array holds on the stack (32 KiB of
// 8-byte accumulators); a larger one needs the workspace.
constexpr std::int64_t kLocalArray = 4096;

const char* monoid_name(Op op) {
  switch (op) {
    case Op::reduce_sum:
      return "sum";
    case Op::reduce_prod:
      return "prod";
    case Op::reduce_max:
      return "max";
    default:
      return "min";
  }
}

// Accumulator `slot` (8 bytes each) of a block of partials at `base`.
std::string slot_at(const std::string& base, const std::string& slot, const std::string& type) {
  return cat("*(", type, "*)(", base, " + 8 * (", slot, "))");
}

}  // namespace

SweepAccumulators place_accumulators(Emitter& e, const FusedSpec::Sweep& s, const Nest& nest,
                                     bool ranged, SweepText& out) {
  const std::size_t levels = nest.extent.size();
  SweepAccumulators placed;
  placed.opened.resize(levels + 1);
  placed.closed.resize(levels + 1);
  std::vector<SweepAccumulator>& accs = placed.accs;
  std::vector<std::string>&opened = placed.opened, &closed = placed.closed;
  std::string &pre = placed.pre, &to_result = placed.to_result, &to_partial = placed.to_partial;
  std::int64_t& scratch = placed.scratch;
  bool& carried = placed.carried;
  for (std::size_t ri = 0; ri < s.reductions.size(); ++ri) {
    const auto& r = s.reductions[ri];
    SweepAccumulator a;
    a.t = std::string(ew_c_type(r.dtype));
    a.m = monoid_name(r.op);
    a.type = a.fn("acc");
    a.name = cat("acc", ri);
    std::vector<std::int64_t> dims, strides;
    reduction_map(r, dims, strides);
    const std::string result = e.ptr(r.result);
    std::size_t level = levels + 1;
    if (nest.chain) {
      std::vector<std::int64_t> ls = level_strides(nest, dims, strides);
      level = levels;
      while (level > 0 && ls[level - 1] == 0) --level;
      // A local holds a whole result element only when every outer level is kept.
      bool outer_kept = true;
      for (std::size_t l = 0; l < level; ++l) outer_kept = outer_kept && ls[l] != 0;
      if (level == levels || !outer_kept) level = levels + 1;
    }
    if (level <= levels) {
      std::string idx = "0";
      std::vector<std::int64_t> ls = level_strides(nest, dims, strides);
      for (std::size_t l = 0; l < level; ++l)
        if (ls[l] != 0) idx += cat(" + i", l, ls[l] == 1 ? "" : " * " + lit(ls[l]));
      opened[level] += cat(a.type, " ", a.name, " = ", a.fn("identity"), "();\n");
      const std::string write =
          cat(result, "[", idx, "] = (", c_type(r.dtype), ")", a.fn("narrow"), "(", a.name, ");\n");
      if (level > 0 || !ranged) {
        closed[level] += write;
      } else {
        // Over the outer loop: a thread's part goes to `partial` for the merge.
        const std::string slot = lit(out.partials);
        to_result += write;
        to_partial += cat(slot_at("(unsigned char*)partial", slot, a.type), " = ", a.name, ";\n");
        out.merge += cat("{\n", a.type, " m = ", a.fn("identity"),
                         "();\nfor (int t = 0; t < count; ++t) m = ", a.fn("combine"), "(m, ",
                         slot_at("partials + t * stride", slot, "const " + a.type), ");\n", result,
                         "[0] = (", c_type(r.dtype), ")", a.fn("narrow"), "(m);\n}\n");
        ++out.partials;
      }
    } else if (ranged && kept_outer(nest, dims, strides) > 0 &&
               kept_outer(nest, dims, strides) < levels &&
               inner_block(nest, dims, strides) <= kLocalArray) {
      // The outer levels up to `kept` each own a block of results (a sum over a middle
      // axis): an array on the stack for one block, started in the innermost of those
      // loops and written to the block after it.
      const std::size_t kept = kept_outer(nest, dims, strides);
      const std::vector<std::int64_t> ls = level_strides(nest, dims, strides);
      const std::string arr = cat("arr", ri), n = lit(inner_block(nest, dims, strides));
      std::string base = "0", inner = "0";
      for (std::size_t l = 0; l < levels; ++l)
        if (ls[l] != 0) (l < kept ? base : inner) += cat(" + i", l, " * ", lit(ls[l]));
      opened[kept] += cat(a.type, " ", arr, "[", n, "];\nfor (int64_t q = 0; q < ", n, "; ++q) ",
                          arr, "[q] = ", a.fn("identity"), "();\n");
      closed[kept] += cat("for (int64_t q = 0; q < ", n, "; ++q) ", result, "[", base, " + q] = (",
                          c_type(r.dtype), ")", a.fn("narrow"), "(", arr, "[q]);\n");
      a.name = cat(arr, "[", inner, "]");
      a.local_array = true;
      carried = carried || ls[levels - 1] == 0;
    } else if (ranged && kept_outer(nest, dims, strides) == 0 && r.numel <= kLocalArray) {
      // An array on the stack: a thread's part of the outer loop goes to `partial` whole,
      // and the merge combines the threads' arrays element by element.
      const std::string arr = cat("arr", ri), n = lit(r.numel);
      const std::string slot = cat(lit(out.partials), " + q");
      pre += cat(a.type, " ", arr, "[", n, "];\nfor (int64_t q = 0; q < ", n, "; ++q) ", arr,
                 "[q] = ", a.fn("identity"), "();\n");
      to_result += cat("for (int64_t q = 0; q < ", n, "; ++q) ", result, "[q] = (", c_type(r.dtype),
                       ")", a.fn("narrow"), "(", arr, "[q]);\n");
      to_partial += cat("for (int64_t q = 0; q < ", n, "; ++q) ",
                        slot_at("(unsigned char*)partial", slot, a.type), " = ", arr, "[q];\n");
      out.merge +=
          cat("for (int64_t q = 0; q < ", n, "; ++q) {\n", a.type, " m = ", a.fn("identity"),
              "();\nfor (int t = 0; t < count; ++t) m = ", a.fn("combine"), "(m, ",
              slot_at("partials + t * stride", slot, "const " + a.type), ");\n", result, "[q] = (",
              c_type(r.dtype), ")", a.fn("narrow"), "(m);\n}\n");
      out.partials += int(r.numel);
      a.name = cat(arr, "[", offset_expr(nest, dims, strides, 0), "]");
      a.local_array = true;
      carried = carried || !nest.chain || levels == 0 ||
                level_strides(nest, dims, strides)[levels - 1] == 0;
    } else {
      const std::string arr = cat("((", a.type, "*)(ws + ", lit(e.scratch_offset + scratch), "))");
      pre += cat("for (int64_t q = 0; q < ", lit(r.numel), "; ++q) ", arr,
                 "[q] = ", a.fn("identity"), "();\n");
      closed[0] += cat("for (int64_t q = 0; q < ", lit(r.numel), "; ++q) ", result, "[q] = (",
                       c_type(r.dtype), ")", a.fn("narrow"), "(", arr, "[q]);\n");
      a.name = cat(arr, "[", offset_expr(nest, dims, strides, 0), "]");
      scratch += (r.numel * 8 + 63) / 64 * 64;
    }
    a.level = level;
    accs.push_back(a);
  }
  return placed;
}

}  // namespace glia::aot::detail
