// Gradient-check cases of the reductions (several axis sets, with and without kept
// axes, products through zeros), dot_general (batch axes anywhere, contracting axes in
// unsorted order), convolution (strides, padding, dilations, groups, 1-3 spatial axes)
// and the window ops (strides, padding, dilations, overlapping windows; select_and_scatter
// with ties, -inf and NaN in its operand).
#include <limits>

#include "autograd/op_cases.hpp"

namespace glia::testing {

namespace {

using Reduce = Expr (*)(const Expr&, const Ints&, bool);

struct Axes {
  const char* name;
  Ints axes;
  bool keep;
};
const Axes kAxisSets[] = {
    {"all", {}, false},          {"axis_1", {1}, false},
    {"axes_0_2", {0, 2}, false}, {"axes_0_2_keep", {0, 2}, true},
    {"last_keep", {-1}, true},   {"axes_2_1", {2, 1}, false},
};

// max and min take distinct values (no ties); prod takes values away from zero.
void add_reduction(OpCases& cases, Op op, Reduce fn, bool distinct) {
  auto& list = cases[op];
  unsigned seed = 200 + static_cast<unsigned>(op);
  auto values = [&](const Shape& s) {
    ++seed;
    return distinct ? distinct_values({s}, seed)[0] : away_from_zero(s, 0.5, 1.5, seed);
  };
  for (const Axes& a : kAxisSets)
    list.push_back({std::string(a.name) + "_of_2x3x4",
                    {values({2, 3, 4})},
                    [fn, a](const auto& in) { return fn(in[0], a.axes, a.keep); }});
  list.push_back({"size1_axes_of_1x3x1", {values({1, 3, 1})}, [fn](const auto& in) {
                    return fn(in[0], {0, 2}, false);
                  }});
  list.push_back({"scalar", {values({})}, [fn](const auto& in) { return fn(in[0], {}, true); }});
}

void add_reductions(OpCases& cases) {
  add_reduction(cases, Op::reduce_sum, &sum, false);
  add_reduction(cases, Op::reduce_max, &reduce_max, true);
  add_reduction(cases, Op::reduce_min, &reduce_min, true);
  add_reduction(cases, Op::reduce_prod, &product, false);
  // Ties of two split the gradient evenly, as central differences do.
  for (Op op : {Op::reduce_max, Op::reduce_min})
    cases[op].push_back({"ties_of_two_in_rows",
                         {f64({0.3, -0.8, 0.3, -0.5, 0.9, -0.5}, {2, 3})},
                         [op](const auto& in) {
                           return op == Op::reduce_max ? reduce_max(in[0], {1})
                                                       : reduce_min(in[0], {1});
                         }});
  // Rows with no zero, one zero and two zeros; then columns with one zero and two.
  Tensor zeros = f64({0.5, -1.2, 0.8, 1.1, 0.0, 0.9, -0.7, 1.3, 0.0, 0.6, 0.0, -1.4}, {3, 4});
  auto& prod = cases[Op::reduce_prod];
  prod.push_back({"zeros_in_rows", {zeros}, [](const auto& in) { return product(in[0], {1}); }});
  prod.push_back({"zeros_in_columns_keep",
                  {f64({0.5, 0.0, 1.2, 0.0, 0.0, -0.7}, {3, 2})},
                  [](const auto& in) { return product(in[0], {0}, true); }});
}

void add_dot_general(OpCases& cases) {
  auto& list = cases[Op::dot_general];
  auto x = [](const Shape& s, unsigned seed) { return random_tensor(s, -1, 1, seed); };
  list.push_back({"matmul_2x3_3x4", {x({2, 3}, 301), x({3, 4}, 302)}, [](const auto& in) {
                    return dot_general(in[0], in[1], {1}, {0});
                  }});
  list.push_back({"matmul_api_batched_by_matrix",
                  {x({2, 2, 3}, 303), x({3, 4}, 304)},
                  [](const auto& in) { return matmul(in[0], in[1]); }});
  list.push_back({"matmul_api_broadcast_batch",
                  {x({1, 2, 3}, 305), x({2, 3, 2}, 306)},
                  [](const auto& in) { return matmul(in[0], in[1]); }});
  list.push_back({"vector_inner_product", {x({4}, 307), x({4}, 308)}, [](const auto& in) {
                    return dot(in[0], in[1]);
                  }});
  list.push_back({"batch_leading", {x({2, 3, 4}, 309), x({2, 4, 5}, 310)}, [](const auto& in) {
                    return dot_general(in[0], in[1], {2}, {1}, {0}, {0});
                  }});
  list.push_back({"batch_not_leading", {x({3, 2, 4}, 311), x({4, 5, 2}, 312)}, [](const auto& in) {
                    return dot_general(in[0], in[1], {2}, {0}, {1}, {2});
                  }});
  // lhs (2, 3, 4, 2) contracts axes 1 and 2 with rhs (4, 5, 3) axes 2 and 0 (unsorted).
  list.push_back({"contracting_unsorted_free_both_sides",
                  {x({2, 3, 4, 2}, 313), x({4, 5, 3}, 314)},
                  [](const auto& in) {
                    return dot_general(in[0], in[1], {1, 2}, {2, 0});
                  }});
  // lhs (B2, C3, F2, C2) and rhs (C2, F3, B2, C3): batch, two crossed contractions, free axes.
  list.push_back({"batch_and_crossed_contracting",
                  {x({2, 3, 2, 2}, 315), x({2, 3, 2, 3}, 316)},
                  [](const auto& in) {
                    return dot_general(in[0], in[1], {3, 1}, {0, 3}, {0}, {2});
                  }});
  list.push_back(
      {"two_batch_axes_swapped", {x({2, 3, 4}, 317), x({3, 2, 4, 2}, 318)}, [](const auto& in) {
         return dot_general(in[0], in[1], {2}, {2}, {0, 1}, {1, 0});
       }});
  list.push_back({"outer_product_no_contraction", {x({2}, 321), x({3}, 322)}, [](const auto& in) {
                    return dot_general(in[0], in[1], {}, {});
                  }});
  list.push_back({"batch_only", {x({2, 3}, 323), x({3, 2}, 324)}, [](const auto& in) {
                    return dot_general(in[0], in[1], {}, {}, {0, 1}, {1, 0});
                  }});
  list.push_back({"scalars", {x({}, 325), x({}, 326)}, [](const auto& in) {
                    return dot_general(in[0], in[1], {}, {});
                  }});
  list.push_back({"negative_axes_size1_free", {x({1, 3}, 319), x({3, 1}, 320)}, [](const auto& in) {
                    return dot_general(in[0], in[1], {-1}, {-2});
                  }});
}

void add_conv(OpCases& cases, const char* name, const Shape& input, const Shape& kernel,
              const ConvOptions& options) {
  unsigned seed = 400 + static_cast<unsigned>(cases[Op::convolution].size());
  cases[Op::convolution].push_back(
      {name,
       {random_tensor(input, -1, 1, seed), random_tensor(kernel, -1, 1, seed + 100)},
       [options](const auto& in) { return conv(in[0], in[1], options); }});
}

void add_convolutions(OpCases& cases) {
  add_conv(cases, "1d_plain", {2, 2, 5}, {3, 2, 2}, {});
  add_conv(cases, "1d_strides_padding", {1, 2, 7}, {2, 2, 3}, {{2}, {1}, {2}, {}, {}});
  add_conv(cases, "1d_negative_padding", {1, 1, 8}, {2, 1, 3}, {{}, {-1}, {-2}, {}, {}});
  add_conv(cases, "2d_strides_asymmetric_padding", {1, 2, 4, 5}, {2, 2, 2, 3},
           {{2, 1}, {1, 0}, {0, 2}, {}, {}});
  add_conv(cases, "2d_input_dilation", {1, 1, 3, 3}, {2, 1, 2, 2},
           {{}, {1, 1}, {1, 0}, {2, 1}, {}});
  add_conv(cases, "2d_kernel_dilation", {1, 2, 5, 5}, {1, 2, 2, 2}, {{}, {}, {}, {}, {2, 3}});
  add_conv(cases, "1d_feature_groups_2", {2, 4, 5}, {4, 2, 2}, {{}, {}, {}, {}, {}, 2, 1});
  add_conv(cases, "2d_feature_groups_2_padded", {1, 4, 3, 3}, {4, 2, 2, 2},
           {{}, {1, 0}, {0, 1}, {}, {}, 2, 1});
  add_conv(cases, "1d_batch_groups_2", {4, 2, 5}, {4, 2, 3}, {{}, {}, {}, {}, {}, 1, 2});
  add_conv(cases, "2d_batch_groups_2_strided_dilated", {4, 2, 4, 3}, {2, 2, 2, 2},
           {{2, 1}, {}, {}, {}, {1, 2}, 1, 2});
  add_conv(cases, "1d_everything_feature_groups", {1, 4, 6}, {2, 2, 2},
           {{2}, {2}, {-1}, {2}, {2}, 2, 1});
  add_conv(cases, "1d_everything_batch_groups", {2, 2, 5}, {2, 2, 2},
           {{2}, {2}, {-1}, {2}, {2}, 1, 2});
  // Padding wider than the kernel: the first outputs see padding only.
  add_conv(cases, "1d_padding_wider_than_kernel", {1, 2, 4}, {2, 2, 2}, {{1}, {3}, {1}, {}, {}});
  add_conv(cases, "3d", {1, 2, 3, 3, 3}, {2, 2, 2, 2, 2}, {{1, 2, 1}, {0, 1, 0}, {}, {}, {}});
}

void add_window(OpCases& cases, Op op, const char* name, const Shape& shape, const Ints& window,
                const WindowOptions& options) {
  auto& list = cases[op];
  unsigned seed =
      500 + 50 * static_cast<unsigned>(op == Op::window_max) + static_cast<unsigned>(list.size());
  bool is_max = op == Op::window_max;
  list.push_back({name,
                  {is_max ? distinct_values({shape}, seed)[0] : random_tensor(shape, -1, 1, seed)},
                  [is_max, window, options](const auto& in) {
                    return is_max ? window_max(in[0], window, options)
                                  : window_sum(in[0], window, options);
                  }});
}

void add_windows(OpCases& cases) {
  const Op s = Op::window_sum, m = Op::window_max;
  add_window(cases, s, "default_strides_4x6", {4, 6}, {2, 3}, {});
  add_window(cases, s, "overlapping_5x6", {5, 6}, {3, 2}, {{1, 2}, {}, {}, {}, {}});
  add_window(cases, s, "padding_4x5", {4, 5}, {2, 2}, {{2, 2}, {1, 0}, {1, 1}, {}, {}});
  add_window(cases, s, "base_dilation_3x4", {3, 4}, {2, 2}, {{1, 1}, {}, {}, {2, 1}, {}});
  add_window(cases, s, "window_dilation_6x5", {6, 5}, {2, 2}, {{1, 2}, {}, {}, {}, {2, 2}});
  add_window(cases, s, "pooling_nchw", {2, 2, 4, 4}, {1, 1, 2, 2}, {});
  add_window(cases, s, "everything_5x4", {5, 4}, {2, 2}, {{2, 1}, {1, 0}, {0, 2}, {1, 2}, {2, 1}});
  add_window(cases, s, "1d_padding_wider_than_window", {4}, {2}, {{1}, {3}, {2}, {}, {}});
  add_window(cases, s, "1d_window_past_end", {5}, {2}, {{2}, {}, {}, {}, {}});

  add_window(cases, m, "non_overlapping_4x6", {4, 6}, {2, 3}, {});
  add_window(cases, m, "overlapping_5x5", {5, 5}, {3, 3}, {{1, 1}, {}, {}, {}, {}});
  add_window(cases, m, "overlapping_strided_padded_5x6", {5, 6}, {3, 2},
             {{2, 1}, {1, 1}, {1, 0}, {}, {}});
  add_window(cases, m, "pooling_nchw", {1, 2, 4, 4}, {1, 1, 2, 2}, {{1, 1, 1, 1}, {}, {}, {}, {}});
  add_window(cases, m, "window_dilation_6x4", {6, 4}, {2, 2}, {{1, 1}, {}, {}, {}, {2, 1}});
  // Each window of 2 on the dilated axis holds one element and one hole.
  add_window(cases, m, "base_dilation_3x4", {3, 4}, {2, 2}, {{1, 1}, {}, {}, {2, 1}, {}});
}

// select_and_scatter is linear in its source, which is checked; the operand only decides
// where each source value lands (first maximum of its window), so its gradient is zero
// almost everywhere (higher_order_test checks it through max pooling). The central
// differences see the kernel's own choice: ties, -inf and NaN are checked against it.
void add_select_and_scatter(OpCases& cases, const char* name, const Tensor& x, const Shape& windows,
                            const Ints& window, const WindowOptions& options) {
  auto& list = cases[Op::select_and_scatter];
  unsigned seed = 600 + static_cast<unsigned>(list.size());
  list.push_back({name,
                  {x, random_tensor(windows, -1, 1, seed)},
                  [window, options](const auto& in) {
                    return select_and_scatter(in[0], in[1], window, options);
                  },
                  {.check = {false, true}}});
}

void add_select_and_scatters(OpCases& cases) {
  auto distinct = [](const Shape& s, unsigned seed) { return distinct_values({s}, seed)[0]; };
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto add = [&cases](const char* name, const Tensor& x, const Shape& windows, const Ints& window,
                      const WindowOptions& options) {
    add_select_and_scatter(cases, name, x, windows, window, options);
  };
  add("non_overlapping_4x6", distinct({4, 6}, 601), {2, 2}, {2, 3}, {});
  add("overlapping_5x5", distinct({5, 5}, 602), {3, 3}, {3, 3}, {{1, 1}, {}, {}, {}, {}});
  add("overlapping_strided_padded_5x6", distinct({5, 6}, 603), {3, 6}, {3, 2},
      {{2, 1}, {1, 1}, {1, 0}, {}, {}});
  add("window_dilation_6x4", distinct({6, 4}, 604), {4, 3}, {2, 2}, {{1, 1}, {}, {}, {}, {2, 1}});
  add("base_dilation_3x4", distinct({3, 4}, 605), {4, 3}, {2, 2}, {{1, 1}, {}, {}, {2, 1}, {}});
  // max_pool2d(3, stride 2, padding 1) on [N, H, W, C].
  add("max_pool2d_nhwc", distinct({2, 5, 5, 2}, 606), {2, 3, 3, 2}, {1, 3, 3, 1},
      {{1, 2, 2, 1}, {0, 1, 1, 0}, {0, 1, 1, 0}, {}, {}});
  // Every window holds several maxima: the first in row-major window order takes the value.
  add("ties_overlapping_4x4", f64({1, 1, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 1, 1}, {4, 4}), {3, 3},
      {2, 2}, {{1, 1}, {}, {}, {}, {}});
  // Padding never wins, not even against -inf (windows 0 and 1 take x[0]); the first NaN
  // of a window beats every number (windows 4 to 7).
  add("minus_infinity_and_nan_padded_1d", f64({-inf, -inf, 0.5, -inf, nan, 0.25, nan}, {7}), {8},
      {3}, {{1}, {2}, {1}, {}, {}});
  // Windows 0, 1 and 7 see padding only and select nothing.
  add("padding_wider_than_window_1d", distinct({4}, 607), {8}, {2}, {{1}, {3}, {2}, {}, {}});
}

}  // namespace

void add_contraction_cases(OpCases& cases) {
  add_reductions(cases);
  add_dot_general(cases);
  add_convolutions(cases);
  add_windows(cases);
  add_select_and_scatters(cases);
}

}  // namespace glia::testing
