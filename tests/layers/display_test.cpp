// summary and to_dot: rows, totals (parameter counts worked out by hand), frozen and
// state counts, DOT nodes and edges, and the default layer names they show.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "glia/layers.hpp"

namespace glia {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// The trimmed cells of the summary row whose first cell is `layer`; empty when none.
std::vector<std::string> row(const std::string& table, const std::string& layer) {
  std::istringstream lines(table);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("| ", 0) != 0) continue;
    std::vector<std::string> cells;
    std::size_t start = 1;
    for (std::size_t bar; (bar = line.find('|', start)) != std::string::npos; start = bar + 1) {
      std::string cell = line.substr(start, bar - start);
      cell.erase(0, cell.find_first_not_of(' '));
      cell.erase(cell.find_last_not_of(' ') + 1);
      cells.push_back(cell);
    }
    if (!cells.empty() && cells[0] == layer) return cells;
  }
  return {};
}

// input 784 -> dense 128 relu -> dense 10 softmax.
Model mlp() {
  Model x = input("data", {-1, 784});
  return dense(dense(x, 128, {.activation = "relu"}), 10, {.activation = "softmax"});
}

TEST(Summary, RowsAndTotals) {
  std::string s = summary(mlp());
  // dense 784 -> 128: 784 * 128 + 128 = 100480 values of 4 bytes; 128 -> 10: 1290.
  EXPECT_THAT(row(s, "Layer"),
              ElementsAre("Layer", "Inputs", "Output", "Options", "Params", "Bytes"));
  EXPECT_THAT(row(s, "data (input)"), ElementsAre("data (input)", "", "f32[1][784]", "", "0", "0"));
  EXPECT_THAT(row(s, "dense_0 (dense)"),
              ElementsAre("dense_0 (dense)", "f32[1][784]", "f32[1][128]",
                          "units=128, activation=relu", "100480", "401920"));
  EXPECT_THAT(row(s, "dense_1 (dense)"),
              ElementsAre("dense_1 (dense)", "f32[1][128]", "f32[1][10]",
                          "units=10, activation=softmax", "1290", "5160"));
  EXPECT_THAT(s, HasSubstr("Total parameters: 101770\n"));
  EXPECT_THAT(s, HasSubstr("  trainable:      101770\n"));
  EXPECT_THAT(s, HasSubstr("  frozen:         0\n"));
  EXPECT_THAT(s, HasSubstr("State entries:    0 (0 values)\n"));
  EXPECT_THAT(s, HasSubstr("Total bytes:      407080 (397.5 KiB)\n"));
  // Rules above and below the header and at the end; every line of the table equally wide.
  std::istringstream lines(s);
  std::string line, first;
  std::getline(lines, first);
  EXPECT_EQ(first.rfind("+-", 0), 0u);
  int rules = 1;
  while (std::getline(lines, line) && (line[0] == '|' || line[0] == '+')) {
    EXPECT_EQ(line.size(), first.size()) << line;
    rules += line[0] == '+';
  }
  EXPECT_EQ(rules, 3);
}

TEST(Summary, GivenInputTypes) {
  std::string s = summary(mlp(), {{"data", {DType::f32, {32, 784}}}});
  EXPECT_THAT(row(s, "dense_1 (dense)")[1], "f32[32][128]");
  EXPECT_THAT(row(s, "dense_1 (dense)")[2], "f32[32][10]");
  EXPECT_THAT(s, HasSubstr("Total parameters: 101770\n"));
}

TEST(Summary, FrozenAndState) {
  Model frozen = freeze(
      mlp(), [](const std::string& layer, const std::string&) { return layer == "dense_0"; });
  std::string s = summary(frozen);
  EXPECT_THAT(s, HasSubstr("Total parameters: 101770\n"));
  EXPECT_THAT(s, HasSubstr("  trainable:      1290\n"));
  EXPECT_THAT(s, HasSubstr("  frozen:         100480\n"));
  // Only the biases frozen: 128 + 10.
  std::string b =
      summary(freeze(mlp(), [](const std::string&, const std::string& p) { return p == "bias"; }));
  EXPECT_THAT(b, HasSubstr("  trainable:      101632\n"));
  EXPECT_THAT(b, HasSubstr("  frozen:         138\n"));
  // A custom layer with a 3-value parameter and a 3-value f64 state entry.
  Model x = input("x", {-1, 3});
  auto three = [](const InputShapes&) { return Shape{3}; };
  Model y = layer("shift", {x}, [](LayerContext& c) { return c.input() + c.param("s"); },
                  {{"s", three, initializers::zeros()},
                   {"running", three, initializers::zeros(), DType::f64, /*is_state=*/true}});
  std::string t = summary(y);
  EXPECT_THAT(row(t, "shift_0 (shift)"),
              ElementsAre("shift_0 (shift)", "f32[1][3]", "f32[1][3]", "", "6", "36"));
  EXPECT_THAT(t, HasSubstr("Total parameters: 3\n"));
  EXPECT_THAT(t, HasSubstr("State entries:    1 (3 values)\n"));
  EXPECT_THAT(t, HasSubstr("Total bytes:      36 (36 B)\n"));
}

