// Expr: the tracing API, glia's numerical language (like Nx.Defn). An Expr is a
// handle to a value of the graph being traced; every function here appends nodes to
// that graph, applying numpy broadcasting and dtype promotion (see dtype.hpp), and
// throws glia::Error at trace time when shapes or dtypes do not fit.
//   glia::Graph g = glia::trace([](const std::vector<glia::Expr>& in) {
//     return std::vector<glia::Expr>{glia::softmax(in[0])};
//   }, {{glia::f32, {2, 3}}}, "softmax");
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "glia/core/graph.hpp"

namespace glia {

class Expr {
 public:
  Expr() = default;
  Expr(Graph* graph, ValueId id) : graph_(graph), id_(id) {}
  // A tensor used in a trace becomes a constant of the graph being traced.
  Expr(const Tensor& value);  // NOLINT(google-explicit-constructor)

  bool defined() const { return graph_ != nullptr; }
  Graph* graph() const { return graph_; }
  ValueId id() const { return id_; }
  // References stay valid while the graph grows (its nodes live in a deque).
  const Node& node() const { return graph_->node(id_); }
  const TensorType& type() const { return graph_->type(id_); }
  DType dtype() const { return type().dtype; }
  const Shape& shape() const { return type().shape; }
  int rank() const { return shape().rank(); }
  std::int64_t dim(int axis) const { return shape().dim(axis); }

 private:
  Graph* graph_ = nullptr;
  ValueId id_ = -1;
};

// A binary operand: an Expr or a C++ number. A number is "weakly typed" as in Nx: it
// takes the dtype of the Expr beside it (a floating number beside an integer Expr
// gives f32).
class Operand {
 public:
  Operand(const Expr& e) : expr_(e) {}                                          // NOLINT
  Operand(const Tensor& t) : expr_(t) {}                                        // NOLINT
  Operand(double v) : value_(v), integral_(false) {}                            // NOLINT
  Operand(float v) : value_(v), integral_(false) {}                             // NOLINT
  Operand(int v) : value_(v), integral_(true) {}                                // NOLINT
  Operand(std::int64_t v) : value_(static_cast<double>(v)), integral_(true) {}  // NOLINT
  bool is_expr() const { return expr_.defined(); }
  const Expr& expr() const { return expr_; }
  double value() const { return value_; }
  bool integral() const { return integral_; }
  // The Expr, making a number a scalar constant of dtype `like` (weak typing) in `g`.
  Expr as_expr(Graph& g, DType like) const;

