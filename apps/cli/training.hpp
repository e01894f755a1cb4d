// What `glia train`, `glia eval` and the checkpoint commands share: the data flags, the
// MNIST-style data set shaped for a model, the loss, metric and optimizers by name, and
// the test-split evaluation.
//   glia::cli::DataFlags f;  glia::cli::add_data_flags(cmd, f);
//   glia::cli::Data d = glia::cli::load(f);
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "glia/datasets.hpp"
#include "glia/optim.hpp"

namespace CLI {
class App;
}

namespace glia::cli {

struct DataFlags {
  std::string dataset = "mnist";
  std::string data_dir;      // empty: $GLIA_DATA_DIR, else ./data/<dataset>
  std::string data;          // npz and csv: the file
  std::string label;         // csv: the label column (empty: the last)
  std::int64_t classes = 0;  // npz, csv: classes of integer labels (0: the largest + 1)
  std::string model = "mlp";
  std::string model_json;  // train: an architecture file (model_to_json's text) instead
  std::int64_t batch_size = 32;
  std::uint64_t seed = 0;
  std::string backend = default_backend();
  int threads = 2;
  bool json = false;
};

void add_data_flags(CLI::App* cmd, DataFlags& f);

struct Data {
  Dataset train, test;
};
// The dataset's train and test splits, the images shaped for `model`'s input; checks the
// backend's name.
Data load(const DataFlags& f, const Model& model);
// --dataset npz or csv: the file's examples (the last sixth held out to test, or an npz's
// x_test and y_test), shaped for `model`.
Data load_file(const DataFlags& f, const Model& model);
// The model written by model_to_json in `path` (a checkpoint's /architecture, say);
// glia::Error naming the file when it cannot be read or does not describe a model.
Model read_model_json(const std::string& path);

Expr cross_entropy(const Expr& y_true, const Expr& y_pred);
Expr accuracy(const Expr& y_true, const Expr& y_pred);
Transformation optimizer(const std::string& name, double learning_rate);

// For a command reading a checkpoint written by `glia train`: a setting whose flag was not
// given on the command line takes the checkpoint's value (its config entry `key`); a
// --model that differs from the checkpoint's is an error, other differences a note on
// stderr. flags_from_checkpoint does it for every data flag.
void take_setting(const CLI::App& cmd, const Checkpoint& c, const std::string& flag,
                  const std::string& key, std::string& value);
void take_setting(const CLI::App& cmd, const Checkpoint& c, const std::string& flag,
                  const std::string& key, double& value);
void take_setting(const CLI::App& cmd, const Checkpoint& c, const std::string& flag,
                  const std::string& key, std::int64_t& value);
void take_setting(const CLI::App& cmd, const Checkpoint& c, const std::string& flag,
                  const std::string& key, std::uint64_t& value);
void flags_from_checkpoint(const CLI::App& cmd, const Checkpoint& c, DataFlags& f);

// Test loss and accuracy of `state` over the test split.
std::map<std::string, double> evaluate(const Model& model, const ModelState& state,
                                       const Data& data, const DataFlags& f);

}  // namespace glia::cli
