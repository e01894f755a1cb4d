// The loop's progress display: one line redrawn with '\r' on a terminal
// ("Epoch 1/5 [=====>    ] 937/1875 loss 0.2345 1234 samples/s ETA 00:12"), plain lines
// every 10% of an epoch elsewhere (CI logs, pipes), and an end-of-epoch line in both.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "loop_impl.hpp"

namespace glia {

namespace {

constexpr int kBarWidth = 30;
constexpr double kRedrawSeconds = 0.1;
constexpr std::int64_t kUnknownLengthEvery = 100;  // lines mode, epochs of unknown length

std::string duration_text(double seconds) {
  auto total = static_cast<std::int64_t>(std::llround(std::max(seconds, 0.0)));
  char buf[32];
  if (total >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(total / 3600),
                  static_cast<long long>(total / 60 % 60), static_cast<long long>(total % 60));
  else
    std::snprintf(buf, sizeof buf, "%02lld:%02lld", static_cast<long long>(total / 60),
                  static_cast<long long>(total % 60));
  return buf;
}

std::string bar_text(std::int64_t done, std::int64_t total) {
  auto filled = static_cast<int>(done * kBarWidth / total);
  std::string bar(static_cast<std::size_t>(kBarWidth), ' ');
  for (int i = 0; i < filled; ++i) bar[static_cast<std::size_t>(i)] = '=';
  if (done < total) bar[static_cast<std::size_t>(std::max(filled - 1, 0))] = '>';
  return "[" + bar + "]";
}

bool is_validation(const std::string& name) { return name.rfind("validation_", 0) == 0; }

}  // namespace

std::string number_text(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", value);
  return buf;
}

std::string metrics_text(const std::map<std::string, double>& metrics) {
  std::string out;
  auto add = [&](const std::string& name, double v) {
    out += (out.empty() ? "" : " ") + name + " " + number_text(v);
  };
  if (auto it = metrics.find("loss"); it != metrics.end()) add(it->first, it->second);
  for (const auto& [name, v] : metrics)
    if (name != "loss" && !is_validation(name)) add(name, v);
  if (auto it = metrics.find("validation_loss"); it != metrics.end()) add(it->first, it->second);
  for (const auto& [name, v] : metrics)
    if (name != "validation_loss" && is_validation(name)) add(name, v);
  return out;
}

Progress::Progress(std::ostream* output, ProgressMode mode)
    : out_(output != nullptr ? output : &std::cout), mode_(mode) {
  if (mode_ != ProgressMode::automatic) return;
  const char* ci = std::getenv("CI");
  bool terminal = out_ == &std::cout && isatty(fileno(stdout)) != 0 &&
                  (ci == nullptr || std::strcmp(ci, "true") != 0);
  mode_ = terminal ? ProgressMode::bar : ProgressMode::lines;
}

std::string Progress::line(const LoopState& s, double seconds, std::int64_t epoch_samples,
                           bool finished) const {
  std::int64_t k = s.iteration;
  std::int64_t n = s.batches_per_epoch;
  std::string text = cat("Epoch ", s.epoch + 1, "/", s.epochs);
  if (mode_ == ProgressMode::bar && n > 0) text += " " + bar_text(std::min(k, n), n);
  text += n > 0 ? cat(" ", k, "/", n) : cat(" ", k);
  std::string m = metrics_text(s.metrics);
  if (!m.empty()) text += " " + m;
  double rate = seconds > 0 ? static_cast<double>(epoch_samples) / seconds : 0;
  char buf[48];
  std::snprintf(buf, sizeof buf, " %.0f samples/s", rate);
  text += buf;
  if (finished) {
    std::snprintf(buf, sizeof buf, " %.1fs", seconds);
    text += buf;
  } else if (n > 0 && k > 0 && k < n) {
    text += " ETA " + duration_text(seconds / static_cast<double>(k) * static_cast<double>(n - k));
  }
  return text;
}

void Progress::draw(const std::string& text) {
  std::string padded = text;
  if (padded.size() < drawn_width_) padded.append(drawn_width_ - padded.size(), ' ');
  drawn_width_ = text.size();
  *out_ << '\r' << padded << std::flush;
}

void Progress::iteration(const LoopState& s, double seconds, std::int64_t epoch_samples) {
  std::int64_t k = s.iteration;
  std::int64_t n = s.batches_per_epoch;
  if (mode_ == ProgressMode::bar) {
    if (k == 1 || k == n || seconds - last_draw_ >= kRedrawSeconds) {
      last_draw_ = seconds;
      draw(line(s, seconds, epoch_samples, false));
    }
  } else if (mode_ == ProgressMode::lines) {
    // A line each time the epoch passes another tenth; the last batch's is the epoch line.
    bool print = n > 0 ? k < n && k * 10 / n > (k - 1) * 10 / n : k % kUnknownLengthEvery == 0;
    if (print) *out_ << line(s, seconds, epoch_samples, false) << '\n' << std::flush;
  }
}

void Progress::epoch_end(const LoopState& s, double seconds, std::int64_t epoch_samples,
                         bool halted) {
  if (mode_ == ProgressMode::off) return;
  std::string text = line(s, seconds, epoch_samples, true);
  if (halted) text += s.halt_reason.empty() ? " (halted)" : " (halted: " + s.halt_reason + ")";
  if (mode_ == ProgressMode::bar) {
    draw(text);
    *out_ << '\n' << std::flush;
    drawn_width_ = 0;
    last_draw_ = -1;
  } else {
    *out_ << text << '\n' << std::flush;
  }
}

}  // namespace glia
