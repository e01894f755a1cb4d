// Fusion analysis: a greedy pass in graph order that puts each eligible node into the
// group of its producers when the merged group stays convex and the groups, each run as
// one kernel, still form a DAG; union-find over groups.
#include "glia/compiler/fusion.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>

namespace glia {

bool fusible_op(Op op) {
  switch (op_info(op).op_class) {
    case OpClass::unary:
    case OpClass::binary:
    case OpClass::compare:
    case OpClass::select:
    case OpClass::random:
      return true;
    case OpClass::layout:
      return op == Op::broadcast || op == Op::reshape || op == Op::transpose || op == Op::slice ||
             op == Op::reverse;
    case OpClass::reduction:
      return op != Op::argmax && op != Op::argmin;
    case OpClass::leaf:
      return op == Op::iota;
    default:
      return false;
  }
}

bool reads_operand_as_view(Op op) {
  return op == Op::broadcast || op == Op::transpose || op == Op::slice || op == Op::reverse ||
         op == Op::random_bits;
}

bool transcendental_op(Op op) {
  switch (op) {
    case Op::exp:
    case Op::expm1:
    case Op::log:
    case Op::log1p:
    case Op::tanh:
    case Op::logistic:
    case Op::erf:
    case Op::sin:
    case Op::cos:
    case Op::pow:
    case Op::atan2:
      return true;
    default:
      return false;
  }
}

namespace {

class Grouper {
 public:
  Grouper(const Graph& g, const std::vector<bool>& eligible, const ReadsOperand& reads)
      : g_(g),
        eligible_(eligible),
        reads_(reads),
        n_(static_cast<std::size_t>(g.size())),
        group_(n_, -1),
        parent_(n_),
        seen_(n_, 0),
        members_(n_),
        lo_(n_, 0),
        hi_(n_, 0) {
    std::iota(parent_.begin(), parent_.end(), 0);
  }

  std::vector<FusionGroup> run() {
    for (std::size_t i = 0; i < n_; ++i) visit(static_cast<ValueId>(i));
    return collect();
  }

 private:
  int find(int x) {
    while (parent_[std::size_t(x)] != x)
      x = parent_[std::size_t(x)] = parent_[std::size_t(parent_[std::size_t(x)])];
    return x;
  }
  const Node& node(ValueId v) const { return g_.nodes()[std::size_t(v)]; }
  bool fusible(ValueId v) const { return eligible_[std::size_t(v)] && fusible_op(node(v).op); }
  int group_of(ValueId v) { return group_[std::size_t(v)] < 0 ? -1 : find(group_[std::size_t(v)]); }

  // The oldest node from which a search may still reach a member of `set` (roots). Node
  // ids are topological, but a group runs as one kernel: from any member a search goes on
  // to every operand of the group, which may be younger than the member it entered by.
  // So the bound starts at the set's oldest member and moves down to the oldest member of
  // every other group that spans it, until none does: from a node older than the bound,
  // inputs and group jumps alike stay older than it.
  ValueId search_bound(const std::vector<int>& set) {
    ValueId low = std::numeric_limits<ValueId>::max();
    for (int gr : set) low = std::min(low, lo_[std::size_t(gr)]);
    std::erase_if(roots_, [this](int r) { return find(r) != r; });  // merged since
    for (bool moved = true; moved;) {
      moved = false;
      for (int r : roots_) {
        if (hi_[std::size_t(r)] >= low && lo_[std::size_t(r)] < low) {
          low = lo_[std::size_t(r)];
          moved = true;
        }
      }
    }
    return low;
  }

