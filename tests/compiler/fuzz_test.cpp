// Random graph fuzzing: thousands of generated graphs of element-wise, broadcast,
// reduction, layout and dot_general chains (f32 and f64, small shapes, a fixed seed),
// each compiled with compile_graph (which optimizes) and compared with the interpreter
// on the traced graph. Domains are kept finite (exp of tanh, log1p of abs, division by
// 1 + |b|) so the comparison is about the passes, not about NaNs.
#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <random>
#include <vector>

#include "glia/compiler.hpp"
#include "glia/core/interpreter.hpp"

namespace {

using glia::Expr;
using glia::Ints;
using glia::Shape;
using glia::Tensor;

constexpr std::uint64_t kSeed = 0x5eed'9a55'e5ULL;
constexpr int kCases = 2000;
constexpr std::int64_t kMaxElements = 256;

// Draws from the test's own engine with plain modulo, so the cases are the same with
// every standard library.
class Dice {
 public:
  explicit Dice(std::uint64_t seed) : rng_(seed) {}
  int below(int n) { return static_cast<int>(rng_() % static_cast<std::uint64_t>(n)); }
  bool chance(int percent) { return below(100) < percent; }
  double uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  }

 private:
  std::mt19937_64 rng_;
};

Shape random_shape(Dice& dice) {
  std::vector<std::int64_t> dims(static_cast<std::size_t>(dice.below(4)));
  for (auto& d : dims) d = 1 + dice.below(4);
  return Shape(dims);
}

Tensor random_tensor(Dice& dice, glia::DType dtype, const Shape& shape) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  for (double& x : v) x = dice.uniform(-2, 2);
  return Tensor::from<double>(v, shape).cast(dtype);
}

// Builds one graph's body from a pool of values, each step adding a value made from
// values already there.
class GraphGenerator {
 public:
  GraphGenerator(Dice& dice, glia::DType dtype) : dice_(dice), dtype_(dtype) {}

  std::vector<Expr> build(const std::vector<Expr>& parameters) {
    pool_ = parameters;
    int steps = 3 + dice_.below(14);
    for (int i = 0; i < steps; ++i) pool_.push_back(step());
    std::vector<Expr> outputs;
    int n = 1 + dice_.below(3);
    // Mostly the newest values (deep chains), sometimes any value, parameters included.
    for (int i = 0; i < n; ++i)
      outputs.push_back(dice_.chance(70) ? pool_[pool_.size() - 1 - static_cast<std::size_t>(i)]
                                         : pick());
    return outputs;
  }

 private:
  Expr pick() {
    return pool_[static_cast<std::size_t>(dice_.below(static_cast<int>(pool_.size())))];
  }

  Expr step() {
    Expr x = pick();
    switch (dice_.below(12)) {
      case 0:
      case 1:
        return unary(x);
      case 2:
      case 3:
        return binary(x, partner(x));
      case 4:
        return with_number(x);
      case 5:
        return reduction(x);
      case 6:
        return reshaped(x);
      case 7:
        return transposed(x);
      case 8:
        return broadcasted(x);
      case 9:
        return dotted(x);
      case 10:
        return glia::select(glia::greater(x, 0), x, unary(x));
      default: {
        // The same computation twice on the same value, for CSE to merge.
        Expr u = unary(x);
        return u + unary(x);
      }
    }
  }

  // Finite on every input: exp and log only where their arguments are tame.
  Expr unary(const Expr& x) {
    switch (dice_.below(11)) {
      case 0:
        return -x;
      case 1:
        return glia::abs(x);
      case 2:
        return glia::tanh(x);
      case 3:
        return glia::logistic(x);
      case 4:
        return glia::sin(x);
      case 5:
        return glia::cos(x);
      case 6:
        return glia::exp(glia::tanh(x));
      case 7:
        return glia::log1p(glia::abs(x));
      case 8:
        return glia::sqrt(glia::abs(x));
      case 9:
        return glia::log(glia::exp(glia::tanh(x)) + 1.0);
      default:
        return -(-x);
    }
  }