 private:
  Expr expr_;
  double value_ = 0;
  bool integral_ = false;
};

// ---- Tracing -------------------------------------------------------------------------
// Makes `graph` the target of Expr functions that create values from nothing
// (constants, iota, random keys) for the scope's lifetime. Scopes nest.
class TraceScope {
 public:
  explicit TraceScope(Graph& graph);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  Graph* previous_;
};
Graph& current_graph();  // throws glia::Error outside a trace
bool tracing();

using TracedFn = std::function<std::vector<Expr>(const std::vector<Expr>&)>;
// Traces fn on parameters of the given types into a new graph and verifies it.
Graph trace(const TracedFn& fn, const std::vector<TensorType>& inputs, std::string name = "fn",
            const std::vector<std::string>& input_names = {});

// ---- Creation ------------------------------------------------------------------------
Expr parameter(const TensorType& type, std::string name = "");
Expr constant(const Tensor& value);
Expr scalar(double value, DType dtype = DType::f32);
Expr full(const Shape& shape, double value, DType dtype = DType::f32);
Expr zeros(const Shape& shape, DType dtype = DType::f32);
Expr ones(const Shape& shape, DType dtype = DType::f32);
Expr iota(const Shape& shape, std::optional<int> axis = std::nullopt, DType dtype = DType::i64);

// ---- Element-wise --------------------------------------------------------------------
Expr neg(const Expr& x);
Expr abs(const Expr& x);
Expr sign(const Expr& x);
Expr exp(const Expr& x);
Expr expm1(const Expr& x);
Expr log(const Expr& x);
Expr log1p(const Expr& x);
Expr sqrt(const Expr& x);
Expr rsqrt(const Expr& x);
Expr tanh(const Expr& x);
Expr logistic(const Expr& x);
Expr erf(const Expr& x);
Expr sin(const Expr& x);
Expr cos(const Expr& x);
Expr floor(const Expr& x);
Expr ceil(const Expr& x);
Expr round(const Expr& x);        // half away from zero
Expr logical_not(const Expr& x);  // op `not`: logical on bool, bitwise on integers

Expr add(const Operand& a, const Operand& b);
Expr subtract(const Operand& a, const Operand& b);
Expr multiply(const Operand& a, const Operand& b);
Expr divide(const Operand& a, const Operand& b);  // integers truncate; x / 0 == 0
Expr pow(const Operand& a, const Operand& b);
Expr max(const Operand& a, const Operand& b);
Expr min(const Operand& a, const Operand& b);
Expr remainder(const Operand& a, const Operand& b);  // sign of the dividend; x % 0 == x
Expr atan2(const Operand& a, const Operand& b);
Expr logical_and(const Operand& a, const Operand& b);  // logical on bool, bitwise on integers
Expr logical_or(const Operand& a, const Operand& b);
Expr equal(const Operand& a, const Operand& b);  // comparisons give bool
Expr not_equal(const Operand& a, const Operand& b);
Expr less(const Operand& a, const Operand& b);
Expr less_equal(const Operand& a, const Operand& b);
Expr greater(const Operand& a, const Operand& b);
Expr greater_equal(const Operand& a, const Operand& b);

Expr operator-(const Expr& x);
Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator*(const Expr& a, const Expr& b);
Expr operator/(const Expr& a, const Expr& b);
Expr operator+(const Expr& a, double b);
Expr operator-(const Expr& a, double b);
Expr operator*(const Expr& a, double b);
Expr operator/(const Expr& a, double b);
Expr operator+(double a, const Expr& b);
Expr operator-(double a, const Expr& b);
Expr operator*(double a, const Expr& b);
Expr operator/(double a, const Expr& b);

// pred must be bool; the three operands broadcast together; the branches promote.
Expr select(const Expr& pred, const Operand& on_true, const Operand& on_false);
Expr cast(const Expr& x, DType dtype);

// ---- Shape and layout ----------------------------------------------------------------
// XLA's broadcast_in_dim: operand axis i goes to output axis dims[i].
Expr broadcast(const Expr& x, const Shape& shape, const Ints& dims);
// numpy broadcasting of x to `shape` (trailing axes aligned).
Expr broadcast_to(const Expr& x, const Shape& shape);
// The numpy broadcast of two shapes; throws glia::Error naming `what` when they do not fit.
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view what);
Expr reshape(const Expr& x, const Ints& shape);        // one dimension may be -1
Expr transpose(const Expr& x, const Ints& perm = {});  // reverses the axes by default
Expr slice(const Expr& x, const Ints& start, const Ints& limit, const Ints& strides = {});
// Slices `length` elements from `start` along one axis.
Expr slice_axis(const Expr& x, std::int64_t start, std::int64_t length, std::int64_t axis,
                std::int64_t stride = 1);
Expr pad(const Expr& x, const Operand& value, const Ints& low, const Ints& high,
         const Ints& interior = {});
Expr concatenate(const std::vector<Expr>& xs, std::int64_t axis = 0);
Expr stack(const std::vector<Expr>& xs, std::int64_t axis = 0);
Expr reverse(const Expr& x, const Ints& axes = {});  // all axes by default
Expr squeeze(const Expr& x, const Ints& axes = {});  // all size-1 axes by default
Expr expand_dims(const Expr& x, std::int64_t axis);
Expr flatten(const Expr& x);  // to 1-D
// Nx.take: picks slices of x along `axis` at integer `indices`; the result's shape is
// x.shape[:axis] + indices.shape + x.shape[axis+1:]. Out-of-range indices are an error
// when the graph runs.
Expr take(const Expr& x, const Expr& indices, std::int64_t axis = 0);
// The adjoint of take: target + updates summed into the slices the indices name.
Expr scatter_add(const Expr& target, const Expr& indices, const Expr& updates,
                 std::int64_t axis = 0);