  // Whether v depends on any group in `set` (roots) once groups run as single kernels:
  // a node of another group depends on every operand of its group, so two groups that
  // are each convex can still not feed each other both ways. Nodes older than `low`
  // (search_bound) are never searched.
  bool depends_on(ValueId v, const std::vector<int>& set, ValueId low) {
    ++stamp_;
    stack_.assign(1, v);
    while (!stack_.empty()) {
      ValueId x = stack_.back();
      stack_.pop_back();
      if (x < low || seen_[std::size_t(x)] == stamp_) continue;
      seen_[std::size_t(x)] = stamp_;
      int gx = group_of(x);
      if (gx < 0) {
        for (ValueId o : node(x).inputs) stack_.push_back(o);
        continue;
      }
      if (std::find(set.begin(), set.end(), gx) != set.end()) return true;
      for (ValueId m : members_[std::size_t(gx)]) {
        seen_[std::size_t(m)] = stamp_;
        for (ValueId o : node(m).inputs) stack_.push_back(o);
      }
    }
    return false;
  }

  // Merging `set` (group roots) with the new node n keeps every path between members
  // inside: no operand outside the merged set depends on a member.
  bool convex(ValueId n, const std::vector<int>& set) {
    const ValueId low = search_bound(set);
    auto outside_reads_ok = [&](ValueId m) {
      for (ValueId o : node(m).inputs) {
        int go = group_of(o);
        if (go >= 0 && std::find(set.begin(), set.end(), go) != set.end()) continue;
        if (depends_on(o, set, low)) return false;
      }
      return true;
    };
    if (!outside_reads_ok(n)) return false;
    for (int gr : set)
      for (ValueId m : members_[std::size_t(gr)])
        if (!outside_reads_ok(m)) return false;
    return true;
  }

  // Operand groups n may join.
  std::vector<int> candidates(ValueId n) {
    const Node& nd = node(n);
    std::vector<int> c;
    if (nd.op == Op::transpose || nd.op == Op::slice || nd.op == Op::reverse) return c;
    for (ValueId o : nd.inputs) {
      int go = group_of(o);
      if (go < 0) continue;
      if (nd.op == Op::broadcast && node(o).type.shape.numel() >= nd.type.shape.numel()) continue;
      if (std::find(c.begin(), c.end(), go) == c.end()) c.push_back(go);
    }
    return c;
  }

  void visit(ValueId n) {
    if (!fusible(n)) return;
    std::vector<int> c = candidates(n);
    std::vector<int> chosen;
    if (!c.empty() && convex(n, c)) {
      chosen = c;
    } else {
      for (int gr : c)
        if (convex(n, {gr})) {
          chosen = {gr};
          break;
        }
    }
    int root = static_cast<int>(n);
    members_[std::size_t(root)].push_back(n);
    lo_[std::size_t(root)] = hi_[std::size_t(root)] = n;
    roots_.push_back(root);
    for (int gr : chosen) {
      lo_[std::size_t(root)] = std::min(lo_[std::size_t(root)], lo_[std::size_t(gr)]);
      parent_[std::size_t(gr)] = root;
      auto& m = members_[std::size_t(gr)];
      members_[std::size_t(root)].insert(members_[std::size_t(root)].end(), m.begin(), m.end());
      m.clear();
    }
    group_[std::size_t(n)] = root;
  }

  std::vector<FusionGroup> collect() {
    std::vector<int> index(n_, -1);
    std::vector<FusionGroup> groups;
    std::vector<bool> is_output(n_, false);
    for (ValueId o : g_.outputs()) is_output[std::size_t(o)] = true;
    for (std::size_t i = 0; i < n_; ++i) {
      int gr = group_of(ValueId(i));
      if (gr < 0) continue;
      if (index[std::size_t(gr)] < 0) {
        index[std::size_t(gr)] = int(groups.size());
        groups.emplace_back();
      }
      groups[std::size_t(index[std::size_t(gr)])].nodes.push_back(ValueId(i));
    }
    std::vector<bool> read_outside(n_, false);
    for (std::size_t i = 0; i < n_; ++i) {
      int gi = group_of(ValueId(i));
      for (ValueId o : node(ValueId(i)).inputs) {
        int go = group_of(o);
        if (gi < 0 && reads_ && !reads_(ValueId(i), o)) continue;
        if (go >= 0 && go != gi) read_outside[std::size_t(o)] = true;
        if (gi >= 0 && go != gi) {
          auto& in = groups[std::size_t(index[std::size_t(gi)])].inputs;
          if (std::find(in.begin(), in.end(), o) == in.end()) in.push_back(o);
        }
      }
    }
    for (auto& gr : groups)
      for (ValueId v : gr.nodes)
        if (read_outside[std::size_t(v)] || is_output[std::size_t(v)]) gr.outputs.push_back(v);
    return groups;
  }

