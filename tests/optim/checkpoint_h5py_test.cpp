// The checkpoint layout as another tool sees it: h5py (Debian's python3-h5py) lists the
// datasets with their glia dtype attributes, shapes, numpy types and values, the step and
// loop attributes, and the architecture text. Skipped with a message without h5py.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "checkpoint_test_util.hpp"

namespace glia {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

constexpr const char* kScript = R"(import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
def show(name, obj):
    if isinstance(obj, h5py.Dataset) and obj.dtype.kind in "biuf":
        a = obj[()]
        first = repr(float(np.asarray(a).flat[0])) if a.size else "none"
        print("dataset", "/" + name, obj.attrs["dtype"].decode(), list(obj.shape), obj.dtype.str,
              repr(float(np.sum(np.asarray(a, dtype="f8")))), first)
f.visititems(show)
print("attr format", f.attrs["format"].decode(), int(f.attrs["format_version"]))
print("attr step", int(f["train"].attrs["step"]), int(f["train"].attrs["seed"]))
print("attr loop", int(f["loop"].attrs["epoch"]), int(f["loop"].attrs["iteration"]))
open(sys.argv[2], "w").write(f["architecture"][()].decode())
)";

std::string numpy_type(DType t) {
  switch (t) {
    case DType::boolean:
    case DType::u8:
      return "|u1";
    case DType::u32:
      return "<u4";
    case DType::i32:
      return "<i4";
    case DType::i64:
      return "<i8";
    case DType::f16:
      return "<f2";
    case DType::bf16:
      return "<u2";  // raw bits: numpy has no bfloat16
    case DType::f32:
      return "<f4";
    case DType::f64:
      return "<f8";
  }
  return "?";
}

// What h5py should print for one tensor: numpy sees bf16 as its raw 16-bit patterns.
std::vector<double> as_numpy_sees(const Tensor& t) {
  std::vector<double> out;
  if (t.dtype() == DType::bf16) {
    const auto* bits = static_cast<const std::uint16_t*>(t.raw_data());
    for (std::int64_t i = 0; i < t.numel(); ++i) out.push_back(bits[i]);
  } else {
    for (std::int64_t i = 0; i < t.numel(); ++i) out.push_back(t.element(i));
  }
  return out;
}

TEST(CheckpointH5py, ReadsNamesShapesAndValues) {
  if (std::system((std::string(kPython) + " -c 'import h5py' >/dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "python3-h5py is not installed (apt-get install python3-h5py): the "
                    "checkpoint layout is not checked with h5py";
  testing::TempDir dir;
  Model model = testing::small_classifier();
  TrainStep step(model, testing::cross_entropy, optimizers::adam(0.01));
  TrainState s = step.init(4);
  Dataset d = testing::synthetic_classes(8, 1);
  step(s, d.x, d.y);
  std::vector<float> v{1.5f, -2.25f, 3.0f, 0.0f};
  s.model.state["extra"]["f16"] = Tensor::from(v).cast(DType::f16);
  s.model.state["extra"]["bf16"] = Tensor::from(v).cast(DType::bf16);
  s.model.state["extra"]["bool"] = Tensor::from(std::vector<bool>{true, false, true});
  s.model.state["extra"]["i64"] = Tensor::scalar(-5, DType::i64);
  std::string path = dir.file("m.h5");
  save_checkpoint(path, model, s);

  std::ofstream(dir.file("read.py")) << kScript;
  std::string command =
      cat(kPython, " ", dir.file("read.py"), " ", path, " ", dir.file("arch.json"), " 2>&1");
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  ASSERT_EQ(::pclose(pipe), 0) << out;

  std::map<std::string, Tensor> want;
  for (const auto& [layer, m] : s.model.params)
    for (const auto& [name, t] : m) want["/params/" + layer + "/" + name] = t;
  for (const auto& [layer, m] : s.model.state)
    for (const auto& [name, t] : m) want["/state/" + layer + "/" + name] = t;
  for (const auto& [key, t] : s.optimizer) want["/optimizer/" + key] = t;
  std::istringstream lines(out);
  std::string line;
  std::set<std::string> seen;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::string kind, name;
    in >> kind >> name;
    if (kind != "dataset" || name.rfind("/loop", 0) == 0 || name.rfind("/train", 0) == 0) continue;
    ASSERT_EQ(want.count(name), 1u) << "h5py lists an unexpected dataset: " << line;
    const Tensor& t = want.at(name);
    seen.insert(name);
    std::string dtype, numpy, rest;
    in >> dtype;
    std::getline(in, rest);
    std::string shape = t.shape().dims().empty() ? "[]" : "";
    if (shape.empty()) {
      shape = "[";
      for (std::size_t i = 0; i < t.shape().dims().size(); ++i)
        shape += (i ? ", " : "") + std::to_string(t.shape().dims()[i]);
      shape += "]";
    }
    std::vector<double> values = as_numpy_sees(t);
    double sum = 0;
    for (double x : values) sum += x;
    std::istringstream tail(rest.substr(rest.find(']') + 1));
    double got_sum = 0, got_first = 0;
    tail >> numpy >> got_sum >> got_first;
    EXPECT_EQ(dtype, dtype_name(t.dtype())) << line;
    EXPECT_EQ(rest.substr(1, rest.find(']')), shape) << line;
    EXPECT_EQ(numpy, numpy_type(t.dtype())) << line;
    EXPECT_NEAR(got_sum, sum, 1e-9 * (1 + std::abs(sum))) << line;
    EXPECT_EQ(got_first, values.at(0)) << line;
  }
  EXPECT_EQ(seen.size(), want.size()) << out;
  EXPECT_THAT(out,
              ::testing::HasSubstr(cat("attr format glia checkpoint ", kCheckpointFormatVersion)));
  EXPECT_THAT(out, ::testing::HasSubstr("attr step 1 4"));
  EXPECT_THAT(out, ::testing::HasSubstr("attr loop 0 0"));
  std::ifstream arch(dir.file("arch.json"));
  std::string text((std::istreambuf_iterator<char>(arch)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, model_to_json(model));
}

}  // namespace
}  // namespace glia
