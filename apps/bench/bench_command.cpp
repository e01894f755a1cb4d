// `glia bench`: Benchee-style benchmarks of glia's backends against LibTorch (issue 6). For
// each case: every selected glia backend in this process, then the LibTorch peer as a
// child process, in turns (--rounds), their samples pooled per contender; a table per case
// and, with --json, every figure.
#include <fnmatch.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "../cli/args.hpp"
#include "../cli/commands.hpp"
#include "bench.hpp"
#include "glia/glia.hpp"

namespace glia::bench {

namespace {

std::vector<const CaseInfo*> select_cases(const std::string& patterns) {
  std::vector<const CaseInfo*> out;
  std::string known;
  for (const CaseInfo& c : all_cases()) known += (known.empty() ? "" : ", ") + c.name;
  std::vector<std::string> list = cli::split_list(patterns);
  check(!list.empty(), "--cases: empty list (known: ", known, ")");
  for (const std::string& p : list) {
    bool any = false;
    for (const CaseInfo& c : all_cases())
      if (fnmatch(p.c_str(), c.name.c_str(), 0) == 0) {
        any = true;
        if (std::find(out.begin(), out.end(), &c) == out.end()) out.push_back(&c);
      }
    check(any, "--cases: '", p, "' matches no case (known: ", known, ")");
  }
  return out;
}

}  // namespace

// Epoch cases take seconds a call: one sample after the warm-up may have to do.
std::int64_t min_samples(const CaseInfo& info, const Settings& s) {
  return s.quick || info.epoch ? 1 : 3;
}

namespace {

// Times a prepared case's calls into r: its summary, call counts and the tensor storage
// allocated per call.
void measure_into(ContenderResult& r, const PreparedCase& c, const CaseInfo& info,
                  const Settings& s) {
  AllocationStats before;
  MeasureOptions o{.warmup_seconds = s.warmup_seconds,
                   .time_seconds = s.time_seconds,
                   .min_samples = min_samples(info, s),
                   .before_samples = [&] { before = allocation_stats(); }};
  Measurement m = measure(c.call, o);
  AllocationStats after = allocation_stats();
  for (double& t : m.per_call) t *= c.time_scale;
  r.per_call = m.per_call;
  r.summary = summarize(m.per_call);
  r.calls = m.calls;
  r.calls_per_sample = m.calls_per_sample;
  // Per call as reported: a partial epoch's counts are scaled like its time.
  auto per_call = [&](std::int64_t n) {
    return static_cast<double>(n) * c.time_scale / static_cast<double>(m.calls);
  };
  r.bytes_per_call = per_call(after.bytes - before.bytes);
  r.allocations_per_call = per_call(after.count - before.count);
  r.note = c.note;
}

// One contender of a case: `result` pools its rounds so far (or says why it does not run);
// `round` measures it once more with a round's settings.
struct Contender {
  ContenderResult result;
  std::function<ContenderResult(const Settings&)> round;
};

// A prepared case measured in rounds: prepared (compiled, warmed up) once.
Contender prepared_contender(const std::string& name, std::shared_ptr<const PreparedCase> c,
                             const CaseInfo& info) {
  return {.result = {.name = name}, .round = [name, c, &info](const Settings& rs) {
            ContenderResult r{.name = name};
            measure_into(r, *c, info, rs);
            return r;
          }};
}

Contender glia_contender(const CaseInfo& info, const std::string& backend, const Settings& s,
                         const CaseContext& context) {
  if (backend == "interp" && !info.interp_by_default && !s.include_slow)
    return {.result = {.name = backend,
                       .skipped = "minutes on the interpreter (--include-slow runs it)"}};
  return prepared_contender(
      backend, std::make_shared<const PreparedCase>(prepare_glia_case(info, backend, context)),
      info);
}

// An exported library's calls, measured like a backend's.
Contender aot_contender(const CaseInfo& info) {
  if (aot::find_c_compiler().empty())
    return {.result = {.name = "aot",
                       .skipped = "no C compiler to build the exported library (set CC)"}};
  return prepared_contender("aot", std::make_shared<const PreparedCase>(prepare_aot_case(info)),
                            info);
}

// A round's samples joined to the rounds before: the summary is over all of them; the
// allocation counts and the note are the first round's.
void pool_round(ContenderResult& into, ContenderResult round) {
  if (!round.skipped.empty()) {
    into.skipped = round.skipped;
    return;
  }
  const bool first = into.per_call.empty();
  into.per_call.insert(into.per_call.end(), round.per_call.begin(), round.per_call.end());
  into.summary = summarize(into.per_call);
  into.calls += round.calls;
  into.calls_per_sample = round.calls_per_sample;
  if (first) {
    into.bytes_per_call = round.bytes_per_call;
    into.allocations_per_call = round.allocations_per_call;
    into.note = round.note;
  }
}

// The contenders of a case in turns: each round gets its share of --time; the first round
// warms each contender up for --warmup, later ones a quarter of it (glia's are warm; the
// peer starts afresh each round and warms up again).
// after_round runs after each round (the bound's limits are measured there).
void run_rounds(std::vector<Contender>& contenders, const Settings& s,
                const std::function<void()>& after_round) {
  for (int k = 0; k < s.rounds; ++k) {
    Settings rs = s;
    rs.time_seconds = s.time_seconds / s.rounds;
    if (k > 0) rs.warmup_seconds = s.warmup_seconds / 4;
    for (Contender& c : contenders)
      if (c.result.skipped.empty()) pool_round(c.result, c.round(rs));
    after_round();
  }
}

int run_bench(Settings s) {
  if (s.quick) {
    s.warmup_seconds = 0;
    s.time_seconds = std::min(s.time_seconds, 0.1);
    s.rounds = 1;
  }
  std::vector<const CaseInfo*> cases = select_cases(s.cases);
  std::vector<std::string> backends = cli::split_list(s.backends);
  // Any registered backend, as train, eval and predict take.
  const std::vector<std::string> known = backend_names();
  std::string known_text;
  for (const std::string& k : known) known_text += (known_text.empty() ? "" : ", ") + k;
  for (const std::string& b : backends) {
    check(std::find(known.begin(), known.end(), b) != known.end(), "--backends: unknown backend '",
          b, "' (known: ", known_text, ")");
    // Asked for by name on a machine that cannot run it: say so before any case runs.
    const std::string why = backend(b).unavailable();
    check(why.empty(), "--backends: backend '", b, "': ", why);
  }
  // Without --backends, the cases run on a GPU too where one is present.
  if (!s.backends_given && std::find(known.begin(), known.end(), "cuda") != known.end() &&
      backend("cuda").unavailable().empty() &&
      std::find(backends.begin(), backends.end(), "cuda") == backends.end())
    backends.push_back("cuda");
  // The cpu backend and oneDNN share OpenMP's pool; build() and TrainStep take no thread
  // count, so the pool's size is set here for every compiled function.
  cpu::set_threads(s.threads);
  Environment env;
  env.blas = selected_blas();
  env.peer_path = find_peer(s, env.peer_missing);
  if (const char* c = std::getenv("OPENBLAS_CORETYPE")) env.openblas_coretype = c;
  if (const char* c = std::getenv("ATEN_CPU_CAPABILITY"))
    env.aten_cpu_capability = c;
  else if (cpu_has_flag("avx512f"))
    env.aten_cpu_capability = "avx512";
  env.peer_preload = peer_allocator_library();

  std::string data_dir = s.data_dir;
  if (data_dir.empty()) {
    const char* env_dir = std::getenv("GLIA_DATA_DIR");
    data_dir = env_dir != nullptr ? env_dir : "data/mnist";
  }
  std::unique_ptr<TrainData> data;
  bool any_epoch = std::any_of(cases.begin(), cases.end(), [](auto* c) { return c->epoch; });
  bool any_data =
      std::any_of(cases.begin(), cases.end(), [](auto* c) { return c->epoch || c->test_images; });
  if (any_data) {
    data = std::make_unique<TrainData>(load_train_data(data_dir));
    env.data = data->synthetic
                   ? "synthetic (random images and labels of MNIST's size: no MNIST in " +
                         data_dir + "; apps/setup.sh fetches it)"
                   : "MNIST from " + data_dir;
  }
  print_header(s, env);
  if (any_data) std::cout << (any_epoch ? "Training data: " : "Test images: ") << env.data << "\n";

  CaseContext context{.threads = s.threads, .epoch_fraction = s.epoch_fraction, .data = data.get()};
  std::vector<CaseResult> results;
  Limits limits(s.threads);
  DeviceLimits device_limits;
  for (const CaseInfo* info : cases) {
    CaseResult r{.info = info};
    std::vector<Contender> contenders;
    if (!info->jit_case.empty()) {
      // The JIT on the cpu backend beside the exported library.
      contenders.push_back(glia_contender(case_named(info->jit_case), "cpu", s, context));
      contenders.push_back(aot_contender(*info));
    } else {
      for (const std::string& b : backends)
        contenders.push_back(glia_contender(*info, b, s, context));
    }
    if (info->has_peer && !env.peer_path.empty()) {
      const std::string dir = data && !data->synthetic ? data_dir : "";
      contenders.push_back(
          {.result = {.name = "libtorch"}, .round = [&env, dir, info](const Settings& rs) {
             return run_peer(env.peer_path, *info, rs, dir, env);
           }});
    }
    // After each round: the cores' round trip, and the bounds from the limits measured
    // then, the best of the rounds kept.
    auto after_round = [&] {
      if (const double trip = limits.round_trip_seconds(); trip > 0) r.round_trips.push_back(trip);
      if (!info->jit_case.empty()) return;
      bool host = false, device = false;
      for (const Contender& c : contenders) {
        if (!c.result.skipped.empty()) continue;
        (c.result.name == "cuda" ? device : host) = true;
      }
      limits.new_round();
      if (host) r.bound = case_bound(*info, limits);
      if (device) r.device_bound = device_case_bound(*info, device_limits);
    };
    run_rounds(contenders, s, after_round);
    for (Contender& c : contenders) r.contenders.push_back(std::move(c.result));
    print_case(r);
    results.push_back(std::move(r));
  }
  if (!env.torch_version.empty())
    std::cout << "\nLibTorch " << env.torch_version
              << ", BLAS mapped into the peer: " << env.peer_blas
              << "; allocator: " << env.peer_allocator << "\n";
  if (!s.json.empty()) {
    write_json(s.json, s, env, results);
    std::cout << "Wrote " << s.json << "\n";
  }
  return 0;
}

}  // namespace

}  // namespace glia::bench

