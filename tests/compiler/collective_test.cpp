// all_reduce in compiled programs: the cpu backend starts each collective in place and
// waits only before the first kernel reading its result (a communicator whose sum lands at
// wait() catches any reader that ran earlier); one communicator's collectives run in bucket
// order whatever the graph's order; a ready collective runs before independent kernels.
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/cpu_test_util.hpp"
#include "glia/core/collective.hpp"

namespace glia::testing {
namespace {

// Two processes holding the same values: the sum doubles them, but only when the request
// is waited for (test() never completes it), and every start and wait is logged.
class DeferredCommunicator final : public Communicator {
 public:
  struct Log {
    std::vector<std::string> events;
  };
  int rank() const override { return 0; }
  int size() const override { return 2; }
  void all_reduce_sum(void* data, std::int64_t count, DType dtype) override {
    double_up(data, count, dtype);
  }
  std::unique_ptr<CollectiveRequest> start_all_reduce_sum(void* data, std::int64_t count,
                                                          DType dtype) override {
    log.events.push_back(cat("start ", count));
    struct Request final : CollectiveRequest {
      DeferredCommunicator* comm;
      void* data;
      std::int64_t count;
      DType dtype;
      bool done = false;
      void wait() override {
        if (done) return;
        done = true;
        comm->log.events.push_back(cat("wait ", count));
        double_up(data, count, dtype);
      }
      bool test() override { return done; }
    };
    auto r = std::make_unique<Request>();
    r->comm = this, r->data = data, r->count = count, r->dtype = dtype;
    return r;
  }
  void broadcast(void*, std::int64_t, int) override {}
  void barrier() override {}
  std::string name() const override { return "deferred"; }
  Log log;

 private:
  static void double_up(void* data, std::int64_t count, DType dtype) {
    check(dtype == DType::f32, "DeferredCommunicator: f32 only");
    auto* f = static_cast<float*>(data);
    for (std::int64_t i = 0; i < count; ++i) f[i] *= 2;
  }
};

TEST(Collective, CpuWaitsBeforeTheFirstReader) {
  GLIA_REQUIRE_CPU_BACKEND();
  auto comm = std::make_shared<DeferredCommunicator>();
  const std::int64_t id = register_communicator(comm);
  // r1 is read by a sweep, r2 is returned as it is.
  Graph g = trace(
      [&](const std::vector<Expr>& in) {
        Expr r1 = all_reduce(in[0] * 3.0, id, 1);
        Expr r2 = all_reduce(in[1] + 1.0, id, 2);
        return std::vector<Expr>{r1 + 1.0, r2};
      },
      {TensorType{DType::f32, Shape{4}}, TensorType{DType::f32, Shape{3}}}, "deferred");
  auto exe = backend("cpu").compile(g, {});
  EXPECT_EQ(count_kernels(*exe, "collective"), 2) << exe->describe();
  EXPECT_FALSE(on_reference(*exe, Op::all_reduce)) << exe->describe();
  EXPECT_NE(exe->describe().find("all_reduce bucket 1 of communicator"), std::string::npos);
  Tensor x = Tensor::from<float>({1, 2, 3, 4}, Shape{4});
  Tensor y = Tensor::from<float>({-1, 0, 0.5f}, Shape{3});
  std::vector<Tensor> out = exe->run(std::vector<Tensor>{x, y});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{7, 13, 19, 25}));  // 2 * 3x + 1
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{0, 2, 3}));        // 2 * (y + 1)
  // Both started before either was awaited; bucket 1 first.
  EXPECT_EQ(comm->log.events, (std::vector<std::string>{"start 4", "start 3", "wait 4", "wait 3"}));
}

TEST(Collective, BucketsRunInOrderAndEarly) {
  GLIA_REQUIRE_CPU_BACKEND();
  auto comm = std::make_shared<LocalCommunicator>();
  const std::int64_t id = register_communicator(comm);
  // Traced in the order bucket 3, 2, 1, each beside an unrelated product.
  Graph g = trace(
      [&](const std::vector<Expr>& in) {
        Expr r3 = all_reduce(in[0] * 3.0, id, 3);
        Expr r2 = all_reduce(in[0] * 2.0, id, 2);
        Expr r1 = all_reduce(in[0] + 1.0, id, 1);
        Expr product = dot(in[1], in[1]);
        return std::vector<Expr>{r3 + r2 + r1, product};
      },
      {TensorType{DType::f32, Shape{8}}, TensorType{DType::f32, Shape{32, 32}}}, "order");
  for (const char* name : {"cpu", "interp"}) {
    SCOPED_TRACE(name);
    auto exe = backend(name).compile(g, {});
    std::vector<std::int64_t> buckets;
    std::size_t last_collective = 0, matmul = 0;
    const auto& kernels = exe->program().kernels;
    for (std::size_t k = 0; k < kernels.size(); ++k) {
      for (ValueId id2 : kernels[k].covered)
        if (g.node(id2).op == Op::all_reduce) {
          buckets.push_back(std::get<CollectiveAttrs>(g.node(id2).attrs).bucket);
          last_collective = k;
        }
      if (std::string(kernels[k].kind()) == "matmul" ||
          (std::string(kernels[k].kind()) == "reference" &&
           std::get<ReferenceSpec>(kernels[k].spec).op == Op::dot_general))
        matmul = k;
    }
    EXPECT_EQ(buckets, (std::vector<std::int64_t>{1, 2, 3})) << exe->describe();
    EXPECT_LT(last_collective, matmul) << exe->describe();
  }
}

}  // namespace
}  // namespace glia::testing
