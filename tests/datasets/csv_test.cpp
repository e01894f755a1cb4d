// read_csv: features and labels by hand from small files (header, quoting, spaces, blank
// lines, a label column anywhere, one-hot classes or raw targets, no header), and the
// errors that name the file, line and column.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "datasets/file_util.hpp"
#include "expect_error.hpp"
#include "glia/datasets/csv.hpp"

namespace glia {
namespace {

using testing::expect_error_parts;
using testing::TempDir;

std::string write(const TempDir& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir.file(name)) << text;
  return dir.file(name);
}

TEST(Csv, FeaturesAndOneHotLabels) {
  TempDir dir;
  const std::string path = write(dir, "d.csv",
                                 "height, \"class\" ,width\n"
                                 "1.5, 2, -3\n"
                                 "\n"
                                 "\"4\",0,5e-1\r\n"
                                 "  7 ,1, 8\n");
  Dataset d = read_csv(path, {.label = "class", .classes = 3});
  EXPECT_EQ(d.x.shape(), (Shape{3, 2}));
  EXPECT_EQ(d.x.to_vector<float>(), (std::vector<float>{1.5f, -3, 4, 0.5f, 7, 8}));
  EXPECT_EQ(d.y.shape(), (Shape{3, 3}));
  EXPECT_EQ(d.y.to_vector<float>(), (std::vector<float>{0, 0, 1, 1, 0, 0, 0, 1, 0}));
  // Raw targets from the last column, by default.
  Dataset r = read_csv(path);
  EXPECT_EQ(r.x.to_vector<float>(), (std::vector<float>{1.5f, 2, 4, 0, 7, 1}));
  EXPECT_EQ(r.y.shape(), (Shape{3, 1}));
  EXPECT_EQ(r.y.to_vector<float>(), (std::vector<float>{-3, 0.5f, 8}));
  // No header, semicolons.
  Dataset s = read_csv(write(dir, "s.csv", "1;2;0\n3;4;1\n"),
                       {.classes = 2, .delimiter = ';', .header = false});
  EXPECT_EQ(s.x.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(s.y.to_vector<float>(), (std::vector<float>{1, 0, 0, 1}));
}

TEST(Csv, ErrorsNameTheFileLineAndColumn) {
  TempDir dir;
  const std::string bad = write(dir, "bad.csv", "a,b,label\n1,2,0\n3,x4,1\n");
  expect_error_parts([&] { read_csv(bad); }, {bad + ":3", "column 'b'", "'x4' is not a number"});
  const std::string ragged = write(dir, "ragged.csv", "a,b,label\n1,2,0\n3,1\n");
  expect_error_parts([&] { read_csv(ragged); }, {ragged + ":3", "2 fields", "header names 3"});
  const std::string ok = write(dir, "ok.csv", "a,b,label\n1,2,0\n3,4,5\n");
  expect_error_parts([&] { read_csv(ok, {.label = "y"}); },
                     {"no column 'y'", "columns: a, b, label"});
  expect_error_parts([&] { read_csv(ok, {.classes = 3}); },
                     {"row 2", "label column 'label'", "5 is not a class in 0..2"});
  const std::string frac = write(dir, "frac.csv", "a,label\n1,0.5\n");
  expect_error_parts([&] { read_csv(frac, {.classes = 2}); }, {"0.5 is not a class"});
  expect_error_parts([&] { read_csv(write(dir, "empty.csv", "\n\n")); }, {"empty"});
  expect_error_parts([&] { read_csv(write(dir, "one.csv", "label\n1\n")); }, {"one column"});
  expect_error_parts([&] { read_csv(write(dir, "q.csv", "a,b\n\"1,2\n")); },
                     {"q.csv:2", "quoted field is not closed"});
  expect_error_parts([&] { read_csv(dir.file("none.csv")); }, {"none.csv", "no such file"});
}

}  // namespace
}  // namespace glia
