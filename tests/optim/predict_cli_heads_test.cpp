// `glia predict` on a checkpoint of a model with two inputs, one shared encoder and two
// outputs: `--input NAME=FILE` for each input and `--output NAME=FILE` for the heads to
// write give this process's predict.outputs bit for bit; a missing or unknown name is a
// clear error with a non-zero exit and nothing written.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "checkpoint_test_util.hpp"

namespace glia {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(PredictCli, SeveralInputsAndOutputsByName) {
#ifndef GLIA_CLI_PATH
  GTEST_SKIP() << "the glia tool is not built (GLIA_BUILD_APPS=OFF)";
#else
  testing::TempDir dir;
  Model left = input("left", {-1, 3}), right = input("right", {-1, 3});
  Shared encoder([](const Model& x) { return dense(x, 4, {.activation = "tanh"}); });
  Model both = concatenate({encoder(left), encoder(right)});
  Model model =
      outputs({{"score", dense(both, 1)}, {"class", dense(both, 2, {.activation = "softmax"})}});
  TrainStep step(model,
                 OutputLosses{{"score", {losses::mean_squared_error}},
                              {"class", {losses::categorical_cross_entropy}}},
                 optimizers::sgd(0.1));
  TrainState s = step.init(4);
  auto rows = [](std::vector<float> v) { return Tensor::from(v, Shape{2, 3}); };
  std::map<std::string, Tensor> x{{"left", rows({1, 2, 3, -1, 0, 1})},
                                  {"right", rows({0.5f, 0.5f, -2, 3, 1, 0})}};
  step(s, x,
       {{"score", Tensor::from(std::vector<float>{1, -1}, Shape{2, 1})},
        {"class", Tensor::from(std::vector<float>{1, 0, 0, 1}, Shape{2, 2})}});
  save_checkpoint(dir.file("m.h5"), model, s);
  write_npy(dir.file("l.npy"), x["left"]);
  write_npy(dir.file("r.npy"), x["right"]);
  std::map<std::string, Tensor> want = build(model).predict.outputs(s.model, x);

  auto predict = [&](const std::string& args) {
    std::string command = cat(GLIA_CLI_PATH, " predict --checkpoint ", dir.file("m.h5"), " ", args,
                              " > ", dir.file("log"), " 2>&1");
    return std::system(command.c_str());
  };
  ASSERT_EQ(
      predict(cat("--input left=", dir.file("l.npy"), " --input right=", dir.file("r.npy"),
                  " --output score=", dir.file("s.npy"), " --output class=", dir.file("c.npy"))),
      0)
      << read_text(dir.file("log"));
  EXPECT_TRUE(equal(read_npy(dir.file("s.npy")), want["score"]));
  EXPECT_TRUE(equal(read_npy(dir.file("c.npy")), want["class"]));
  EXPECT_NE(read_text(dir.file("log")).find("(output 'class')"), std::string::npos);

  // One head only; the inputs in either order.
  std::filesystem::remove(dir.file("s.npy"));
  ASSERT_EQ(predict(cat("--input right=", dir.file("r.npy"), " --input left=", dir.file("l.npy"),
                        " --output class=", dir.file("c2.npy"))),
            0);
  EXPECT_TRUE(equal(read_npy(dir.file("c2.npy")), want["class"]));
  EXPECT_FALSE(std::filesystem::exists(dir.file("s.npy")));

  // Errors: an input missing, a plain file for two inputs, an unknown head.
  EXPECT_NE(predict(cat("--input left=", dir.file("l.npy"), " --output class=", dir.file("e.npy"))),
            0);
  EXPECT_NE(read_text(dir.file("log")).find("no file for input 'right'"), std::string::npos)
      << read_text(dir.file("log"));
  EXPECT_NE(predict(cat("--input ", dir.file("l.npy"), " --output class=", dir.file("e.npy"))), 0);
  EXPECT_NE(read_text(dir.file("log")).find("give --input NAME=FILE"), std::string::npos)
      << read_text(dir.file("log"));
  EXPECT_NE(predict(cat("--input left=", dir.file("l.npy"), " --input right=", dir.file("r.npy"),
                        " --output total=", dir.file("e.npy"))),
            0);
  EXPECT_NE(read_text(dir.file("log")).find("2 outputs (class, score)"), std::string::npos)
      << read_text(dir.file("log"));
  EXPECT_FALSE(std::filesystem::exists(dir.file("e.npy")));
#endif
}

}  // namespace
}  // namespace glia
