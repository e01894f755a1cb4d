// What the fuzz harnesses share: the entry point every harness defines (libFuzzer's, also
// called by fuzz_driver.cpp in the GCC builds), and a scratch file for the readers that
// take a path. The file lives in /dev/shm (a tmpfs: no disk writes per input) where there
// is one, is named after the process so that parallel runs never share it, and is removed
// at exit.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace glia::fuzz {

// Writes `size` bytes to the scratch file named by `suffix` ("x.npy"), replacing what it
// held, and returns its path. Aborts when the file cannot be written: a harness that
// silently tests nothing would look like a clean run.
inline std::string scratch_file(const std::uint8_t* data, std::size_t size,
                                const std::string& suffix) {
  namespace fs = std::filesystem;
  static const fs::path folder = [] {
    std::error_code ec;
    return fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
  }();
  const std::string path =
      (folder / ("glia-fuzz-" + std::to_string(::getpid()) + "-" + suffix)).string();
  static bool registered = false;
  static std::string last;  // the path of the file to remove at exit (one suffix a harness)
  last = path;
  if (!registered) {
    registered = true;
    std::atexit([] { std::remove(last.c_str()); });
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || (size > 0 && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
  return path;
}

}  // namespace glia::fuzz
