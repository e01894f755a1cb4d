// The `cpu` lowering of fused groups (glia/compiler/fusion.hpp): each group becomes one
// kernel whose program is built here, once, at compile time. Values a later sweep needs
// (reduction results, operands read through an index map, the group's outputs) get a
// place in memory; every other value is recomputed in registers by each sweep that
// needs it, so softmax is three sweeps over its input and writes nothing but its result.
#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

#include "backends/cpu/fused_program.hpp"
#include "backends/cpu/program.hpp"
#include "glia/compiler/fusion.hpp"

namespace glia::detail::cpu {

namespace {

using namespace fused;

bool is_reduction(Op op) { return op_info(op).op_class == OpClass::reduction; }
bool is_alias(Op op) { return op == Op::reshape || op == Op::stop_gradient; }

class FusedKernel final : public Kernel {
 public:
  FusedKernel(const Graph& graph, const FusionGroup& group) : graph_(graph) {
    inputs = group.inputs;
    outputs = group.outputs;
    covered = group.nodes;
    build();
  }

  void run(RunContext& ctx) const override {
    // Small kernels bind their places on the stack: a run allocates nothing.
    constexpr std::size_t kSmall = 16;
    const std::byte* in_small[kSmall];
    std::byte* out_small[kSmall];
    std::vector<const std::byte*> in_big;
    std::vector<std::byte*> out_big;
    const std::byte** ins = in_small;
    std::byte** outs = out_small;
    if (inputs.size() > kSmall) in_big.resize(inputs.size()), ins = in_big.data();
    if (outputs.size() > kSmall) out_big.resize(outputs.size()), outs = out_big.data();
    for (std::size_t i = 0; i < inputs.size(); ++i)
      ins[i] = static_cast<const std::byte*>(ctx.values[std::size_t(inputs[i])].raw_data());
    for (std::size_t i = 0; i < outputs.size(); ++i)
      outs[i] = static_cast<std::byte*>(ctx.values[std::size_t(outputs[i])].raw_data());
    Bindings b;
    b.inputs = ins;
    b.outputs = outs;
    b.scratch = static_cast<std::byte*>(ctx.scratchpad);
#ifdef _OPENMP
    const int threads = omp_get_max_threads();
#else
    const int threads = 1;
#endif
    for (const Sweep& s : sweeps_) run_sweep(s, b, threads);
  }

  std::string describe() const override {
    std::string text = "fused[";
    if (sweeps_.size() > 1) text += cat(sweeps_.size(), " phases: ");
    for (std::size_t i = 0; i < sweeps_.size(); ++i) {
      if (i > 0) text += " | ";
      for (std::size_t j = 0; j < sweeps_[i].ops.size(); ++j)
        text += (j > 0 ? " " : "") + sweeps_[i].ops[j];
    }
    ValueId widest = outputs.front();
    for (ValueId o : outputs)
      if (graph_.type(o).shape.numel() > graph_.type(widest).shape.numel()) widest = o;
    return text + "] " + graph_.type(widest).to_string();
  }

  std::size_t scratchpad_bytes() const override { return scratch_bytes_; }

  bool in_place_ok(ValueId input, ValueId output) const override {
    auto i = std::find(inputs.begin(), inputs.end(), input) - inputs.begin();
    auto o = std::find(outputs.begin(), outputs.end(), output) - outputs.begin();
    if (i == std::ptrdiff_t(inputs.size()) || o == std::ptrdiff_t(outputs.size())) return false;
    const int stored = stored_in_[std::size_t(o)];
    return stored >= 0 && !input_viewed_[std::size_t(i)] &&
           last_read_in_[std::size_t(i)] <= stored &&
           graph_.type(input).shape.numel() == graph_.type(output).shape.numel();
  }

 private:
  const Node& node(ValueId v) const { return graph_.nodes()[std::size_t(v)]; }
  bool member(ValueId v) const { return index_.count(v) > 0; }
  void build();
  void build_sweep(std::size_t k, const std::vector<ValueId>& sinks);
  Place place_of(ValueId v) const;
  void note_input_read(const Place& p, bool identity, int sweep);

