// Algebraic simplification and constant folding: the graph is rebuilt node by node,
// each node either copied (inputs remapped) or replaced by a value of the same type
// that computes the same thing with fewer or cheaper nodes.
#include <optional>
#include <vector>

#include "glia/compiler/passes.hpp"
#include "passes/constants.hpp"
#include "passes/scatter_sums.hpp"

namespace glia {

namespace {

using passes::add_splat;
using passes::constant_valued;
using passes::materialize;
using passes::splat_value;

constexpr ValueId kKeep = -1;  // no rewrite: copy the node

bool is_iota(const Ints& v) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] != static_cast<std::int64_t>(i)) return false;
  return true;
}

bool all_equal(const Ints& v, std::int64_t value) {
  for (std::int64_t x : v)
    if (x != value) return false;
  return true;
}

bool is_elementwise(Op op) {
  OpClass c = op_info(op).op_class;
  return c == OpClass::unary || c == OpClass::binary || c == OpClass::compare ||
         c == OpClass::select;
}

// Layout ops that only move or repeat elements: on a splat they give the same splat.
bool keeps_values(Op op) {
  return op == Op::broadcast || op == Op::reshape || op == Op::transpose || op == Op::reverse ||
         op == Op::slice;
}

// The reference kernel's result, or nothing when it rejects these values (say, an
// out-of-range gather index): the error then surfaces when the graph runs, as before.
std::optional<Tensor> evaluate(const Node& n, std::span<const Tensor> args,
                               const TensorType& type) {
  try {
    return op_info(n.op).kernel(args, n.attrs, type);
  } catch (const Error&) {
    return std::nullopt;
  }
}

class Simplifier {
 public:
  explicit Simplifier(const Graph& in)
      : in_(in),
        out_(in.name()),
        remap_(static_cast<std::size_t>(in.size()), -1),
        uses_(static_cast<std::size_t>(in.size()), 0),
        copied_(static_cast<std::size_t>(in.size()), false) {
    for (const Node& n : in.nodes())
      for (ValueId id : n.inputs) ++uses_[static_cast<std::size_t>(id)];
    for (ValueId id : in.outputs()) ++uses_[static_cast<std::size_t>(id)];
  }

  Graph run() {
    for (std::int64_t i = 0; i < in_.size(); ++i) {
      const Node& src = in_.nodes()[static_cast<std::size_t>(i)];
      if (src.op == Op::parameter) {
        const auto& p = std::get<ParameterAttrs>(src.attrs);
        remap_[static_cast<std::size_t>(i)] = out_.add_parameter(p.type, p.name);
        continue;
      }
      Node n = src;
      for (ValueId& in : n.inputs) in = remap_[static_cast<std::size_t>(in)];
      ValueId r = n.inputs.empty() ? kKeep : rewrite(n, src);
      if (r == kKeep) {
        r = out_.append(std::move(n));
        copied_[static_cast<std::size_t>(i)] = true;
      } else {
        check(out_.type(r) == src.type, "simplify: graph '", in_.name(), "': rewriting %", i, " (",
              src.op, ") changed its type from ", src.type.to_string(), " to ",
              out_.type(r).to_string());
      }
      remap_[static_cast<std::size_t>(i)] = r;
    }
    std::vector<ValueId> outputs;
    for (ValueId id : in_.outputs()) outputs.push_back(remap_[static_cast<std::size_t>(id)]);
    out_.set_outputs(std::move(outputs));
    return std::move(out_);
  }

 private:
  const TensorType& type(ValueId id) const { return out_.type(id); }
  const Node& node(ValueId id) const { return out_.node(id); }

  ValueId rewrite(const Node& n, const Node& src) {
    if (is_identity(n)) return n.inputs[0];
    if (ValueId r = fold(n); r != kKeep) return r;
    if (ValueId r = arithmetic(n); r != kKeep) return r;
    if (ValueId r = compose(n); r != kKeep) return r;
    if (ValueId r = join_pads(n); r != kKeep) return r;
    if (ValueId r = unit_reduction(n); r != kKeep) return r;
    if (std::optional<ValueId> r = passes::sum_of_scatter(out_, n)) return *r;
    return keep_reduced_axes(n, src);
  }

