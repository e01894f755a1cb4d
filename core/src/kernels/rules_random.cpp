// Inference and reference kernel of random_bits: counter-based random u32 words from a
// u32[2] key with Threefry-2x32 (threefry.hpp).
//
// The counter scheme, which every backend must reproduce bit for bit: the output's n
// elements, in row-major order, are filled in pairs. Pair j = 0 .. ceil(n/2) - 1 uses
// the counter (hi32(j), lo32(j)) under the key (key[0], key[1]); the block's two
// output words go to elements 2j and 2j + 1, and the last word is dropped when n is odd.
#include "glia/core/threefry.hpp"
#include "kernels/kernel_util.hpp"
#include "rules.hpp"

namespace glia::detail {

namespace {

TensorType infer_random_bits(std::span<const TensorType> in, const Attrs& attrs) {
  check(in[0].dtype == DType::u32 && in[0].shape == Shape{2},
        "random_bits: the key must be u32[2], got ", in[0].to_string());
  return {DType::u32, attrs_as<RandomBitsAttrs>(attrs).shape};
}

Tensor kernel_random_bits(std::span<const Tensor> in, const Attrs&, const TensorType& out_type) {
  Tensor out(out_type.dtype, out_type.shape);
  const std::uint32_t* k = in_ptr<std::uint32_t>(in[0]);  // (2)
  std::uint32_t* y = out_ptr<std::uint32_t>(out);         // (n)
  const U32x2 key{k[0], k[1]};
  const std::int64_t n = out.numel();
  for (std::int64_t j = 0; 2 * j < n; ++j) {
    auto c = static_cast<std::uint64_t>(j);
    U32x2 r =
        threefry2x32(key, {static_cast<std::uint32_t>(c >> 32), static_cast<std::uint32_t>(c)});
    y[2 * j] = r.x0;
    if (2 * j + 1 < n) y[2 * j + 1] = r.x1;
  }
  return out;
}

}  // namespace

void add_random_rules(OpTable& t) {
  set_rule(t, Op::random_bits, &infer_random_bits, &kernel_random_bits);
}

}  // namespace glia::detail
