// Tests of the sequence helpers around the recurrent layers: mask (and masked lstm/gru
// against the same layers run on each sequence cut to its length), final_state (checked by
// continuing a sequence from the state), layer_output's errors and bidirectional (against
// the two directions built separately).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "autograd/gradcheck.hpp"
#include "glia/layers.hpp"
#include "layers/f64_params.hpp"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace glia {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

Tensor random_f32(const Shape& s, unsigned seed) {
  return testing::random_tensor(s, -1, 1, seed).cast(DType::f32);
}

// [N, T] with `lengths[n]` leading ones (true) per row.
Tensor length_mask(const std::vector<std::int64_t>& lengths, std::int64_t T) {
  std::vector<float> v;
  for (std::int64_t len : lengths)
    for (std::int64_t t = 0; t < T; ++t) v.push_back(t < len ? 1.0f : 0.0f);
  return Tensor::from(v, Shape{static_cast<std::int64_t>(lengths.size()), T}).cast(DType::boolean);
}

void expect_near(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_TRUE(allclose(got, want, 1e-5, 1e-6))
      << what << "\ngot:  " << got.to_string(12) << "\nwant: " << want.to_string(12);
}

TEST(Mask, TokensAndFeatureRows) {
  Model tokens = input("t", {-1, 4}, DType::i32);
  Tensor t = Tensor::from(std::vector<std::int32_t>{5, 3, 0, 0, 7, 0, 2, 0}, Shape{2, 4});
  Tensor m = build(mask(tokens)).predict(ModelState{}, t);
  ASSERT_EQ(m.dtype(), DType::boolean);
  EXPECT_EQ(m.cast(DType::i32).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{1, 1, 0, 0, 1, 0, 1, 0}));
  // Features: a step is padding when every feature equals the pad value (here -1).
  Model rows = input("r", {-1, 3, 2});
  Tensor r =
      Tensor::from(std::vector<float>{1, -1, -1, -1, 0, 0, -1, -1, -1, -1, -1, 2}, Shape{2, 3, 2});
  Tensor rm = build(mask(rows, -1)).predict(ModelState{}, r);
  EXPECT_EQ(rm.cast(DType::i32).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{1, 0, 1, 0, 0, 1}));
  EXPECT_THAT([] { build(mask(input("v", {-1}))).predict(ModelState{}, Tensor::zeros({3})); },
              ThrowsMessage<Error>(HasSubstr("mask: expected [batch, time, features...]")));
}

// A masked layer's outputs, last step and final states equal the unmasked layer's on each
// sequence cut to its length (zeros at the padded steps).
void check_masked(const std::string& type, bool reverse, bool unroll) {
  SCOPED_TRACE(type + (reverse ? " reverse" : "") + (unroll ? " unrolled" : ""));
  const std::int64_t T = 5, F = 3, H = 4;
  const std::vector<std::int64_t> lengths{5, 3, 1};
  Model x = input("x", {-1, -1, F}), m = input("m", {-1, -1}, DType::boolean);
  auto make = [&](bool masked, bool sequences) {
    RecurrentOptions o{.bias_initializer = initializers::uniform(0.5),
                       .return_sequences = sequences,
                       .reverse = reverse,
                       .unroll = unroll,
                       .name = "rnn"};
    if (masked) o.mask = m;
    return type == "lstm" ? lstm(x, H, o) : gru(x, H, o);
  };
  Model masked = make(true, true);
  RecurrentState fin = final_state(masked);
  Model with_states = outputs(
      {{"seq", masked}, {"h", fin.hidden}, {"c", fin.cell.defined() ? fin.cell : fin.hidden}});
  Tensor xs = random_f32({3, T, F}, 41);
  ModelState s = build(masked).init({{"x", xs.type()}, {"m", {DType::boolean, {3, T}}}}, 7);
  const std::map<std::string, Tensor> batch{{"x", xs}, {"m", length_mask(lengths, T)}};
  auto got = build(with_states).predict.outputs(s, batch);
  got["last"] = build(make(true, false)).predict(s, batch);
  Model plain = make(false, true);
  RecurrentState plain_fin = final_state(plain);
  Model plain_all = outputs({{"seq", plain},
                             {"h", plain_fin.hidden},
                             {"c", plain_fin.cell.defined() ? plain_fin.cell : plain_fin.hidden}});
  for (std::size_t n = 0; n < lengths.size(); ++n) {
    const std::int64_t len = lengths[n], in = static_cast<std::int64_t>(n);
    Tensor cut = xs.slice(0, in, in + 1).slice(1, 0, len);
    auto want = build(plain_all).predict.outputs(s, {{"x", cut}});
    Tensor seq = got["seq"].slice(0, in, in + 1);
    expect_near(seq.slice(1, 0, len), want["seq"], cat("sequence ", n));
    if (len < T) expect_near(seq.slice(1, len, T), Tensor::zeros({1, T - len, H}), "padded steps");
    expect_near(got["last"].slice(0, in, in + 1), want["h"], "last step");
    expect_near(got["h"].slice(0, in, in + 1), want["h"], "final hidden");
    expect_near(got["c"].slice(0, in, in + 1), want["c"], "final cell");
  }
}

