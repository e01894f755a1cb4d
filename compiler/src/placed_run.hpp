// Internal to the backends that run a Program over buffers of their own (cpu, cuda):
// what binding a run takes whatever the device — the run/run_donated entry points, a pool
// of per-run workspaces, the output slots and their buffers, and the outputs collected in
// the graph's order.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "glia/compiler/backend.hpp"

namespace glia::detail {

// run() and run_donated() check the inputs and call execute(), with the given-up inputs
// as `donor` when donated (null otherwise).
class PlacedExecutable : public Executable {
 public:
  std::vector<Tensor> run(std::span<const Tensor> inputs) const final {
    check_run_inputs(program().graph, inputs);
    return execute(inputs, nullptr);
  }
  std::vector<Tensor> run_donated(std::vector<Tensor>&& inputs) const final {
    check_run_inputs(program().graph, inputs);
    std::vector<Tensor> given = std::move(inputs);
    return execute(given, &given);
  }

 protected:
  virtual std::vector<Tensor> execute(std::span<const Tensor> inputs,
                                      std::vector<Tensor>* donor) const = 0;
};

// Workspaces for concurrent runs: each run takes one (made when none is free) and gives it
// back, so runs on several threads never share scratch state.
template <class Workspace>
class WorkspacePool {
 public:
  template <class Make>
  std::unique_ptr<Workspace> take(const Make& make) const {
    {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        std::unique_ptr<Workspace> ws = std::move(free_.back());
        free_.pop_back();
        return ws;
      }
    }
    return make();
  }
  void give_back(std::unique_ptr<Workspace> ws) const {
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(ws));
  }

 private:
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<Workspace>> free_;
};

// The values the program places in output slots, by slot.
std::vector<ValueId> output_slot_values(const Program& program);

// Two buffers per output slot that no donated input takes, used in turn: when a training
// step's state comes back as the next step's input, the buffer the step before wrote is
// free again, so a warm step allocates nothing (and on a device its addresses repeat).
class OutputBuffers {
 public:
  explicit OutputBuffers(int slots = 0);
  // A buffer for `slot` nobody else holds: one of its two, or a new one on `device` in
  // place of the one replaced less recently.
  const Tensor& next(std::size_t slot, const TensorType& type, Device device);

 private:
  std::vector<Tensor> buffers_;      // two per slot
  std::vector<unsigned char> turn_;  // by slot: which of the two to replace next
};

// A run's outputs in the graph's order: the slots' tensors, inputs returned as they are
// (the held ones when donated), and constants as `constant(value id)` gives them.
template <class Constant>
std::vector<Tensor> collect_outputs(const Program& program, std::span<const Tensor> slots,
                                    std::span<const Tensor> inputs, const Constant& constant) {
  std::vector<Tensor> outputs;
  outputs.reserve(program.graph.outputs().size());
  for (ValueId out : program.graph.outputs()) {
    const Placement& p = program.placement[static_cast<std::size_t>(out)];
    if (p.kind == Placement::Kind::output)
      outputs.push_back(slots[std::size_t(p.index)]);
    else if (p.kind == Placement::Kind::input)
      outputs.push_back(inputs[std::size_t(p.index)]);
    else
      outputs.push_back(constant(out));
  }
  return outputs;
}

}  // namespace glia::detail
