// Trees: structure strings, flattening order, rebuilding with another leaf kind,
// signature text and leaf paths.
#include "core/test_util.hpp"

namespace {

using glia::Tensor;
using glia::TensorType;
using glia::testing::f32s;

}  // namespace

TEST(Tree, TypeMapping) {
  using Params = std::map<std::string, std::vector<std::tuple<Tensor, Tensor>>>;
  static_assert(
      std::is_same_v<glia::expr_tree_t<Params>,
                     std::map<std::string, std::vector<std::tuple<glia::Expr, glia::Expr>>>>);
  static_assert(
      std::is_same_v<glia::type_tree_t<glia::expr_tree_t<Params>>,
                     std::map<std::string, std::vector<std::tuple<TensorType, TensorType>>>>);
  static_assert(std::is_same_v<glia::tensor_tree_t<glia::Expr>, Tensor>);
  static_assert(glia::is_tree_of_v<Params, Tensor>);
  static_assert(!glia::is_tree_of_v<Params, glia::Expr>);
  static_assert(!glia::is_tree_of_v<std::vector<int>, Tensor>);
  static_assert(!glia::is_tree_of_v<std::map<int, Tensor>, Tensor>);
  SUCCEED();
}

TEST(Tree, StructureStrings) {
  Tensor t = f32s({1});
  EXPECT_EQ(glia::tree_structure(t), "T");
  EXPECT_EQ(glia::tree_structure(std::vector<Tensor>{t, t}), "[T,T]");
  EXPECT_EQ(glia::tree_structure(std::vector<Tensor>{}), "[]");
  EXPECT_EQ(glia::tree_structure(std::tuple<Tensor, std::vector<Tensor>>{t, {t}}), "(T,[T])");
  std::map<std::string, Tensor> m{{"w", t}, {"b", t}};
  EXPECT_EQ(glia::tree_structure(m), R"({"b":T,"w":T})");  // keys in map order
  std::map<std::string, Tensor> odd{{R"(a"b\c)", t}};
  EXPECT_EQ(glia::tree_structure(odd), R"({"a\"b\\c":T})");
}

// Writes what a visitor is told, one token a call.
struct Recorder {
  std::vector<std::string> tokens;
  void leaf(const Tensor& t) { tokens.push_back("leaf " + t.type().to_string()); }
  void open(char bracket, std::size_t n) {
    tokens.push_back(std::string(1, bracket) + std::to_string(n));
  }
  void next() { tokens.push_back(","); }
  void key(const std::string& k) { tokens.push_back("key " + k); }
  void close(char bracket) { tokens.push_back(std::string(1, bracket)); }
};

TEST(Tree, VisitWalksInFlatteningOrder) {
  using Tree = std::map<std::string, std::tuple<Tensor, std::vector<Tensor>>>;
  Tree tree{{"w", {f32s({1, 2}), {}}}, {"b", {f32s({3}), {f32s({4}), Tensor::scalar(5)}}}};
  Recorder r;
  glia::TreeTraits<Tree>::visit(tree, r);
  EXPECT_EQ(
      r.tokens,
      (std::vector<std::string>{
          "{2", "key b", "(2", "leaf f32[1]", ",", "[2", "leaf f32[1]", ",", "leaf f32", "]", ")",
          ",",  "key w", "(2", "leaf f32[2]", ",", "[0", "]",           ")", "}"}));
  EXPECT_EQ(glia::tree_structure(tree), R"({"b":(T,[T,T]),"w":(T,[])})");
}

TEST(Tree, FlattenInOrderAndRebuild) {
  using Tree = std::map<std::string, std::vector<Tensor>>;
  Tree tree{{"b", {f32s({3}), f32s({4, 5})}}, {"a", {f32s({1})}}};
  auto leaves = glia::tree_leaves<Tensor>(tree);
  ASSERT_EQ(leaves.size(), 3u);
  EXPECT_EQ(leaves[0].to_vector<float>(), std::vector<float>{1});  // "a" before "b"
  EXPECT_EQ(leaves[1].to_vector<float>(), std::vector<float>{3});
  EXPECT_EQ(leaves[2].to_vector<float>(), (std::vector<float>{4, 5}));

  std::vector<TensorType> types{{glia::f32, {1}}, {glia::i32, {2}}, {glia::f64, {}}};
  auto typed = glia::tree_unflatten<TensorType>(tree, std::span<const TensorType>(types));
  static_assert(std::is_same_v<decltype(typed), std::map<std::string, std::vector<TensorType>>>);
  ASSERT_EQ(typed.at("b").size(), 2u);
  EXPECT_EQ(typed.at("a")[0], (TensorType{glia::f32, {1}}));
  EXPECT_EQ(typed.at("b")[0], (TensorType{glia::i32, {2}}));
  EXPECT_EQ(typed.at("b")[1], (TensorType{glia::f64, {}}));
}

TEST(Tree, TupleRebuildKeepsOrder) {
  std::tuple<TensorType, std::vector<TensorType>, TensorType> like{
      {glia::f32, {1}}, {{glia::f32, {2}}, {glia::f32, {3}}}, {glia::f32, {4}}};
  std::vector<Tensor> leaves{f32s({1}), f32s({2, 2}), f32s({3, 3, 3}), f32s({4, 4, 4, 4})};
  auto t = glia::tree_unflatten<Tensor>(like, std::span<const Tensor>(leaves));
  EXPECT_EQ(std::get<0>(t).numel(), 1);
  EXPECT_EQ(std::get<1>(t)[0].numel(), 2);
  EXPECT_EQ(std::get<1>(t)[1].numel(), 3);
  EXPECT_EQ(std::get<2>(t).numel(), 4);
}

TEST(Tree, UnflattenChecksTheLeafCount) {
  std::vector<TensorType> like{{glia::f32, {1}}, {glia::f32, {1}}};
  std::vector<Tensor> three{f32s({1}), f32s({2}), f32s({3})};
  EXPECT_GLIA_ERROR(glia::tree_unflatten<Tensor>(like, std::span<const Tensor>(three)),
                    "[T,T] has 2 leaves, got 3");
}

TEST(Tree, TextAndPaths) {
  std::string s = R"(([T,T],{"b":T,"w":(T,T)}))";
  std::vector<std::string> texts{"f32[2]", "i32", "f32[3]", "f64[1][2]", "u8"};
  EXPECT_EQ(glia::tree_text(s, texts), R"(([f32[2], i32], {"b": f32[3], "w": (f64[1][2], u8)}))");
  EXPECT_EQ(glia::tree_leaf_paths(s, true),
            (std::vector<std::string>{"arg0[0]", "arg0[1]", "arg1.b", "arg1.w[0]", "arg1.w[1]"}));
  EXPECT_EQ(glia::tree_leaf_paths(R"({"T":[T]})"), (std::vector<std::string>{".T[0]"}));
  // A key may contain T, quotes and separators without confusing the reader.
  std::vector<std::string> one{"f32"};
  EXPECT_EQ(glia::tree_text(R"({"T,\":":T})", one), R"({"T,\":": f32})");
  EXPECT_GLIA_ERROR(glia::tree_text("[T,T]", one), "more than 1 leaves");
  EXPECT_GLIA_ERROR(glia::tree_leaf_paths("[T,"), "ends early");
  EXPECT_GLIA_ERROR(glia::tree_leaf_paths("[T]]"), "trailing text");
}
