// glia-torch-peer: the LibTorch side of `glia bench`. Runs one case with the same timing
// loop as glia (../stats.hpp) and prints one JSON object on stdout; `glia bench` launches
// it per case and reads that line. Not needed to build or test glia.
//   glia-torch-peer --case mlp_epoch_b128 --threads 2 --time 3 --warmup 1 --data-dir data/mnist
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <stdexcept>
#include <string>

#include "../stats.hpp"

namespace {

struct Args {
  std::string name, data_dir;
  int threads = 2;
  double epoch_fraction = 1;
  glia::bench::MeasureOptions measure;
};

struct TinyImpl : torch::nn::Module {
  TinyImpl()
      : fc1(register_module("fc1", torch::nn::Linear(18, 32))),
        fc2(register_module("fc2", torch::nn::Linear(32, 1))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return torch::softmax(fc2(torch::relu(fc1(x))), -1);
  }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Tiny);

// 784-128 relu-dropout 0.5-10: logits (the loss applies log-softmax) or probabilities.
struct MlpImpl : torch::nn::Module {
  MlpImpl()
      : fc1(register_module("fc1", torch::nn::Linear(784, 128))),
        fc2(register_module("fc2", torch::nn::Linear(128, 10))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return fc2(torch::dropout(torch::relu(fc1(x)), 0.5, is_training()));
  }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Mlp);

// conv3x3x32 relu - pool 2 - conv3x3x64 relu - pool 2 - dense 128 relu - dense 10 (NCHW).
struct CnnImpl : torch::nn::Module {
  CnnImpl()
      : c1(register_module("c1", torch::nn::Conv2d(1, 32, 3))),
        c2(register_module("c2", torch::nn::Conv2d(32, 64, 3))),
        fc1(register_module("fc1", torch::nn::Linear(64 * 5 * 5, 128))),
        fc2(register_module("fc2", torch::nn::Linear(128, 10))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(c1(x.view({-1, 1, 28, 28}))), 2);
    x = torch::max_pool2d(torch::relu(c2(x)), 2);
    return fc2(torch::relu(fc1(x.flatten(1))));
  }
  torch::nn::Conv2d c1, c2;
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Cnn);

// The image read row by row: lstm 128 over 28 steps of 28 pixels, its last step's output
// -> dense 10. batch_first as the data comes; a time-major input (transposed per batch,
// strided or made contiguous) and the final hidden state instead of the output's last
// step measured the same within the noise (LibTorch 1.13 has no oneDNN LSTM: every
// variant runs ATen's per-step cell on OpenBLAS GEMMs).
struct LstmImpl : torch::nn::Module {
  LstmImpl()
      : lstm(register_module("lstm",
                             torch::nn::LSTM(torch::nn::LSTMOptions(28, 128).batch_first(true)))),
        fc(register_module("fc", torch::nn::Linear(128, 10))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor out = std::get<0>(lstm(x.view({-1, 28, 28})));  // (B, T, 128)
    return fc(out.select(1, -1));
  }
  torch::nn::LSTM lstm;
  torch::nn::Linear fc;
};
TORCH_MODULE(Lstm);

std::string read_file(const std::string& path, std::size_t header, std::size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::string data(header + bytes, '\0');
  if (!in.read(data.data(), static_cast<std::streamsize>(data.size())))
    throw std::runtime_error(path + " is shorter than expected");
  return data.substr(header);
}

// MNIST's training split: x [60000, 784] f32 in [0, 1], y [60000] i64; synthetic without a folder.
std::pair<torch::Tensor, torch::Tensor> train_data(const std::string& dir) {
  constexpr std::int64_t kN = 60000;
  if (dir.empty()) {
    torch::manual_seed(0);
    return {torch::rand({kN, 784}), torch::randint(0, 10, {kN}, torch::kLong)};
  }
  std::string images = read_file(dir + "/train-images-idx3-ubyte", 16, kN * 784);
  std::string labels = read_file(dir + "/train-labels-idx1-ubyte", 8, kN);
  auto x = torch::from_blob(images.data(), {kN, 784}, torch::kUInt8).to(torch::kFloat) / 255;
  auto y = torch::from_blob(labels.data(), {kN}, torch::kUInt8).to(torch::kLong);
  return {x, y};
}