  // A node whose result is its first input, unchanged.
  bool is_identity(const Node& n) const {
    const TensorType& x = type(n.inputs[0]);
    if (x != n.type) return false;
    switch (n.op) {
      case Op::stop_gradient:  // its only meaning is to autograd, which has run
      case Op::reshape:
      case Op::cast:
      case Op::broadcast:  // same shape: the dims, strictly increasing, are the identity
        return true;
      case Op::transpose:
        return is_iota(std::get<TransposeAttrs>(n.attrs).perm);
      case Op::slice: {
        const auto& a = std::get<SliceAttrs>(n.attrs);
        for (int i = 0; i < x.shape.rank(); ++i) {
          auto k = static_cast<std::size_t>(i);
          if (a.start[k] != 0 || (a.strides[k] != 1 && x.shape[i] > 1)) return false;
        }
        return true;
      }
      case Op::pad: {
        const auto& a = std::get<PadAttrs>(n.attrs);
        return all_equal(a.low, 0) && all_equal(a.high, 0) && all_equal(a.interior, 0);
      }
      case Op::reverse:
        for (std::int64_t axis : std::get<AxesAttrs>(n.attrs).axes)
          if (x.shape[static_cast<int>(axis)] > 1) return false;
        return true;
      case Op::concatenate:
        return n.inputs.size() == 1;
      case Op::reduce_sum:
      case Op::reduce_max:
      case Op::reduce_min:
      case Op::reduce_prod:
        return reduces_single_elements(n);
      default:
        return false;
    }
  }

  // A reduction over no axes, or over axes of extent 1 only, whose result is each element
  // alone (combined with the identity: x + 0 is x, as `arithmetic` has it).
  bool reduces_single_elements(const Node& n) const {
    const Shape& x = type(n.inputs[0]).shape;
    for (std::int64_t axis : std::get<ReduceAttrs>(n.attrs).axes)
      if (x[static_cast<int>(axis)] != 1) return false;
    return true;
  }

  // Such a reduction without keep_axes is a reshape (softmax over an axis of one element:
  // its max and sum are the element itself).
  ValueId unit_reduction(const Node& n) {
    if (!std::holds_alternative<ReduceAttrs>(n.attrs) || !reduces_single_elements(n)) return kKeep;
    return out_.add(Op::reshape, {n.inputs[0]}, ReshapeAttrs{n.type.shape});
  }

  // Constant folding. Splats stay splats whatever their size; other constant results
  // are computed only when small, and a broadcast of a constant stays a broadcast.
  ValueId fold(const Node& n) {
    // random_bits' constant key still draws; a collective's constant input is still summed
    // over the processes, at run time.
    if (n.op == Op::random_bits || n.op == Op::all_reduce) return kKeep;
    for (ValueId in : n.inputs)
      if (!constant_valued(out_, in)) return kKeep;
    if (is_elementwise(n.op) || keeps_values(n.op)) {
      std::vector<Tensor> scalars;
      for (ValueId in : n.inputs) {
        std::optional<Tensor> s = splat_value(out_, in);
        if (!s) break;
        scalars.push_back(*s);
      }
      if (scalars.size() == n.inputs.size()) {
        const Node& operand = node(n.inputs[0]);
        bool canonical =
            n.op == Op::broadcast && operand.op == Op::constant && operand.type.shape.rank() == 0;
        if (canonical) return kKeep;
        std::optional<Tensor> value = scalars[0];
        if (is_elementwise(n.op)) value = evaluate(n, scalars, {n.type.dtype, Shape{}});
        return value ? add_splat(out_, *value, n.type) : kKeep;
      }
    }
    if (n.op == Op::broadcast || n.type.shape.numel() > kFoldElementLimit) return kKeep;
    std::vector<Tensor> args;
    for (ValueId in : n.inputs) {
      std::optional<Tensor> t = materialize(out_, in, kFoldElementLimit);
      if (!t) return kKeep;
      args.push_back(std::move(*t));
    }
    std::optional<Tensor> value = evaluate(n, args, n.type);
    return value ? out_.add(Op::constant, {}, ConstantAttrs{*value}) : kKeep;
  }

