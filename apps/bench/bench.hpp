// The pieces of `glia bench` shared by its source files: settings, per-contender results,
// the LibTorch peer launcher and the report (table and JSON).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cases.hpp"
#include "limits.hpp"
#include "stats.hpp"

namespace glia::bench {

struct Settings {
  std::string cases = "*";
  std::string backends = "interp,cpu";
  bool backends_given = false;  // --backends was on the command line
  double time_seconds = 3;
  double warmup_seconds = 1;
  // Each case's contenders take turns this many times, each with its share of the time,
  // so that a minute when the machine runs slow (another VM's load, vCPUs moved apart)
  // falls on all of them and the ratios hold.
  int rounds = 3;
  int threads = 2;
  std::string json;
  bool no_peer = false;
  bool quick = false;
  bool include_slow = false;
  double epoch_fraction = 1;
  std::string data_dir;  // empty: $GLIA_DATA_DIR, else ./data/mnist
  std::string peer;      // empty: glia-torch-peer next to the glia executable
};

struct ContenderResult {
  std::string name;              // "interp", "cpu", "libtorch"
  std::string skipped;           // why it did not run; empty when it ran
  Summary summary;               // seconds per call
  std::vector<double> per_call;  // the samples behind it, every round's
  std::int64_t calls = 0;
  std::int64_t calls_per_sample = 1;
  std::optional<double> bytes_per_call, allocations_per_call;  // glia's Tensor storage
  std::string note;
};

struct CaseResult {
  const CaseInfo* info = nullptr;
  std::vector<ContenderResult> contenders;
  std::optional<Bound> bound;  // the least time the machine's limits allow a call
  // The same for the cuda contender: the least time the device's limits allow a call.
  std::optional<Bound> device_bound;
  // The cores' round trip after each turn (Limits::round_trip_seconds; none with one thread).
  std::vector<double> round_trips;
  // The bound that applies to contender c (the device's for cuda, the host's for the rest).
  const std::optional<Bound>& bound_of(const ContenderResult& c) const {
    return c.name == "cuda" ? device_bound : bound;
  }
};

// What the report header says about the machine and the peer.
struct Environment {
  std::string blas;          // the libblas.so.3 alternative selected
  std::string peer_path;     // empty when no peer runs
  std::string peer_missing;  // why no peer runs
  std::string torch_version, peer_blas;
  // ATEN_CPU_CAPABILITY for the peer: the user's, else avx512 where the CPU has it (ATen's
  // default is its AVX2 kernels).
  std::string aten_cpu_capability;
  // The allocator preloaded into the peer (tcmalloc or jemalloc where installed: PyTorch's
  // CPU performance guide), and what the peer reports mapped.
  std::string peer_preload, peer_allocator;
  std::string openblas_coretype;  // in glia bench's environment (unset for the peer)
  std::string data;               // "real MNIST in ..." or "synthetic ..."
};

// Samples each contender takes at least (the time budget may take more).
std::int64_t min_samples(const CaseInfo& info, const Settings& s);
// The peer executable to use, or an empty string with `why` set.
std::string find_peer(const Settings& s, std::string& why);
// Runs one case in the peer; fills `env`'s peer fields from its answer.
ContenderResult run_peer(const std::string& peer, const CaseInfo& info, const Settings& s,
                         const std::string& data_dir, Environment& env);
std::string selected_blas();
// Whether /proc/cpuinfo lists `flag` ("avx512f").
bool cpu_has_flag(const std::string& flag);
// The allocator library the peer runs with (tcmalloc, else jemalloc), or "" for glibc's.
std::string peer_allocator_library();

void print_header(const Settings& s, const Environment& env);
void print_case(const CaseResult& r);
void write_json(const std::string& path, const Settings& s, const Environment& env,
                const std::vector<CaseResult>& results);

}  // namespace glia::bench
