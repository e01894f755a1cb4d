// compile: traces and compiles a function once, for argument templates given as
// TensorTypes (in the same containers the arguments will come in), and returns a
// callable that accepts that one signature and rejects any other with glia::Error.
//   auto f = glia::compile([](const glia::Expr& x) { return glia::exp(x); },
//                          glia::TensorType{glia::f32, {2, 3}});
//   glia::Tensor y = f(x);  // x must be f32[2][3]
#pragma once

#include <utility>

#include "glia/compiler/jit.hpp"

namespace glia {

namespace detail {
// glia::Error naming the expected and the given signature when they differ.
void check_signature(const CompiledEntry& entry, const std::string& structure,
                     std::span<const Tensor* const> leaves);
}  // namespace detail

// Result and Args are Tensor-side trees, so the type can be named and stored:
//   glia::CompiledFn<glia::Tensor, std::map<std::string, glia::Tensor>, glia::Tensor> predict;
template <class Result, class... Args>
class CompiledFn {
 public:
  CompiledFn() = default;  // empty: calling it is an error
  explicit CompiledFn(std::shared_ptr<const CompiledEntry> entry) : entry_(std::move(entry)) {}

  Result operator()(const Args&... args) const {
    check(entry_ != nullptr, "calling an empty glia::CompiledFn");
    detail::CallArguments call;
    // The signature's text is written only to report a mismatch.
    if (!detail::arguments_match(call, entry_->key, args...))
      detail::check_signature(*entry_, detail::arguments_structure(args...), call.leaves());
    return detail::rebuild_result<Result>(*entry_, entry_->executable->run_refs(call.leaves()));
  }

  bool defined() const { return entry_ != nullptr; }
  const CompiledEntry& compiled() const { return *entry_; }
  const std::string& signature() const { return entry_->signature; }
  std::string graph_text() const { return to_text(entry_->graph); }

 private:
  std::shared_ptr<const CompiledEntry> entry_;
};

namespace detail {

template <class Fn, class... Templates>
auto compile_for(const Fn& fn, const JitOptions& options, const Templates&... templates) {
  static_assert((is_tree_of_v<Templates, TensorType> && ...),
                "compile: argument templates are TensorTypes, or vectors, tuples or maps of them");
  std::vector<TensorType> types;
  std::string structure = flatten_arguments(types, templates...);
  CallArguments call;
  ArgumentWalk walk(call);
  visit_arguments(walk, templates...);  // the key calls will be compared with
  auto entry = trace_and_compile(options, structure, types, call.key(),
                                 make_trace_body(fn, options.name, templates...));
  return CompiledFn<tensor_tree_t<expr_result_t<Fn, Templates...>>, tensor_tree_t<Templates>...>(
      std::move(entry));
}

}  // namespace detail

// compile(fn, templates...) or compile(fn, templates..., JitOptions{...}).
template <class Fn, class... Rest>
auto compile(const Fn& fn, const Rest&... rest) {
  constexpr std::size_t n = sizeof...(Rest);
  // The last of rest, or void when there is none.
  using Last = std::tuple_element_t<n, std::tuple<void, Rest...>>;
  if constexpr (std::is_same_v<Last, JitOptions>) {
    auto all = std::tie(rest...);
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return detail::compile_for(fn, std::get<n - 1>(all), std::get<I>(all)...);
    }
    (std::make_index_sequence<n - 1>{});
  } else {
    return detail::compile_for(fn, JitOptions{}, rest...);
  }
}

}  // namespace glia
