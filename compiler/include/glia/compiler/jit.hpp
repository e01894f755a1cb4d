// jit: turns a function over Exprs (and vectors, tuples and maps of them, nested) into
// a function over Tensors that is traced, verified and compiled once per argument
// signature (the argument structure and each leaf's dtype and shape), then cached. It
// compiles on glia::default_backend() unless JitOptions names another, as build() does.
//   auto f = glia::jit([](const glia::Expr& x, const glia::Expr& y) { return glia::exp(x) + y; });
//   glia::Tensor z = f(x, y);   // first call: traces and compiles (a miss)
//   z = f(x, y);                // same signature: a hit
//   std::cout << f.graph_text(x, y) << f.cache_stats().hits << "\n";
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "glia/compiler/argument_key.hpp"
#include "glia/compiler/backend.hpp"
#include "glia/compiler/registry.hpp"
#include "glia/core/expr.hpp"
#include "glia/core/tree.hpp"

namespace glia {

struct JitOptions {
  std::string backend = default_backend();  // "cpu" where glia has oneDNN, else "interp"
  std::string name = "fn";                  // the graph's name, in printed graphs and in errors
  CompileOptions compile_options{};
};

struct CacheStats {
  std::int64_t hits = 0;
  std::int64_t misses = 0;  // each miss traced and compiled the function once
  std::int64_t entries = 0;
};

// One traced and compiled signature of a function.
struct CompiledEntry {
  std::string signature;  // the arguments' types, e.g. (f32[2][3], {"b": f32[3]})
  std::string key;        // the same in the compact form calls compare (ArgumentWalk)
  Graph graph;
  std::unique_ptr<Executable> executable;
  std::shared_ptr<const void> result_like;  // a type_tree_t of the result, to rebuild it
};

namespace detail {

// What the template side hands the compiled side on a miss: the function applied to
// one parameter per argument leaf, its result flattened, and the result's shape.
struct TraceResult {
  std::vector<Expr> outputs;
  std::shared_ptr<const void> result_like;
};
using TraceBody = std::function<TraceResult(const std::vector<Expr>& parameters)>;

// The types of the argument leaves; glia::Error naming the leaf for an undefined one.
std::vector<TensorType> argument_types(const std::string& fn_name, const std::string& structure,
                                       std::span<const Tensor* const> leaves);
std::string signature_text(const std::string& structure, std::span<const TensorType> types);
// glia::Error unless every output is a defined Expr of the trace being recorded.
void check_trace_outputs(const std::string& fn_name, const std::vector<Expr>& outputs);
// Traces `body` on parameters of `types` (named by their paths), verifies and compiles.
std::shared_ptr<const CompiledEntry> trace_and_compile(const JitOptions& options,
                                                       const std::string& structure,
                                                       std::span<const TensorType> types,
                                                       std::string_view key, const TraceBody& body);

template <class Fn, class... Likes>
using expr_result_t = std::remove_cvref_t<std::invoke_result_t<const Fn&, expr_tree_t<Likes>&...>>;

// Calls fn on Expr trees shaped like `likes` (Tensor or TensorType trees).
template <class Fn, class... Likes>
TraceBody make_trace_body(const Fn& fn, const std::string& fn_name, const Likes&... likes) {
  using Result = expr_result_t<Fn, Likes...>;
  static_assert(is_tree_of_v<Result, Expr>,
                "a traced function returns an Expr, or a vector, tuple or map of them");
  return [&fn, &fn_name, &likes...](const std::vector<Expr>& parameters) {
    [[maybe_unused]] std::span<const Expr> leaves(parameters);
    [[maybe_unused]] std::size_t pos = 0;
    std::tuple<expr_tree_t<Likes>...> args{TreeTraits<Likes>::build(likes, leaves, pos)...};
    Result result = std::apply(fn, args);
    TraceResult traced;
    TreeTraits<Result>::flatten(result, traced.outputs);
    check_trace_outputs(fn_name, traced.outputs);
    std::vector<TensorType> types;
    for (const Expr& e : traced.outputs) types.push_back(e.type());
    traced.result_like = std::make_shared<type_tree_t<Result>>(
        tree_unflatten<TensorType>(result, std::span<const TensorType>(types)));
    return traced;
  };
}

template <class Result>
Result rebuild_result(const CompiledEntry& entry, std::vector<Tensor>&& outputs) {
  // One tensor is moved out: a copy's shape allocates and its count is an atomic add.
  if constexpr (std::is_same_v<Result, Tensor>) {
    if (outputs.size() == 1) return std::move(outputs[0]);
  }
  const auto& like = *static_cast<const type_tree_t<Result>*>(entry.result_like.get());
  return tree_unflatten<Tensor>(like, std::span<const Tensor>(outputs));
}

// The cache behind one jitted function, shared by its copies, keyed by argument keys.
class JitCache {
 public:
  explicit JitCache(JitOptions options);  // glia::Error for an unknown backend
  const JitOptions& options() const { return options_; }
  // Entries stay while the cache does: a call may hold one by reference while it runs.
  // The entry for this argument key, or null (nothing counted). `type_key` tells apart
  // C++ argument types that flatten alike (an empty vector of vectors).
  const CompiledEntry* find(const char* type_key, std::string_view key, bool count);
  // Traces and compiles with `body` (a miss) and stores the entry; a concurrent miss on
  // the same key keeps the first entry stored.
  const CompiledEntry* insert(const char* type_key, std::string_view key,
                              const std::string& structure, std::span<const TensorType> types,
                              const TraceBody& body, bool count);
  // The entry the last call found, where that call's C++ argument types were these: the
  // next call's first guess, which it compares as it walks its arguments (no lock, no key
  // written, nothing hashed). Null when there is none.
  const CompiledEntry* last(const char* type_key) const {
    const Stored* s = last_.load(std::memory_order_acquire);
    return s != nullptr && s->type_key_ptr == type_key ? s->entry.get() : nullptr;
  }
  void count_hit() { hits_.fetch_add(1, std::memory_order_relaxed); }
  CacheStats stats() const;
  std::vector<std::string> signatures() const;