// MNIST's 10,000 test images, x [10000, 784] f32 in [0, 1].
torch::Tensor test_images(const std::string& dir) {
  constexpr std::int64_t kN = 10000;
  std::string images = read_file(dir + "/t10k-images-idx3-ubyte", 16, kN * 784);
  return torch::from_blob(images.data(), {kN, 784}, torch::kUInt8).to(torch::kFloat) / 255;
}

struct Prepared {
  std::function<void()> call;
  double time_scale = 1;
  std::string note;
};

template <class Net>
Prepared epoch_case(Net net, const Args& a, std::int64_t batch) {
  auto [x, y] = train_data(a.data_dir);
  auto opt =
      std::make_shared<torch::optim::Adam>(net->parameters(), torch::optim::AdamOptions(1e-3));
  std::int64_t n = x.size(0);
  std::int64_t per_epoch = (n + batch - 1) / batch;
  auto timed =
      static_cast<std::int64_t>(std::ceil(a.epoch_fraction * static_cast<double>(per_epoch)));
  timed = std::clamp<std::int64_t>(timed, 1, per_epoch);
  net->train();
  Prepared p;
  // The fastest idiomatic loop we found: the epoch's order gathered once (randperm +
  // index_select) and narrowed per batch, gradients reset to undefined (PyTorch 2's
  // zero_grad(set_to_none=True)) rather than zero-filled. Only the timed batches' rows are
  // gathered: the whole dataset's gather in a timed part of an epoch, scaled up with it,
  // counted it 1 / --epoch-fraction times (188 MB, 4 times at 0.25).
  const std::int64_t gathered = std::min(n, timed * batch);
  p.call = [=]() mutable {
    torch::Tensor order = torch::randperm(n, torch::kLong).narrow(0, 0, gathered);
    torch::Tensor xs = x.index_select(0, order), ys = y.index_select(0, order);
    for (std::int64_t i = 0; i < timed; ++i) {
      const std::int64_t rows = std::min(batch, n - i * batch);
      torch::Tensor xb = xs.narrow(0, i * batch, rows), yb = ys.narrow(0, i * batch, rows);
      for (auto& q : net->parameters()) q.mutable_grad() = torch::Tensor();
      torch::Tensor loss = torch::nn::functional::cross_entropy(net->forward(xb), yb);
      loss.backward();
      opt->step();
    }
  };
  p.time_scale = static_cast<double>(per_epoch) / static_cast<double>(timed);
  if (timed < per_epoch)
    p.note = "timed " + std::to_string(timed) + " of " + std::to_string(per_epoch) +
             " batches, scaled to an epoch";
  return p;
}

Prepared prepare(const Args& a) {
  const std::string& n = a.name;
  Prepared p;
  if (n == "tiny_init") {
    p.call = [] { Tiny t; };
  } else if (n == "tiny_predict") {
    Tiny t;
    torch::Tensor x = torch::rand({2, 18});
    p.call = [t, x]() mutable {
      torch::InferenceMode guard;
      t->forward(x);
    };
  } else if (n == "softmax_1k" || n == "softmax_1m") {
    torch::Tensor x = torch::rand({n == "softmax_1k" ? 1000 : 1000000});
    p.call = [x] {
      torch::InferenceMode guard;
      torch::softmax(x, -1);
    };
  } else if (n == "adam_update") {
    // torch.optim.Adam's step over the MLP's parameters, gradients set once.
    Mlp net;
    for (auto& q : net->parameters()) q.mutable_grad() = torch::rand_like(q);
    auto opt =
        std::make_shared<torch::optim::Adam>(net->parameters(), torch::optim::AdamOptions(1e-3));
    p.call = [net, opt] { opt->step(); };
  } else if (n == "mlp_predict_b1" || n == "mlp_predict_b10000") {
    Mlp net;
    net->eval();
    // Batch 10,000: MNIST's test images where the data folder is given (as glia's side).
    torch::Tensor x = n == "mlp_predict_b10000" && !a.data_dir.empty()
                          ? test_images(a.data_dir)
                          : torch::rand({n == "mlp_predict_b1" ? 1 : 10000, 784});
    p.call = [net, x]() mutable {
      torch::InferenceMode guard;
      torch::softmax(net->forward(x), -1);
    };
  } else if (n == "mlp_epoch_b128" || n == "mlp_epoch_b32") {
    return epoch_case(Mlp(), a, n == "mlp_epoch_b128" ? 128 : 32);
  } else if (n == "cnn_epoch_b128") {
    return epoch_case(Cnn(), a, 128);
  } else if (n == "lstm_epoch_b128") {
    p = epoch_case(Lstm(), a, 128);
    p.note = "nn::LSTM batch_first, last step's output" + (p.note.empty() ? "" : "; " + p.note);
  } else {
    throw std::runtime_error("unknown case '" + n + "'");
  }
  return p;
}