  // A value whose shape broadcasts with x's, or a fresh constant of x's shape.
  Expr partner(const Expr& x) {
    for (int tries = 0; tries < 4; ++tries) {
      Expr y = pick();
      try {
        if (glia::broadcast_shapes(x.shape(), y.shape(), "fuzz").numel() <= kMaxElements) return y;
      } catch (const glia::Error&) {
      }
    }
    return Expr(random_tensor(dice_, dtype_, x.shape()));
  }

  Expr binary(const Expr& a, const Expr& b) {
    switch (dice_.below(6)) {
      case 0:
        return a + b;
      case 1:
        return a - b;
      case 2:
        return glia::tanh(a * b);
      case 3:
        return a / (glia::abs(b) + 1.0);
      case 4:
        return glia::max(a, b);
      default:
        return glia::min(a, b);
    }
  }

  // Numbers the simplifier knows (0 and 1) and others.
  Expr with_number(const Expr& x) {
    switch (dice_.below(7)) {
      case 0:
        return x + 0.0;
      case 1:
        return x * 1.0;
      case 2:
        return x * 0.0;
      case 3:
        return x / 1.0;
      case 4:
        return 0.0 - x;
      case 5:
        return x * 0.5 + glia::exp(glia::full(x.shape(), 0.25, x.dtype()));
      default:
        return x - 1.5;
    }
  }

  Expr reduction(const Expr& x) {
    Ints axes;
    for (int i = 0; i < x.rank(); ++i)
      if (dice_.chance(50)) axes.push_back(dice_.chance(50) ? i : i - x.rank());
    if (axes.empty() && x.rank() > 0 && dice_.chance(50)) axes.push_back(0);
    bool keep = dice_.chance(50);
    if (dice_.chance(20)) {
      // Reduced without keep_axes, then reshaped to the keep_axes shape (as autograd does).
      std::vector<std::int64_t> kept = x.shape().dims();
      if (axes.empty()) kept.assign(kept.size(), 1);
      for (std::int64_t a : axes) kept[static_cast<std::size_t>(a < 0 ? a + x.rank() : a)] = 1;
      return glia::reshape(glia::sum(x, axes, false), kept);
    }
    switch (dice_.below(4)) {
      case 0:
        return glia::sum(x, axes, keep);
      case 1:
        return glia::reduce_max(x, axes, keep);
      case 2:
        return glia::reduce_min(x, axes, keep);
      default:
        return glia::mean(x, axes, keep);
    }
  }

  Expr reshaped(const Expr& x) {
    std::int64_t n = x.shape().numel();
    Ints target;
    switch (dice_.below(4)) {
      case 0:
        target = {n};
        break;
      case 1:
        target = {1, n};
        break;
      case 2:
        target = x.shape().dims();
        break;  // an identity reshape
      default:
        target = {n, 1};
        break;
    }
    Expr y = glia::reshape(x, target);
    return dice_.chance(40) ? glia::reshape(y, x.shape().dims()) : y;
  }

  Ints permutation(int rank) {
    Ints perm;
    for (int i = 0; i < rank; ++i) perm.push_back(i);
    for (int i = rank - 1; i > 0; --i)
      std::swap(perm[static_cast<std::size_t>(i)],
                perm[static_cast<std::size_t>(dice_.below(i + 1))]);
    return perm;
  }

  Expr transposed(const Expr& x) {
    Expr y = glia::transpose(x, permutation(x.rank()));
    return dice_.chance(50) ? glia::transpose(y, permutation(x.rank())) : y;
  }

  Expr broadcasted(const Expr& x) {
    if (x.rank() >= 4) return x;
    std::int64_t lead = 1 + dice_.below(3);
    if (x.shape().numel() * lead > kMaxElements) return x;
    std::vector<std::int64_t> dims = x.shape().dims();
    dims.insert(dims.begin(), lead);
    Expr y = glia::broadcast_to(x, Shape(dims));
    return dice_.chance(30) ? glia::broadcast_to(y, Shape(dims)) : y;  // an identity broadcast
  }

