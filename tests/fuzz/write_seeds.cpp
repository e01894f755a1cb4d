// Writes the fuzz seeds that glia itself makes: small checkpoints and a weights file
// (seeds/checkpoint) and the JSON of a few architectures covering most layer kinds
// (seeds/model_json). Run by make_seeds.sh; the output is committed, so the seeds stay
// fixed while the writers change (a regression then shows as a seed that stops loading).
//   fuzz_write_seeds tests/fuzz/seeds
#include <filesystem>
#include <fstream>
#include <iostream>

#include "glia/layers.hpp"
#include "glia/layers/serialize.hpp"
#include "glia/optim.hpp"

namespace glia {
namespace {

// 6 features -> dense 8 relu -> dropout -> dense 3 softmax: the smallest useful classifier.
Model classifier() {
  Model x = input("features", {-1, 6});
  Model h = dense(x, 8, {.activation = "relu"});
  h = dropout(h, {.rate = 0.25});
  return dense(h, 3, {.activation = "softmax"});
}

std::map<std::string, Model> architectures() {
  Model pixels = input("pixels", {-1, 784});
  Model mlp = dense(dropout(dense(pixels, 128, {.activation = "relu"}), {.rate = 0.5}), 10,
                    {.activation = "softmax"});
  Model image = input("image", {-1, 28, 28, 1});
  Model y = max_pool(conv(image, 8, {.kernel_size = {3, 3}, .activation = "relu"}),
                     {.kernel_size = {2, 2}});
  y = batch_norm(y);
  Model cnn = dense(flatten(global_avg_pool(y)), 10, {.activation = "softmax"});
  Model rows = input("rows", {-1, 28, 28});
  Model rnn = dense(lstm(gru(rows, 16), 16, {.return_sequences = false}), 10);
  // A DAG with two inputs, an integer input, attention and several heads.
  Model a = input("a", {-1, 5, 4}), ids = input("ids", {-1, 5}, DType::i32);
  Model e = embedding(ids, 20, 4);
  Model h = layer_norm(add({a, e}));
  h = multi_head_attention(h, 2);
  Model c = concatenate({h, a}, -1);
  Model heads = outputs({{"pooled", global_max_pool(c)},
                         {"flat", dense(reshape(c, {-1, 40}), 3, {.use_bias = false})}});
  return {{"mlp", mlp}, {"cnn", cnn}, {"recurrent", rnn}, {"attention_dag", heads}};
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  check(out.good(), "cannot write ", path.string());
}

void write(const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  fs::create_directories(root / "checkpoint");
  fs::create_directories(root / "model_json");
  for (const auto& [name, model] : architectures())
    write_text(root / "model_json" / (name + ".json"), model_to_json(model));

  // A checkpoint after one Adam step, with a history: what `glia train` leaves.
  Model model = classifier();
  TrainStep step(model, losses::categorical_cross_entropy, optimizers::adam(0.01));
  LoopState s;
  s.train = step.init(4);
  Tensor x = Tensor::from(std::vector<float>{0.5f, -1, 0.25f, 2, 0, 1, -0.5f, 1, 0, 0, 3, -2},
                          Shape{2, 6});
  Tensor y = Tensor::from(std::vector<float>{1, 0, 0, 0, 0, 1}, Shape{2, 3});
  step(s.train, x, y);
  s.epoch = 1;
  s.epochs = 2;
  s.total_iterations = s.samples = 1;
  s.history = {{{"loss", 1.25}, {"accuracy", 0.5}}};
  s.epoch_seconds = {0.5};
  save_checkpoint((root / "checkpoint" / "adam.h5").string(), model, s,
                  {{"command", "glia train"}, {"learning_rate", "0.01"}, {"batch_size", "2"}});
  save_weights((root / "checkpoint" / "weights.h5").string(), model, s.train.model);
  // Every dtype a checkpoint stores, as model state.
  std::vector<float> v{1.5f, -2.25f, 3.0f, 0.0f};
  auto& extra = s.train.model.state["extra"];
  extra["f16"] = Tensor::from(v).cast(DType::f16);
  extra["bf16"] = Tensor::from(v).cast(DType::bf16);
  extra["f64"] = Tensor::from(v).cast(DType::f64);
  extra["i32"] = Tensor::from(std::vector<std::int32_t>{-7, 2147483647});
  extra["i64"] = Tensor::from(std::vector<std::int64_t>{-9000000000000000000LL, 5});
  extra["u32"] = Tensor::from(std::vector<std::uint32_t>{4000000000u});
  extra["u8"] = Tensor::from(std::vector<std::uint8_t>{0, 255});
  extra["bool"] = Tensor::from(std::vector<bool>{true, false});
  extra["scalar"] = Tensor::scalar(42, DType::i64);
  extra["empty"] = Tensor(DType::f32, Shape{0, 4});
  save_checkpoint((root / "checkpoint" / "every_dtype.h5").string(), model, s);
}

}  // namespace
}  // namespace glia

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_write_seeds SEEDS_FOLDER\n";
    return 2;
  }
  try {
    glia::write(argv[1]);
  } catch (const glia::Error& e) {
    std::cerr << "fuzz_write_seeds: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
