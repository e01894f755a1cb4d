// The non-template half of jit and compile: signatures, tracing a body into a graph,
// compiling it on the chosen backend, and the per-function cache.
#include "glia/compiler/jit.hpp"
#include "glia/compiler/compile.hpp"
#include "glia/compiler/registry.hpp"

#include <functional>
#include <string_view>

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

namespace {

// A word-at-a-time mix of the key's parts; equal keys hash equal, and find() compares
// them exactly. (Byte-wise hashing of the dims cost more than a tiny model's run.)
struct KeyHash {
  std::uint64_t h = 1469598103934665603ull;
  void word(std::uint64_t w) {
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  }
  void text(const std::string& s) {
    word(std::hash<std::string_view>{}(s));
    word(s.size());
  }
  void type(const TensorType& t) {
    word(static_cast<std::uint64_t>(t.dtype));
    for (std::int64_t dim : t.shape.dims()) word(static_cast<std::uint64_t>(dim));
    word(~std::uint64_t{0});  // separates f32[2][3] from f32[2] followed by f32[3]
  }
};

template <class Types>
std::uint64_t key_hash(const std::string& structure, const Types& types) {
  KeyHash k;
  k.text(structure);
  for (const auto& t : types) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(t)>, Tensor>)
      k.type(t.type());
    else
      k.type(t);
  }
  return k.h;
}

}  // namespace

std::shared_ptr<const CompiledEntry> JitCache::find(const char* type_key,
                                                    const std::string& structure,
                                                    std::span<const Tensor> leaves, bool count) {
  for (const Tensor& t : leaves)
    if (!t.defined()) return nullptr;  // insert() names the undefined leaf
  std::uint64_t h = key_hash(structure, leaves);
  std::lock_guard lock(mutex_);
  auto [first, last] = entries_.equal_range(h);
  for (auto it = first; it != last; ++it) {
    const Stored& s = it->second;
    if (s.structure != structure || s.types.size() != leaves.size() ||
        (s.type_key_ptr != type_key && s.type_key != type_key))
      continue;
    bool same = true;
    for (std::size_t i = 0; same && i < leaves.size(); ++i) same = s.types[i] == leaves[i].type();
    if (!same) continue;
    if (count) ++stats_.hits;
    return s.entry;
  }
  return nullptr;
}

std::shared_ptr<const CompiledEntry> JitCache::insert(const char* type_key,
                                                      const std::string& structure,
                                                      std::span<const TensorType> types,
                                                      const TraceBody& body, bool count) {
  // Traced without the lock, so the function may call other jitted functions.
  auto entry = trace_and_compile(options_, structure, types, body);
  std::uint64_t h = key_hash(structure, types);
  std::lock_guard lock(mutex_);
  if (count) ++stats_.misses;
  auto [first, last] = entries_.equal_range(h);
  for (auto it = first; it != last; ++it)
    if (it->second.structure == structure && it->second.type_key == type_key &&
        std::equal(it->second.types.begin(), it->second.types.end(), types.begin(), types.end()))
      return it->second.entry;
  Stored stored{type_key, type_key, structure, std::vector<TensorType>(types.begin(), types.end()),
                entry};
  entries_.emplace(h, std::move(stored));
  return entry;
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
  for (const auto& [hash, stored] : entries_) out.push_back(stored.entry->signature);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace glia::detail
