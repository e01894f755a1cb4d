// What every executable shares: checking a run's inputs against the graph; and what the
// backends that place their own buffers share (src/placed_run.hpp).
#include "src/placed_run.hpp"

namespace glia {

namespace {

const Tensor& deref(const Tensor& t) { return t; }
const Tensor& deref(const Tensor* t) { return *t; }

template <class Input>
void check_inputs(const Graph& graph, std::span<const Input> inputs) {
  check(inputs.size() == graph.parameters().size(), "run: graph '", graph.name(), "' takes ",
        graph.parameters().size(), " input(s), got ", inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& input = deref(inputs[i]);
    // A graph's parameters are its values: no range check a call.
    const TensorType& want = graph.nodes()[static_cast<std::size_t>(graph.parameters()[i])].type;
    check(input.defined(), "run: graph '", graph.name(), "' input ", i, " is undefined");
    const TensorType& got = input.type();
    // Compared inline (dims are a few numbers), and the message's text only on a
    // mismatch: a call to memcmp, or building the text, costs more than a tiny run.
    bool same = got.dtype == want.dtype && got.shape.rank() == want.shape.rank();
    for (int d = 0; same && d < got.shape.rank(); ++d) same = got.shape[d] == want.shape[d];
    if (!same)
      throw Error(cat("run: graph '", graph.name(), "' input ", i, " expected ", want.to_string(),
                      ", got ", got.to_string()));
  }
}

}  // namespace

void check_run_inputs(const Graph& graph, std::span<const Tensor> inputs) {
  check_inputs<Tensor>(graph, inputs);
}
void check_run_inputs(const Graph& graph, std::span<const Tensor* const> inputs) {
  check_inputs<const Tensor*>(graph, inputs);
}

std::vector<Tensor> Executable::run_refs(std::span<const Tensor* const> inputs) const {
  std::vector<Tensor> copies;
  copies.reserve(inputs.size());
  for (const Tensor* t : inputs) copies.push_back(*t);
  return run(copies);
}

}  // namespace glia

namespace glia::detail {

namespace {

// The values the program places in output slots, by slot.
std::vector<ValueId> output_slot_values(const Program& program) {
  std::vector<ValueId> values(static_cast<std::size_t>(program.output_slots));
  for (std::size_t i = 0; i < program.placement.size(); ++i)
    if (program.placement[i].kind == Placement::Kind::output)
      values.at(std::size_t(program.placement[i].index)) = static_cast<ValueId>(i);
  return values;
}

}  // namespace

RunBinding::RunBinding(const Program& program, Device device)
    : program_(&program),
      device_(device),
      slot_values_(output_slot_values(program)),
      held_(program.graph.parameters().size()),
      donated_(program.graph.parameters().size(), 0),
      slots_(slot_values_.size()),
      buffers_(slot_values_.size() * 2),
      turn_(slot_values_.size(), 0) {}

const Tensor& RunBinding::next_buffer(std::size_t s) {
  Tensor* pair = &buffers_[s * 2];
  for (int j = 0; j < 2; ++j)
    if (pair[j].unique_storage()) return pair[j];
  Tensor& replaced = pair[turn_[s] ^= 1];
  const TensorType& type = program_->graph.nodes()[std::size_t(slot_values_[s])].type;
  replaced = Tensor::uninitialized(type.dtype, type.shape, device_);
  return replaced;
}

}  // namespace glia::detail
