// Gradient-check cases of scan, the loop node: a tanh RNN whose final carry and stacked
// outputs are both used (one reverse loop for both), two carries run in reverse, the
// stored-carries result itself, an integer step counter beside a float carry, a nested
// loop, and a loop whose only sequence is differentiated through a constant weight.
#include "autograd/op_cases.hpp"
#include "glia/core/scan.hpp"

namespace glia::testing {

namespace {

using Vs = std::vector<Expr>;

// h' = tanh(h . w + x), output h'; in: h0 [2, 3], xs [4, 2, 3], w [3, 3].
ScanResult rnn(const Vs& in, bool reverse = false) {
  return scan(
      [](const Vs& c, const Vs& x, const Vs& w) {
        return ScanResult{{tanh(dot(c[0], w[0]) + x[0])}, {c[0] * x[0]}};
      },
      {in[0]}, {in[1]}, {in[2]}, {reverse});
}

Expr final_and_outputs(const ScanResult& r) {
  return concatenate({expand_dims(r.carries[0], 0), r.outputs[0]}, 0);
}

}  // namespace

void add_control_cases(OpCases& cases) {
  auto& list = cases[Op::scan];
  const std::vector<Tensor> rnn_inputs = {random_tensor({2, 3}, -1, 1, 501),
                                          random_tensor({4, 2, 3}, -1, 1, 502),
                                          random_tensor({3, 3}, -0.8, 0.8, 503)};
  list.push_back({"rnn_final_carry_and_outputs", rnn_inputs,
                  [](const Vs& in) { return final_and_outputs(rnn(in)); }});
  list.push_back({"rnn_reverse_outputs_only", rnn_inputs,
                  [](const Vs& in) { return rnn(in, true).outputs[0]; }});
  list.push_back(
      {"rnn_final_carry_only", rnn_inputs, [](const Vs& in) { return rnn(in).carries[0]; }});
  list.push_back({"two_carries_reverse",
                  {random_tensor({3}, -1, 1, 511), random_tensor({5, 3}, -1, 1, 512),
                   random_tensor({3}, -0.9, 0.9, 513)},
                  [](const Vs& in) {
                    ScanResult r = scan(
                        [](const Vs& c, const Vs& x, const Vs& s) {
                          Expr a = c[0] * s[0] + x[0];
                          Expr b = c[1] + sin(a);
                          return ScanResult{{a, b}, {a * b}};
                        },
                        {in[0], zeros({3}, DType::f64)}, {in[1]}, {in[2]}, {true});
                    return concatenate({r.outputs[0], expand_dims(r.carries[1], 0)}, 0);
                  }});
  list.push_back({"stored_carries",
                  {random_tensor({2}, -1, 1, 521), random_tensor({3, 2}, -1, 1, 522)},
                  [](const Vs& in) {
                    ScanResult r = scan(
                        [](const Vs& c, const Vs& x, const Vs&) {
                          return ScanResult{{c[0] * x[0] + x[0]}, {}};
                        },
                        {in[0]}, {in[1]});
                    const Node& node = r.carries[0].node();
                    Vs inputs;
                    for (ValueId id : node.inputs) inputs.emplace_back(r.carries[0].graph(), id);
                    return scan_result(inputs, std::get<ScanAttrs>(node.attrs), 1);
                  }});
  list.push_back({"integer_counter_beside_a_float_carry",
                  {random_tensor({2}, -1, 1, 531), random_tensor({4, 2}, -1, 1, 532)},
                  [](const Vs& in) {
                    ScanResult r = scan(
                        [](const Vs& c, const Vs& x, const Vs&) {
                          Expr h = c[0] * 0.5 + x[0] * cast(c[1], DType::f64);
                          return ScanResult{{h, add(c[1], 1)}, {h}};
                        },
                        {in[0], scalar(1, DType::i64)}, {in[1]});
                    return r.outputs[0];
                  }});
  list.push_back({"nested",
                  {random_tensor({2}, -1, 1, 541), random_tensor({3, 2, 2}, -1, 1, 542),
                   random_tensor({2}, -1, 1, 543)},
                  [](const Vs& in) {
                    ScanResult r = scan(
                        [](const Vs& c, const Vs& x, const Vs& w) {
                          ScanResult inner = scan(
                              [](const Vs& d, const Vs& row, const Vs& v) {
                                return ScanResult{{tanh(d[0] * v[0] + row[0])}, {}};
                              },
                              {c[0]}, {x[0]}, {w[0]});
                          return ScanResult{inner.carries, {inner.carries[0] * c[0]}};
                        },
                        {in[0]}, {in[1]}, {in[2]});
                    return r.outputs[0];
                  }});
}

}  // namespace glia::testing