// The libraries mapped into this process whose path contains `word` ("blas": what
// libtorch's GEMMs really call; "malloc": a preloaded allocator).
std::string loaded(const std::string& word) {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> found;
  for (std::string line; std::getline(maps, line);) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (path.find(word) != std::string::npos) found.insert(path);
  }
  std::string out;
  for (const std::string& f : found) out += (out.empty() ? "" : ", ") + f;
  return out.empty() ? "none found" : out;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--synthetic") continue;  // the default without --data-dir
    if (i + 1 >= argc) throw std::runtime_error("flag " + flag + " needs a value");
    std::string v = argv[++i];
    if (flag == "--case")
      a.name = v;
    else if (flag == "--data-dir")
      a.data_dir = v;
    else if (flag == "--threads")
      a.threads = std::stoi(v);
    else if (flag == "--time")
      a.measure.time_seconds = std::stod(v);
    else if (flag == "--warmup")
      a.measure.warmup_seconds = std::stod(v);
    else if (flag == "--min-samples")
      a.measure.min_samples = std::stoll(v);
    else if (flag == "--epoch-fraction")
      a.epoch_fraction = std::stod(v);
    else
      throw std::runtime_error("unknown flag " + flag);
  }
  if (a.name.empty()) throw std::runtime_error("--case is required");
  if (a.threads < 1) throw std::runtime_error("--threads must be >= 1");
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Args a = parse(argc, argv);
    // Denormals flushed to zero, as glia's cpu backend does (Adam's moments decay into them).
    at::globalContext().setFlushDenormal(true);
    torch::set_num_threads(a.threads);
    torch::manual_seed(0);
    Prepared p = prepare(a);
    glia::bench::Measurement m = glia::bench::measure(p.call, a.measure);
    const char* cap = std::getenv("ATEN_CPU_CAPABILITY");
    std::printf(
        "{\"case\": %s, \"calls\": %lld, \"calls_per_sample\": %lld, \"threads\": %d, "
        "\"torch_version\": %s, \"aten_cpu_capability\": %s, \"blas\": %s, \"allocator\": %s, "
        "\"note\": %s, "
        "\"per_call\": [",
        json_string(a.name).c_str(), static_cast<long long>(m.calls),
        static_cast<long long>(m.calls_per_sample), torch::get_num_threads(),
        json_string(TORCH_VERSION).c_str(), json_string(cap ? cap : "").c_str(),
        json_string(loaded("blas")).c_str(), json_string(loaded("malloc")).c_str(),
        json_string(p.note).c_str());
    for (std::size_t i = 0; i < m.per_call.size(); ++i)
      std::printf("%s%.9g", i ? ", " : "", m.per_call[i] * p.time_scale);
    std::printf("]}\n");
    return 0;
  } catch (const std::exception& e) {
    std::printf("{\"error\": %s}\n", json_string(e.what()).c_str());
    return 1;
  }
}
