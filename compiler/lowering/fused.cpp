// Fused groups (passes/fusion.hpp) as FusedSpecs. Values a later sweep needs (reduction
// results, operands read through an index map, the group's outputs) are kept in memory;
// every other value is recomputed in registers by each sweep that needs it, so softmax is
// three sweeps over its input and writes nothing but its result.
#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

#include "glia/compiler/fusion.hpp"
#include "lowering/fused_views.hpp"
#include "lowering/state.hpp"

namespace glia::lowering {

namespace {

using Code = FusedSpec::Code;
using Instr = FusedSpec::Instr;

bool is_reduction(Op op) { return op_info(op).op_class == OpClass::reduction; }
bool is_alias(Op op) { return op == Op::reshape || op == Op::stop_gradient; }

class FusedBuilder {
 public:
  FusedBuilder(const Graph& graph, const LoweringTarget& target, const FusionGroup& group)
      : graph_(graph), target_(target), group_(group) {}
  Kernel build();

 private:
  const Node& node(ValueId v) const { return graph_.nodes()[std::size_t(v)]; }
  bool member(ValueId v) const { return index_.count(v) > 0; }
  bool is_output(ValueId v) const {
    return std::find(group_.outputs.begin(), group_.outputs.end(), v) != group_.outputs.end();
  }
  // The domain of the sweep that computes v: a reduction's input, else v itself.
  std::int64_t domain(ValueId v) const {
    const Node& nd = node(v);
    return is_reduction(nd.op) ? graph_.type(nd.inputs[0]).shape.numel() : nd.type.shape.numel();
  }
  void keep_costly_values();
  void build_sweep(FusedSpec::Sweep& s, int level, const std::vector<ValueId>& sinks);
  void find_in_place(Kernel& k) const;