  const Graph& g_;
  const std::vector<bool>& eligible_;
  const ReadsOperand& reads_;
  std::size_t n_;
  std::vector<int> group_, parent_;
  std::vector<std::uint64_t> seen_;  // == stamp_: visited by the current search
  std::uint64_t stamp_ = 0;
  std::vector<ValueId> stack_;
  std::vector<std::vector<ValueId>> members_;
  std::vector<ValueId> lo_, hi_;  // a group's oldest and youngest member, by root
  std::vector<int> roots_;        // every group made; merged ones are skipped
};

}  // namespace

std::vector<FusionGroup> fusion_groups(const Graph& graph, const std::vector<bool>& eligible,
                                       const ReadsOperand& reads) {
  check(eligible.size() == static_cast<std::size_t>(graph.size()), "fusion_groups: graph '",
        graph.name(), "' has ", graph.size(), " nodes, eligible has ", eligible.size());
  return Grouper(graph, eligible, reads).run();
}

void absorb_broadcasts(const Graph& g, std::vector<FusionGroup>& groups,
                       const ReadsOperand& reads) {
  const auto n = std::size_t(g.size());
  std::vector<int> group_of(n, -1);
  for (std::size_t k = 0; k < groups.size(); ++k)
    for (ValueId v : groups[k].nodes) group_of[std::size_t(v)] = int(k);
  std::vector<std::vector<ValueId>> users(n);
  for (std::size_t i = 0; i < n; ++i)
    for (ValueId in : g.nodes()[i].inputs)
      if (group_of[i] >= 0 || !reads || reads(ValueId(i), in))
        users[std::size_t(in)].push_back(ValueId(i));
  std::vector<bool> returned(n, false);
  for (ValueId o : g.outputs()) returned[std::size_t(o)] = true;
  auto erase = [](std::vector<ValueId>& list, ValueId v) {
    list.erase(std::remove(list.begin(), list.end(), v), list.end());
  };
  auto has = [](const std::vector<ValueId>& list, ValueId v) {
    return std::find(list.begin(), list.end(), v) != list.end();
  };
  for (std::size_t p = 0; p < groups.size(); ++p) {
    const std::vector<ValueId> outs = groups[p].outputs;
    for (ValueId b : outs) {
      const Node& nd = g.nodes()[std::size_t(b)];
      if (nd.op != Op::broadcast || returned[std::size_t(b)] || users[std::size_t(b)].empty())
        continue;
      int c = -1;
      bool ok = true;
      for (ValueId u : users[std::size_t(b)]) {
        int gu = group_of[std::size_t(u)];
        if (gu < 0 || gu == int(p) || (c >= 0 && gu != c)) ok = false;
        c = gu;
      }
      if (!ok) continue;
      FusionGroup& from = groups[p];
      FusionGroup& to = groups[std::size_t(c)];
      const ValueId x = nd.inputs[0];
      erase(from.nodes, b);
      erase(from.outputs, b);
      if (group_of[std::size_t(x)] == int(p)) {
        if (!has(from.outputs, x)) from.outputs.push_back(x);
      } else {
        bool read = false;
        for (ValueId v : from.nodes) read = read || has(g.nodes()[std::size_t(v)].inputs, x);
        if (!read) erase(from.inputs, x);
      }
      to.nodes.insert(std::lower_bound(to.nodes.begin(), to.nodes.end(), b), b);
      group_of[std::size_t(b)] = c;
      if (has(to.inputs, x))
        erase(to.inputs, b);
      else
        std::replace(to.inputs.begin(), to.inputs.end(), b, x);
    }
  }
}

}  // namespace glia