  bool is_splat_of(ValueId id, double v) const {
    std::optional<Tensor> s = splat_value(out_, id);
    return s && s->dtype() != DType::boolean && s->element(0) == v;
  }
  // `id` when it can stand for the node's result (a same-typed operand).
  ValueId same_type(ValueId id, const Node& n) const { return type(id) == n.type ? id : kKeep; }

  // x + 0, x - 0, x * 1, x / 1, neg(neg(x)), select on a constant predicate. x * 0 is
  // kept: it is NaN for x = inf or NaN.
  ValueId arithmetic(const Node& n) const {
    const std::vector<ValueId>& in = n.inputs;
    switch (n.op) {
      case Op::add:
        if (is_splat_of(in[1], 0)) return same_type(in[0], n);
        if (is_splat_of(in[0], 0)) return same_type(in[1], n);
        return kKeep;
      case Op::subtract:
        return is_splat_of(in[1], 0) ? same_type(in[0], n) : kKeep;
      case Op::multiply:
        if (is_splat_of(in[1], 1)) return same_type(in[0], n);
        if (is_splat_of(in[0], 1)) return same_type(in[1], n);
        return kKeep;
      case Op::divide:
        return is_splat_of(in[1], 1) ? same_type(in[0], n) : kKeep;
      case Op::neg:
        return node(in[0]).op == Op::neg ? node(in[0]).inputs[0] : kKeep;
      case Op::select: {
        std::optional<Tensor> pred = splat_value(out_, in[0]);
        if (!pred) return kKeep;
        return same_type(pred->element(0) != 0 ? in[1] : in[2], n);
      }
      default:
        return kKeep;
    }
  }

  // Two layout ops of a kind in a row become one.
  ValueId compose(const Node& n) {
    const Node& inner = node(n.inputs[0]);
    if (inner.op != n.op) return kKeep;
    ValueId x = inner.inputs[0];
    switch (n.op) {
      case Op::reshape:
        return type(x) == n.type ? x : out_.add(Op::reshape, {x}, n.attrs);
      case Op::transpose: {
        // Output axis i is inner axis outer[i], which is x's axis first[outer[i]].
        const Ints& first = std::get<TransposeAttrs>(inner.attrs).perm;
        const Ints& outer = std::get<TransposeAttrs>(n.attrs).perm;
        Ints perm;
        for (std::int64_t p : outer) perm.push_back(first[static_cast<std::size_t>(p)]);
        return is_iota(perm) ? x : out_.add(Op::transpose, {x}, TransposeAttrs{perm});
      }
      case Op::broadcast: {
        // x's axis i goes to inner axis first[i], which goes to output axis outer[first[i]].
        const Ints& first = std::get<BroadcastAttrs>(inner.attrs).dims;
        const Ints& outer = std::get<BroadcastAttrs>(n.attrs).dims;
        Ints dims;
        for (std::int64_t d : first) dims.push_back(outer[static_cast<std::size_t>(d)]);
        return out_.add(Op::broadcast, {x}, BroadcastAttrs{n.type.shape, dims});
      }
      default:
        return kKeep;
    }
  }

