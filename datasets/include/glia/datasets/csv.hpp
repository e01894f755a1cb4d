// Numeric CSV files as a Dataset: a header line naming the columns, one example a line, a
// label column and the features in every other column.
//   glia::Dataset d = glia::read_csv("iris.csv", {.label = "species", .classes = 3});
//   // d.x f32 [N, 4], d.y one-hot f32 [N, 3]
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "glia/datasets/dataset.hpp"

namespace glia {

struct CsvOptions {
  std::string label;         // the label column's name; empty: the last column
  std::int64_t classes = 0;  // > 0: labels are classes 0..classes-1, y one-hot; 0: y = [N, 1]
  char delimiter = ',';
  bool header = true;  // without one, columns are named by their index ("0", "1", ...)
};

// x: f32 [N, columns - 1] in file order; y: one-hot f32 [N, classes] or the labels as f32
// [N, 1]. Fields may be quoted and padded with spaces; blank lines are skipped. glia::Error
// naming the file, line and column for a missing file, a field that is not a number, a row
// of another length than the header, an unknown label column, or a label that is not a
// class index.
Dataset read_csv(const std::filesystem::path& path, const CsvOptions& options = {});

}  // namespace glia
