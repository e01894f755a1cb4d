#include "glia/core/attrs.hpp"

#include <array>
#include <cstring>
#include <sstream>

#include "glia/core/graph.hpp"
#include "glia/core/hash.hpp"

namespace glia {

namespace {

template <class T>
std::uint64_t fnv_value(std::uint64_t h, T v) {
  return fnv1a(h, &v, sizeof v);
}

std::string ints_text(const Ints& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

struct Printer {
  std::ostringstream& out;
  bool first = true;
  template <class T>
  void operator()(std::string_view name, const T& v) {
    if constexpr (std::is_same_v<T, std::string>) {
      if (v.empty()) return;  // unnamed parameters print nothing
    } else if constexpr (std::is_same_v<T, TensorType>) {
      return;  // a parameter's type is printed as the node's type
    }
    out << (first ? "" : ", ") << name << "=";
    first = false;
    if constexpr (std::is_same_v<T, Ints>)
      out << ints_text(v);
    else if constexpr (std::is_same_v<T, Shape>)
      out << ints_text(v.dims());
    else if constexpr (std::is_same_v<T, bool>)
      out << (v ? "true" : "false");
    else if constexpr (std::is_same_v<T, std::string>)
      out << '"' << v << '"';
    else if constexpr (std::is_same_v<T, Subgraph>)
      out << v->name() << "#" << std::hex << (v.fingerprint & 0xffffffu) << std::dec;
    else if constexpr (std::is_same_v<T, Tensor>) {
      // Short form: the values inline when few, else only the type.
      if (v.numel() <= 8) {
        out << "[";
        for (std::int64_t i = 0; i < v.numel(); ++i) out << (i ? ", " : "") << v.element(i);
        out << "]";
      } else {
        out << "<" << v.type() << ">";
      }
    } else
      out << v;
  }
};

struct Hasher {
  std::uint64_t h;
  template <class T>
  void operator()(std::string_view name, const T& v) {
    h = fnv1a(h, name.data(), name.size());
    if constexpr (std::is_same_v<T, Ints>) {
      h = fnv_value(h, v.size());
      h = fnv1a(h, v.data(), v.size() * sizeof(std::int64_t));
    } else if constexpr (std::is_same_v<T, Shape>) {
      h = fnv_value(h, v.dims().size());
      h = fnv1a(h, v.dims().data(), v.dims().size() * sizeof(std::int64_t));
    } else if constexpr (std::is_same_v<T, std::string>) {
      h = fnv_value(h, v.size());
      h = fnv1a(h, v.data(), v.size());
    } else if constexpr (std::is_same_v<T, TensorType>) {
      (*this)("dtype", v.dtype);
      (*this)("shape", v.shape);
    } else if constexpr (std::is_same_v<T, Subgraph>) {
      h = fnv_value(h, v.fingerprint);
    } else if constexpr (std::is_same_v<T, Tensor>) {
      (*this)("dtype", v.dtype());
      (*this)("shape", v.shape());
      h = fnv1a(h, v.raw_data(), v.nbytes());
    } else {
      h = fnv_value(h, v);
    }
  }
};

template <class T>
std::vector<const void*> field_addresses(const T& a) {
  std::vector<const void*> out;
  a.fields([&](std::string_view, const auto& v) { out.push_back(&v); });
  return out;
}

// Compares two attribute structs of the same kind field by field.
template <class T>
bool fields_equal(const T& a, const T& b) {
  bool same = true;
  std::vector<const void*> bs = field_addresses(b);
  std::size_t i = 0;
  a.fields([&](std::string_view, const auto& va) {
    using V = std::decay_t<decltype(va)>;
    const V& vb = *static_cast<const V*>(bs[i++]);
    if constexpr (std::is_same_v<V, Tensor>)
      same = same && equal(va, vb);
    else
      same = same && va == vb;
  });
  return same;
}

constexpr std::array<std::string_view, std::variant_size_v<Attrs>> kKindNames = {
    "none",      "parameter", "constant", "cast",        "iota", "broadcast", "reshape",
    "transpose", "slice",     "pad",      "axis",        "axes", "reduce",    "arg_reduce",
    "dot",       "conv",      "window",   "random_bits", "scan", "collective"};

}  // namespace

Subgraph::Subgraph(std::shared_ptr<const Graph> g) : graph(std::move(g)) {
  if (graph) fingerprint = glia::fingerprint(*graph);
}

bool operator==(const Subgraph& a, const Subgraph& b) {
  if (a.graph == b.graph) return true;
  if (!a.graph || !b.graph || a.fingerprint != b.fingerprint) return false;
  // Annotations (custom gradients) are closures, which cannot be compared: bodies with
  // them equal only themselves, so that no loop takes another's gradient.
  if (!a.graph->annotations().empty() || !b.graph->annotations().empty()) return false;
  return same_structure(*a.graph, *b.graph);
}

std::string_view attr_kind_name(AttrKind k) { return kKindNames.at(static_cast<std::size_t>(k)); }

std::string attrs_to_string(const Attrs& a) {
  std::ostringstream out;
  std::visit([&](const auto& v) { v.fields(Printer{out}); }, a);
  return out.str();
}

bool attrs_equal(const Attrs& a, const Attrs& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto& va) {
        using T = std::decay_t<decltype(va)>;
        return fields_equal(va, std::get<T>(b));
      },
      a);
}

std::uint64_t hash_attrs(const Attrs& a, std::uint64_t h) {
  Hasher hasher{fnv_value(h, a.index())};
  std::visit([&](const auto& v) { v.fields(hasher); }, a);
  return hasher.h;
}

}  // namespace glia