  const Graph& graph_;                      // the executable's copy, which outlives its kernels
  std::unordered_map<ValueId, int> index_;  // members
  std::vector<int> ready_;                  // by member index: the sweep computing it
  std::vector<bool> hard_;                  // by member index: kept in memory
  std::unordered_map<ValueId, std::int64_t> scratch_;
  std::vector<Sweep> sweeps_;
  std::vector<int> sweep_ready_;  // the readiness level of each sweep
  std::size_t scratch_bytes_ = 0;
  std::vector<int> stored_in_, last_read_in_;
  std::vector<bool> input_viewed_;
};

Place FusedKernel::place_of(ValueId v) const {
  auto o = std::find(outputs.begin(), outputs.end(), v);
  if (o != outputs.end()) return {Place::output, int(o - outputs.begin()), 0};
  if (!member(v)) {
    auto i = std::find(inputs.begin(), inputs.end(), v);
    return {Place::input, int(i - inputs.begin()), 0};
  }
  return {Place::scratch, 0, scratch_.at(v)};
}

void FusedKernel::note_input_read(const Place& p, bool identity, int sweep) {
  if (p.kind != Place::input) return;
  auto i = std::size_t(p.index);
  if (!identity) input_viewed_[i] = true;
  last_read_in_[i] = std::max(last_read_in_[i], sweep);
}

void FusedKernel::build() {
  for (std::size_t i = 0; i < covered.size(); ++i) index_[covered[i]] = int(i);
  const std::size_t n = covered.size();
  ready_.assign(n, 0);
  hard_.assign(n, false);
  for (ValueId o : outputs) hard_[std::size_t(index_.at(o))] = true;
  for (std::size_t i = 0; i < n; ++i) {
    const Node& nd = node(covered[i]);
    if (is_reduction(nd.op)) hard_[i] = true;
    if (reads_operand_as_view(nd.op) && member(nd.inputs[0]))
      hard_[std::size_t(index_.at(nd.inputs[0]))] = true;
  }
  // The earliest sweep each member can be computed in: one after the sweep that
  // finishes any reduction it reads or any value it reads through a view.
  for (std::size_t i = 0; i < n; ++i) {
    const Node& nd = node(covered[i]);
    int r = 0;
    for (ValueId in : nd.inputs) {
      if (!member(in)) continue;
      auto j = std::size_t(index_.at(in));
      bool later = is_reduction(node(in).op) || reads_operand_as_view(nd.op);
      r = std::max(r, ready_[j] + (later ? 1 : 0));
    }
    ready_[i] = r;
  }
  for (std::size_t i = 0; i < n; ++i) {
    ValueId v = covered[i];
    if (!hard_[i] || std::find(outputs.begin(), outputs.end(), v) != outputs.end()) continue;
    scratch_[v] = std::int64_t(scratch_bytes_);
    std::size_t bytes = std::size_t(node(v).type.shape.numel()) * dtype_size(node(v).type.dtype);
    scratch_bytes_ += (bytes + 63) / 64 * 64;
  }
  // Sweeps by (readiness, domain size), run in order of readiness.
  std::map<std::pair<int, std::int64_t>, std::vector<ValueId>> sinks;
  for (std::size_t i = 0; i < n; ++i) {
    if (!hard_[i]) continue;
    const Node& nd = node(covered[i]);
    std::int64_t domain =
        is_reduction(nd.op) ? graph_.type(nd.inputs[0]).shape.numel() : nd.type.shape.numel();
    sinks[{ready_[i], domain}].push_back(covered[i]);
  }
  stored_in_.assign(outputs.size(), -1);
  last_read_in_.assign(inputs.size(), -1);
  input_viewed_.assign(inputs.size(), false);
  for (auto& [key, list] : sinks) {
    sweeps_.emplace_back();
    sweeps_.back().numel = key.second;
    sweep_ready_.push_back(key.first);
    build_sweep(sweeps_.size() - 1, list);
  }
}

void FusedKernel::build_sweep(std::size_t k, const std::vector<ValueId>& sinks) {
  Sweep& s = sweeps_[k];
  const int level = sweep_ready_[k];
  std::unordered_map<ValueId, int> cached;
  std::vector<Instr> code, stores;
  int vregs = 0;
  auto note_op = [&](Op op) {
    std::string name(op_name(op));
    if (std::find(s.ops.begin(), s.ops.end(), name) == s.ops.end()) s.ops.push_back(name);
  };
  auto load = [&](ValueId v, const Place& p, const View& view) {
    Instr in;
    in.code = Code::load;
    in.dtype = node(v).type.dtype;
    in.place = p;
    in.view = view;
    in.dst = vregs++;
    note_input_read(p, view.identity, int(k));
    code.push_back(in);
    return in.dst;
  };
  std::function<int(ValueId)> emit = [&](ValueId v) -> int {
    if (auto c = cached.find(v); c != cached.end()) return c->second;
    const Node& nd = node(v);
    int r = -1;
    if (!member(v)) {
      r = load(v, place_of(v), contiguous(nd.type.shape));
    } else if (hard_[std::size_t(index_.at(v))] &&
               (is_reduction(nd.op) || ready_[std::size_t(index_.at(v))] < level)) {
      r = load(v, place_of(v), contiguous(nd.type.shape));
    } else if (is_alias(nd.op)) {
      r = emit(nd.inputs[0]);
      note_op(nd.op);
    } else if (reads_operand_as_view(nd.op) && nd.op != Op::random_bits) {
      note_op(nd.op);
      r = load(v, place_of(nd.inputs[0]), operand_view(nd, node(nd.inputs[0]).type.shape));
    } else {
      Instr in;
      in.op = nd.op;
      in.dtype = nd.type.dtype;
      OpClass cls = op_info(nd.op).op_class;
      if (nd.op == Op::random_bits) {
        in.code = Code::random;
        in.place = place_of(nd.inputs[0]);
        note_input_read(in.place, false, int(k));
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
      in.dst = vregs++;
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
      const auto& a = std::get<ReduceAttrs>(nd.attrs);
      Instr in;
      in.code = Code::reduce;
      in.op = nd.op;
      in.dtype = nd.type.dtype;
      in.a = emit(nd.inputs[0]);
      in.view = reduce_map(graph_.type(nd.inputs[0]).shape, a.axes);
      note_op(nd.op);
      in.reduction = int(s.reductions.size());
      s.reductions.push_back({nd.op, nd.type.dtype, nd.type.shape.numel(), place_of(v)});
      code.push_back(in);
    } else {
      Instr in;
      in.code = Code::store;
      in.dtype = nd.type.dtype;
      in.a = emit(v);
      in.place = place_of(v);
      if (in.place.kind == Place::output) stored_in_[std::size_t(in.place.index)] = int(k);
      stores.push_back(in);
    }
  }
  // Stores last: every load of a tile happens before any store, so an output may take
  // the storage of an input it reads element for element. A load read straight from
  // memory is read when used: only by the first store, before any store wrote.
  std::vector<bool> late(std::size_t(vregs), false);
  for (std::size_t i = 1; i < stores.size(); ++i) late[std::size_t(stores[i].a)] = true;
  for (Instr& in : code) {
    if (in.code != Code::load) continue;
    bool scalar = !in.view.identity;
    for (int d = 0; d < in.view.rank && scalar; ++d) scalar = in.view.strides[std::size_t(d)] == 0;
    if (scalar) in.scalar = s.scalars++;
    in.direct = in.view.identity && !late[std::size_t(in.dst)];
  }
  code.insert(code.end(), stores.begin(), stores.end());
  // Registers: each virtual register gets a physical one from its definition to its
  // last use; an instruction's result never shares a register with its operands.
  std::vector<int> last(std::size_t(vregs), -1), phys(std::size_t(vregs), -1);
  for (std::size_t i = 0; i < code.size(); ++i)
    for (int r : {code[i].a, code[i].b, code[i].c})
      if (r >= 0) last[std::size_t(r)] = int(i);
  std::vector<int> free_regs;
  int count = 0;
  for (std::size_t i = 0; i < code.size(); ++i) {
    Instr& in = code[i];
    int operands[3] = {in.a, in.b, in.c};
    if (in.dst >= 0) {
      int p;
      if (!free_regs.empty()) {
        p = free_regs.back();
        free_regs.pop_back();
      } else {
        p = count++;
      }
      phys[std::size_t(in.dst)] = p;
      in.dst = p;
    }
    for (int j = 0; j < 3; ++j) {
      int r = operands[j];
      if (r < 0) continue;
      (j == 0 ? in.a : j == 1 ? in.b : in.c) = phys[std::size_t(r)];
      if (last[std::size_t(r)] == int(i) && std::find(operands, operands + j, r) == operands + j)
        free_regs.push_back(phys[std::size_t(r)]);
    }
  }
  s.code = std::move(code);
  s.registers = count;
}

}  // namespace

void lower_fused(Lowering& lowering) {
  const Graph& g = lowering.graph();
  std::vector<bool> eligible(std::size_t(g.size()), false);
  for (std::int64_t i = 0; i < g.size(); ++i) {
    auto id = ValueId(i);
    const Node& nd = lowering.node(id);
    bool ok = !lowering.claimed(id) && fusible_op(nd.op) && nd.type.shape.rank() <= kMaxViewRank;
    for (ValueId in : nd.inputs) ok = ok && g.type(in).shape.rank() <= kMaxViewRank;
    eligible[std::size_t(i)] = ok;
  }
  std::vector<FusionGroup> groups = fusion_groups(g, eligible);
  absorb_broadcasts(g, groups);
  for (const FusionGroup& group : groups)
    if (!group.nodes.empty()) lowering.add(std::make_unique<FusedKernel>(g, group));
}

}  // namespace glia::detail::cpu
