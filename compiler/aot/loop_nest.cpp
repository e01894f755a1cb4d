// The loop nest of a fused sweep (loop_nest.hpp).
#include "aot/loop_nest.hpp"

#include <set>

#include "aot/emitter.hpp"

namespace glia::aot::detail {

namespace {

// Suffix products of dims (innermost first, ending with their product).
std::vector<std::int64_t> suffixes(const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> p{1};
  for (std::size_t i = dims.size(); i-- > 0;) p.push_back(p.back() * dims[i]);
  return p;
}

}  // namespace

// Per level, where a (dims, strides) map steps; chain mode only.
std::vector<std::int64_t> level_strides(const Nest& nest, const std::vector<std::int64_t>& dims,
                                        const std::vector<std::int64_t>& strides) {
  std::vector<std::int64_t> p = suffixes(dims);  // p[r - i] = prod(dims[i..])
  const std::size_t rank = dims.size();
  std::vector<std::int64_t> out;
  for (std::size_t l = 0; l < nest.extent.size(); ++l) {
    const std::int64_t f = nest.flat[l], top = f * nest.extent[l];
    std::int64_t s = 0;
    for (std::size_t i = 0; i < rank; ++i) {
      const std::int64_t inner = p[rank - 1 - i], outer = p[rank - i];
      if (inner <= f && top <= outer) {
        s = strides[i] * (f / inner);
        break;
      }
    }
    out.push_back(s);
  }
  return out;
}

// The offset expression of a map at the current loop indices (chain) or from `t` (not).
std::string offset_expr(const Nest& nest, const std::vector<std::int64_t>& dims,
                        const std::vector<std::int64_t>& strides, std::int64_t offset) {
  std::string e = lit(offset);
  if (nest.chain) {
    std::vector<std::int64_t> s = level_strides(nest, dims, strides);
    for (std::size_t l = 0; l < s.size(); ++l)
      if (s[l] != 0) e += cat(" + i", l, s[l] == 1 ? "" : " * " + lit(s[l]));
    return e;
  }
  std::vector<std::int64_t> p = suffixes(dims);
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (strides[i] != 0)
      e += cat(" + (t / ", lit(p[dims.size() - 1 - i]), " % ", lit(dims[i]), ") * ",
               lit(strides[i]));
  return e;
}

std::string flat_expr(const Nest& nest) {
  if (!nest.chain) return "t";
  std::string e = "0";
  for (std::size_t l = 0; l < nest.flat.size(); ++l)
    e += cat(" + i", l, nest.flat[l] == 1 ? "" : " * " + lit(nest.flat[l]));
  return e;
}

// A reduction's extents as a (dims, strides) map onto its result.
void reduction_map(const FusedSpec::Reduction& r, std::vector<std::int64_t>& dims,
                   std::vector<std::int64_t>& strides) {
  dims.clear();
  strides.assign(r.extents.size(), 0);
  std::int64_t step = 1;
  for (std::size_t i = r.extents.size(); i-- > 0;) {
    if (r.extents[i].reduced) continue;
    strides[i] = step;
    step *= r.extents[i].size;
  }
  for (const auto& x : r.extents) dims.push_back(x.size);
}

// How many outer levels a reduction map keeps (steps along) before the first it reduces;
// 0 where the nest is not a chain.
std::size_t kept_outer(const Nest& nest, const std::vector<std::int64_t>& dims,
                       const std::vector<std::int64_t>& strides) {
  if (!nest.chain) return 0;
  const std::vector<std::int64_t> ls = level_strides(nest, dims, strides);
  std::size_t k = 0;
  while (k < ls.size() && ls[k] != 0) ++k;
  return k;
}

// The results one iteration of the kept outer levels' innermost loop covers: one past
// the largest offset the inner levels reach.
std::int64_t inner_block(const Nest& nest, const std::vector<std::int64_t>& dims,
                         const std::vector<std::int64_t>& strides) {
  const std::vector<std::int64_t> ls = level_strides(nest, dims, strides);
  std::int64_t last = 0;
  for (std::size_t l = kept_outer(nest, dims, strides); l < ls.size(); ++l)
    last += (nest.extent[l] - 1) * ls[l];
  return last + 1;
}

Nest make_nest(const FusedSpec::Sweep& s) {
  std::set<std::int64_t> b{1, s.numel};
  bool ok = true;
  auto add = [&](const std::vector<std::int64_t>& dims) {
    std::vector<std::int64_t> p = suffixes(dims);
    ok = ok && p.back() == s.numel;
    b.insert(p.begin(), p.end());
  };
  for (const FusedSpec::Instr& in : s.code) {
    if (in.code == FusedSpec::Code::load && !in.view.scalar()) add(in.view.dims);
    if (in.code == FusedSpec::Code::iota) {
      b.insert(in.iota_stride);
      b.insert(in.iota_stride * in.iota_dim);
    }
  }
  for (const auto& r : s.reductions) {
    std::vector<std::int64_t> dims, strides;
    reduction_map(r, dims, strides);
    add(dims);
  }
  std::vector<std::int64_t> sorted(b.begin(), b.end());
  for (std::size_t i = 0; i + 1 < sorted.size(); ++i) ok = ok && sorted[i + 1] % sorted[i] == 0;
  ok = ok && sorted.back() == s.numel;
  Nest n;
  n.chain = ok;
  if (!ok) {
    n.extent = {s.numel};
    n.flat = {1};
    return n;
  }
  for (std::size_t i = sorted.size() - 1; i-- > 0;) {
    n.extent.push_back(sorted[i + 1] / sorted[i]);
    n.flat.push_back(sorted[i]);
  }
  return n;
}

namespace {
constexpr std::int64_t kRandomChunk = 256;
// Pairs from which a chunk draws four quarters at once (glia_threefry2x32_words4): each
// quarter then fills an AVX2 vector of 8 counters; fewer would leave the loop scalar.
constexpr std::int64_t kFourBlocksFrom = 32;
}  // namespace

std::string random_chunks(const Nest& nest, const std::vector<ValueId>& keys, const std::string& lo,
                          const std::string& hi, const std::string& flat_t) {
  const std::string chunk = std::to_string(kRandomChunk), i = cat("i", nest.extent.size() - 1);
  std::string text =
      cat("for (int64_t c = ", lo, "; c < ", hi, "; c += ", chunk,
          ") {\nconst int64_t c_end = c + ", chunk, " < ", hi, " ? c + ", chunk, " : ", hi, ";\n");
  for (ValueId k : keys) text += cat("glia_u32 words", k, "[", kRandomChunk + 2, "];\n");
  // The Threefry blocks (pairs) f0 / 2 .. (f_end - 1) / 2.
  text += cat("{\nconst int64_t ", i, " = c;\n", flat_t, "const uint64_t f0 = (uint64_t)(",
              flat_expr(nest), ");\nconst uint64_t p0 = f0 >> 1, pairs = ((f0 + (uint64_t)(",
              "c_end - c) + 1) >> 1) - p0;\n");
  // Four quarters of the pairs at once, then the rest a pair at a time.
  for (ValueId k : keys)
    text += cat(
        "{\nglia_u32* restrict w = words", k, " + 1 - (f0 & 1);\n",
        "const uint64_t q = pairs >= ", kFourBlocksFrom, " ? pairs >> 2 : 0;\n",
        "glia_u32* restrict w1 = w + 2 * q;\nglia_u32* restrict w2 = w1 + 2 * q;\n",
        "glia_u32* restrict w3 = w2 + 2 * q;\n",
        "#pragma GCC ivdep\nfor (uint64_t j = 0; j < q; ++j) {\n", "glia_threefry2x32_words4(key",
        k, "_0, key", k, "_1, p0 + j, q, &w[2 * j], &w1[2 * j], &w2[2 * j], &w3[2 * j]);\n}\n",
        "for (uint64_t j = 4 * q; j < pairs; ++j) {\n", "const glia_u64 r = glia_threefry2x32(key",
        k, "_0, key", k, "_1, (glia_u32)((p0 + j) >> 32), (glia_u32)(p0 + j));\n",
        "w[2 * j] = (glia_u32)r;\nw[2 * j + 1] = (glia_u32)(r >> 32);\n}\n}\n");
  return text + "}\n";
}

}  // namespace glia::aot::detail
