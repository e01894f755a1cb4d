// Trees: glia functions take and return tensors and nested containers of them, as
// pytrees do in JAX. A tree is a leaf (Expr, Tensor or TensorType), or a std::vector,
// std::tuple or std::map<std::string, ...> of trees. TreeTraits flattens a tree to its
// leaves, walks it for a visitor (writing its structure, keying a cache), and rebuilds a
// tree of another leaf kind like it.
//   std::map<std::string, glia::Tensor> params{{"w", w}, {"b", b}};
//   glia::tree_structure(params) == R"({"b":T,"w":T})";
//   glia::expr_tree_t<decltype(params)>  // std::map<std::string, glia::Expr>
#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "glia/core/error.hpp"

namespace glia {

class Expr;
class Tensor;
struct TensorType;

// Structure strings: a leaf is `T`, a vector `[..]`, a tuple `(..)`, a map `{"key":..}`
// with keys quoted (`"` and `\` escaped), children separated by commas.
//
// TreeTraits<T>::visit(tree, v) walks a tree in flattening order and calls, on v:
//   leaf(const Leaf&)                  for each leaf
//   open(char bracket, size_t count)   entering a container: '[', '(' or '{', its size
//   next()                             between two children
//   key(const std::string&)            before each child of a map
//   close(char bracket)                leaving it: ']', ')' or '}'
// which is the structure text token by token: tree_structure writes it, and jit keys its
// cache by the same walk without building any text.
template <class T>
struct TreeTraits {
  static_assert(sizeof(T) == 0,
                "not a glia tree: use Expr, Tensor or TensorType, or std::vector, std::tuple or "
                "std::map<std::string, ...> of them");
};

namespace detail {

void append_quoted(std::string& out, const std::string& key);

template <class Leaf>
struct LeafTraits {
  template <class L>
  using with_leaf = L;
  static std::size_t leaf_count(const Leaf&) { return 1; }
  template <class V>
  static void visit(const Leaf& leaf, V& v) {
    v.leaf(leaf);
  }
  template <class L>
  static void flatten(const Leaf& leaf, std::vector<L>& leaves) {
    static_assert(std::is_same_v<L, Leaf>, "flattening a tree into leaves of another kind");
    leaves.push_back(leaf);
  }
  template <class L>
  static L build(const Leaf&, std::span<const L> leaves, std::size_t& pos) {
    return leaves[pos++];
  }
};

template <class T, class L>
struct IsTreeOf : std::false_type {};
template <class L>
struct IsTreeOf<L, L> : std::true_type {};
template <class E, class L>
struct IsTreeOf<std::vector<E>, L> : IsTreeOf<E, L> {};
template <class... E, class L>
struct IsTreeOf<std::tuple<E...>, L> : std::bool_constant<(IsTreeOf<E, L>::value && ...)> {};
template <class E, class L>
struct IsTreeOf<std::map<std::string, E>, L> : IsTreeOf<E, L> {};

}  // namespace detail

template <>
struct TreeTraits<Expr> : detail::LeafTraits<Expr> {};
template <>
struct TreeTraits<Tensor> : detail::LeafTraits<Tensor> {};
template <>
struct TreeTraits<TensorType> : detail::LeafTraits<TensorType> {};

template <class E>
struct TreeTraits<std::vector<E>> {
  template <class L>
  using with_leaf = std::vector<typename TreeTraits<E>::template with_leaf<L>>;
  static std::size_t leaf_count(const std::vector<E>& v) {
    std::size_t n = 0;
    for (const E& e : v) n += TreeTraits<E>::leaf_count(e);
    return n;
  }
  template <class V>
  static void visit(const std::vector<E>& vec, V& v) {
    v.open('[', vec.size());
    for (std::size_t i = 0; i < vec.size(); ++i) {
      if (i) v.next();
      TreeTraits<E>::visit(vec[i], v);
    }
    v.close(']');
  }
  template <class L>
  static void flatten(const std::vector<E>& v, std::vector<L>& leaves) {
    for (const E& e : v) TreeTraits<E>::flatten(e, leaves);
  }
  template <class L>
  static with_leaf<L> build(const std::vector<E>& like, std::span<const L> leaves,
                            std::size_t& pos) {
    with_leaf<L> out;
    out.reserve(like.size());
    for (const E& e : like) out.push_back(TreeTraits<E>::build(e, leaves, pos));
    return out;
  }
};

template <class... E>
struct TreeTraits<std::tuple<E...>> {
  template <class L>
  using with_leaf = std::tuple<typename TreeTraits<E>::template with_leaf<L>...>;
  static std::size_t leaf_count(const std::tuple<E...>& t) {
    return std::apply(
        [](const E&... e) { return (std::size_t{0} + ... + TreeTraits<E>::leaf_count(e)); }, t);
  }
  template <class V>
  static void visit(const std::tuple<E...>& t, V& v) {
    v.open('(', sizeof...(E));
    std::apply(
        [&v](const E&... e) {
          [[maybe_unused]] bool first = true;
          ((first ? void() : v.next(), first = false, TreeTraits<E>::visit(e, v)), ...);
        },
        t);
    v.close(')');
  }
  template <class L>
  static void flatten(const std::tuple<E...>& t, std::vector<L>& leaves) {
    std::apply([&](const E&... e) { (TreeTraits<E>::flatten(e, leaves), ...); }, t);
  }
  template <class L>
  static with_leaf<L> build(const std::tuple<E...>& like, std::span<const L> leaves,
                            std::size_t& pos) {
    // A braced list evaluates left to right, so leaves are taken in order.
    return std::apply(
        [&](const E&... e) { return with_leaf<L>{TreeTraits<E>::build(e, leaves, pos)...}; }, like);
  }
};

template <class E>
struct TreeTraits<std::map<std::string, E>> {
  using Map = std::map<std::string, E>;
  template <class L>
  using with_leaf = std::map<std::string, typename TreeTraits<E>::template with_leaf<L>>;
  static std::size_t leaf_count(const Map& m) {
    std::size_t n = 0;
    for (const auto& [key, e] : m) n += TreeTraits<E>::leaf_count(e);
    return n;
  }
  template <class V>
  static void visit(const Map& m, V& v) {
    v.open('{', m.size());
    bool first = true;
    for (const auto& [key, e] : m) {
      if (!first) v.next();
      first = false;
      v.key(key);
      TreeTraits<E>::visit(e, v);
    }
    v.close('}');
  }
  template <class L>
  static void flatten(const Map& m, std::vector<L>& leaves) {
    for (const auto& [key, e] : m) TreeTraits<E>::flatten(e, leaves);
  }
  template <class L>
  static with_leaf<L> build(const Map& like, std::span<const L> leaves, std::size_t& pos) {
    with_leaf<L> out;
    for (const auto& [key, e] : like) out.emplace(key, TreeTraits<E>::build(e, leaves, pos));
    return out;
  }
};

// Whether T is a tree whose leaves are all of kind L.
template <class T, class L>
inline constexpr bool is_tree_of_v = detail::IsTreeOf<std::remove_cvref_t<T>, L>::value;

// The same tree shape with leaves of kind L: Expr-side <-> Tensor-side <-> TensorType-side.
template <class T, class L>
using tree_with_leaf_t = typename TreeTraits<std::remove_cvref_t<T>>::template with_leaf<L>;
template <class T>
using tensor_tree_t = tree_with_leaf_t<T, Tensor>;
template <class T>
using expr_tree_t = tree_with_leaf_t<T, Expr>;
template <class T>
using type_tree_t = tree_with_leaf_t<T, TensorType>;

namespace detail {

// Writes the structure text.
struct StructureWriter {
  std::string& out;
  template <class Leaf>
  void leaf(const Leaf&) {
    out += 'T';
  }
  void open(char bracket, std::size_t) { out += bracket; }
  void next() { out += ','; }
  void key(const std::string& k) {
    append_quoted(out, k);
    out += ':';
  }
  void close(char bracket) { out += bracket; }
};

}  // namespace detail

template <class T>
std::string tree_structure(const T& tree) {
  std::string out;
  detail::StructureWriter writer{out};
  TreeTraits<T>::visit(tree, writer);
  return out;
}

template <class L, class T>
std::vector<L> tree_leaves(const T& tree) {
  std::vector<L> leaves;
  TreeTraits<T>::flatten(tree, leaves);
  return leaves;
}

// A tree shaped like `like` whose leaves are `leaves`, in flattening order.
template <class L, class Like>
tree_with_leaf_t<Like, L> tree_unflatten(const Like& like, std::span<const L> leaves) {
  std::size_t want = TreeTraits<Like>::leaf_count(like);
  if (leaves.size() != want)  // the structure text only on failure: this runs every call
    throw Error(cat("tree_unflatten: the structure ", tree_structure(like), " has ", want,
                    " leaves, got ", leaves.size()));
  std::size_t pos = 0;
  return TreeTraits<Like>::build(like, leaves, pos);
}

// The structure with leaf_texts[i] in place of its i-th `T`, spaced for reading:
//   tree_text(R"({"b":T})", {"f32[3]"}) == R"({"b": f32[3]})"
std::string tree_text(std::string_view structure, std::span<const std::string> leaf_texts);
// Where each leaf sits: "[0]", "[1].w", ".b[2]". With `argument_list`, the structure is
// an argument list "(..)" and its children are named arg0, arg1, ...
std::vector<std::string> tree_leaf_paths(std::string_view structure, bool argument_list = false);

}  // namespace glia
