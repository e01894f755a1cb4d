// Building an exported predictor with the system's C compiler, and loading one back.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <sstream>

#include "glia/compiler/aot.hpp"
#include "glia/core/error.hpp"

namespace glia::aot {

namespace {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  return false;
}

// "f32[1][784]" -> its type; glia::Error naming `what` otherwise.
TensorType parse_type(const std::string& text, const std::string& what) {
  std::size_t bracket = text.find('[');
  std::string dtype = text.substr(0, bracket);
  check(dtype == "f32", what, ": expected an f32 type, got '", text, "'");
  std::vector<std::int64_t> dims;
  while (bracket != std::string::npos) {
    std::size_t close = text.find(']', bracket);
    check(close != std::string::npos, what, ": malformed type '", text, "'");
    dims.push_back(std::stoll(text.substr(bracket + 1, close - bracket - 1)));
    bracket = text.find('[', close);
  }
  return {DType::f32, Shape(dims)};
}

}  // namespace

std::string find_c_compiler() {
  if (const char* cc = std::getenv("CC"); cc != nullptr && *cc != '\0') return cc;
  for (const char* c : {"cc", "gcc", "clang"})
    if (on_path(c)) return c;
  return "";
}

Built build_library(const std::filesystem::path& dir, const std::string& name,
                    const BuildOptions& options) {
  std::string cc = options.compiler.empty() ? find_c_compiler() : options.compiler;
  check(!cc.empty(), "export: no C compiler found (set CC, or install cc, gcc or clang)");
  Built b;
  b.library = dir / ("lib" + name + ".so");
  b.command = cat(cc, " ", options.flags, " -fPIC -shared -o ", shell_quote(b.library.string()),
                  " ", shell_quote((dir / (name + ".c")).string()), " ", options.libraries);
  std::FILE* pipe = ::popen((b.command + " 2>&1").c_str(), "r");
  check(pipe != nullptr, "export: cannot run the C compiler: ", b.command);
  std::string output;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) output.append(buf.data(), n);
  const int status = ::pclose(pipe);
  check(status == 0, "the C compiler failed (", b.command, "):\n", output);
  return b;
}

}  // namespace glia::aot

namespace glia {
std::string_view aot_runtime_source();  // generated from runtime.h (compiler/CMakeLists.txt)
}  // namespace glia

namespace glia::aot {

std::string_view runtime_source() { return glia::aot_runtime_source(); }

Library::Library(const std::filesystem::path& path) {
  std::string file = path.filename().string();
  check(file.size() > 6 && file.rfind("lib", 0) == 0 && file.substr(file.size() - 3) == ".so",
        "exported library: expected a file named libNAME.so, got ", path.string());
  name_ = file.substr(3, file.size() - 6);
  check(std::filesystem::exists(path), "exported library: ", path.string(), " does not exist");
  // A path with a slash: dlopen must not search the library path.
  std::string where = path.has_parent_path() ? path.string() : "./" + path.string();
  handle_ = ::dlopen(where.c_str(), RTLD_NOW | RTLD_LOCAL);
  check(handle_ != nullptr, "exported library: cannot load ", path.string(), ": ", ::dlerror());
  auto symbol = [&](const std::string& s, bool required) {
    void* p = ::dlsym(handle_, (name_ + s).c_str());
    if (p == nullptr && required) {
      ::dlclose(handle_);
      handle_ = nullptr;
      throw Error(cat("exported library: ", path.string(), " has no ", name_, s,
                      " (not a glia export, or renamed?)"));
    }
    return p;
  };
  auto info = reinterpret_cast<const char* (*)()>(symbol("_info", true));
  predict_ = reinterpret_cast<int (*)(const float*, float*)>(symbol("_predict", true));
  predict_ws_ = reinterpret_cast<int (*)(const float*, float*, void*)>(symbol("_predict_ws", true));
  load_weights_ = reinterpret_cast<int (*)(const char*)>(symbol("_load_weights", false));
  info_ = info();
  std::stringstream lines(info_);
  std::string line;
  bool have_in = false, have_out = false;
  while (std::getline(lines, line)) {
    auto value = [&](const char* key) -> std::optional<std::string> {
      std::string k = std::string(key) + ": ";
      if (line.rfind(k, 0) != 0) return std::nullopt;
      return line.substr(k.size());
    };
    if (auto v = value("input")) input_ = parse_type(*v, "exported library input"), have_in = true;
    if (auto v = value("output"))
      output_ = parse_type(*v, "exported library output"), have_out = true;
    if (auto v = value("batch")) batch_ = std::stoll(*v);
    if (auto v = value("workspace")) workspace_bytes_ = std::stoll(*v);
  }
  check(have_in && have_out && input_.shape.rank() > 0 && output_.shape.rank() > 0,
        "exported library: ", path.string(), "'s info names no input and output shapes");
}

Library::~Library() {
  if (handle_ != nullptr) ::dlclose(handle_);
}

void Library::load_weights(const std::filesystem::path& path) const {
  check(load_weights_ != nullptr, "exported library ", name_,
        " has its weights in the source: there is no weights file to load");
  int rc = load_weights_(path.c_str());
  check(rc == 0, "exported library ", name_, ": cannot load the weights file ", path.string(),
        rc == 1 ? " (cannot open it)" : " (not this library's weights: wrong size or hash)");
}

int Library::call(const float* input, float* output, void* workspace) const {
  return predict_ws_(input, output, workspace);
}
int Library::call(const float* input, float* output) const { return predict_(input, output); }

Tensor Library::predict(const Tensor& x) const {
  const Shape& in = input_.shape;
  bool fits = x.dtype() == DType::f32 && x.rank() == in.rank() && x.rank() > 0;
  for (int i = 1; fits && i < in.rank(); ++i) fits = x.shape()[i] == in[i];
  check(fits, "exported library ", name_, " takes f32 inputs shaped ", input_.to_string(),
        " (any number of rows); got ", x.type());
  const std::int64_t rows = x.shape()[0], per = in[0];
  const std::int64_t in_row = in.numel() / std::max<std::int64_t>(per, 1);
  const std::int64_t out_rows = output_.shape[0];
  check(out_rows == per, "exported library ", name_, ": its output ", output_.to_string(),
        " does not have one row per input row");
  const std::int64_t out_row = output_.shape.numel() / std::max<std::int64_t>(out_rows, 1);
  std::vector<std::int64_t> dims = output_.shape.dims();
  dims[0] = rows;
  Tensor y(DType::f32, Shape(dims));
  std::vector<float> in_buf(std::size_t(in.numel())), out_buf(std::size_t(output_.shape.numel()));
  std::vector<std::byte> ws_storage(std::size_t(workspace_bytes_) + 64);
  void* ws = ws_storage.data();
  std::size_t space = ws_storage.size();
  std::align(64, std::size_t(workspace_bytes_), ws, space);
  const float* src = x.data<float>();
  float* dst = y.data<float>();
  for (std::int64_t r = 0; r < rows; r += per) {
    const std::int64_t take = std::min(per, rows - r);
    std::fill(in_buf.begin(), in_buf.end(), 0.0f);
    std::memcpy(in_buf.data(), src + r * in_row, std::size_t(take * in_row) * sizeof(float));
    int rc = predict_ws_(in_buf.data(), out_buf.data(), ws);
    check(rc == 0, "exported library ", name_, ": predict returned ", rc,
          rc == 1 ? " (the weights file is not loaded)" : " (an index out of range)");
    std::memcpy(dst + r * out_row, out_buf.data(), std::size_t(take * out_row) * sizeof(float));
  }
  return y;
}

}  // namespace glia::aot
