// Launching the LibTorch peer (glia-torch-peer) as a child process, one case at a time,
// with OPENBLAS_CORETYPE unset (a forced Haswell core halves OpenBLAS's GEMM rate) and the
// thread count set; its JSON answer on stdout becomes one contender's row.
#include <sys/wait.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench.hpp"
#include "glia/core/error.hpp"

namespace glia::bench {

namespace {
std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
}  // namespace

std::string find_peer(const Settings& s, std::string& why) {
  namespace fs = std::filesystem;
  if (s.no_peer) {
    why = "--no-peer";
    return "";
  }
  if (!s.peer.empty()) {
    check(fs::exists(s.peer), "--peer: no such file: ", s.peer);
    return s.peer;
  }
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  fs::path peer = self.parent_path() / "glia-torch-peer";
  if (!ec && fs::exists(peer)) return peer.string();
  why = "not built (CMake did not find LibTorch: install libtorch-dev and reconfigure)";
  return "";
}

bool cpu_has_flag(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("flags", 0) == 0)
      return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

std::string peer_allocator_library() {
  for (const char* path : {"/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
                           "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"})
    if (std::filesystem::exists(path)) return path;
  return "";
}

std::string selected_blas() {
  std::error_code ec;
  auto p = std::filesystem::canonical("/usr/lib/x86_64-linux-gnu/libblas.so.3", ec);
  return ec ? std::string("unknown (no /usr/lib/x86_64-linux-gnu/libblas.so.3)") : p.string();
}

ContenderResult run_peer(const std::string& peer, const CaseInfo& info, const Settings& s,
                         const std::string& data_dir, Environment& env) {
  ContenderResult r{.name = "libtorch"};
  std::ostringstream cmd;
  cmd << "env -u OPENBLAS_CORETYPE OMP_NUM_THREADS=" << s.threads;
  if (!env.aten_cpu_capability.empty())
    cmd << " ATEN_CPU_CAPABILITY=" << shell_quoted(env.aten_cpu_capability);
  if (!env.peer_preload.empty()) cmd << " LD_PRELOAD=" << shell_quoted(env.peer_preload);
  cmd << " " << shell_quoted(peer) << " --case " << info.name << " --threads " << s.threads
      << " --time " << s.time_seconds << " --warmup " << s.warmup_seconds << " --min-samples "
      << min_samples(info, s) << " --epoch-fraction " << s.epoch_fraction;
  if (!data_dir.empty()) cmd << " --data-dir " << shell_quoted(data_dir);
  std::fflush(stdout);
  FILE* pipe = popen(cmd.str().c_str(), "r");
  check(pipe != nullptr, "cannot start the LibTorch peer ", peer);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  int status = pclose(pipe);
  // The answer is the last line that opens a JSON object.
  std::size_t at = out.rfind("\n{");
  at = at == std::string::npos ? (out.rfind('{', 0) == 0 ? 0 : std::string::npos) : at + 1;
  nlohmann::json j = at == std::string::npos
                         ? nlohmann::json()
                         : nlohmann::json::parse(out.substr(at), nullptr, /*exceptions=*/false);
  if (!j.is_object()) {
    r.skipped =
        "peer failed (exit status " + std::to_string(WEXITSTATUS(status)) + "): no JSON answer";
    return r;
  }
  if (j.contains("error")) {
    r.skipped = "peer failed: " + j["error"].get<std::string>();
    return r;
  }
  r.per_call = j.at("per_call").get<std::vector<double>>();
  r.summary = summarize(r.per_call);
  r.calls = j.at("calls").get<std::int64_t>();
  r.calls_per_sample = j.at("calls_per_sample").get<std::int64_t>();
  r.note = j.at("note").get<std::string>();
  env.torch_version = j.at("torch_version").get<std::string>();
  env.peer_blas = j.at("blas").get<std::string>();
  env.aten_cpu_capability = j.at("aten_cpu_capability").get<std::string>();
  env.peer_allocator = j.value("allocator", std::string("unknown"));
  return r;
}

}  // namespace glia::bench
