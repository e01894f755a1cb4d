// Inference and reference kernel of scan, the structured loop (attrs.hpp): the body runs
// on the interpreter once per step, carries passed along, step outputs stacked by row.
#include <cstring>

#include "glia/core/interpreter.hpp"
#include "glia/core/scan.hpp"
#include "kernels/kernel_util.hpp"
#include "rules.hpp"

namespace glia {

namespace {

// Row t of a [length, ...] tensor, sharing its storage.
Tensor row(const Tensor& seq, std::int64_t t, const Shape& step) {
  return seq.rows(t, t + 1).reshape(step);
}

void copy_row(Tensor& stacked, std::int64_t t, const Tensor& value) {
  const std::size_t bytes = value.nbytes();
  std::memcpy(static_cast<std::byte*>(stacked.raw_data()) + static_cast<std::size_t>(t) * bytes,
              value.raw_data(), bytes);
}

Shape stacked_shape(std::int64_t length, const Shape& step) {
  std::vector<std::int64_t> dims{length};
  dims.insert(dims.end(), step.begin(), step.end());
  return Shape(std::move(dims));
}

}  // namespace

std::vector<TensorType> scan_result_types(std::span<const TensorType> in, const ScanAttrs& a) {
  check(a.body.graph != nullptr, "scan: the node has no body graph");
  const Graph& body = *a.body;
  const auto n = static_cast<std::int64_t>(in.size());
  const std::int64_t k = a.carries, m = a.sequences;
  check(k >= 0 && m >= 0 && k + m <= n, "scan: ", k, " carries and ", m, " sequences, but ", n,
        " inputs");
  check(a.length >= 0, "scan: negative length ", a.length);
  check(static_cast<std::int64_t>(body.parameters().size()) == n, "scan: the body '", body.name(),
        "' takes ", body.parameters().size(), " parameters, expected ", n,
        " (carries, a row of each sequence, constants)");
  for (std::int64_t i = 0; i < n; ++i) {
    TensorType want = in[static_cast<std::size_t>(i)];
    if (i >= k && i < k + m) {
      check(want.shape.rank() >= 1 && want.shape[0] == a.length, "scan: sequence ", i - k, " is ",
            want.to_string(), ", expected a leading axis of the loop's length ", a.length);
      want.shape = Shape(std::vector<std::int64_t>(want.shape.begin() + 1, want.shape.end()));
    }
    const TensorType& got = body.type(body.parameters()[static_cast<std::size_t>(i)]);
    check(got == want, "scan: the body '", body.name(), "' parameter ", i, " is ", got.to_string(),
          ", expected ", want.to_string());
  }
  const auto outs = static_cast<std::int64_t>(body.outputs().size());
  check(outs >= k, "scan: the body '", body.name(), "' returns ", outs, " values, fewer than its ",
        k, " carries");
  std::vector<TensorType> types;
  for (std::int64_t j = 0; j < k; ++j) {
    const TensorType& back = body.type(body.outputs()[static_cast<std::size_t>(j)]);
    check(back == in[static_cast<std::size_t>(j)], "scan: the body '", body.name(),
          "' returns carry ", j, " as ", back.to_string(), " but it enters as ",
          in[static_cast<std::size_t>(j)].to_string());
    types.push_back(back);
  }
  for (std::int64_t j = k; j < outs; ++j) {
    const TensorType& y = body.type(body.outputs()[static_cast<std::size_t>(j)]);
    types.push_back({y.dtype, stacked_shape(a.length, y.shape)});
  }
  for (std::int64_t j = 0; j < k; ++j)
    types.push_back({in[static_cast<std::size_t>(j)].dtype,
                     stacked_shape(a.length, in[static_cast<std::size_t>(j)].shape)});
  return types;
}

std::vector<Tensor> run_scan(std::span<const Tensor> in, const ScanAttrs& a,
                             const std::vector<bool>& wanted) {
  std::vector<TensorType> in_types;
  for (const Tensor& t : in) in_types.push_back(t.type());
  const std::vector<TensorType> types = scan_result_types(in_types, a);
  const Graph& body = *a.body;
  const auto k = static_cast<std::size_t>(a.carries), m = static_cast<std::size_t>(a.sequences);
  const std::size_t q = body.outputs().size() - k;
  std::vector<Tensor> results(types.size());
  for (std::size_t r = k; r < types.size(); ++r)
    if (wanted[r]) results[r] = Tensor::uninitialized(types[r].dtype, types[r].shape);

  std::vector<Tensor> args(in.begin(), in.end());
  std::vector<Shape> step(m);
  for (std::size_t j = 0; j < m; ++j) step[j] = body.type(body.parameters()[k + j]).shape;
  for (std::int64_t s = 0; s < a.length; ++s) {
    const std::int64_t t = a.reverse ? a.length - 1 - s : s;
    for (std::size_t j = 0; j < m; ++j) args[k + j] = row(in[k + j], t, step[j]);
    for (std::size_t j = 0; j < k; ++j)
      if (wanted[k + q + j]) copy_row(results[k + q + j], t, args[j]);
    std::vector<Tensor> outs = interpret(body, args);
    for (std::size_t j = 0; j < q; ++j)
      if (wanted[k + j]) copy_row(results[k + j], t, outs[k + j]);
    for (std::size_t j = 0; j < k; ++j) args[j] = std::move(outs[j]);
  }
  for (std::size_t j = 0; j < k; ++j)
    if (wanted[j]) results[j] = args[j];
  return results;
}

namespace detail {

namespace {

TensorType infer_scan(std::span<const TensorType> in, const Attrs& attrs) {
  const auto& a = attrs_as<ScanAttrs>(attrs);
  std::vector<TensorType> types = scan_result_types(in, a);
  check(a.result >= 0 && a.result < static_cast<std::int64_t>(types.size()), "scan: result ",
        a.result, " of a loop with ", types.size(), " results");
  return types[static_cast<std::size_t>(a.result)];
}

Tensor kernel_scan(std::span<const Tensor> in, const Attrs& attrs, const TensorType&) {
  const auto& a = attrs_as<ScanAttrs>(attrs);
  // Results: the carries, then the body's outputs (new carries and step outputs), stored.
  std::vector<bool> wanted(static_cast<std::size_t>(a.carries) + a.body->outputs().size(), false);
  wanted[static_cast<std::size_t>(a.result)] = true;
  return run_scan(in, a, wanted)[static_cast<std::size_t>(a.result)];
}

}  // namespace

void add_control_rules(OpTable& t) { set_rule(t, Op::scan, &infer_scan, &kernel_scan); }

}  // namespace detail

}  // namespace glia
