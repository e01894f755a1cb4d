// The loop's events by name, its handler filters and its data sources.
#include "loop_impl.hpp"

namespace glia {

const char* event_name(Event event) {
  switch (event) {
    case Event::started:
      return "started";
    case Event::epoch_started:
      return "epoch_started";
    case Event::iteration_started:
      return "iteration_started";
    case Event::iteration_completed:
      return "iteration_completed";
    case Event::epoch_completed:
      return "epoch_completed";
    case Event::epoch_halted:
      return "epoch_halted";
    case Event::completed:
      return "completed";
  }
  return "unknown";
}

// ---- Filters and data -----------------------------------------------------------------------

Filter Filter::always() { return {Kind::always, 1}; }
Filter Filter::once(std::int64_t n) {
  check(n >= 1, "Filter::once: n counts occurrences from 1, got ", n);
  return {Kind::once, n};
}
Filter Filter::every(std::int64_t n) {
  check(n >= 1, "Filter::every: n must be >= 1, got ", n);
  return {Kind::every, n};
}
bool Filter::matches(std::int64_t occurrence) const {
  switch (kind_) {
    case Kind::always:
      return true;
    case Kind::once:
      return occurrence == n_;
    case Kind::every:
      return occurrence % n_ == 0;
  }
  return false;
}

DataSource::DataSource(std::vector<Batch> batches)
    : batches_per_epoch_(static_cast<std::int64_t>(batches.size())) {
  auto shared = std::make_shared<const std::vector<Batch>>(std::move(batches));
  epoch_ = [shared](std::int64_t) -> Reader {
    return [shared, next = std::size_t{0}]() mutable -> std::optional<Batch> {
      if (next >= shared->size()) return std::nullopt;
      return (*shared)[next++];
    };
  };
}

DataSource::DataSource(std::function<Reader(std::int64_t)> epoch, std::int64_t batches_per_epoch)
    : epoch_(std::move(epoch)), batches_per_epoch_(batches_per_epoch) {
  check(static_cast<bool>(epoch_), "DataSource: the epoch function is null");
  check(batches_per_epoch >= 0, "DataSource: batches_per_epoch must be >= 0 (0: unknown), got ",
        batches_per_epoch);
}

}  // namespace glia
