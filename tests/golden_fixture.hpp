// Reads the golden fixtures written by a suite's generate.py (tests/layers/golden,
// tests/optim/golden_losses: PyTorch values, committed as text): one tensor a line,
// `name dtype dims... : values...`, '#' comments.
//   glia::golden::Fixture f = glia::golden::load_fixture("conv2d");  // in GLIA_GOLDEN_DIR
//   glia::golden::Fixture c = glia::golden::load_fixture_from(folder, "ctc");
#pragma once

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "glia/core/tensor.hpp"

namespace glia::golden {

using Fixture = std::map<std::string, Tensor>;

inline std::string fixture_path(const std::string& folder, const std::string& case_name) {
  return folder + "/" + case_name + ".txt";
}

namespace detail {

// One value token converted to T; throws with `where` on anything but a whole number.
template <class T>
T parse_value(const std::string& token, const std::string& where) {
  const char* begin = token.c_str();
  char* end = nullptr;
  errno = 0;
  T v{};
  if constexpr (std::is_same_v<T, float>) {
    v = std::strtof(begin, &end);  // directly to float: no double rounding
  } else if constexpr (std::is_floating_point_v<T>) {
    v = static_cast<T>(std::strtod(begin, &end));
  } else {
    v = static_cast<T>(std::strtoll(begin, &end, 10));
    check(errno == 0, where, ": integer '", token, "' is out of range");
  }
  // ERANGE on floats only flags under/overflow of finite literals (denormals): accepted.
  check(end != begin && *end == '\0', where, ": '", token, "' is not a number");
  return v;
}

inline Tensor parse_tensor_line(const std::string& line, const std::string& where,
                                std::string& name) {
  std::istringstream in(line);
  std::string dtype_text, token;
  check(static_cast<bool>(in >> name >> dtype_text), where,
        ": expected 'name dtype dims... : ", "values...'");
  DType dtype;
  try {
    dtype = dtype_from_name(dtype_text);
  } catch (const Error& e) {
    throw Error(cat(where, ": tensor '", name, "': ", e.what()));
  }
  std::vector<std::int64_t> dims;
  bool colon = false;
  while (in >> token) {
    if (token == ":") {
      colon = true;
      break;
    }
    dims.push_back(parse_value<std::int64_t>(token, cat(where, ": dimension of '", name, "'")));
    check(dims.back() >= 0, where, ": tensor '", name, "' has a negative dimension");
  }
  check(colon, where, ": tensor '", name, "' has no ':' before its values");
  std::vector<std::string> values;
  while (in >> token) values.push_back(token);
  Tensor t(dtype, Shape(dims));
  check(static_cast<std::int64_t>(values.size()) == t.numel(), where, ": tensor '", name, "' (",
        t.type().to_string(), ") needs ", t.numel(), " values, the line has ", values.size());
  std::string what = cat(where, ": value of '", name, "'");
  visit_dtype(dtype, [&](auto tag) {
    using S = decltype(tag);
    S* out = t.data<S>();
    for (std::size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<S, float> || std::is_same_v<S, double>)
        out[i] = parse_value<S>(values[i], what);
      else if constexpr (std::is_integral_v<S> && !std::is_same_v<S, bool>)
        out[i] = static_cast<S>(parse_value<std::int64_t>(values[i], what));
      else
        out[i] = convert_element<S>(parse_value<double>(values[i], what));
    }
  });
  return t;
}

}  // namespace detail

// The tensors of a fixture text; `source` names it in errors (with the line number).
inline Fixture parse_fixture(std::istream& text, const std::string& source) {
  Fixture fixture;
  std::string line;
  for (int number = 1; std::getline(text, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    std::string where = cat(source, ":", number), name;
    Tensor t = detail::parse_tensor_line(line, where, name);
    check(fixture.emplace(name, std::move(t)).second, where, ": tensor '", name, "' repeated");
  }
  check(!fixture.empty(), "golden fixture ", source, " holds no tensors");
  return fixture;
}

// The case's tensors by name, from <folder>/<case_name>.txt. Throws glia::Error naming
// the file (and line) when it is missing, empty or malformed, or repeats a name.
inline Fixture load_fixture_from(const std::string& folder, const std::string& case_name) {
  std::string path = fixture_path(folder, case_name);
  std::ifstream file(path);
  check(file.is_open(), "golden fixture '", case_name, "': cannot open ", path,
        " (regenerate with /usr/bin/python3 ", folder, "/generate.py)");
  return parse_fixture(file, path);
}

#ifdef GLIA_GOLDEN_DIR
// load_fixture_from the suite's fixture folder, GLIA_GOLDEN_DIR (see tests/CMakeLists.txt).
inline Fixture load_fixture(const std::string& case_name) {
  return load_fixture_from(GLIA_GOLDEN_DIR, case_name);
}
#endif

// fixture[name], or glia::Error listing what the fixture holds.
inline const Tensor& tensor(const Fixture& fixture, const std::string& name) {
  auto it = fixture.find(name);
  if (it != fixture.end()) return it->second;
  std::string known;
  for (const auto& [n, t] : fixture) known += (known.empty() ? "" : ", ") + n;
  throw Error(cat("golden fixture: no tensor '", name, "' (has: ", known, ")"));
}

}  // namespace glia::golden
