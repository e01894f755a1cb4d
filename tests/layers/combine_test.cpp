// Combining layers: concatenate, add, subtract, multiply, split and constant, against
// hand-computed values; layers without inputs; errors naming the layer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "glia/layers.hpp"

namespace glia {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

using Inputs = std::map<std::string, Tensor>;

Tensor run(const Model& m, const Inputs& inputs) {
  auto [init, predict] = build(m);
  InputTypes types;
  for (const auto& [name, t] : inputs) types[name] = t.type();
  return predict(init(types, 0), inputs);
}

std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }

TEST(Combine, Concatenate) {
  Model a = input("a", {-1, 2}), b = input("b", {-1, 3});
  Inputs in{{"a", Tensor::from<float>({1, 2, 3, 4}, Shape{2, 2})},
            {"b", Tensor::from<float>({5, 6, 7, 8, 9, 10}, Shape{2, 3})}};
  for (std::int64_t axis : {-1, 1}) {
    Tensor y = run(concatenate({a, b}, axis), in);
    EXPECT_EQ(y.shape(), (Shape{2, 5}));
    EXPECT_THAT(values(y), ElementsAreArray({1, 2, 5, 6, 7, 3, 4, 8, 9, 10}));
  }
  // Along a middle axis of rank-3 inputs.
  Model c = input("c", {-1, 1, 2}), d = input("d", {-1, 2, 2});
  Tensor y =
      run(concatenate({c, d}, 1), {{"c", Tensor::from<float>({1, 2}, Shape{1, 1, 2})},
                                   {"d", Tensor::from<float>({3, 4, 5, 6}, Shape{1, 2, 2})}});
  EXPECT_EQ(y.shape(), (Shape{1, 3, 2}));
  EXPECT_THAT(values(y), ElementsAreArray({1, 2, 3, 4, 5, 6}));
}

TEST(Combine, ConcatenateErrorsNameTheLayer) {
  Model a = input("a", {-1, 2}), b = input("b", {-1, 2, 1});
  EXPECT_THAT(
      [&] {
        build(concatenate({a, b})).init(0);
      },
      ThrowsMessage<Error>(
          HasSubstr("layer 'concatenate_0' (concatenate) with input(s) f32[1][2], f32[1][2][1]: "
                    "concatenate: inputs must have the same rank, got 2 and 3")));
  Model c = input("c", {-1, 2});
  EXPECT_THAT(
      [&] {
        build(concatenate({a, c}, 0, {.name = "join"})).init(0);
      },
      ThrowsMessage<Error>(HasSubstr("layer 'join' (concatenate) with input(s) f32[1][2], "
                                     "f32[1][2]: concatenate: axis 0 is the batch axis")));
  EXPECT_THAT([&] { concatenate(std::vector<Model>{}); },
              ThrowsMessage<Error>(HasSubstr("concatenate: needs at least one input")));
}

TEST(Combine, AddSubtractMultiply) {
  Model a = input("a", {-1, 3}), b = input("b", {-1, 3}), c = input("c", {-1, 1});
  Inputs in{{"a", Tensor::from<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3})},
            {"b", Tensor::from<float>({10, 20, 30, 40, 50, 60}, Shape{2, 3})},
            {"c", Tensor::from<float>({2, -1}, Shape{2, 1})}};
  // c broadcasts over the features.
  EXPECT_THAT(values(run(add({a, b, c}), in)), ElementsAreArray({13, 24, 35, 43, 54, 65}));
  EXPECT_THAT(values(run(subtract(b, a), in)), ElementsAreArray({9, 18, 27, 36, 45, 54}));
  EXPECT_THAT(values(run(multiply({a, b, c}), in)),
              ElementsAreArray({20, 80, 180, -160, -250, -360}));
  // One input passes through.
  EXPECT_THAT(values(run(add({a}), {{"a", in.at("a")}})), ElementsAreArray({1, 2, 3, 4, 5, 6}));
  Model d = input("d", {-1, 2});
  EXPECT_THAT(
      [&] {
        build(add({a, d})).init(0);
      },
      ThrowsMessage<Error>(HasSubstr("layer 'add_0' (add) with input(s) f32[1][3], "
                                     "f32[1][2]")));
}

