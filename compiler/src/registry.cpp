// The backend registry. Built-in backends are installed by the registry's own
// initialisation, not by static objects that a static link could leave out.
#include "glia/compiler/registry.hpp"

#include <map>
#include <mutex>
#include <set>

#include "backends/interp/interp_backend.hpp"
#include "glia/compiler/passes.hpp"
#ifdef GLIA_HAVE_CPU_BACKEND
#include "backends/cpu/cpu_backend.hpp"
#endif
#ifdef GLIA_HAVE_CUDA_CODE
#include "backends/cuda/cuda_backend.hpp"
#endif

namespace glia {

namespace {

struct Registered {
  BackendFactory factory;
  std::unique_ptr<Backend> instance;  // created on first use, then kept for good
};

struct Registry {
  std::mutex mutex;
  std::map<std::string, Registered, std::less<>> backends;
};

Registry& registry() {
  static Registry* r = [] {
    auto* made = new Registry;  // never destroyed: executables may outlive static teardown
    made->backends["interp"].factory = &detail::make_interp_backend;
#ifdef GLIA_HAVE_CPU_BACKEND
    made->backends["cpu"].factory = &detail::make_cpu_backend;
#endif
#ifdef GLIA_HAVE_CUDA_CODE
    // Registered wherever its code is built; without a device it says so when asked
    // (Backend::unavailable, and compile's "no CUDA device: ..." error).
    made->backends["cuda"].factory = &detail::make_cuda_backend;
#endif
    return made;
  }();
  return *r;
}

std::string names_text(const Registry& r) {
  std::string text;
  for (const auto& [name, entry] : r.backends) text += (text.empty() ? "" : ", ") + name;
  return text;
}

}  // namespace

void register_backend(const std::string& name, BackendFactory factory) {
  check(!name.empty(), "register_backend: the name is empty");
  check(static_cast<bool>(factory), "register_backend '", name, "': the factory is empty");
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  check(!r.backends.contains(name), "register_backend: a backend named '", name,
        "' is already registered");
  r.backends[name].factory = std::move(factory);
}

const Backend& backend(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.backends.find(name);
  check(it != r.backends.end(), "unknown backend '", name, "'; known backends: ", names_text(r));
  Registered& entry = it->second;
  if (!entry.instance) {
    entry.instance = entry.factory();
    check(entry.instance != nullptr, "backend '", name, "': its factory returned no backend");
  }
  return *entry.instance;
}

std::string default_backend() {
#ifdef GLIA_HAVE_CPU_BACKEND
  return "cpu";
#else
  return "interp";
#endif
}

std::vector<std::string> backend_names() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& [name, entry] : r.backends) names.push_back(name);
  return names;
}

std::unique_ptr<Executable> compile_graph(const Graph& graph, std::string_view backend_name,
                                          const CompileOptions& options) {
  check(options.cpu.threads >= 0, "compile '", graph.name(), "': cpu threads must be >= 0, got ",
        options.cpu.threads);
  const Backend& b = backend(backend_name);
  if (options.verify) verify(graph);
  // The backend sees the optimized graph: it supports what is left after the passes.
  Graph optimized = options.optimize ? optimize(graph, options) : graph;
  std::set<Op> unsupported;
  for (const Node& n : optimized.nodes())
    if (!b.supports(n.op)) unsupported.insert(n.op);
  std::string missing;
  for (Op op : unsupported) missing += cat(missing.empty() ? " " : ", ", op);
  check(missing.empty(), "compile '", graph.name(), "': backend '", b.name(),
        "' does not support op(s):", missing);
  auto exe = b.compile(optimized, options);
  check(exe != nullptr, "compile '", graph.name(), "': backend '", b.name(),
        "' returned no executable");
  return exe;
}

}  // namespace glia
