// NVRTC with an in-process and an on-disk cache. A cache file is the CUBIN after a
// 32-byte head (magic, CUBIN size, FNV-1a of the CUBIN, FNV-1a of the key): a file that
// is short, corrupt or for another key is compiled again and replaced, never trusted.
// Files are written to a temporary name and renamed, so concurrent processes never read
// half a file.
#include "backends/cuda/nvrtc.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "backends/cuda/libraries.hpp"
#include "glia/core/error.hpp"
#include "glia/core/hash.hpp"
#include "src/user_cache.hpp"

namespace glia::detail::cuda {

namespace {

constexpr char kMagic[8] = {'G', 'L', 'I', 'A', 'C', 'U', 'B', '1'};
constexpr std::size_t kHead = 32;

std::uint64_t hash_text(const std::string& text, std::uint64_t h = kFnv1aBasis) {
  return fnv1a(h, text.data(), text.size());
}

std::uint64_t read_u64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i, v >>= 8) out.push_back(static_cast<char>(v & 0xff));
}

std::string compile(const std::string& source, const std::string& arch,
                    const std::vector<std::string>& options) {
  const NvrtcLibrary& nv = nvrtc();
  nvrtcProgram program = nullptr;
  auto fail = [&](nvrtcResult r, const char* what) {
    throw Error(cat("cuda: NVRTC ", what, " failed: ", nv.nvrtcGetErrorString(r)));
  };
  if (nvrtcResult r =
          nv.nvrtcCreateProgram(&program, source.c_str(), "glia_kernels.cu", 0, nullptr, nullptr);
      r != NVRTC_SUCCESS)
    fail(r, "nvrtcCreateProgram");
  struct Guard {
    const NvrtcLibrary& nv;
    nvrtcProgram& p;
    ~Guard() { nv.nvrtcDestroyProgram(&p); }
  } guard{nv, program};
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  nvrtcResult compiled = nv.nvrtcCompileProgram(program, int(argv.size()), argv.data());
  if (compiled != NVRTC_SUCCESS) {
    std::size_t size = 0;
    nv.nvrtcGetProgramLogSize(program, &size);
    std::string log(size, '\0');
    if (size > 0) nv.nvrtcGetProgramLog(program, log.data());
    // The first lines of the source around the log's line numbers are in the log itself.
    throw Error(cat("cuda: NVRTC could not compile a generated kernel for ", arch, " (",
                    nv.nvrtcGetErrorString(compiled), "):\n", log.substr(0, 4000)));
  }
  std::size_t size = 0;
  if (nvrtcResult r = nv.nvrtcGetCUBINSize(program, &size); r != NVRTC_SUCCESS)
    fail(r, "nvrtcGetCUBINSize");
  std::string cubin(size, '\0');
  if (nvrtcResult r = nv.nvrtcGetCUBIN(program, cubin.data()); r != NVRTC_SUCCESS)
    fail(r, "nvrtcGetCUBIN");
  return cubin;
}

bool read_cached(const std::filesystem::path& path, std::uint64_t key, std::string& cubin) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string data = buffer.str();
  if (data.size() < kHead || std::memcmp(data.data(), kMagic, 8) != 0) return false;
  const std::uint64_t size = read_u64(data.data() + 8);
  if (size != data.size() - kHead || read_u64(data.data() + 24) != key) return false;
  std::string body = data.substr(kHead);
  if (fnv1a(kFnv1aBasis, body.data(), body.size()) != read_u64(data.data() + 16)) return false;
  cubin = std::move(body);
  return true;
}

void write_cached(const std::filesystem::path& path, std::uint64_t key, const std::string& cubin) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) return;  // a cache that cannot be written only costs a compile next time
  std::string data(kMagic, 8);
  put_u64(data, cubin.size());
  put_u64(data, fnv1a(kFnv1aBasis, cubin.data(), cubin.size()));
  put_u64(data, key);
  data += cubin;
  const std::filesystem::path temporary =
      path.string() + cat(".", ::getpid(), ".", std::hash<std::string>{}(cubin), ".tmp");
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(data.data(), std::streamsize(data.size()));
    if (!out) {
      std::filesystem::remove(temporary, ec);
      return;
    }
  }
  std::filesystem::rename(temporary, path, ec);
  if (ec) std::filesystem::remove(temporary, ec);
}

}  // namespace

std::string cache_dir() {
  const std::string dir = user_cache_dir("GLIA_CUDA_CACHE", "cuda");
  return dir == "off" ? "" : dir;
}

std::string compile_cubin(const std::string& source, const std::string& arch, CacheHit* hit) {
  static std::mutex mutex;
  static std::map<std::uint64_t, std::string> modules;  // by key; kept for the process
  const std::vector<std::string> options = {"--gpu-architecture=" + arch, "--std=c++17"};
  int major = 0, minor = 0;
  nvrtc().nvrtcVersion(&major, &minor);
  std::string key_text = cat("nvrtc ", major, ".", minor, "\n");
  for (const std::string& o : options) key_text += o + "\n";
  const std::uint64_t key = hash_text(source, hash_text(key_text));
  {
    std::lock_guard lock(mutex);
    if (auto it = modules.find(key); it != modules.end()) {
      if (hit != nullptr) *hit = CacheHit::memory;
      return it->second;
    }
  }
  const std::string dir = cache_dir();
  const std::filesystem::path file = dir.empty()
                                         ? std::filesystem::path()
                                         : std::filesystem::path(dir) / (hash_hex(key) + ".cubin");
  std::string cubin;
  CacheHit where = CacheHit::disk;
  if (dir.empty() || !read_cached(file, key, cubin)) {
    cubin = compile(source, arch, options);
    where = CacheHit::none;
    if (!dir.empty()) write_cached(file, key, cubin);
  }
  if (hit != nullptr) *hit = where;
  std::lock_guard lock(mutex);
  return modules.emplace(key, std::move(cubin)).first->second;
}

}  // namespace glia::detail::cuda
