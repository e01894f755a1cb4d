// Internal to the lowering: which node each kernel claimed, who reads which value, and
// the matchers of each stage. Every matcher builds a Kernel and offers it through
// LoweringState::offer, which asks the target and claims the kernel's nodes.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "glia/compiler/lowering.hpp"

namespace glia::lowering {

class LoweringState {
 public:
  LoweringState(const Graph& graph, const LoweringTarget& target);
  const Graph& graph() const { return graph_; }
  const LoweringTarget& target() const { return target_; }
  const Node& node(ValueId id) const { return graph_.nodes()[static_cast<std::size_t>(id)]; }
  bool claimed(ValueId id) const { return claimed_[static_cast<std::size_t>(id)]; }
  // Readers of a value, each reading node counted once, plus one if it is a graph output.
  int uses(ValueId id) const { return uses_[static_cast<std::size_t>(id)]; }
  // The nodes that read `id`, in graph order (each once).
  const std::vector<ValueId>& readers(ValueId id) const {
    return readers_[static_cast<std::size_t>(id)];
  }
  bool is_output(ValueId id) const { return is_output_[static_cast<std::size_t>(id)]; }
  // Whether `id` may be covered by a kernel that also covers `reader`: computed, unclaimed,
  // not returned, and read by `reader` alone.
  bool only_read_by(ValueId id, ValueId reader) const;
  // Asks the target; if it accepts, claims the kernel's covered nodes (glia::Error if one is
  // claimed already) and keeps the kernel.
  bool offer(Kernel kernel);
  // Claims without asking: the reference kernels, which every backend runs.
  void add(Kernel kernel);
  // Claims values that no kernel reads, computing them nowhere (the zeros a convolution's
  // relu epilogue was the maximum with, once their other readers are covered too).
  void drop(const std::vector<ValueId>& ids);
  const std::vector<Kernel>& kernels() const { return kernels_; }
  std::vector<Kernel> take_kernels() { return std::move(kernels_); }

 private:
  const Graph& graph_;
  const LoweringTarget& target_;
  std::vector<bool> claimed_, is_output_;
  std::vector<int> uses_;
  std::vector<std::vector<ValueId>> readers_;
  std::vector<Kernel> kernels_;
};

// Appends v to `list` unless it is there.
void add_unique(std::vector<ValueId>& list, ValueId v);
bool is_bound(Op op);  // parameters and constants: never computed by a kernel

// The stages, in order (each claims only unclaimed nodes).
void lower_scans(LoweringState& state);         // loops, each as one kernel
void lower_contractions(LoweringState& state);  // matmul, convolution, pooling
void lower_fused(LoweringState& state);         // fused element-wise/reduction groups
void lower_direct(LoweringState& state);        // window_sum, gather, ..., argmax/argmin
void lower_collectives(LoweringState& state);   // all_reduce, where the target sums in place
void lower_reference(LoweringState& state);     // every node left

// The kernels in an order that runs every producer before its readers (earliest graph
// node first); glia::Error naming the kernels when they wait on each other in a cycle.
std::vector<Kernel> schedule(const Graph& graph, std::vector<Kernel> kernels);
// Placement and the memory plan of scheduled kernels, arena offsets multiples of
// `alignment`.
void place(Program& program, std::int64_t alignment = kArenaAlignment);

}  // namespace glia::lowering
