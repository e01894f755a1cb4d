// The attributes an IR node carries, one struct per attribute kind. Every struct lists
// its fields once in `fields(f)`, from which printing, hashing and equality are derived.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "glia/core/tensor.hpp"

namespace glia {

class Graph;
using Ints = std::vector<std::int64_t>;

struct NoAttrs {
  template <class F>
  void fields(F&&) const {}
};
// A graph input: its position among the graph's parameters, its type and an optional name.
struct ParameterAttrs {
  std::int64_t index = 0;
  TensorType type;
  std::string name;
  template <class F>
  void fields(F&& f) const {
    f("index", index), f("type", type), f("name", name);
  }
};
struct ConstantAttrs {
  Tensor value;
  template <class F>
  void fields(F&& f) const {
    f("value", value);
  }
};
struct CastAttrs {
  DType to = DType::f32;
  template <class F>
  void fields(F&& f) const {
    f("to", to);
  }
};
// Counts 0, 1, ... along `axis` of `shape`.
struct IotaAttrs {
  Shape shape;
  DType dtype = DType::i64;
  std::int64_t axis = 0;
  template <class F>
  void fields(F&& f) const {
    f("shape", shape), f("dtype", dtype), f("axis", axis);
  }
};
// XLA's broadcast_in_dim: operand axis i becomes output axis dims[i]; each operand
// dimension is 1 or equal to the output dimension it maps to.
struct BroadcastAttrs {
  Shape shape;
  Ints dims;
  template <class F>
  void fields(F&& f) const {
    f("shape", shape), f("dims", dims);
  }
};
struct ReshapeAttrs {
  Shape shape;
  template <class F>
  void fields(F&& f) const {
    f("shape", shape);
  }
};
// Output axis i is operand axis perm[i].
struct TransposeAttrs {
  Ints perm;
  template <class F>
  void fields(F&& f) const {
    f("perm", perm);
  }
};
// start inclusive, limit exclusive, stride >= 1, per axis.
struct SliceAttrs {
  Ints start, limit, strides;
  template <class F>
  void fields(F&& f) const {
    f("start", start), f("limit", limit), f("strides", strides);
  }
};
// Edge padding (low/high; negative crops) and interior padding between elements;
// the pad value is the node's second input, a scalar.
struct PadAttrs {
  Ints low, high, interior;
  template <class F>
  void fields(F&& f) const {
    f("low", low), f("high", high), f("interior", interior);
  }
};
// One axis: concatenate, gather and scatter_add.
struct AxisAttrs {
  std::int64_t axis = 0;
  template <class F>
  void fields(F&& f) const {
    f("axis", axis);
  }
};
struct AxesAttrs {
  Ints axes;
  template <class F>
  void fields(F&& f) const {
    f("axes", axes);
  }
};
struct ReduceAttrs {
  Ints axes;  // sorted, unique, non-negative
  bool keep_axes = false;
  template <class F>
  void fields(F&& f) const {
    f("axes", axes), f("keep_axes", keep_axes);
  }
};
// argmax/argmin along one axis; ties resolve to the lowest index; the result is i64.
struct ArgReduceAttrs {
  std::int64_t axis = 0;
  bool keep_axes = false;
  template <class F>
  void fields(F&& f) const {
    f("axis", axis), f("keep_axes", keep_axes);
  }
};
// Output axes: the batch axes, then lhs's free axes, then rhs's free axes (XLA's order).
struct DotAttrs {
  Ints lhs_contract, rhs_contract, lhs_batch, rhs_batch;
  template <class F>
  void fields(F&& f) const {
    f("lhs_contract", lhs_contract), f("rhs_contract", rhs_contract), f("lhs_batch", lhs_batch),
        f("rhs_batch", rhs_batch);
  }
};
// N-d convolution in XLA's ConvGeneralDilated sense with a fixed layout:
// input [N, C, spatial...], kernel [O, C/feature_groups, spatial...], output [N', O, spatial...].
// Every vector has one entry per spatial axis.
struct ConvAttrs {
  Ints strides, padding_low, padding_high, input_dilation, kernel_dilation;
  std::int64_t feature_groups = 1;
  std::int64_t batch_groups = 1;
  template <class F>
  void fields(F&& f) const {
    f("strides", strides), f("padding_low", padding_low), f("padding_high", padding_high),
        f("input_dilation", input_dilation), f("kernel_dilation", kernel_dilation),
        f("feature_groups", feature_groups), f("batch_groups", batch_groups);
  }
};
// A window over every axis of the operand (XLA's ReduceWindow): one entry per axis.
struct WindowAttrs {
  Ints window, strides, padding_low, padding_high, base_dilation, window_dilation;
  template <class F>
  void fields(F&& f) const {
    f("window", window), f("strides", strides), f("padding_low", padding_low),
        f("padding_high", padding_high), f("base_dilation", base_dilation),
        f("window_dilation", window_dilation);
  }
};
struct RandomBitsAttrs {
  Shape shape;
  template <class F>
  void fields(F&& f) const {
    f("shape", shape);
  }
};
// A graph one node holds (a loop's body). Shared, never changed once built; the
// fingerprint is computed once. Equality is structural; it prints by name and fingerprint.
struct Subgraph {
  std::shared_ptr<const Graph> graph;
  std::uint64_t fingerprint = 0;
  explicit Subgraph(std::shared_ptr<const Graph> g = nullptr);
  const Graph& operator*() const { return *graph; }
  const Graph* operator->() const { return graph.get(); }
  friend bool operator==(const Subgraph& a, const Subgraph& b);
};
// A structured loop over the leading axis of its sequences (JAX's lax.scan). The node's
// inputs are the initial carries (`carries` of them), the sequences (`sequences`, each
// [length, ...]) and then loop constants. Each step t runs `body` on (carries, row t of
// every sequence, constants) and gets (new carries, step outputs); `reverse` runs t from
// length - 1 down to 0 (outputs still land in row t). One loop has several results, and a
// scan node is result `result` of it:
//   [0, carries)                        the final carry
//   [carries, carries + outputs)        a step output, stacked: [length, ...]
//   [carries + outputs, 2 carries + outputs)  the carry each step received, stacked
// (what reverse mode reads). Nodes of one loop (same inputs and attributes but `result`)
// are computed once by the backends.
struct ScanAttrs {
  Subgraph body;
  std::int64_t carries = 0, sequences = 0, length = 0, result = 0;
  bool reverse = false;
  template <class F>
  void fields(F&& f) const {
    f("body", body), f("carries", carries), f("sequences", sequences), f("length", length),
        f("reverse", reverse), f("result", result);
  }
};

// A collective's communicator (its id in collective.hpp's registry) and its bucket: the
// collectives of one communicator run in bucket order on every process.
struct CollectiveAttrs {
  std::int64_t communicator = 0, bucket = 0;
  template <class F>
  void fields(F&& f) const {
    f("communicator", communicator), f("bucket", bucket);
  }
};

using Attrs = std::variant<NoAttrs, ParameterAttrs, ConstantAttrs, CastAttrs, IotaAttrs,
                           BroadcastAttrs, ReshapeAttrs, TransposeAttrs, SliceAttrs, PadAttrs,
                           AxisAttrs, AxesAttrs, ReduceAttrs, ArgReduceAttrs, DotAttrs, ConvAttrs,
                           WindowAttrs, RandomBitsAttrs, ScanAttrs, CollectiveAttrs>;

// The attribute kind an op expects: the index of its alternative in Attrs.
enum class AttrKind : std::uint8_t {
  none,
  parameter,
  constant,
  cast,
  iota,
  broadcast,
  reshape,
  transpose,
  slice,
  pad,
  axis,
  axes,
  reduce,
  arg_reduce,
  dot,
  conv,
  window,
  random_bits,
  scan,
  collective
};
inline AttrKind attr_kind(const Attrs& a) { return static_cast<AttrKind>(a.index()); }
std::string_view attr_kind_name(AttrKind k);

// "axes=[1], keep_axes=true"; a constant prints its dtype, shape and a few values.
std::string attrs_to_string(const Attrs& a);
bool attrs_equal(const Attrs& a, const Attrs& b);
// Feeds a stable hash of the attributes (bytes of constants included) into `h`.
std::uint64_t hash_attrs(const Attrs& a, std::uint64_t h);

}  // namespace glia
