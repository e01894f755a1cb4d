// The lowering's driver: the claim bookkeeping, the stages in order, the reference stage
// and the schedule.
#include <algorithm>
#include <queue>
#include <tuple>

#include "lowering/state.hpp"

namespace glia {

namespace lowering {

void add_unique(std::vector<ValueId>& list, ValueId v) {
  if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
}

bool is_bound(Op op) { return op == Op::parameter || op == Op::constant; }

LoweringState::LoweringState(const Graph& graph, const LoweringTarget& target)
    : graph_(graph), target_(target) {
  const auto n = static_cast<std::size_t>(graph.size());
  claimed_.assign(n, false);
  is_output_.assign(n, false);
  uses_.assign(n, 0);
  readers_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Node& node = graph.nodes()[i];
    claimed_[i] = is_bound(node.op);  // bound, never computed
    for (ValueId in : node.inputs) {
      auto& r = readers_[static_cast<std::size_t>(in)];
      if (r.empty() || r.back() != static_cast<ValueId>(i)) {
        r.push_back(static_cast<ValueId>(i));
        ++uses_[static_cast<std::size_t>(in)];
      }
    }
  }
  for (ValueId out : graph.outputs())
    if (!is_output_[static_cast<std::size_t>(out)]) {
      is_output_[static_cast<std::size_t>(out)] = true;
      ++uses_[static_cast<std::size_t>(out)];
    }
}

bool LoweringState::only_read_by(ValueId id, ValueId reader) const {
  return !claimed(id) && !is_output(id) && !is_bound(node(id).op) && uses(id) == 1 &&
         readers(id)[0] == reader;
}

bool LoweringState::offer(Kernel kernel) {
  for (ValueId id : kernel.covered)
    if (claimed(id)) return false;
  if (!target_.accepts(graph_, kernel)) return false;
  add(std::move(kernel));
  return true;
}

void LoweringState::add(Kernel kernel) {
  for (ValueId id : kernel.covered) {
    check(!claimed_[static_cast<std::size_t>(id)], "lowering: node %", id, " (",
          op_name(node(id).op), ") claimed by two kernels");
    claimed_[static_cast<std::size_t>(id)] = true;
  }
  kernels_.push_back(std::move(kernel));
}

void LoweringState::drop(const std::vector<ValueId>& ids) {
  for (ValueId id : ids) {
    check(!claimed_[static_cast<std::size_t>(id)], "lowering: node %", id, " (",
          op_name(node(id).op), ") dropped after a kernel claimed it");
    claimed_[static_cast<std::size_t>(id)] = true;
  }
}

void lower_reference(LoweringState& state) {
  const Graph& g = state.graph();
  for (std::int64_t i = 0; i < g.size(); ++i) {
    auto id = static_cast<ValueId>(i);
    if (state.claimed(id)) continue;
    const Node& n = state.node(id);
    Kernel k;
    k.spec = ReferenceSpec{id, n.op, state.target().fallback_reason(g, id)};
    for (ValueId in : n.inputs) add_unique(k.inputs, in);
    k.outputs = {id};
    k.covered = {id};
    state.add(std::move(k));
  }
}

namespace {
// Every process of a communicator must issue its collectives in one order, whatever
// kernels its shapes gave it: extra edges run one communicator's collectives in bucket
// order (a bucket's collectives, if several, in graph order). A collective, and the kernel
// packing its bucket, run as soon as they are ready (priority -1), so that the sum
// proceeds while the kernels after them compute (the rest of backward).
void order_collectives(const Graph& graph, const std::vector<Kernel>& kernels,
                       const std::vector<int>& producer, std::vector<std::vector<int>>& readers,
                       std::vector<int>& waiting, std::vector<ValueId>& first) {
  std::vector<std::tuple<std::int64_t, std::int64_t, ValueId, int>> collectives;
  for (std::size_t k = 0; k < kernels.size(); ++k)
    for (ValueId id : kernels[k].covered) {
      const Node& n = graph.node(id);
      if (n.op != Op::all_reduce) continue;
      const auto& a = std::get<CollectiveAttrs>(n.attrs);
      collectives.emplace_back(a.communicator, a.bucket, id, int(k));
      first[k] = -1;
      for (ValueId in : kernels[k].inputs)
        if (int p = producer[static_cast<std::size_t>(in)]; p >= 0) first[std::size_t(p)] = -1;
    }
  std::sort(collectives.begin(), collectives.end());
  for (std::size_t i = 1; i < collectives.size(); ++i) {
    const auto& [comm, bucket, id, k] = collectives[i];
    const auto& [prev_comm, prev_bucket, prev_id, prev_k] = collectives[i - 1];
    if (comm != prev_comm || k == prev_k) continue;
    readers[std::size_t(prev_k)].push_back(k);
    ++waiting[std::size_t(k)];
  }
}
}  // namespace

// Kahn's algorithm, earliest graph node first, so the order follows the graph where it can.
std::vector<Kernel> schedule(const Graph& graph, std::vector<Kernel> kernels) {
  const auto n = static_cast<std::size_t>(graph.size());
  std::vector<int> producer(n, -1);
  for (std::size_t k = 0; k < kernels.size(); ++k)
    for (ValueId out : kernels[k].outputs) producer[static_cast<std::size_t>(out)] = int(k);
  std::vector<std::vector<int>> readers(kernels.size());
  std::vector<int> waiting(kernels.size(), 0);
  std::vector<ValueId> first(kernels.size());
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    first[k] = *std::min_element(kernels[k].covered.begin(), kernels[k].covered.end());
    for (ValueId in : kernels[k].inputs) {
      if (is_bound(graph.nodes()[static_cast<std::size_t>(in)].op)) continue;
      int p = producer[static_cast<std::size_t>(in)];
      check(p >= 0, "lowering: kernel '", kernels[k].describe(graph), "' reads %", in,
            " which no kernel outputs");
      readers[static_cast<std::size_t>(p)].push_back(int(k));
      ++waiting[k];
    }
  }
  order_collectives(graph, kernels, producer, readers, waiting, first);
  auto later = [&](int a, int b) { return first[std::size_t(a)] > first[std::size_t(b)]; };
  std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
  for (std::size_t k = 0; k < kernels.size(); ++k)
    if (waiting[k] == 0) ready.push(int(k));
  std::vector<int> order;
  while (!ready.empty()) {
    int k = ready.top();
    ready.pop();
    order.push_back(k);
    for (int r : readers[std::size_t(k)])
      if (--waiting[std::size_t(r)] == 0) ready.push(r);
  }
  if (order.size() != kernels.size()) {
    std::string stuck;
    for (std::size_t k = 0; k < kernels.size(); ++k)
      if (waiting[k] > 0) {
        stuck += cat("\n  ", kernels[k].describe(graph), " reads");
        for (ValueId in : kernels[k].inputs) stuck += cat(" %", in);
        stuck += " writes";
        for (ValueId out : kernels[k].outputs) stuck += cat(" %", out);
      }
    throw Error(cat("lowering: the kernels of graph '", graph.name(),
                    "' depend on each other in a cycle:", stuck, "\n", to_text(graph)));
  }
  std::vector<Kernel> ordered;
  ordered.reserve(kernels.size());
  for (int k : order) ordered.push_back(std::move(kernels[std::size_t(k)]));
  return ordered;
}

}  // namespace lowering

Program lower(const Graph& graph, const LoweringTarget& target) {
  Program program;
  program.graph = graph;
  lowering::LoweringState state(program.graph, target);
  // A target that realises no spec of its own gets reference kernels alone, without the
  // stages' analyses.
  if (dynamic_cast<const ReferenceTarget*>(&target) == nullptr) {
    lowering::lower_collectives(state);
    lowering::lower_scans(state);
    lowering::lower_contractions(state);
    lowering::lower_fused(state);
    lowering::lower_direct(state);
  }
  lowering::lower_reference(state);
  program.kernels = lowering::schedule(program.graph, state.take_kernels());
  lowering::place(program);
  return program;
}

}  // namespace glia
