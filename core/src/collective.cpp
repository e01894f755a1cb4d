// The communicator registry and the all_reduce op's tracing function.
#include "glia/core/collective.hpp"

#include <map>
#include <mutex>

#include "glia/core/expr.hpp"

namespace glia {

namespace {

struct Registry {
  std::mutex mutex;
  std::int64_t next = 1;
  std::map<std::int64_t, std::weak_ptr<Communicator>> entries;
};

Registry& registry() {
  static auto* r = new Registry;  // immortal: graphs may run in static destructors
  return *r;
}

}  // namespace

std::int64_t register_communicator(std::shared_ptr<Communicator> communicator) {
  check(communicator != nullptr, "register_communicator: the communicator is null");
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (auto it = r.entries.begin(); it != r.entries.end();)
    it = it->second.expired() ? r.entries.erase(it) : std::next(it);
  std::int64_t id = r.next++;
  r.entries[id] = communicator;
  return id;
}

std::shared_ptr<Communicator> registered_communicator(std::int64_t id) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.entries.find(id);
  std::shared_ptr<Communicator> c = it == r.entries.end() ? nullptr : it->second.lock();
  check(c != nullptr, "all_reduce: communicator ", id,
        " is not registered (or was destroyed while a graph naming it still runs)");
  return c;
}

Expr all_reduce(const Expr& x, std::int64_t communicator, std::int64_t bucket) {
  check(x.defined(), "all_reduce: x is an undefined Expr");
  check(communicator > 0, "all_reduce: communicator ids start at 1 (register_communicator), got ",
        communicator);
  check(bucket >= 0, "all_reduce: the bucket must be >= 0, got ", bucket);
  Graph& g = *x.graph();
  return Expr(&g, g.add(Op::all_reduce, {x.id()}, CollectiveAttrs{communicator, bucket}));
}

}  // namespace glia