TEST(Masked, LstmEndsEachSequenceAtItsLength) {
  for (bool reverse : {false, true})
    for (bool unroll : {false, true}) check_masked("lstm", reverse, unroll);
}

TEST(Masked, GruEndsEachSequenceAtItsLength) {
  for (bool reverse : {false, true})
    for (bool unroll : {false, true}) check_masked("gru", reverse, unroll);
}

TEST(Masked, NumericMaskAndBadShape) {
  Model x = input("x", {-1, 4, 2});
  Model m = input("m", {-1, 4});  // f32: nonzero = a real step
  Model y = gru(x, 3, {.mask = m, .name = "g"});
  ModelState s = build(y).init({{"x", {DType::f32, {2, 4, 2}}}, {"m", {DType::f32, {2, 4}}}}, 1);
  Tensor xs = random_f32({2, 4, 2}, 42);
  Tensor fm = Tensor::from(std::vector<float>{1, 2, 0, 0, 0.5f, 0, 0, 0}, Shape{2, 4});
  Model bm = input("m", {-1, 4}, DType::boolean);
  Tensor want = build(gru(x, 3, {.mask = bm, .name = "g"}))
                    .predict(s, {{"x", xs}, {"m", length_mask({2, 1}, 4)}});
  expect_near(build(y).predict(s, {{"x", xs}, {"m", fm}}), want, "f32 mask");
  Model bad = lstm(x, 3, {.mask = input("m", {-1, 3})});
  EXPECT_THAT([&] { build(bad).init(0); },
              ThrowsMessage<Error>(
                  HasSubstr("lstm: the mask is f32[1][3], expected [1][4] ([batch, time])")));
}

TEST(MaskedGradients, LstmF64) {
  const std::int64_t T = 4, F = 2, H = 3;
  Model x = input("x", {-1, T, F}, DType::f64), mk = input("m", {-1, T}, DType::boolean);
  Model m = testing::with_f64_params(lstm(x, H, {.reverse = true, .mask = mk, .name = "r"}));
  Tensor keep = length_mask({4, 2}, T);
  Tensor w = testing::random_tensor({2, T, H}, -1, 1, 51);
  testing::expect_gradients_match(
      [&](const std::vector<Expr>& in) {
        std::map<std::string, Expr> p{
            {"kernel", in[1]}, {"recurrent_kernel", in[2]}, {"bias", in[3]}};
        return sum(apply(m, {{"r", p}}, {}, {{"x", in[0]}, {"m", Expr(keep)}}).output * Expr(w));
      },
      {testing::random_tensor({2, T, F}, -1, 1, 52), testing::random_tensor({F, 4 * H}, -1, 1, 53),
       testing::random_tensor({H, 4 * H}, -1, 1, 54), testing::random_tensor({4 * H}, -1, 1, 55)},
      {.tolerance = 1e-5});
}

