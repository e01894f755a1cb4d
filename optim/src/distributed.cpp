// broadcast_state: rank 0's trained state on every process, after a check that every
// process holds the same entries (so a mismatch is an error everywhere, not a hang).
#include <cstring>
#include <vector>

#include "glia/core/hash.hpp"
#include "glia/optim/distributed.hpp"

namespace glia {

namespace {

// Every tensor of the state, in one order on every process (the maps are sorted).
std::vector<Tensor*> entries(TrainState& s) {
  std::vector<Tensor*> out;
  for (auto* m : {&s.model.params, &s.model.state})
    for (auto& [layer, tensors] : *m)
      for (auto& [name, t] : tensors) out.push_back(&t);
  for (auto& [name, t] : s.optimizer) out.push_back(&t);
  return out;
}

std::uint64_t layout_hash(const TrainState& s) {
  std::string text;
  for (const auto* m : {&s.model.params, &s.model.state}) {
    text += "|";
    for (const auto& [layer, tensors] : *m)
      for (const auto& [name, t] : tensors) text += cat(layer, "/", name, ":", t.type(), ";");
  }
  text += "|";
  for (const auto& [name, t] : s.optimizer) text += cat(name, ":", t.type(), ";");
  return fnv1a(kFnv1aBasis, text.data(), text.size());
}

}  // namespace

std::int64_t processes_differing(Communicator& comm, const void* data, std::int64_t bytes,
                                 int root) {
  std::vector<std::byte> roots(static_cast<std::size_t>(bytes));
  if (bytes > 0) std::memcpy(roots.data(), data, roots.size());
  comm.broadcast(roots.data(), bytes, root);
  std::int64_t differ = bytes > 0 && std::memcmp(roots.data(), data, roots.size()) != 0 ? 1 : 0;
  comm.all_reduce_sum(&differ, 1, DType::i64);
  return differ;
}

void broadcast_state(TrainState& state, Communicator& comm, int root) {
  check(root >= 0 && root < comm.size(), "broadcast_state: root ", root, " is not a rank of ",
        comm.size());
  if (comm.size() == 1) return;
  // Every process learns whether any differs from root, before bytes move.
  const std::uint64_t layout = layout_hash(state);
  const std::int64_t differ = processes_differing(comm, &layout, sizeof layout, root);
  check(differ == 0, "broadcast_state: ", differ, " process(es) hold parameters, model state or ",
        "optimizer state whose names, shapes or dtypes differ from rank ", root,
        "'s (every process must build the same model and optimizer)");
  for (Tensor* t : entries(state)) {
    if (t->device().is_host()) {
      // A tensor others hold too (a caller's copy) is not overwritten: this one gets its own.
      if (!t->unique_storage()) *t = t->clone();
      comm.broadcast(t->raw_data(), static_cast<std::int64_t>(t->nbytes()), root);
    } else {
      Tensor host = t->to_host();  // a new host copy
      comm.broadcast(host.raw_data(), static_cast<std::int64_t>(host.nbytes()), root);
      *t = host.to(t->device());
    }
  }
  std::int64_t step = state.step;
  double lr_scale = state.lr_scale;
  std::uint64_t seed = state.seed;
  comm.broadcast(&step, sizeof step, root);
  comm.broadcast(&lr_scale, sizeof lr_scale, root);
  comm.broadcast(&seed, sizeof seed, root);
  state.step = step;
  state.lr_scale = lr_scale;
  state.seed = seed;
}

}  // namespace glia