  const Graph& graph_;
  const LoweringTarget& target_;
  const FusionGroup& group_;
  std::unordered_map<ValueId, int> index_;  // members
  std::vector<int> ready_;                  // by member index: the sweep level computing it
  std::vector<bool> hard_;                  // by member index: kept in memory
  FusedSpec spec_;
};

Kernel FusedBuilder::build() {
  const std::vector<ValueId>& nodes = group_.nodes;
  for (std::size_t i = 0; i < nodes.size(); ++i) index_[nodes[i]] = int(i);
  const std::size_t n = nodes.size();
  ready_.assign(n, 0);
  hard_.assign(n, false);
  for (ValueId o : group_.outputs) hard_[std::size_t(index_.at(o))] = true;
  for (std::size_t i = 0; i < n; ++i) {
    const Node& nd = node(nodes[i]);
    if (is_reduction(nd.op)) hard_[i] = true;
    if (reads_operand_as_view(nd.op) && member(nd.inputs[0]))
      hard_[std::size_t(index_.at(nd.inputs[0]))] = true;
  }
  // The earliest sweep each member can be computed in: one after the sweep that finishes
  // any reduction it reads or any value it reads through a view. Sweeps of one level run
  // in order of their domain's size, so a value read through a view that its level's
  // sweep of a smaller domain stores is ready in that level (Adam's bias corrections, a
  // scalar, broadcast over the moments: one sweep over each parameter, not two).
  for (std::size_t i = 0; i < n; ++i) {
    const Node& nd = node(nodes[i]);
    int r = 0;
    for (ValueId in : nd.inputs) {
      if (!member(in)) continue;
      auto j = std::size_t(index_.at(in));
      bool later = is_reduction(node(in).op) ||
                   (reads_operand_as_view(nd.op) && domain(in) >= nd.type.shape.numel());
      r = std::max(r, ready_[j] + (later ? 1 : 0));
    }
    ready_[i] = r;
  }
  if (target_.stores_costly_values()) keep_costly_values();
  Kernel k;
  k.inputs = group_.inputs;
  k.outputs = group_.outputs;
  k.covered = nodes;
  for (std::size_t i = 0; i < n; ++i)
    if (hard_[i] && !is_output(nodes[i])) k.temporaries.push_back(nodes[i]);
  // Sweeps by (readiness, domain size), run in that order.
  std::map<std::pair<int, std::int64_t>, std::vector<ValueId>> sinks;
  for (std::size_t i = 0; i < n; ++i)
    if (hard_[i]) sinks[{ready_[i], domain(nodes[i])}].push_back(nodes[i]);
  for (auto& [key, list] : sinks) {
    spec_.sweeps.emplace_back();
    spec_.sweeps.back().numel = key.second;
    build_sweep(spec_.sweeps.back(), key.first, list);
  }
  k.spec = std::move(spec_);
  find_in_place(k);
  return k;
}

// A transcendental value that a later sweep reads (softmax's exponentials, read by the sum
// and again by the division) is stored by the sweep that computes it and loaded by the
// later one, rather than computed again there: a store and a load of each element cost
// less than a vector-library call.
void FusedBuilder::keep_costly_values() {
  const std::vector<ValueId>& nodes = group_.nodes;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const Node& nd = node(nodes[i]);
    for (ValueId in : nd.inputs) {
      if (!member(in)) continue;
      auto j = std::size_t(index_.at(in));
      if (!hard_[j] && transcendental_op(node(in).op) && ready_[j] < ready_[i]) hard_[j] = true;
    }
  }
}

void FusedBuilder::build_sweep(FusedSpec::Sweep& s, int level, const std::vector<ValueId>& sinks) {
  std::unordered_map<ValueId, int> cached;
  std::vector<Instr> code, stores;
  auto note_op = [&](Op op) {
    std::string name(op_name(op));
    if (std::find(s.ops.begin(), s.ops.end(), name) == s.ops.end()) s.ops.push_back(name);
  };
  auto load = [&](ValueId value, FusedSpec::View view, DType dtype) {
    Instr in;
    in.code = Code::load;
    in.dtype = dtype;
    in.value = value;
    in.view = std::move(view);
    in.dst = s.registers++;
    code.push_back(std::move(in));
    return code.back().dst;
  };
  std::function<int(ValueId)> emit = [&](ValueId v) -> int {
    if (auto c = cached.find(v); c != cached.end()) return c->second;
    const Node& nd = node(v);
    int r = -1;
    if (!member(v) || (hard_[std::size_t(index_.at(v))] &&
                       (is_reduction(nd.op) || ready_[std::size_t(index_.at(v))] < level))) {
      r = load(v, contiguous_view(nd.type.shape), nd.type.dtype);
    } else if (is_alias(nd.op)) {
      r = emit(nd.inputs[0]);
      note_op(nd.op);
    } else if (reads_operand_as_view(nd.op) && nd.op != Op::random_bits) {
      note_op(nd.op);
      r = load(nd.inputs[0], operand_view(nd, node(nd.inputs[0]).type.shape), nd.type.dtype);
    } else {
      Instr in;
      in.op = nd.op;
      in.dtype = nd.type.dtype;
      OpClass cls = op_info(nd.op).op_class;
      if (nd.op == Op::random_bits) {
        in.code = Code::random;
        in.value = nd.inputs[0];
      } else if (nd.op == Op::iota) {
        const auto& a = std::get<IotaAttrs>(nd.attrs);
        in.code = Code::iota;
        if (a.shape.rank() > 0) {
          in.iota_dim = a.shape[int(a.axis)];
          in.iota_stride = a.shape.strides()[std::size_t(a.axis)];
        }
      } else if (nd.op == Op::cast) {
        in.code = Code::cast;
        in.src_dtype = node(nd.inputs[0]).type.dtype;
        in.a = emit(nd.inputs[0]);
      } else if (cls == OpClass::unary) {
        in.code = Code::unary;
        in.a = emit(nd.inputs[0]);
      } else if (cls == OpClass::binary) {
        in.code = Code::binary;
        in.a = emit(nd.inputs[0]);
        in.b = emit(nd.inputs[1]);
      } else if (cls == OpClass::compare) {
        in.code = Code::compare;
        in.src_dtype = node(nd.inputs[0]).type.dtype;
        in.a = emit(nd.inputs[0]);
        in.b = emit(nd.inputs[1]);
      } else {
        check(nd.op == Op::select, "fused kernel: cannot compute ", op_name(nd.op), " in a sweep");
        in.code = Code::select;
        in.a = emit(nd.inputs[0]);
        in.b = emit(nd.inputs[1]);
        in.c = emit(nd.inputs[2]);
      }
      in.dst = s.registers++;
      code.push_back(in);
      note_op(nd.op);
      r = in.dst;
    }
    cached[v] = r;
    return r;
  };
  for (ValueId v : sinks) {
    const Node& nd = node(v);
    if (is_reduction(nd.op)) {
      Instr in;
      in.code = Code::reduce;
      in.op = nd.op;
      in.dtype = nd.type.dtype;
      in.a = emit(nd.inputs[0]);
      note_op(nd.op);
      in.reduction = int(s.reductions.size());
      s.reductions.push_back(
          {nd.op, nd.type.dtype, v, nd.type.shape.numel(),
           reduce_extents(graph_.type(nd.inputs[0]).shape, std::get<ReduceAttrs>(nd.attrs).axes)});
      code.push_back(in);
    } else {
      Instr in;
      in.code = Code::store;
      in.dtype = nd.type.dtype;
      in.a = emit(v);
      in.value = v;
      stores.push_back(in);
    }
  }
  // Stores last: every load of an element happens before any store, so an output may
  // take the storage of an input it reads element for element.
  code.insert(code.end(), stores.begin(), stores.end());
  s.code = std::move(code);
}

// (input, output) pairs of one type where the input is read element for element (never
// through a view) in sweeps no later than the one that stores the output.
void FusedBuilder::find_in_place(Kernel& k) const {
  const auto& spec = std::get<FusedSpec>(k.spec);
  std::unordered_map<ValueId, int> last_read, stored;
  std::unordered_map<ValueId, bool> viewed;
  for (std::size_t s = 0; s < spec.sweeps.size(); ++s)
    for (const Instr& in : spec.sweeps[s].code) {
      if (in.code == Code::load || in.code == Code::random) {
        last_read[in.value] = int(s);
        if (in.code == Code::random || !in.view.identity()) viewed[in.value] = true;
      } else if (in.code == Code::store) {
        stored[in.value] = int(s);
      }
    }
  for (ValueId input : k.inputs) {
    if (viewed[input] || !last_read.count(input)) continue;
    for (ValueId output : k.outputs) {
      auto at = stored.find(output);
      if (at != stored.end() && last_read[input] <= at->second &&
          graph_.type(input) == graph_.type(output))
        k.in_place.emplace_back(input, output);
    }
  }
}

}  // namespace