// Running the first steps, then the rest from final_state(), equals running them all.
TEST(FinalState, ContinuesTheSequence) {
  for (const std::string type : {"lstm", "gru"}) {
    SCOPED_TRACE(type);
    const std::int64_t T = 6, F = 2, H = 3;
    auto make = [&](const Model& x, RecurrentState init, const std::string& name) {
      RecurrentOptions o{.name = name};
      return type == "lstm" ? lstm(x, H, o, init) : gru(x, H, o, init);
    };
    Model head = input("head", {-1, 2, F}), tail = input("tail", {-1, T - 2, F});
    Model first = make(head, {}, "a");
    Model second = make(tail, final_state(first), "b");
    Model whole = make(input("x", {-1, T, F}), {}, "a");
    ModelState s = build(whole).init(3);
    s.params["b"] = s.params["a"];
    Tensor xs = random_f32({2, T, F}, 61);
    Tensor want = build(whole).predict(s, xs).slice(1, 2, T);
    Tensor got =
        build(second).predict(s, {{"head", xs.slice(1, 0, 2)}, {"tail", xs.slice(1, 2, T)}});
    expect_near(got, want, "continued");
  }
}

TEST(FinalState, Errors) {
  Model x = input("x", {-1, 3, 2});
  EXPECT_THAT([&] { final_state(dense(x, 3)); },
              ThrowsMessage<Error>(HasSubstr("final_state: expected an lstm, gru or conv_lstm")));
  Model bad = layer_output(dense(x, 3), "cell");
  EXPECT_THAT([&] { build(bad).init(0); },
              ThrowsMessage<Error>(HasSubstr("gives no output 'cell'")));
  EXPECT_THAT([&] { layer_output(x, "cell"); },
              ThrowsMessage<Error>(HasSubstr("layer_output: 'cell' of a input node")));
}

