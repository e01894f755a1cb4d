// read_csv: a small reader for numeric CSV (RFC 4180 quoting of a whole field, no
// embedded newlines), two passes over the lines: split and parse, then fill the tensors.
#include "glia/datasets/csv.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include "glia/core/error.hpp"

namespace glia {

namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

// The fields of one line; a quoted field may hold the delimiter and doubled quotes.
std::vector<std::string> split(const std::string& line, char delimiter, const std::string& where) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false, was_quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"' && trim(field).empty()) {
      quoted = was_quoted = true;
      field.clear();
    } else if (c == delimiter) {
      fields.push_back(was_quoted ? field : trim(field));
      field.clear();
      was_quoted = false;
    } else if (was_quoted && (c == ' ' || c == '\t' || c == '\r')) {
      // padding after a closing quote
    } else {
      check(!was_quoted, where, ": text after a closing quote");
      field += c;
    }
  }
  check(!quoted, where, ": a quoted field is not closed");
  fields.push_back(was_quoted ? field : trim(field));
  return fields;
}

double number(const std::string& field, const std::string& where) {
  const std::string t = trim(field);
  char* end = nullptr;
  errno = 0;
  const double v = t.empty() ? NAN : std::strtod(t.c_str(), &end);
  check(!t.empty() && end == t.c_str() + t.size() && errno != ERANGE, where, ": '", field,
        "' is not a number");
  return v;
}

}  // namespace

Dataset read_csv(const std::filesystem::path& path, const CsvOptions& options) {
  const std::string file = path.string();
  std::error_code ec;
  check(std::filesystem::exists(path, ec), file, ": no such file");
  std::ifstream in(path);
  check(static_cast<bool>(in), file, ": cannot open it");
  check(options.classes >= 0, "read_csv: classes must be >= 0, got ", options.classes);
  std::vector<std::string> names;
  std::vector<std::vector<double>> rows;
  std::int64_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (trim(line).empty()) continue;
    const std::string where = cat(file, ":", line_no);
    std::vector<std::string> fields = split(line, options.delimiter, where);
    if (names.empty() && options.header) {
      names = std::move(fields);
      continue;
    }
    if (names.empty())
      for (std::size_t i = 0; i < fields.size(); ++i) names.push_back(std::to_string(i));
    check(fields.size() == names.size(), where, ": ", fields.size(), " fields, but the ",
          options.header ? "header names " : "first row has ", names.size());
    std::vector<double> row;
    for (std::size_t i = 0; i < fields.size(); ++i)
      row.push_back(number(fields[i], cat(where, ", column '", names[i], "'")));
    rows.push_back(std::move(row));
  }
  check(!names.empty(), file, ": empty (no header and no rows)");
  check(names.size() >= 2, file, ": one column; a label column and at least one feature needed");
  std::size_t label = names.size() - 1;
  if (!options.label.empty()) {
    auto it = std::find(names.begin(), names.end(), options.label);
    if (it == names.end()) {
      std::string known;
      for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
      throw Error(cat(file, ": no column '", options.label, "' (columns: ", known, ")"));
    }
    label = static_cast<std::size_t>(it - names.begin());
  }
  const auto n = static_cast<std::int64_t>(rows.size());
  const auto features = static_cast<std::int64_t>(names.size() - 1);
  Tensor x(DType::f32, Shape{n, features});
  Tensor y(DType::f32, options.classes > 0 ? Shape{n, options.classes} : Shape{n, 1});
  float* xp = x.data<float>();
  float* yp = y.data<float>();
  for (std::int64_t r = 0; r < n; ++r) {
    const std::vector<double>& row = rows[std::size_t(r)];
    std::int64_t k = 0;
    for (std::size_t i = 0; i < row.size(); ++i)
      if (i != label) xp[r * features + k++] = static_cast<float>(row[i]);
    const double v = row[label];
    if (options.classes == 0) {
      yp[r] = static_cast<float>(v);
      continue;
    }
    check(v == std::floor(v) && v >= 0 && v < double(options.classes), file, ": row ", r + 1,
          ", label column '", names[label], "': ", v, " is not a class in 0..",
          options.classes - 1);
    yp[r * options.classes + static_cast<std::int64_t>(v)] = 1.0f;
  }
  return {x, y};
}

}  // namespace glia
