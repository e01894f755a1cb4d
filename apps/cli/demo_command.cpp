// `glia demo`: the numerical language in one screen. Traces a numerically stable
// softmax written with Expr ops, prints the graph's text dump, runs it on the
// reference interpreter, prints input and output and checks that every row sums to 1.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "glia/glia.hpp"

namespace glia::cli {

namespace {

struct DemoOptions {
  std::int64_t batch = 2;
  std::int64_t classes = 5;
  double scale = 1.0;
  std::string dtype_name = "f32";
};

// Subtracting the row maximum keeps exp() in range whatever the logits' size.
Expr stable_softmax(const Expr& logits) {
  Expr shifted = logits - reduce_max(logits, {-1}, /*keep_axes=*/true);
  Expr e = exp(shifted);
  return e / sum(e, {-1}, /*keep_axes=*/true);
}

// (batch, classes): row b is scale * (b + 1) * (c - (classes - 1) / 2), so later
// rows are sharper and `scale` makes the logits as large as wanted.
Tensor demo_logits(const DemoOptions& o) {
  std::vector<double> values;
  for (std::int64_t b = 0; b < o.batch; ++b)
    for (std::int64_t c = 0; c < o.classes; ++c)
      values.push_back(o.scale * static_cast<double>(b + 1) *
                       (static_cast<double>(c) - static_cast<double>(o.classes - 1) / 2));
  DType dtype = o.dtype_name == "f64" ? DType::f64 : DType::f32;
  return Tensor::from<double>(values, Shape{o.batch, o.classes}).cast(dtype);
}

int run_demo(const DemoOptions& o) {
  Tensor logits = demo_logits(o);
  Graph g =
      trace([](const std::vector<Expr>& in) { return std::vector<Expr>{stable_softmax(in[0])}; },
            {logits.type()}, "softmax", {"logits"});
  std::cout << "Traced graph:\n" << to_text(g) << "\n";
  std::vector<Tensor> out = interpret(g, std::vector<Tensor>{logits});
  std::cout << "Input:\n" << logits << "\n\nOutput:\n" << out[0] << "\n\n";

  // Tolerance of the dtype's rounding over a row of `classes` terms.
  const double tol = (logits.dtype() == DType::f64 ? 1e-12 : 1e-5) * static_cast<double>(o.classes);
  std::vector<double> p = out[0].to_vector<double>();
  double worst = 0;
  for (std::int64_t b = 0; b < o.batch; ++b) {
    double row = 0;
    for (std::int64_t c = 0; c < o.classes; ++c)
      row += p[static_cast<std::size_t>(b * o.classes + c)];
    worst = std::isfinite(row) ? std::max(worst, std::abs(row - 1))
                               : std::numeric_limits<double>::infinity();
  }
  if (!(worst <= tol)) {
    std::cerr << "glia demo: a row of the softmax sums to 1 +- " << worst << " (tolerance " << tol
              << ")\n";
    return 1;
  }
  std::cout << "Check: every row sums to 1 (largest error " << worst << ")\n";
  return 0;
}

}  // namespace

Command add_demo_command(CLI::App& app) {
  auto options = std::make_shared<DemoOptions>();
  CLI::App* sub =
      app.add_subcommand("demo", "Trace a numerically stable softmax, print its graph, run it");
  sub->footer(
      "The softmax is exp(x - max(x)) / sum(exp(x - max(x))) along the last axis, written with\n"
      "glia's Expr ops; the reference interpreter runs it on a batch of logits whose row b is\n"
      "scale * (b + 1) * (c - (classes - 1) / 2) for columns c. Exits 1 when a row of the\n"
      "result does not sum to 1.");
  sub->add_option("-b,--batch", options->batch, "Rows of the input (the batch size)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  sub->add_option("-c,--classes", options->classes, "Columns of the input (the softmax axis)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  sub->add_option("-s,--scale", options->scale,
                  "Multiplies the logits; large values show that the softmax does not overflow")
      ->check(CLI::Range(-1e6, 1e6))
      ->capture_default_str();
  sub->add_option("-t,--dtype", options->dtype_name, "Element type of the input")
      ->check(CLI::IsMember({"f32", "f64"}))
      ->capture_default_str();
  return {sub, [options] { return run_demo(*options); }};
}

}  // namespace glia::cli