TEST(Bidirectional, IsTheTwoDirectionsMerged) {
  const std::int64_t T = 4, F = 3, H = 2;
  Model x = input("x", {-1, T, F});
  auto direction = [&](bool sequences) {
    return [sequences](const Model& in, bool reverse) {
      return lstm(in, H,
                  {.return_sequences = sequences,
                   .reverse = reverse,
                   .name = reverse ? "backward" : "forward"});
    };
  };
  Tensor xs = random_f32({2, T, F}, 71);
  Model both = bidirectional(x, direction(true));
  ModelState s = build(both).init(9);
  Tensor fw = build(direction(true)(x, false)).predict(s, xs);
  Tensor bw = build(direction(true)(x, true)).predict(s, xs);
  Tensor got = build(both).predict(s, xs);
  ASSERT_EQ(got.shape(), (Shape{2, T, 2 * H}));
  expect_near(got.slice(2, 0, H), fw, "forward half");
  expect_near(got.slice(2, H, 2 * H), bw, "backward half");
  Tensor sum_got = build(bidirectional(x, direction(true), "sum")).predict(s, xs);
  std::vector<float> a = fw.to_vector<float>(), b = bw.to_vector<float>();
  for (std::size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  expect_near(sum_got, Tensor::from(a, fw.shape()), "sum");
  Model last = bidirectional(x, direction(false));
  EXPECT_EQ(build(last).predict(s, xs).shape(), (Shape{2, 2 * H}));
  EXPECT_THAT([&] { bidirectional(x, direction(true), "max"); },
              ThrowsMessage<Error>(HasSubstr("bidirectional: merge must be")));
  Model once = lstm(x, H);
  EXPECT_THAT([&] { bidirectional(x, [&](const Model&, bool) { return once; }); },
              ThrowsMessage<Error>(HasSubstr("returned the same model for both directions")));
}

TEST(SequenceLayers, JsonRoundTrip) {
  Model tokens = input("tokens", {-1, 5}, DType::i32);
  Model e = embedding(tokens, 10, 3);
  Model enc = lstm(e, 4, {.return_sequences = false, .mask = mask(tokens), .name = "enc"});
  Model bi = bidirectional(e, [](const Model& in, bool reverse) {
    return gru(in, 2, {.reverse = reverse, .name = reverse ? "bw" : "fw"});
  });
  Model dec = lstm(bi, 4, {.name = "dec"}, final_state(enc));
  Model m = outputs({{"dec", dec}, {"cell", final_state(dec).cell}});
  std::string json = model_to_json(m);
  Model back = model_from_json(json);
  EXPECT_EQ(model_to_json(back), json);
  ModelState s = build(m).init({{"tokens", {DType::i32, {2, 5}}}}, 4);
  Tensor t = Tensor::from(std::vector<std::int32_t>{1, 4, 2, 0, 0, 3, 9, 9, 9, 1}, Shape{2, 5});
  auto a = build(m).predict.outputs(s, t), b = build(back).predict.outputs(s, t);
  for (const char* head : {"dec", "cell"}) EXPECT_TRUE(allclose(a[head], b[head], 0, 0)) << head;
}

// A loop written by hand with the cells equals the layers on the same parameters.
TEST(Cells, StepByStepEqualTheLayers) {
  const std::int64_t N = 2, T = 4, F = 3, H = 2;
  for (const std::string type : {"lstm", "gru", "conv_lstm"}) {
    SCOPED_TRACE(type);
    const bool conv = type == "conv_lstm";
    Shape xs = conv ? Shape{N, T, 5, F} : Shape{N, T, F};
    Model x = input("x", xs.dims());
    RecurrentOptions o{.bias_initializer = initializers::uniform(0.5), .name = "r"};
    Model m = type == "lstm"  ? lstm(x, H, o)
              : type == "gru" ? gru(x, H, o)
                              : conv_lstm(x, H, {.kernel_size = {3}, .recurrent = o});
    ModelState s = build(m).init({{"x", {DType::f32, xs}}}, 5);
    Tensor in = random_f32(xs, 81);
    const auto& p = s.params.at("r");
    Graph g = trace(
        [&](const std::vector<Expr>& v) {
          CellParams cp{Expr(p.at("kernel")), Expr(p.at("recurrent_kernel")), Expr(p.at("bias"))};
          if (type == "gru") cp.recurrent_bias = Expr(p.at("recurrent_bias"));
          Shape state = conv ? Shape{N, 5, H} : Shape{N, H};
          std::vector<Expr> states{zeros(state)};
          if (type != "gru") states.push_back(zeros(state));
          std::vector<Expr> rows;
          for (std::int64_t t = 0; t < T; ++t) {
            Expr row = squeeze(slice_axis(v[0], t, 1, 1), {1});
            states = type == "lstm"  ? lstm_cell(row, states, cp)
                     : type == "gru" ? gru_cell(row, states, cp)
                                     : conv_lstm_cell(row, states, cp, {.kernel_size = {3}});
            rows.push_back(states[0]);
          }
          return std::vector<Expr>{stack(rows, 1)};
        },
        {in.type()});
    expect_near(interpret(g, std::vector<Tensor>{in})[0], build(m).predict(s, in), "cells");
  }
  EXPECT_THAT(
      [] {
        trace([](const std::vector<Expr>& v) { return lstm_cell(v[0], {v[1]}, {}); },
              {{DType::f32, {1, 2}}, {DType::f32, {1, 3}}});
      },
      ThrowsMessage<Error>(HasSubstr("lstm_cell: expected 2 state(s), got 1")));
}

}  // namespace
}  // namespace glia