namespace glia::cli {

Command add_bench_command(CLI::App& app) {
  auto s = std::make_shared<bench::Settings>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Benchmarks (Benchee style): glia's backends against LibTorch, same run");
  std::string names;
  for (const bench::CaseInfo& c : bench::all_cases()) names += (names.empty() ? "" : ", ") + c.name;
  cmd->add_option("--cases", s->cases,
                  "Cases to run: a comma list of names or globs (" + names + ")")
      ->capture_default_str();
  cmd->add_option("--backends", s->backends,
                  "glia backends to run: interp, cpu or any other registered one (comma list; "
                  "by default cuda joins where a GPU is present)")
      ->capture_default_str()
      ->each([s](const std::string&) { s->backends_given = true; });
  cmd->add_option("--time", s->time_seconds, "Seconds of samples per case and contender")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--warmup", s->warmup_seconds, "Seconds of warm-up per case and contender")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--rounds", s->rounds,
                  "Turns each contender of a case takes, sharing --time, so that a slow "
                  "minute of the machine falls on every contender")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--threads", s->threads, "Threads for glia and for LibTorch")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--json", s->json, "Also write every figure to this JSON file");
  cmd->add_flag("--no-peer", s->no_peer, "Do not run the LibTorch peer");
  cmd->add_flag("--quick", s->quick, "No warm-up and 0.1 s of samples (a smoke test)");
  cmd->add_flag(
      "--include-slow", s->include_slow,
      "Also run the interpreter on the cases that take it minutes (epochs, batch 10,000)");
  cmd->add_option("--epoch-fraction", s->epoch_fraction,
                  "Epoch cases time this part of an epoch and scale to a whole one")
      ->check(CLI::Range(0.001, 1.0))
      ->capture_default_str();
  cmd->add_option("--data-dir", s->data_dir,
                  "MNIST folder (default: $GLIA_DATA_DIR, else ./data/mnist; synthetic if absent)");
  cmd->add_option("--peer", s->peer, "The glia-torch-peer executable (default: next to glia)");
  return {cmd, [s] { return bench::run_bench(*s); }};
}

}  // namespace glia::cli