TEST(Combine, SplitGivesOneModelPerPart) {
  Model x = input("x", {-1, 6});
  std::vector<Model> parts = split(x, 3);
  ASSERT_EQ(parts.size(), 3u);
  Tensor v = Tensor::from<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, Shape{2, 6});
  EXPECT_THAT(values(run(parts[0], {{"x", v}})), ElementsAreArray({0, 1, 6, 7}));
  EXPECT_THAT(values(run(parts[1], {{"x", v}})), ElementsAreArray({2, 3, 8, 9}));
  EXPECT_THAT(values(run(parts[2], {{"x", v}})), ElementsAreArray({4, 5, 10, 11}));
  // The parts recombined in another order: one model using all three.
  Model swapped = concatenate({parts[2], parts[0], parts[1]});
  EXPECT_THAT(values(run(swapped, {{"x", v}})),
              ElementsAreArray({4, 5, 0, 1, 2, 3, 10, 11, 6, 7, 8, 9}));
  std::vector<std::string> names;
  for (const ResolvedLayer& r : resolve_layers(swapped)) names.push_back(r.name);
  EXPECT_THAT(names, ElementsAreArray({"x", "split_0", "split_1", "split_2", "concatenate_0"}));
  // A named split names its parts.
  std::vector<Model> named = split(x, 2, 1, {.name = "halves"});
  names.clear();
  for (const ResolvedLayer& r : resolve_layers(subtract(named[0], named[1])))
    names.push_back(r.name);
  EXPECT_THAT(names, ElementsAreArray({"x", "halves_0", "halves_1", "subtract_0"}));
  EXPECT_THAT(values(run(subtract(named[0], named[1]), {{"x", v}})),
              ElementsAreArray({-3, -3, -3, -3, -3, -3}));
}

TEST(Combine, SplitErrors) {
  Model x = input("x", {-1, 5});
  EXPECT_THAT([&] { split(x, 0); },
              ThrowsMessage<Error>(HasSubstr("split: parts must be positive, got 0")));
  EXPECT_THAT([&] { build(split(x, 2)[1]).init(0); },
              ThrowsMessage<Error>(HasSubstr("layer 'split_0' (split) with input(s) f32[1][5]: "
                                             "split: axis 1 of size 5 does not divide into 2 "
                                             "equal parts")));
  EXPECT_THAT([&] { build(split(x, 1, 0)[0]).init(0); },
              ThrowsMessage<Error>(HasSubstr("split: axis 0 is the batch axis")));
}

TEST(Combine, Constant) {
  Tensor bias = Tensor::from<float>({1, 2, 3});
  Model x = input("x", {-1, 3});
  Model y = add({x, constant(bias, {})});
  EXPECT_THAT(values(run(y, {{"x", Tensor::from<float>({10, 20, 30, 40, 50, 60}, Shape{2, 3})}})),
              ElementsAreArray({11, 22, 33, 41, 52, 63}));
  // A constant is not trained: no parameters.
  auto [init, predict] = build(y);
  EXPECT_TRUE(init(0).params.empty());
  // A model that is only a constant has no inputs at all.
  Model c = constant(Tensor::from<std::int32_t>({7, 8}, Shape{2}), {.name = "seven_eight"});
  auto built = build(c);
  ModelState s = built.init(0);
  EXPECT_TRUE(s.params.empty());
  Tensor out = built.predict(s, Inputs{});
  EXPECT_EQ(out.type(), (TensorType{DType::i32, {2}}));
  EXPECT_THAT(out.to_vector<std::int32_t>(), ElementsAreArray({7, 8}));
  EXPECT_EQ(resolve_layers(c)[0].name, "seven_eight");
  EXPECT_THAT([&] { constant(Tensor(), {}); },
              ThrowsMessage<Error>(HasSubstr("constant: the tensor is undefined")));
}

}  // namespace
}  // namespace glia