  // pad(a) + pad(b), zero-padded into neighbouring ranges of one axis, is one pad of
  // concatenate(a, b): the gradient of slicing gates out of one tensor (lstm's i, f, g, o)
  // becomes a copy of each part into place instead of a full-size pad and add per part.
  ValueId join_pads(const Node& n) {
    if (n.op != Op::add) return kKeep;
    const Node* p[2] = {&node(n.inputs[0]), &node(n.inputs[1])};
    for (const Node* q : p)
      if (q->op != Op::pad || q->type != n.type || !is_splat_of(q->inputs[1], 0)) return kKeep;
    const auto& a = std::get<PadAttrs>(p[0]->attrs);
    const auto& b = std::get<PadAttrs>(p[1]->attrs);
    if (!all_equal(a.interior, 0) || !all_equal(b.interior, 0)) return kKeep;
    int axis = -1;
    for (std::size_t i = 0; i < a.low.size(); ++i) {
      if (a.low[i] < 0 || a.high[i] < 0 || b.low[i] < 0 || b.high[i] < 0) return kKeep;
      if (a.low[i] == b.low[i] && a.high[i] == b.high[i]) continue;
      if (axis >= 0) return kKeep;
      axis = static_cast<int>(i);
    }
    if (axis < 0) return kKeep;
    const auto d = static_cast<std::size_t>(axis);
    std::size_t first = a.low[d] < b.low[d] ? 0 : 1;
    const auto& lo = std::get<PadAttrs>(p[first]->attrs);
    const auto& hi = std::get<PadAttrs>(p[1 - first]->attrs);
    if (lo.low[d] + type(p[first]->inputs[0]).shape[axis] != hi.low[d]) return kKeep;
    // The parts in order, an earlier join's parts spliced in.
    std::vector<ValueId> parts;
    for (ValueId v : {p[first]->inputs[0], p[1 - first]->inputs[0]}) {
      const Node& part = node(v);
      bool joined = part.op == Op::concatenate && std::get<AxisAttrs>(part.attrs).axis == axis;
      if (joined)
        parts.insert(parts.end(), part.inputs.begin(), part.inputs.end());
      else
        parts.push_back(v);
    }
    ValueId joined = out_.add(Op::concatenate, parts, AxisAttrs{axis});
    PadAttrs attrs = lo;
    attrs.high[d] = hi.high[d];
    if (all_equal(attrs.low, 0) && all_equal(attrs.high, 0)) return joined;
    return out_.add(Op::pad, {joined, p[0]->inputs[1]}, attrs);
  }

  // A reduction without keep_axes whose only use reshapes it to the keep_axes shape
  // (what autograd writes) becomes one reduction with keep_axes, the form fusion
  // and broadcasting want. With other uses it stays: two reductions would cost more.
  ValueId keep_reduced_axes(const Node& n, const Node& src) {
    if (n.op != Op::reshape) return kKeep;
    auto operand = static_cast<std::size_t>(src.inputs[0]);
    if (!copied_[operand] || uses_[operand] != 1) return kKeep;
    const Node& inner = node(n.inputs[0]);
    std::vector<std::int64_t> kept = type(inner.inputs[0]).shape.dims();
    Attrs attrs;
    if (const auto* r = std::get_if<ReduceAttrs>(&inner.attrs); r && !r->keep_axes) {
      for (std::int64_t axis : r->axes) kept[static_cast<std::size_t>(axis)] = 1;
      attrs = ReduceAttrs{r->axes, true};
    } else if (const auto* a = std::get_if<ArgReduceAttrs>(&inner.attrs); a && !a->keep_axes) {
      kept[static_cast<std::size_t>(a->axis)] = 1;
      attrs = ArgReduceAttrs{a->axis, true};
    } else {
      return kKeep;
    }
    if (Shape(kept) != n.type.shape) return kKeep;
    return out_.add(inner.op, inner.inputs, attrs);
  }

  const Graph& in_;
  Graph out_;
  std::vector<ValueId> remap_;
  std::vector<std::int64_t> uses_;  // per value of in_: consumers, and outputs
  std::vector<bool> copied_;        // per value of in_: copied unchanged into out_
};

}  // namespace

Graph simplify(const Graph& graph) { return Simplifier(graph).run(); }

}  // namespace glia
