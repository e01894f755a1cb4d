// Internal to the backends that run a Program over buffers of their own (cpu, cuda):
// what binding a run takes whatever the device — the run/run_donated entry points, a pool
// of per-run workspaces, and a run's binding of its inputs and outputs.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "glia/compiler/backend.hpp"

namespace glia::detail {

// The addresses of `inputs`, in a buffer on the stack where they are few.
class InputRefs {
 public:
  explicit InputRefs(std::span<const Tensor> inputs) {
    const Tensor** refs = few_;
    if (inputs.size() > kFew) {
      many_.resize(inputs.size());
      refs = many_.data();
    }
    for (std::size_t i = 0; i < inputs.size(); ++i) refs[i] = &inputs[i];
    refs_ = {refs, inputs.size()};
  }
  InputRefs(const InputRefs&) = delete;
  InputRefs& operator=(const InputRefs&) = delete;
  std::span<const Tensor* const> get() const { return refs_; }

 private:
  static constexpr std::size_t kFew = 16;
  const Tensor* few_[kFew];
  std::vector<const Tensor*> many_;
  std::span<const Tensor* const> refs_;
};

// run(), run_refs() and run_donated() check the inputs and call execute(), with the
// given-up inputs as `donor` when donated (null otherwise).
class PlacedExecutable : public Executable {
 public:
  std::vector<Tensor> run(std::span<const Tensor> inputs) const final {
    InputRefs refs(inputs);
    return run_refs(refs.get());
  }
  std::vector<Tensor> run_refs(std::span<const Tensor* const> inputs) const final {
    check_run_inputs(program().graph, inputs);
    return execute(inputs, nullptr);
  }
  std::vector<Tensor> run_donated(std::vector<Tensor>&& inputs) const final {
    check_run_inputs(program().graph, inputs);
    std::vector<Tensor> given = std::move(inputs);
    InputRefs refs(given);
    return execute(refs.get(), &given);
  }

 protected:
  virtual std::vector<Tensor> execute(std::span<const Tensor* const> inputs,
                                      std::vector<Tensor>* donor) const = 0;
};

// Workspaces for concurrent runs: each run takes one (made when none is free) and gives it
// back, so runs on several threads never share scratch state. One waits in an atomic slot
// (a run on one thread at a time takes it back without a lock), the rest in a list.
template <class Workspace>
class WorkspacePool {
 public:
  WorkspacePool() = default;
  WorkspacePool(const WorkspacePool&) = delete;
  WorkspacePool& operator=(const WorkspacePool&) = delete;
  ~WorkspacePool() { delete slot_.load(std::memory_order_acquire); }

  template <class Make>
  std::unique_ptr<Workspace> take(const Make& make) const {
    if (Workspace* ws = slot_.exchange(nullptr, std::memory_order_acquire))
      return std::unique_ptr<Workspace>(ws);
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
    Workspace* empty = nullptr;
    if (slot_.compare_exchange_strong(empty, ws.get(), std::memory_order_release,
                                      std::memory_order_relaxed)) {
      ws.release();
      return;
    }
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(ws));
  }

 private:
  mutable std::atomic<Workspace*> slot_{nullptr};
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<Workspace>> free_;
};

// A workspace's binding of one run's inputs and outputs. A donating run holds its inputs
// and may write over those nobody else holds (on the executable's device). Each output
// slot takes a donated input's storage where the placement allows, else one of two
// buffers of its own used in turn: when a training step's state comes back as the next
// step's input, the buffer the step before wrote is free again, so a warm step allocates
// nothing (and on a device its addresses repeat).
class RunBinding {
 public:
  RunBinding() = default;
  RunBinding(const Program& program, Device device);

  // Input i as the run reads it: the caller's tensor, or the donor's, held until release().
  const Tensor& input(std::size_t i, std::span<const Tensor* const> inputs,
                      std::vector<Tensor>* donor) {
    if (donor == nullptr) return *inputs[i];
    held_[i] = std::move((*donor)[i]);
    donated_[i] = held_[i].device() == device_ && held_[i].unique_storage();
    return held_[i];
  }
  // The tensor output slot s writes (after every input is bound). Copying it into slots_
  // is also what orders the last reads of a holder that let it go on another thread
  // before the kernels write it: use_count() (unique_storage) is a relaxed load and orders
  // nothing, but libstdc++ counts references with acq_rel read-modify-writes, so this
  // copy's increment acquires that holder's decrement (tests/concurrency/storage_reuse).
  const Tensor& output(std::size_t s, bool donating) {
    const Placement& p = program_->placement[static_cast<std::size_t>(slot_values_[s])];
    if (donating && p.donor >= 0 && donated_[std::size_t(p.donor)])
      return slots_[s] = held_[std::size_t(p.donor)];
    return slots_[s] = next_buffer(s);
  }
  ValueId slot_value(std::size_t s) const { return slot_values_[s]; }
  std::size_t slots() const { return slot_values_.size(); }
  // The run's outputs in the graph's order: the slots' tensors, inputs returned as they
  // are (the held ones when donated), and constants as `constant(value id)` gives them.
  template <class Constant>
  std::vector<Tensor> outputs(std::span<const Tensor* const> inputs, bool donating,
                              const Constant& constant) const {
    std::vector<Tensor> out;
    out.reserve(program_->graph.outputs().size());
    for (ValueId v : program_->graph.outputs()) {
      const Placement& p = program_->placement[static_cast<std::size_t>(v)];
      if (p.kind == Placement::Kind::output)
        out.push_back(slots_[std::size_t(p.index)]);
      else if (p.kind == Placement::Kind::input)
        out.push_back(donating ? held_[std::size_t(p.index)] : *inputs[std::size_t(p.index)]);
      else
        out.push_back(constant(v));
    }
    return out;
  }
  // Lets go of the run's inputs and outputs, so the workspace holds no caller's tensor.
  // Copying an undefined tensor in keeps each slot's shape storage for the next run.
  void release() {
    static const Tensor none;
    for (Tensor& t : held_) t = none;
    for (Tensor& t : slots_) t = none;
  }

 private:
  // One of slot s's two buffers nobody else holds, or a new one in place of the one
  // replaced less recently.
  const Tensor& next_buffer(std::size_t s);

  const Program* program_ = nullptr;
  Device device_;
  std::vector<ValueId> slot_values_;    // by output slot
  std::vector<Tensor> held_;            // by input: a donating run's inputs
  std::vector<unsigned char> donated_;  // by input: this run may write over it
  std::vector<Tensor> slots_;           // by output slot: this run's tensor
  std::vector<Tensor> buffers_;         // two per output slot
  std::vector<unsigned char> turn_;     // by slot: which of the two to replace next
};

}  // namespace glia::detail