void lower_fused(LoweringState& state) {
  const Graph& g = state.graph();
  std::vector<bool> eligible(std::size_t(g.size()), false);
  for (std::int64_t i = 0; i < g.size(); ++i) {
    auto id = ValueId(i);
    eligible[std::size_t(i)] = !state.claimed(id) && fusible_op(state.node(id).op);
  }
  // A node a kernel of an earlier stage covers reads only what that kernel reads (or
  // computes itself): a convolution's relu epilogue reads no zeros.
  std::vector<const Kernel*> claimed_by(std::size_t(g.size()), nullptr);
  for (const Kernel& k : state.kernels())
    for (ValueId c : k.covered) claimed_by[std::size_t(c)] = &k;
  auto reads = [&](ValueId reader, ValueId operand) {
    const Kernel* k = claimed_by[std::size_t(reader)];
    auto in = [operand](const std::vector<ValueId>& list) {
      return std::find(list.begin(), list.end(), operand) != list.end();
    };
    return k == nullptr || in(k->inputs) || in(k->covered);
  };
  std::vector<FusionGroup> groups = fusion_groups(g, eligible, reads);
  absorb_broadcasts(g, groups, reads);
  for (const FusionGroup& group : groups) {
    if (group.nodes.empty()) continue;
    if (group.outputs.empty())
      state.drop(group.nodes);  // read only by nodes whose kernels do not read them
    else
      state.offer(FusedBuilder(g, state.target(), group).build());
  }
}

}  // namespace glia::lowering
