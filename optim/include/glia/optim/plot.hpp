// Training curves from a loop's history (LoopState::history, or a checkpoint's): an SVG
// that a browser shows, one panel per metric with its training curve and, where the run
// validated, the validation curve beside it; and CSV, one row per epoch, for other tools.
//   glia::write_history_svg("curves.svg", s.history);
//   glia::write_history_csv("history.csv", s.history);
#pragma once

#include <map>
#include <string>
#include <vector>

namespace glia {

using History = std::vector<std::map<std::string, double>>;  // per epoch: metric -> value

// The SVG text: a panel per metric name without its "validation_" prefix (loss, accuracy,
// ...), each a polyline (and a dot per epoch) per metric, its axis labelled with the
// range; epochs along x. A history without values gives a panel saying so.
std::string history_svg(const History& history, const std::string& title = "training");
// CSV: "epoch" and the metrics' names (sorted) in the header, then one row per epoch
// (epochs from 1; a metric an epoch lacks is an empty field), values with 17 digits.
std::string history_csv(const History& history);

// Both written to a temporary file beside `path` and renamed over it, so a reader never
// sees half a file; glia::Error naming the file when it cannot be written.
void write_history_svg(const std::string& path, const History& history,
                       const std::string& title = "training");
void write_history_csv(const std::string& path, const History& history);

}  // namespace glia