// ---- Reductions (axes empty = all axes; negative axes count from the end) -----------
Expr sum(const Expr& x, const Ints& axes = {}, bool keep_axes = false);
Expr product(const Expr& x, const Ints& axes = {}, bool keep_axes = false);
Expr reduce_max(const Expr& x, const Ints& axes = {}, bool keep_axes = false);
Expr reduce_min(const Expr& x, const Ints& axes = {}, bool keep_axes = false);
// Index of the first extreme element along `axis` (of the flattened x when none); i64.
Expr argmax(const Expr& x, std::optional<std::int64_t> axis = std::nullopt, bool keep_axes = false);
Expr argmin(const Expr& x, std::optional<std::int64_t> axis = std::nullopt, bool keep_axes = false);
Expr mean(const Expr& x, const Ints& axes = {}, bool keep_axes = false);
Expr variance(const Expr& x, const Ints& axes = {}, bool keep_axes = false, double ddof = 0);
Expr standard_deviation(const Expr& x, const Ints& axes = {}, bool keep_axes = false,
                        double ddof = 0);
Expr logsumexp(const Expr& x, const Ints& axes = {}, bool keep_axes = false);

// ---- Linear algebra ------------------------------------------------------------------
// Nx.dot / numpy.dot: scalars multiply; vectors give the inner product; otherwise the
// last axis of a contracts with the second-to-last axis of b (the only axis of a vector b).
Expr dot(const Expr& a, const Expr& b);
Expr dot_general(const Expr& a, const Expr& b, const Ints& contract_a, const Ints& contract_b,
                 const Ints& batch_a = {}, const Ints& batch_b = {});
// numpy.matmul: the last two axes multiply, leading axes broadcast as batch axes.
Expr matmul(const Expr& a, const Expr& b);

// Empty vectors mean the defaults: strides and dilations 1, padding 0.
struct ConvOptions {
  Ints strides, padding_low, padding_high, input_dilation, kernel_dilation;
  std::int64_t feature_groups = 1;
  std::int64_t batch_groups = 1;
};
// input [N, C, spatial...], kernel [O, C / feature_groups, spatial...] -> [N, O, spatial...]
Expr conv(const Expr& input, const Expr& kernel, const ConvOptions& options = {});

// Empty vectors mean the defaults: strides equal to the window, padding 0, dilations 1.
struct WindowOptions {
  Ints strides, padding_low, padding_high, base_dilation, window_dilation;
};
// A window over every axis of x (use 1 for axes not pooled over).
Expr window_sum(const Expr& x, const Ints& window, const WindowOptions& options = {});
Expr window_max(const Expr& x, const Ints& window, const WindowOptions& options = {});
// The adjoint of window_max: each source value is added at the position of its
// window's (first) maximum in x; the result has x's shape.
Expr select_and_scatter(const Expr& x, const Expr& source, const Ints& window,
                        const WindowOptions& options = {});

// ---- Composites ----------------------------------------------------------------------
Expr sigmoid(const Expr& x);  // logistic
Expr relu(const Expr& x);
Expr square(const Expr& x);
Expr reciprocal(const Expr& x);
Expr clip(const Expr& x, const Operand& lo, const Operand& hi);
Expr softmax(const Expr& x, std::int64_t axis = -1);
Expr log_softmax(const Expr& x, std::int64_t axis = -1);
// one_hot(indices [..], n) -> [.., n] of `dtype`: 1 where the class equals the index.
Expr one_hot(const Expr& indices, std::int64_t num_classes, DType dtype = DType::f32);

// ---- Counter-based random numbers (Threefry-2x32, the same stream on every backend) --
namespace random {
// A key is a u32[2] tensor; keys passed into traced functions are ordinary inputs.
Tensor key(std::uint64_t seed);
Expr split(const Expr& key, std::int64_t parts = 2);  // u32[parts][2]
Expr fold_in(const Expr& key, std::uint32_t data);    // a new key derived from key and data
Expr bits(const Expr& key, const Shape& shape);       // u32[shape]
Expr uniform(const Expr& key, const Shape& shape, double min = 0, double max = 1,
             DType dtype = DType::f32);  // [min, max)
Expr normal(const Expr& key, const Shape& shape, double mean = 0, double stddev = 1,
            DType dtype = DType::f32);
Expr bernoulli(const Expr& key, const Operand& p, const Shape& shape);  // bool
}  // namespace random

}  // namespace glia