TEST(Summary, MultipleInputsAndLayersWithoutParameters) {
  Model a = input("a", {-1, 4}), b = input("b", {-1, 4});
  Model y = flatten(reshape(concatenate({add({a, b}), b}), {2, 4}));
  std::string s = summary(y);
  EXPECT_THAT(row(s, "add_0 (add)"),
              ElementsAre("add_0 (add)", "f32[1][4], f32[1][4]", "f32[1][4]", "", "0", "0"));
  EXPECT_THAT(row(s, "concatenate_0 (concatenate)")[2], "f32[1][8]");
  EXPECT_THAT(row(s, "reshape_0 (reshape)")[3], "shape=[2, 4]");
  EXPECT_THAT(row(s, "flatten_0 (flatten)")[2], "f32[1][8]");
  EXPECT_THAT(s, HasSubstr("Total parameters: 0\n"));
}

TEST(Summary, ShapeErrorsNameTheLayer) {
  Model x = input("data", {-1, 6});
  EXPECT_THAT(
      [&] { summary(reshape(dense(x, 4), {3})); },
      ThrowsMessage<Error>(HasSubstr("layer 'reshape_0' (reshape) with input(s) f32[1][4]")));
}

TEST(Names, DefaultsUserNamesAndDuplicates) {
  Model x = input("data", {-1, 3});
  Model y = dense(dense(dense(x, 4, {.name = "hidden"}), 4), 2);
  std::string s = summary(y);
  // User names are kept; unnamed layers count from 0 per type.
  EXPECT_FALSE(row(s, "hidden (dense)").empty());
  EXPECT_FALSE(row(s, "dense_0 (dense)").empty());
  EXPECT_FALSE(row(s, "dense_1 (dense)").empty());
  EXPECT_TRUE(row(s, "dense_2 (dense)").empty());
  // An unnamed layer skips a name a user took.
  Model z = dense(dense(x, 4, {.name = "dense_0"}), 2);
  std::vector<std::string> names;
  for (const ResolvedLayer& r : resolve_layers(z)) names.push_back(r.name);
  EXPECT_THAT(names, ElementsAre("data", "dense_0", "dense_1"));
  Model dup = dense(dense(x, 4, {.name = "h"}), 2, {.name = "h"});
  EXPECT_THAT([&] { summary(dup); },
              ThrowsMessage<Error>(HasSubstr("model: two layers are named 'h'")));
  EXPECT_THAT([&] { build(dup); },
              ThrowsMessage<Error>(HasSubstr("model: two layers are named 'h'")));
}

TEST(Dot, NodesAndEdges) {
  std::string d = to_dot(mlp());
  EXPECT_EQ(d.rfind("digraph model {\n", 0), 0u);
  EXPECT_THAT(d, HasSubstr("  \"data\" [label=\"data (input)\\nf32[1][784]\"];\n"));
  EXPECT_THAT(d, HasSubstr("  \"dense_0\" [label=\"dense_0 (dense)\\nf32[1][128]\"];\n"));
  EXPECT_THAT(d, HasSubstr("  \"dense_1\" [label=\"dense_1 (dense)\\nf32[1][10]\"];\n"));
  EXPECT_THAT(d, HasSubstr("  \"data\" -> \"dense_0\";\n  \"dense_0\" -> \"dense_1\";\n"));
  EXPECT_EQ(d.substr(d.size() - 2), "}\n");

  Model a = input("a", {-1, 2}), b = input("say \"b\"", {-1, 2});
  std::string m =
      to_dot(subtract(a, b), {{"a", {DType::f32, {5, 2}}}, {"say \"b\"", {DType::f32, {5, 2}}}});
  EXPECT_THAT(m, HasSubstr("  \"subtract_0\" [label=\"subtract_0 (subtract)\\nf32[5][2]\"];\n"));
  EXPECT_THAT(m, HasSubstr("  \"a\" -> \"subtract_0\";\n"));
  EXPECT_THAT(m, HasSubstr("  \"say \\\"b\\\"\" -> \"subtract_0\";\n"));
}

}  // namespace
}  // namespace glia
