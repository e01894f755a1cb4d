// The training-loop tests' own optimizer, losses, batches and trainer, written here so
// that those tests stand alone (loop_test.cpp, loop_progress_test.cpp).
#pragma once

#include <cstdio>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "glia/layers/linear.hpp"
#include "glia/optim/loop.hpp"

namespace glia::loop_testing {

inline Transformation local_sgd(double lr) {
  return {[](const ExprParamMap&) { return OptState{}; },
          [lr](const ExprParamMap& g, const OptState& s, const ExprParamMap&) {
            ExprParamMap u;
            for (const auto& [layer, m] : g)
              for (const auto& [name, e] : m) u[layer][name] = e * -lr;
            return std::pair{u, s};
          }};
}

inline Expr mse(const Expr& y, const Expr& p) { return mean(square(p - y)); }
inline Expr mean_target(const Expr& y, const Expr&) { return mean(y); }
inline Expr rows(const Expr& y, const Expr&) { return sum(y * 0.0 + 1.0); }

// `count` batches of 4 examples of y = x0 - x1, with batch k's targets shifted by k so
// per-batch values differ.
inline std::vector<Batch> make_batches(int count) {
  std::vector<Batch> out;
  for (int k = 0; k < count; ++k) {
    std::vector<float> x, y;
    for (int i = 0; i < 4; ++i) {
      float a = static_cast<float>(i) * 0.5f - 1, b = static_cast<float>(k) * 0.25f - 0.5f;
      x.insert(x.end(), {a, b});
      y.push_back(a - b + static_cast<float>(k));
    }
    out.push_back({Tensor::from<float>(x, Shape{4, 2}), Tensor::from<float>(y, Shape{4, 1})});
  }
  return out;
}

inline Model linear_model() { return dense(input("x", {-1, 2}), 1); }

inline Loop quiet_trainer(TrainerOptions o = {}) {
  o.progress = ProgressMode::off;
  return trainer(linear_model(), mse, local_sgd(0.05), o);
}

inline std::string label(Event e, const LoopState& s) {
  return std::string(event_name(e)) + " " + std::to_string(s.epoch) + ":" +
         std::to_string(s.iteration);
}

// Records every event as "name epoch:iteration".
inline void record_all(Loop& loop, std::vector<std::string>& log) {
  for (Event e :
       {Event::started, Event::epoch_started, Event::iteration_started, Event::iteration_completed,
        Event::epoch_completed, Event::epoch_halted, Event::completed})
    loop.handle(e, [&log, e](LoopState& s) {
      log.push_back(label(e, s));
      return HandlerResult::continue_;
    });
}

// The lines of `text`.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// %.4g, as the loop prints values.
inline std::string g4(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace glia::loop_testing
