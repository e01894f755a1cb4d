// Gradient-check cases of the layout and indexing ops: explicit and numpy broadcasts,
// reshape, 3-D transposes, strided slices, pads with negative edges, interior holes
// and a differentiated pad value, concatenation on a middle axis, reverse, take with
// repeated indices and scatter_add into both its target and its updates.
#include "autograd/op_cases.hpp"

namespace glia::testing {

namespace {

void add_broadcast(OpCases& cases) {
  auto& list = cases[Op::broadcast];
  list.push_back(
      {"dims_3_to_2x3x4_on_axis_1", {random_tensor({3}, -1, 1, 101)}, [](const auto& in) {
         return broadcast(in[0], {2, 3, 4}, {1});
       }});
  list.push_back({"dims_3x1_to_2x3x4_stretching_size1",
                  {random_tensor({3, 1}, -1, 1, 102)},
                  [](const auto& in) {
                    return broadcast(in[0], {2, 3, 4}, {1, 2});
                  }});
  list.push_back(
      {"dims_1x4_to_3x2x4_axes_0_2", {random_tensor({1, 4}, -1, 1, 103)}, [](const auto& in) {
         return broadcast(in[0], {3, 2, 4}, {0, 2});
       }});
  list.push_back(
      {"dims_keeps_size1_1x3_to_2x1x3", {random_tensor({1, 3}, -1, 1, 104)}, [](const auto& in) {
         return broadcast(in[0], {2, 1, 3}, {1, 2});
       }});
  list.push_back({"scalar_to_2x3", {random_tensor({}, -1, 1, 105)}, [](const auto& in) {
                    return broadcast(in[0], {2, 3}, {});
                  }});
  list.push_back(
      {"numpy_broadcast_to_3x1_to_2x3x4", {random_tensor({3, 1}, -1, 1, 106)}, [](const auto& in) {
         return broadcast_to(in[0], {2, 3, 4});
       }});
  list.push_back(
      {"numpy_broadcast_to_1x1_to_1x5", {random_tensor({1, 1}, -1, 1, 107)}, [](const auto& in) {
         return broadcast_to(in[0], {1, 5});
       }});
}

void add_reshape(OpCases& cases) {
  auto& list = cases[Op::reshape];
  list.push_back({"2x3x4_to_4x6", {random_tensor({2, 3, 4}, -1, 1, 111)}, [](const auto& in) {
                    return reshape(in[0], {4, 6});
                  }});
  list.push_back({"6_to_1x2x1x3", {random_tensor({6}, -1, 1, 112)}, [](const auto& in) {
                    return reshape(in[0], {1, 2, 1, 3});
                  }});
  list.push_back({"scalar_to_1x1", {random_tensor({}, -1, 1, 113)}, [](const auto& in) {
                    return reshape(in[0], {1, 1});
                  }});
  list.push_back(
      {"inferred_dim_4x3_to_2x_minus1", {random_tensor({4, 3}, -1, 1, 114)}, [](const auto& in) {
         return reshape(in[0], {2, -1});
       }});
}

void add_transpose(OpCases& cases) {
  auto& list = cases[Op::transpose];
  list.push_back({"3d_perm_2_0_1", {random_tensor({2, 3, 4}, -1, 1, 121)}, [](const auto& in) {
                    return transpose(in[0], {2, 0, 1});
                  }});
  list.push_back({"3d_perm_1_2_0", {random_tensor({2, 3, 4}, -1, 1, 122)}, [](const auto& in) {
                    return transpose(in[0], {1, 2, 0});
                  }});
  list.push_back({"2d_default_reversal", {random_tensor({2, 5}, -1, 1, 123)}, [](const auto& in) {
                    return transpose(in[0]);
                  }});
  list.push_back(
      {"4d_with_size1_perm_3_1_0_2", {random_tensor({1, 2, 1, 3}, -1, 1, 124)}, [](const auto& in) {
         return transpose(in[0], {3, 1, 0, 2});
       }});
}

void add_slice(OpCases& cases) {
  auto& list = cases[Op::slice];
  list.push_back({"strided_4x5", {random_tensor({4, 5}, -1, 1, 131)}, [](const auto& in) {
                    return slice(in[0], {1, 0}, {4, 5}, {2, 2});
                  }});
  list.push_back(
      {"offset_and_strides_5x7", {random_tensor({5, 7}, -1, 1, 132)}, [](const auto& in) {
         return slice(in[0], {1, 2}, {5, 6}, {3, 2});
       }});
  list.push_back(
      {"3d_middle_axis_strided", {random_tensor({2, 6, 3}, -1, 1, 133)}, [](const auto& in) {
         return slice(in[0], {0, 1, 1}, {2, 6, 3}, {1, 2, 1});
       }});
  list.push_back({"stride_past_the_end_gives_one",
                  {random_tensor({6}, -1, 1, 134)},
                  [](const auto& in) { return slice(in[0], {2}, {3}, {4}); }});
  list.push_back({"slice_axis_negative_axis",
                  {random_tensor({3, 8}, -1, 1, 135)},
                  [](const auto& in) { return slice_axis(in[0], 1, 3, -1, 2); }});
}

// The pad value is the second input, differentiated like the operand.
void add_pad(OpCases& cases) {
  auto& list = cases[Op::pad];
  auto with = [](Ints low, Ints high, Ints interior) {
    return [=](const std::vector<Expr>& in) { return pad(in[0], in[1], low, high, interior); };
  };
  auto value = random_tensor({}, -1, 1, 140);
  list.push_back(
      {"low_high_2x3", {random_tensor({2, 3}, -1, 1, 141), value}, with({1, 0}, {0, 2}, {})});
  list.push_back({"negative_low_and_high_3x4",
                  {random_tensor({3, 4}, -1, 1, 142), value},
                  with({-1, 1}, {1, -2}, {})});
  list.push_back(
      {"interior_2x3", {random_tensor({2, 3}, -1, 1, 143), value}, with({0, 1}, {1, 0}, {1, 2})});
  // Negative edges that crop into the interior holes and into the operand's elements.
  list.push_back({"interior_with_negative_edges_3x4",
                  {random_tensor({3, 4}, -1, 1, 144), value},
                  with({-1, -2}, {-2, 1}, {1, 1})});
  list.push_back({"size1_axis_1x3",
                  {random_tensor({1, 3}, -1, 1, 145), value},
                  with({2, -1}, {1, 0}, {3, 0})});
  list.push_back({"number_value", {random_tensor({2, 2}, -1, 1, 146)}, [](const auto& in) {
                    return pad(in[0], 0.5, {1, 1}, {0, 1}, {1, 0});
                  }});
}

void add_concatenate(OpCases& cases) {
  auto& list = cases[Op::concatenate];
  list.push_back({"three_inputs_middle_axis",
                  {random_tensor({2, 1, 3}, -1, 1, 151), random_tensor({2, 2, 3}, -1, 1, 152),
                   random_tensor({2, 3, 3}, -1, 1, 153)},
                  [](const auto& in) {
                    return concatenate({in[0], in[1], in[2]}, 1);
                  }});
  list.push_back({"three_inputs_negative_axis",
                  {random_tensor({2, 2}, -1, 1, 154), random_tensor({2, 1}, -1, 1, 155),
                   random_tensor({2, 3}, -1, 1, 156)},
                  [](const auto& in) {
                    return concatenate({in[0], in[1], in[2]}, -1);
                  }});
  list.push_back({"same_input_twice_1d",
                  {random_tensor({3}, -1, 1, 157), random_tensor({2}, -1, 1, 158)},
                  [](const auto& in) {
                    return concatenate({in[0], in[1], in[0]}, 0);
                  }});
}

void add_reverse(OpCases& cases) {
  auto& list = cases[Op::reverse];
  list.push_back({"axes_0_2_of_2x3x4", {random_tensor({2, 3, 4}, -1, 1, 161)}, [](const auto& in) {
                    return reverse(in[0], {0, 2});
                  }});
  list.push_back({"all_axes_1d", {random_tensor({5}, -1, 1, 162)}, [](const auto& in) {
                    return reverse(in[0]);
                  }});
  list.push_back(
      {"with_size1_axis_2x1x3", {random_tensor({2, 1, 3}, -1, 1, 163)}, [](const auto& in) {
         return reverse(in[0], {-1, 1, 0});
       }});
}

void add_gather(OpCases& cases) {
  auto& list = cases[Op::gather];
  // Repeated indices: their cotangents must add up.
  list.push_back({"middle_axis_2d_repeated_indices",
                  {random_tensor({3, 4, 2}, -1, 1, 171)},
                  [](const auto& in) {
                    return take(in[0], Expr(i64({1, 1, 3, 0}, {2, 2})), 1);
                  }});
  list.push_back({"1d_repeated", {random_tensor({4}, -1, 1, 172)}, [](const auto& in) {
                    return take(in[0], Expr(i64({2, 2, 0}, {3})), 0);
                  }});
  list.push_back(
      {"axis_0_of_5x2_indices_1x3", {random_tensor({5, 2}, -1, 1, 173)}, [](const auto& in) {
         return take(in[0], Expr(i64({0, 4, 4}, {1, 3})), 0);
       }});
  list.push_back({"scalar_index_last_axis",
                  {random_tensor({2, 3}, -1, 1, 174)},
                  [](const auto& in) { return take(in[0], Expr(i64({2}, {})), -1); }});
}

// Inputs: target and updates (both differentiated); the indices are constants.
void add_scatter_add(OpCases& cases) {
  auto& list = cases[Op::scatter_add];
  list.push_back({"middle_axis_2d_repeated_indices",
                  {random_tensor({2, 4, 2}, -1, 1, 181), random_tensor({2, 2, 2, 2}, -1, 1, 182)},
                  [](const auto& in) {
                    return scatter_add(in[0], Expr(i64({0, 3, 3, 3}, {2, 2})), in[1], 1);
                  }});
  list.push_back({"1d_repeated",
                  {random_tensor({4}, -1, 1, 183), random_tensor({3}, -1, 1, 184)},
                  [](const auto& in) {
                    return scatter_add(in[0], Expr(i64({1, 1, 2}, {3})), in[1]);
                  }});
  list.push_back({"last_axis_3x5",
                  {random_tensor({3, 5}, -1, 1, 185), random_tensor({3, 2}, -1, 1, 186)},
                  [](const auto& in) {
                    return scatter_add(in[0], Expr(i64({4, 0}, {2})), in[1], -1);
                  }});
}

}  // namespace

void add_structure_cases(OpCases& cases) {
  add_broadcast(cases);
  add_reshape(cases);
  add_transpose(cases);
  add_slice(cases);
  add_pad(cases);
  add_concatenate(cases);
  add_reverse(cases);
  add_gather(cases);
  add_scatter_add(cases);
}

}  // namespace glia::testing
