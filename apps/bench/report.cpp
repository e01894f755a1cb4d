// The report of `glia bench`: a header on the set-up (threads, BLAS, peer), one Benchee-style
// table per case, and the same figures as JSON.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "bench.hpp"
#include "glia/core/error.hpp"

namespace glia::bench {

namespace {

// Pads to `width` terminal columns (UTF-8 aware: "µs" is one column per character).
std::string pad(const std::string& s, std::size_t width, bool right = true) {
  std::size_t columns = 0;
  for (unsigned char c : s) columns += (c & 0xC0) != 0x80;
  std::string fill(width > columns ? width - columns : 0, ' ');
  return right ? fill + s : s + fill;
}

std::string fixed(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

const ContenderResult* peer_of(const CaseResult& r) {
  for (const ContenderResult& c : r.contenders)
    if (c.name == "libtorch" && c.skipped.empty()) return &c;
  return nullptr;
}

// aot_* cases compare the exported library with the JIT on the cpu backend.
const ContenderResult* jit_of(const CaseResult& r) {
  if (r.info->jit_case.empty()) return nullptr;
  for (const ContenderResult& c : r.contenders)
    if (c.name == "cpu" && c.skipped.empty()) return &c;
  return nullptr;
}

// The contender's median over its case's baseline: LibTorch, or for aot_* cases the JIT.
std::optional<double> ratio_to_peer(const CaseResult& r, const ContenderResult& c) {
  const ContenderResult* p = r.info->jit_case.empty() ? peer_of(r) : jit_of(r);
  if (p == nullptr || &c == p || !c.skipped.empty() || p->summary.median <= 0) return {};
  return c.summary.median / p->summary.median;
}

}  // namespace

void print_header(const Settings& s, const Environment& env) {
  std::cout << "glia bench: " << s.threads << " threads for glia and LibTorch; warm-up "
            << s.warmup_seconds << " s, then samples for " << s.time_seconds
            << " s per case and contender" << (s.quick ? " (--quick)" : "");
  if (s.rounds > 1)
    std::cout << ", in " << s.rounds << " turns (warm-ups after the first a quarter as long)";
  std::cout << "\n";
  std::cout << "BLAS (libblas.so.3 alternative): " << env.blas << "\n";
  if (env.peer_path.empty()) {
    std::cout << "LibTorch peer: none (" << env.peer_missing << ")\n";
  } else {
    std::cout << "LibTorch peer: " << env.peer_path << ", run with OPENBLAS_CORETYPE unset"
              << (env.openblas_coretype.empty() ? ""
                                                : " (it is " + env.openblas_coretype + " here)")
              << "; ATEN_CPU_CAPABILITY "
              << (env.aten_cpu_capability.empty() ? "unset (ATen's AVX2 kernels)"
                                                  : "= " + env.aten_cpu_capability)
              << "; allocator "
              << (env.peer_preload.empty()
                      ? std::string("glibc malloc (install libtcmalloc-minimal4 for a faster peer)")
                      : env.peer_preload + " (preloaded)")
              << "\n";
  }
  if (s.epoch_fraction < 1)
    std::cout << "Epoch cases time " << s.epoch_fraction * 100
              << "% of an epoch and scale the times to a whole one (--epoch-fraction)\n";
  std::cout << "Times: median of the samples; a sample of a call under 0.1 ms is the mean of a "
               "batch of calls.\n\"vs LibTorch\" = glia median time / LibTorch median time "
               "(< 1: glia is faster; for images/s the inverse).\n"
               "Memory: glia's Tensor storage allocated per call (LibTorch: n/a).\n";
}

void print_case(const CaseResult& r) {
  const CaseInfo& info = *r.info;
  std::cout << "\n== " << info.name << ": " << info.description << "\n";
  bool throughput = info.items_per_call > 0;
  std::cout << pad("Name", 10, false) << pad("ips", 10) << pad("average", 12)
            << pad("deviation", 11) << pad("median", 12) << pad("99th %", 12) << pad("min", 12)
            << pad("max", 12) << pad("memory/call", 13) << pad("allocs/call", 12)
            << (throughput ? pad("images/s", 11) : "")
            << pad(info.jit_case.empty() ? "vs LibTorch" : "vs JIT cpu", 13)
            << (r.bound || r.device_bound ? pad("of bound", 10) : "") << "\n";
  for (const ContenderResult& c : r.contenders) {
    std::cout << pad(c.name, 10, false);
    if (!c.skipped.empty()) {
      std::cout << "  skipped: " << c.skipped << "\n";
      continue;
    }
    const Summary& m = c.summary;
    std::cout << pad(format_count(m.ips), 10) << pad(format_seconds(m.average), 12)
              << pad("±" + fixed(m.deviation_percent, 2) + "%", 11)
              << pad(format_seconds(m.median), 12) << pad(format_seconds(m.p99), 12)
              << pad(format_seconds(m.min), 12) << pad(format_seconds(m.max), 12)
              << pad(c.bytes_per_call ? format_count(*c.bytes_per_call) + "B" : "n/a", 13)
              << pad(c.allocations_per_call ? fixed(*c.allocations_per_call, 1) : "n/a", 12);
    if (throughput) std::cout << pad(format_count(info.items_per_call / m.median), 11);
    std::optional<double> ratio = ratio_to_peer(r, c);
    std::cout << pad(ratio ? fixed(*ratio, 2) + "x" : "", 13);
    if (const auto& bound = r.bound_of(c))
      std::cout << pad(fixed(100 * bound->seconds / m.median, 0) + "%", 10);
    else if (r.bound || r.device_bound)
      std::cout << pad("", 10);
    if (!c.note.empty()) std::cout << "  (" << c.note << ")";
    std::cout << "\n";
  }
  if (r.bound)
    std::cout << "bound: " << format_seconds(r.bound->seconds) << " a call (" << r.bound->what
              << "); \"of bound\" = bound / median\n";
  if (r.device_bound)
    std::cout << "cuda bound: " << format_seconds(r.device_bound->seconds) << " a call ("
              << r.device_bound->what << ")\n";
  if (!r.round_trips.empty()) {
    std::cout << "cores' round trip after each turn:";
    for (std::size_t i = 0; i < r.round_trips.size(); ++i)
      std::cout << (i > 0 ? "," : "") << " " << format_seconds(r.round_trips[i]);
    std::cout << " (a cache line handed between two threads and back)\n";
  }
}

void write_json(const std::string& path, const Settings& s, const Environment& env,
                const std::vector<CaseResult>& results) {
  nlohmann::json cases = nlohmann::json::array();
  for (const CaseResult& r : results) {
    nlohmann::json contenders = nlohmann::json::array();
    for (const ContenderResult& c : r.contenders) {
      nlohmann::json j{{"name", c.name}};
      if (!c.skipped.empty()) {
        j["skipped"] = c.skipped;
      } else {
        const Summary& m = c.summary;
        j["seconds"] = {{"samples", m.samples},
                        {"ips", m.ips},
                        {"average", m.average},
                        {"deviation", m.deviation},
                        {"deviation_percent", m.deviation_percent},
                        {"median", m.median},
                        {"p99", m.p99},
                        {"min", m.min},
                        {"max", m.max}};
        j["calls"] = c.calls;
        j["calls_per_sample"] = c.calls_per_sample;
        j["bytes_per_call"] = c.bytes_per_call ? nlohmann::json(*c.bytes_per_call) : nullptr;
        j["allocations_per_call"] =
            c.allocations_per_call ? nlohmann::json(*c.allocations_per_call) : nullptr;
        if (r.info->items_per_call > 0) j["images_per_second"] = r.info->items_per_call / m.median;
        if (std::optional<double> ratio = ratio_to_peer(r, c))
          j[r.info->jit_case.empty() ? "ratio_to_libtorch" : "ratio_to_jit"] = *ratio;
        if (const auto& bound = r.bound_of(c)) j["fraction_of_bound"] = bound->seconds / m.median;
        if (!c.note.empty()) j["note"] = c.note;
      }
      contenders.push_back(j);
    }
    nlohmann::json c{{"name", r.info->name},
                     {"description", r.info->description},
                     {"images_per_call", r.info->items_per_call},
                     {"contenders", contenders}};
    if (r.bound) c["bound"] = {{"seconds", r.bound->seconds}, {"what", r.bound->what}};
    if (r.device_bound)
      c["cuda_bound"] = {{"seconds", r.device_bound->seconds}, {"what", r.device_bound->what}};
    if (!r.round_trips.empty()) c["round_trip_seconds"] = r.round_trips;
    cases.push_back(std::move(c));
  }
  nlohmann::json doc{{"settings",
                      {{"threads", s.threads},
                       {"time_seconds", s.time_seconds},
                       {"warmup_seconds", s.warmup_seconds},
                       {"rounds", s.rounds},
                       {"quick", s.quick},
                       {"epoch_fraction", s.epoch_fraction},
                       {"backends", s.backends}}},
                     {"environment",
                      {{"blas", env.blas},
                       {"peer", env.peer_path.empty() ? env.peer_missing : env.peer_path},
                       {"torch_version", env.torch_version},
                       {"peer_blas_loaded", env.peer_blas},
                       {"aten_cpu_capability", env.aten_cpu_capability},
                       {"peer_allocator", env.peer_allocator},
                       {"openblas_coretype_here", env.openblas_coretype},
                       {"data", env.data}}},
                     {"cases", cases}};
  std::ofstream out(path);
  check(static_cast<bool>(out), "--json: cannot write ", path);
  out << doc.dump(2) << "\n";
  check(static_cast<bool>(out), "--json: writing ", path, " failed");
}

}  // namespace glia::bench