 private:
  struct Stored {
    const char* type_key_ptr;  // typeid's name: the same pointer on a hit, as a rule
    std::string type_key;
    std::shared_ptr<const CompiledEntry> entry;
  };
  void remember(const Stored& s) {  // stored only when it changes: threads share the line
    if (last_.load(std::memory_order_relaxed) != &s) last_.store(&s, std::memory_order_release);
  }
  JitOptions options_;
  mutable std::mutex mutex_;
  std::unordered_multimap<std::uint64_t, Stored> entries_;  // nodes stay put on a rehash
  std::atomic<const Stored*> last_{nullptr};
  std::atomic<std::int64_t> hits_{0};
  std::int64_t misses_ = 0;
};

}  // namespace detail

template <class Fn>
class Jitted {
 public:
  Jitted(Fn fn, JitOptions options)
      : fn_(std::make_shared<const Fn>(std::move(fn))),
        cache_(std::make_shared<detail::JitCache>(std::move(options))) {}

  // Tensor-side arguments run the compiled graph. Expr-side arguments (a call inside
  // another trace) inline the function into that trace.
  template <class... Args>
  auto operator()(const Args&... args) const {
    if constexpr (sizeof...(Args) > 0 && (is_tree_of_v<Args, Expr> && ...)) {
      return (*fn_)(args...);
    } else {
      static_assert((is_tree_of_v<Args, Tensor> && ...),
                    "a jitted function takes Tensors, or vectors, tuples or maps of them");
      detail::CallArguments call;
      const CompiledEntry& entry = lookup(true, call, args...);
      using Result = tensor_tree_t<detail::expr_result_t<Fn, Args...>>;
      return detail::rebuild_result<Result>(entry, entry.executable->run_refs(call.leaves()));
    }
  }

  // Buffer donation: like operator(), but the arguments are given up (pass them with
  // std::move; they are left empty once the signature is found). Tensors nobody else
  // holds may be updated in place and come back as outputs, as a training step does
  // with its parameters. If the call throws before running, the arguments are intact.
  template <class... Args>
  auto call_donating(Args&&... args) const {
    static_assert((is_tree_of_v<std::remove_cvref_t<Args>, Tensor> && ...),
                  "call_donating takes Tensors, or vectors, tuples or maps of them");
    static_assert((!std::is_lvalue_reference_v<Args> && ...),
                  "call_donating consumes its arguments: pass them with std::move");
    detail::CallArguments call;
    const CompiledEntry& entry = lookup(true, call, args...);
    std::vector<Tensor> leaves = call.copy_leaves();
    ((args = std::remove_cvref_t<Args>{}), ...);
    using Result = tensor_tree_t<detail::expr_result_t<Fn, std::remove_cvref_t<Args>...>>;
    return detail::rebuild_result<Result>(entry, entry.executable->run_donated(std::move(leaves)));
  }

  // The graph and executable for these arguments' signature; traces and compiles on a
  // miss without counting it.
  template <class... Args>
  std::shared_ptr<const CompiledEntry> compiled(const Args&... args) const {
    detail::CallArguments call;
    // Shares the cache's ownership: the entry outlives this Jitted if need be.
    return std::shared_ptr<const CompiledEntry>(cache_, &lookup(false, call, args...));
  }
  template <class... Args>
  std::string graph_text(const Args&... args) const {
    return to_text(compiled(args...)->graph);
  }
  CacheStats cache_stats() const { return cache_->stats(); }
  std::vector<std::string> signatures() const { return cache_->signatures(); }
  const JitOptions& options() const { return cache_->options(); }

 private:
  template <class... Args>
  const CompiledEntry& lookup(bool count, detail::CallArguments& call, const Args&... args) const {
    const char* type_key = typeid(std::tuple<Args...>).name();
    if (const CompiledEntry* guess = cache_->last(type_key)) {
      if (detail::arguments_match(call, guess->key, args...)) {
        if (count) cache_->count_hit();
        return *guess;
      }
      call.restart();
    }
    detail::ArgumentWalk walk(call);
    detail::visit_arguments(walk, args...);
    if (!walk.any_undefined())
      if (const CompiledEntry* hit = cache_->find(type_key, call.key(), count)) return *hit;
    // A miss: only now is the structure written out, for the signature, the parameters'
    // names and the error naming an undefined leaf.
    std::string structure = detail::arguments_structure(args...);
    const std::string& name = cache_->options().name;
    std::vector<TensorType> types = detail::argument_types(name, structure, call.leaves());
    return *cache_->insert(type_key, call.key(), structure, types,
                           detail::make_trace_body(*fn_, name, args...), count);
  }

  std::shared_ptr<const Fn> fn_;
  std::shared_ptr<detail::JitCache> cache_;
};

template <class Fn>
Jitted<Fn> jit(Fn fn, JitOptions options = {}) {
  return Jitted<Fn>(std::move(fn), std::move(options));
}

}  // namespace glia
