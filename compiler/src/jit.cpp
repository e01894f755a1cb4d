// The non-template half of jit and compile: signatures, tracing a body into a graph,
// compiling it on the chosen backend, and the per-function cache.
#include "glia/compiler/jit.hpp"
#include "glia/compiler/compile.hpp"
#include "glia/compiler/registry.hpp"

namespace glia::detail {

std::vector<TensorType> argument_types(const std::string& fn_name, const std::string& structure,
                                       std::span<const Tensor> leaves) {
  std::vector<TensorType> types;
  types.reserve(leaves.size());
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    if (!leaves[i].defined()) {
      std::vector<std::string> paths = tree_leaf_paths(structure, true);
      std::vector<std::string> texts;
      for (const Tensor& t : leaves)
        texts.push_back(t.defined() ? t.type().to_string() : "undefined");
      throw Error(cat("'", fn_name, "': argument ", paths.at(i), " is an undefined Tensor; given ",
                      tree_text(structure, texts)));
    }
    types.push_back(leaves[i].type());
  }
  return types;
}

std::string signature_text(const std::string& structure, std::span<const TensorType> types) {
  std::vector<std::string> texts;
  texts.reserve(types.size());
  for (const TensorType& t : types) texts.push_back(t.to_string());
  return tree_text(structure, texts);
}

void check_trace_outputs(const std::string& fn_name, const std::vector<Expr>& outputs) {
  check(!outputs.empty(), "'", fn_name, "': the function returned no Expr");
  const Graph* graph = &current_graph();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    check(outputs[i].defined(), "'", fn_name, "': result leaf ", i, " is an undefined Expr");
    check(outputs[i].graph() == graph, "'", fn_name, "': result leaf ", i,
          " is an Expr of another trace (a value captured from outside the function? pass it "
          "as an argument)");
  }
}

std::shared_ptr<const CompiledEntry> trace_and_compile(const JitOptions& options,
                                                       const std::string& structure,
                                                       std::span<const TensorType> types,
                                                       const TraceBody& body) {
  auto entry = std::make_shared<CompiledEntry>();
  entry->signature = signature_text(structure, types);
  entry->graph = Graph(options.name);
  {
    TraceScope scope(entry->graph);
    std::vector<std::string> paths = tree_leaf_paths(structure, true);
    std::vector<Expr> parameters;
    for (std::size_t i = 0; i < types.size(); ++i)
      parameters.push_back(parameter(types[i], paths.at(i)));
    TraceResult traced = body(parameters);
    std::vector<ValueId> ids;
    for (const Expr& e : traced.outputs) ids.push_back(e.id());
    entry->graph.set_outputs(std::move(ids));
    entry->result_like = std::move(traced.result_like);
  }
  // Tracing leaves dead values behind (e.g. gradients of inputs nobody asked for).
  entry->graph = prune(entry->graph);
  entry->executable = compile_graph(entry->graph, options.backend, options.compile_options);
  return entry;
}

void check_signature(const CompiledEntry& entry, const std::string& structure,
                     std::span<const Tensor> leaves) {
  std::string given =
      signature_text(structure, argument_types(entry.graph.name(), structure, leaves));
  check(given == entry.signature, "'", entry.graph.name(), "' was compiled for arguments ",
        entry.signature, ", given ", given);
}

JitCache::JitCache(JitOptions options) : options_(std::move(options)) {
  backend(options_.backend);  // fail at jit(), not at the first call
}

std::shared_ptr<const CompiledEntry> JitCache::lookup(const char* type_key,
                                                      const std::string& structure,
                                                      std::span<const TensorType> types,
                                                      const TraceBody& body, bool count) {
  std::string key = signature_text(structure, types) + "\n" + type_key;
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      if (count) ++stats_.hits;
      return it->second;
    }
  }
  // Traced without the lock, so the function may call other jitted functions; a
  // concurrent miss on the same key keeps the first entry stored.
  auto entry = trace_and_compile(options_, structure, types, body);
  std::lock_guard lock(mutex_);
  if (count) ++stats_.misses;
  return entries_.emplace(std::move(key), std::move(entry)).first->second;
}

CacheStats JitCache::stats() const {
  std::lock_guard lock(mutex_);
  CacheStats s = stats_;
  s.entries = static_cast<std::int64_t>(entries_.size());
  return s;
}

std::vector<std::string> JitCache::signatures() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [key, entry] : entries_) out.push_back(entry->signature);
  return out;
}

}  // namespace glia::detail
