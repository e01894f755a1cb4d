// The non-template half of jit and compile: signatures, tracing a body into a graph,
// compiling it on the chosen backend, and the per-function cache.
#include "glia/compiler/jit.hpp"
#include "glia/compiler/compile.hpp"
#include "glia/compiler/registry.hpp"

#include <algorithm>
#include <cstring>

namespace glia::detail {

std::vector<TensorType> argument_types(const std::string& fn_name, const std::string& structure,
                                       std::span<const Tensor* const> leaves) {
  std::vector<TensorType> types;
  types.reserve(leaves.size());
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    if (!leaves[i]->defined()) {
      std::vector<std::string> paths = tree_leaf_paths(structure, true);
      std::vector<std::string> texts;
      for (const Tensor* t : leaves)
        texts.push_back(t->defined() ? t->type().to_string() : "undefined");
      throw Error(cat("'", fn_name, "': argument ", paths.at(i), " is an undefined Tensor; given ",
                      tree_text(structure, texts)));
    }
    types.push_back(leaves[i]->type());
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
                                                       std::string_view key,
                                                       const TraceBody& body) {
  auto entry = std::make_shared<CompiledEntry>();
  entry->signature = signature_text(structure, types);
  entry->key = key;
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
                     std::span<const Tensor* const> leaves) {
  std::string given =
      signature_text(structure, argument_types(entry.graph.name(), structure, leaves));
  check(given == entry.signature, "'", entry.graph.name(), "' was compiled for arguments ",
        entry.signature, ", given ", given);
}

JitCache::JitCache(JitOptions options) : options_(std::move(options)) {
  backend(options_.backend);  // fail at jit(), not at the first call
}

namespace {

// This thread's argument buffers, one set per depth of jitted calls in progress.
struct CallBuffers {
  std::vector<const Tensor*> leaves;
  std::string key;
};
struct ThreadBuffers {
  std::vector<std::unique_ptr<CallBuffers>> by_depth;
  std::size_t depth = 0;
};
thread_local ThreadBuffers t_buffers;

}  // namespace

CallArguments::CallArguments() {
  ThreadBuffers& t = t_buffers;
  if (t.depth == t.by_depth.size()) t.by_depth.push_back(std::make_unique<CallBuffers>());
  CallBuffers& b = *t.by_depth[t.depth++];
  leaves_ = &b.leaves;
  key_ = &b.key;
  key_data_ = key_->data();
  key_capacity_ = key_->size();
}

void CallArguments::grow_key(std::size_t n) {
  key_->resize(std::max<std::size_t>(2 * key_->size(), key_size_ + n + 64));
  key_data_ = key_->data();
  key_capacity_ = key_->size();
}

CallArguments::~CallArguments() { --t_buffers.depth; }

std::vector<Tensor> CallArguments::copy_leaves() const {
  std::vector<Tensor> out;
  out.reserve(size_);
  for (std::size_t i = 0; i < size_; ++i) out.push_back(*(*leaves_)[i]);
  return out;
}

namespace {

// Eight bytes at a time in two lanes, so the multiplies of one word overlap the next's.
std::uint64_t key_hash(std::string_view key) {
  constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ull;
  std::uint64_t a = 0x243F6A8885A308D3ull ^ key.size(), b = 0x13198A2E03707344ull;
  std::size_t i = 0;
  for (; i + 16 <= key.size(); i += 16) {
    std::uint64_t x, y;
    std::memcpy(&x, key.data() + i, 8);
    std::memcpy(&y, key.data() + i + 8, 8);
    a = (a ^ x) * kMul;
    b = (b ^ y) * kMul;
    a ^= a >> 29;
    b ^= b >> 31;
  }
  std::uint64_t tail[2] = {0, 0};
  std::memcpy(tail, key.data() + i, key.size() - i);
  a = (a ^ tail[0]) * kMul;
  b = (b ^ tail[1]) * kMul;
  std::uint64_t h = (a ^ (b >> 32) ^ (b << 32)) * kMul;
  return h ^ (h >> 32);
}

}  // namespace

const CompiledEntry* JitCache::find(const char* type_key, std::string_view key, bool count) {
  std::uint64_t h = key_hash(key);
  std::lock_guard lock(mutex_);
  auto [first, last] = entries_.equal_range(h);
  for (auto it = first; it != last; ++it) {
    const Stored& s = it->second;
    if ((s.type_key_ptr != type_key && s.type_key != type_key) || s.entry->key != key) continue;
    if (count) count_hit();
    if (s.type_key_ptr == type_key) remember(s);
    return s.entry.get();
  }
  return nullptr;
}

const CompiledEntry* JitCache::insert(const char* type_key, std::string_view key,
                                      const std::string& structure,
                                      std::span<const TensorType> types, const TraceBody& body,
                                      bool count) {
  // Traced without the lock, so the function may call other jitted functions.
  auto entry = trace_and_compile(options_, structure, types, key, body);
  std::uint64_t h = key_hash(key);
  std::lock_guard lock(mutex_);
  if (count) ++misses_;
  auto [first, last] = entries_.equal_range(h);
  for (auto it = first; it != last; ++it)
    if (it->second.type_key == type_key && it->second.entry->key == key) {
      remember(it->second);
      return it->second.entry.get();
    }
  const Stored& s = entries_.emplace(h, Stored{type_key, type_key, std::move(entry)})->second;
  remember(s);
  return s.entry.get();
}

CacheStats JitCache::stats() const {
  std::lock_guard lock(mutex_);
  CacheStats s;
  s.hits = hits_.load(std::memory_order_relaxed);
  s.misses = misses_;
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
