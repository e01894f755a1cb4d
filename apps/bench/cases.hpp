// The cases of `glia bench` (issue 6): what each measures, which contenders run it by
// default, and glia's side of each (the LibTorch side is apps/bench/torch/torch_peer.cpp).
//   glia::bench::PreparedCase c = glia::bench::prepare_glia_case(all_cases()[0], "cpu", ctx);
//   c.call();  // one timed call
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "glia/datasets/dataset.hpp"

namespace glia::bench {

struct CaseInfo {
  std::string name;
  std::string description;
  double items_per_call = 0;      // images per call, for throughput (0: not a throughput case)
  bool interp_by_default = true;  // false where the interpreter would take minutes
  bool has_peer = true;           // LibTorch runs it too
  bool epoch = false;             // a training epoch over MNIST (--epoch-fraction applies)
  bool test_images = false;       // predicts MNIST's test images (uniform pixels without them)
  std::string model;              // epoch cases: "mlp", "cnn" or "lstm"
  std::int64_t batch = 0;         // predict and epoch cases
  // aot_* cases: the JIT case with the same model, parameters and input, run beside the
  // exported library (contender "aot") as the baseline of its ratio.
  std::string jit_case;
};
const std::vector<CaseInfo>& all_cases();

// MNIST's 60,000 training images as the MLP takes them ([N, 784] f32 in [0, 1], one-hot
// labels [N, 10]) and its 10,000 test images: the real files in `dir`, or synthetic data
// of the same size when they are absent (`synthetic` says which).
struct TrainData {
  Dataset train;
  Tensor test_x;  // the 10,000 test images [10000, 784] (uniform pixels where synthetic)
  bool synthetic = false;
};
TrainData load_train_data(const std::string& dir);

struct CaseContext {
  int threads = 0;                  // CompileOptions::threads for jitted functions
  double epoch_fraction = 1;        // epoch cases time this part of an epoch, then scale
  const TrainData* data = nullptr;  // epoch cases and those on the test images
};

struct PreparedCase {
  std::function<void()> call;  // one timed call; set-up and compilation happen before
  double time_scale = 1;       // multiplies measured times (a partial epoch -> a whole one)
  std::string note;
};
// Uniform [0, 1) f32 values from std::mt19937(seed): the cases' inputs.
Tensor uniform_tensor(Shape shape, std::uint32_t seed);

// The case named `name`; glia::Error when there is none.
const CaseInfo& case_named(const std::string& name);

// Builds, initialises and compiles what `info` measures on `backend`.
PreparedCase prepare_glia_case(const CaseInfo& info, const std::string& backend,
                               const CaseContext& context);

// An aot_* case: the model exported (glia::export_predict) with the JIT case's parameters,
// built with the system's C compiler and loaded; one call is one NAME_predict_ws on
// preallocated buffers. glia::Error when no C compiler is found.
PreparedCase prepare_aot_case(const CaseInfo& info);

}  // namespace glia::bench