  // x (as a matrix) times a constant matrix, sometimes twice in a row; or a constant
  // product, which folding evaluates.
  Expr dotted(const Expr& x) {
    Expr m = x.rank() >= 2 ? x : glia::reshape(x, {1, x.shape().numel()});
    std::int64_t k = m.dim(m.rank() - 1);
    auto matrix = [&](std::int64_t rows) {
      return Expr(random_tensor(dice_, dtype_, Shape{rows, 1 + dice_.below(4)}));
    };
    Expr y = glia::matmul(m, matrix(k));
    if (dice_.chance(40)) y = glia::matmul(glia::tanh(y), matrix(y.dim(y.rank() - 1)));
    if (dice_.chance(20)) {
      Expr c = matrix(2);
      y = y + glia::sum(glia::dot_general(c, c, {0}, {0}));  // constant: folded
    }
    return y;
  }

  Dice& dice_;
  glia::DType dtype_;
  std::vector<Expr> pool_;
};

}  // namespace

TEST(Fuzz, CompiledGraphsMatchTheInterpreter) {
  Dice dice(kSeed);
  int shrunk = 0;
  // Every registered backend against the same oracle (a new backend joins by registering);
  // interp runs the optimized graph, so it checks the passes too.
  std::vector<std::string> backends;
  for (const std::string& name : glia::backend_names()) {
    if (std::string why = glia::backend(name).unavailable(); !why.empty()) {
      std::cout << "Fuzz: backend " << name << " left out: " << why << "\n";
      continue;
    }
    backends.push_back(name);
  }
  for (int c = 0; c < kCases; ++c) {
    glia::DType dtype = dice.chance(80) ? glia::f32 : glia::f64;
    std::vector<glia::TensorType> types;
    int parameters = 1 + dice.below(3);
    for (int i = 0; i < parameters; ++i) types.push_back({dtype, random_shape(dice)});
    GraphGenerator generator(dice, dtype);
    glia::Graph g = glia::trace([&](const std::vector<Expr>& in) { return generator.build(in); },
                                types, "fuzz");
    std::vector<Tensor> inputs;
    for (const auto& t : types) inputs.push_back(random_tensor(dice, t.dtype, t.shape));

    std::vector<Tensor> want = glia::interpret(g, inputs);
    shrunk += glia::optimize(g).size() < glia::prune(g).size();
    for (const std::string& name : backends) {
      bool runs_all = true;  // a backend that runs only some ops (a test's) skips the others
      for (const glia::Node& n : g.nodes())
        runs_all = runs_all && glia::backend(name).supports(n.op);
      // cpu_compiled (cpu_native_test.cpp) runs the system's C compiler for every graph:
      // a tenth of the cases.
      if (!runs_all || (name == "cpu_compiled" && c % 10 != 0)) continue;
      std::vector<Tensor> got = glia::compile_graph(g, name)->run(inputs);
      const bool exact = name == "interp";  // the same reference kernels: rounding of passes only
      ASSERT_EQ(got.size(), want.size()) << name;
      for (Tensor& t : got) t = t.to_host();  // a device backend's outputs
      for (std::size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(got[i].type(), want[i].type()) << name << ", case " << c << "\n"
                                                 << glia::to_text(g);
        ASSERT_TRUE(glia::allclose(got[i], want[i], exact ? 1e-5 : 1e-4, exact ? 1e-6 : 1e-5))
            << name << ", case " << c << " output " << i << "\n"
            << glia::to_text(g) << "\noptimized:\n"
            << glia::to_text(glia::optimize(g)) << "\nwant " << want[i] << "\ngot " << got[i];
      }
    }
  }
  // The generated graphs give the passes something to do in most cases.
  EXPECT_GT(shrunk, kCases / 3);
}
