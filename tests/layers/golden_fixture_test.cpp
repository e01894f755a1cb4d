// The golden fixture reader (golden_fixture.hpp): dtypes, shapes, values, and clear errors
// for a missing case or a corrupt file.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "golden_fixture.hpp"

namespace glia {
namespace {

TEST(GoldenFixture, ReadsDtypesShapesAndValues) {
  golden::Fixture f = golden::load_fixture("embedding");
  const Tensor& ids = golden::tensor(f, "input.x");
  EXPECT_EQ(ids.type(), (TensorType{DType::i64, Shape{2, 5}}));
  EXPECT_EQ(ids.to_vector<std::int64_t>()[0], 0);  // pinned by generate.py
  EXPECT_EQ(ids.to_vector<std::int64_t>()[9], 6);
  EXPECT_EQ(golden::tensor(f, "param.kernel").type(), (TensorType{DType::f32, Shape{7, 3}}));
  // exp(100) overflows f32: the fixture writes "inf".
  golden::Fixture a = golden::load_fixture("activations_f32");
  EXPECT_EQ(golden::tensor(a, "input.x").element(23), 100.0);
  EXPECT_TRUE(std::isinf(golden::tensor(a, "output.exp").element(23)));
}

TEST(GoldenFixture, MissingCaseAndTensorAreClearErrors) {
  try {
    golden::load_fixture("no_such_case");
    ADD_FAILURE() << "expected glia::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no_such_case.txt"), std::string::npos) << e.what();
  }
  try {
    golden::tensor(golden::load_fixture("subtract"), "output.nope");
    ADD_FAILURE() << "expected glia::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has: input.a, input.b, output"), std::string::npos)
        << e.what();
  }
}

TEST(GoldenFixture, CorruptTextIsAClearError) {
  auto error_of = [](const std::string& text) -> std::string {
    std::istringstream in(text);
    try {
      golden::parse_fixture(in, "case.txt");
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  std::istringstream ok("# comment\ns f64 : -0.5\nv bool 2 : 1 0\n");
  golden::Fixture f = golden::parse_fixture(ok, "ok.txt");
  EXPECT_EQ(golden::tensor(f, "s").type(), (TensorType{DType::f64, Shape{}}));
  EXPECT_EQ(golden::tensor(f, "s").item<double>(), -0.5);
  EXPECT_EQ(golden::tensor(f, "v").to_vector<int>(), (std::vector<int>{1, 0}));
  EXPECT_NE(error_of("x f32 2 3 : 1 2 3").find("(f32[2][3]) needs 6 values, the line has 3"),
            std::string::npos);
  EXPECT_NE(error_of("\nx f32 2 : 1 2x").find("case.txt:2: value of 'x': '2x' is not a number"),
            std::string::npos);
  EXPECT_NE(error_of("x f33 1 : 1").find("case.txt:1: tensor 'x':"), std::string::npos);
  EXPECT_NE(error_of("x f32 2 1 2").find("has no ':'"), std::string::npos);
  EXPECT_NE(error_of("x f32 1 : 1\nx f32 1 : 2").find("case.txt:2: tensor 'x' repeated"),
            std::string::npos);
  EXPECT_NE(error_of("# only comments\n").find("holds no tensors"), std::string::npos);
}

}  // namespace
}  // namespace glia
