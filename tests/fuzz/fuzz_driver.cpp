// A standalone driver for the fuzz harnesses in the GCC builds (plain and ASan + UBSan),
// where libFuzzer is not available: it replays every file given (the committed seeds and
// the kept crash inputs), then feeds the harness mutations of them (bit flips, byte
// inserts and deletes, truncation, splicing, interesting integers in binary and in text)
// for a fixed time from a fixed seed. No coverage feedback: libFuzzer does that (see
// ./apps/setup.sh fuzz); this keeps every harness and every known crash checked by ctest.
//   fuzz_idx [--seconds 2] [--seed 1] [--max-len 65536] seeds/idx regressions/idx
// A crash (signal, sanitizer report, uncaught exception) writes the input that caused it
// to ./fuzz-crash-<harness>-<pid> and names it on stderr.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "fuzz_input.hpp"

extern "C" void __sanitizer_set_death_callback(void (*)()) __attribute__((weak));

namespace {

using Bytes = std::vector<std::uint8_t>;

const Bytes* g_current = nullptr;  // the input being run, saved when the process dies
std::string g_crash_path;

// Async-signal-safe: open, write and close only.
void save_current() {
  if (g_current == nullptr) return;
  int fd = ::open(g_crash_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  ssize_t ignored = ::write(fd, g_current->data(), g_current->size());
  (void)ignored;
  ::close(fd);
  const char note[] = "\nfuzz_driver: the crashing input is saved in ";
  ignored = ::write(2, note, sizeof note - 1);
  ignored = ::write(2, g_crash_path.data(), g_crash_path.size());
  ignored = ::write(2, "\n", 1);
  g_current = nullptr;
}

void on_signal(int sig) {
  save_current();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// Integers that break size arithmetic: zero, signs, and the edges of 8 to 64 bits.
constexpr std::uint64_t kInteresting[] = {
    0,          1,          0x7F,       0x80,       0xFF,        0x7FFF,     0x8000,
    0xFFFF,     0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x100000000, 1ULL << 40, (1ULL << 63) - 1,
    1ULL << 63, ~0ULL};
// The same in text, for the formats whose header or body is text (NPY dicts, JSON, flags).
const char* const kInterestingText[] = {"0",
                                        "-1",
                                        "1",
                                        "2147483648",
                                        "4294967296",
                                        "9223372036854775807",
                                        "9223372036854775808",
                                        "18446744073709551616",
                                        "1000000000000",
                                        "99999999999999999999999",
                                        "1e308",
                                        "-0",
                                        "nan"};

class Mutator {
 public:
  Mutator(const std::vector<Bytes>& corpus, std::uint64_t seed, std::size_t max_len)
      : corpus_(corpus), rng_(seed), max_len_(max_len) {}

  Bytes next() {
    Bytes b = corpus_[pick(corpus_.size())];
    for (std::size_t n = 1 + pick(6); n > 0; --n) mutate(b);
    if (b.size() > max_len_) b.resize(max_len_);
    return b;
  }

 private:
  std::size_t pick(std::size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }
  // Headers sit at the front: half the edits land in the first 64 bytes.
  std::size_t offset(std::size_t size) {
    return pick(rng_() % 2 ? std::min<std::size_t>(size, 64) : size);
  }

  void mutate(Bytes& b) {
    const std::size_t at = offset(b.size());
    switch (pick(7)) {
      case 0:  // flip one bit
        if (!b.empty()) b[at] ^= static_cast<std::uint8_t>(1u << pick(8));
        break;
      case 1:  // insert random bytes
        for (std::size_t n = 1 + pick(8); n > 0; --n)
          b.insert(b.begin() + static_cast<std::ptrdiff_t>(std::min(at, b.size())),
                   static_cast<std::uint8_t>(rng_()));
        break;
      case 2:  // delete a run of bytes
        if (!b.empty()) b.erase(b.begin() + at, b.begin() + std::min(b.size(), at + 1 + pick(16)));
        break;
      case 3:  // truncate
        b.resize(pick(b.size() + 1));
        break;
      case 4: {  // splice: this input's front, another's back
        const Bytes& other = corpus_[pick(corpus_.size())];
        b.resize(std::min(at, b.size()));
        b.insert(b.end(), other.begin() + static_cast<std::ptrdiff_t>(pick(other.size() + 1)),
                 other.end());
        break;
      }
      case 5: {  // an interesting integer, 1 to 8 bytes, either byte order
        const std::size_t width = std::size_t{1} << pick(4);
        const std::uint64_t v = kInteresting[pick(std::size(kInteresting))];
        const bool big = rng_() % 2;
        for (std::size_t i = 0; i < width && at + i < b.size(); ++i)
          b[at + i] = static_cast<std::uint8_t>(v >> (8 * (big ? width - 1 - i : i)));
        break;
      }
      default: {  // replace a run of digits with an interesting number in text
        auto digit = [](std::uint8_t c) { return c >= '0' && c <= '9'; };
        auto start = std::find_if(b.begin() + static_cast<std::ptrdiff_t>(at), b.end(), digit);
        if (start == b.end()) break;
        auto stop = std::find_if_not(start, b.end(), digit);
        const std::string text = kInterestingText[pick(std::size(kInterestingText))];
        b.insert(b.erase(start, stop), text.begin(), text.end());
        break;
      }
    }
  }

  const std::vector<Bytes>& corpus_;
  std::mt19937_64 rng_;
  std::size_t max_len_;
};

Bytes read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void run(const Bytes& input) {
  g_current = &input;
  LLVMFuzzerTestOneInput(input.data(), input.size());
  g_current = nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  const std::string name = fs::path(argv[0]).filename().string();
  double seconds = 2;
  std::uint64_t seed = 1;
  std::size_t max_len = 1 << 16;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--seconds" || arg == "--seed" || arg == "--max-len") && i + 1 < argc) {
      const std::string value = argv[++i];
      if (arg == "--seconds") seconds = std::stod(value);
      if (arg == "--seed") seed = std::stoull(value);
      if (arg == "--max-len") max_len = std::stoull(value);
    } else if (fs::is_directory(arg)) {
      for (const auto& e : fs::directory_iterator(arg))
        if (e.is_regular_file()) files.push_back(e.path());
    } else if (fs::is_regular_file(arg)) {
      files.push_back(arg);
    } else {
      std::cerr << name << ": no such file or folder: " << arg << "\n";
      return 2;
    }
  }
  std::sort(files.begin(), files.end());  // directory order is not stable
  if (files.empty()) {
    std::cerr << "usage: " << name << " [--seconds S] [--seed N] [--max-len N] FILE|FOLDER...\n";
    return 2;
  }
  g_crash_path = "fuzz-crash-" + name + "-" + std::to_string(::getpid());
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, on_signal);
  if (__sanitizer_set_death_callback != nullptr) __sanitizer_set_death_callback(save_current);

  std::vector<Bytes> corpus;
  for (const fs::path& f : files) {
    corpus.push_back(read_file(f));
    run(corpus.back());
  }
  Mutator mutator(corpus, seed, max_len);
  const auto stop = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::uint64_t runs = 0;
  for (; std::chrono::steady_clock::now() < stop; ++runs) run(mutator.next());
  std::cout << name << ": replayed " << files.size() << " files, then ran " << runs
            << " mutations in " << seconds << " s (seed " << seed << "): no crash\n";
  return 0;
}
