// Typed reads of a layer's JSON options, including initializers (remade by name with
// their arguments) and constant tensors (exact element values, "nan"/"inf" as strings).
#include "option_reader.hpp"

#include <cmath>
#include <limits>

#include "glia/layers/initializers.hpp"

namespace glia::detail {

std::string json_excerpt(const Json& value) {
  std::string s = value.dump();
  return s.size() <= 40 ? s : s.substr(0, 37) + "...";
}

OptionReader::OptionReader(const Json& options, std::string where)
    : options_(options), where_(std::move(where)) {
  check(options_.is_object(), where_, ": the options must be a JSON object, got ",
        json_excerpt(options_));
}

void OptionReader::fail(const std::string& key, const std::string& what) const {
  throw Error(cat(where_, ": option '", key, "' ", what));
}

const Json& OptionReader::get(const std::string& key) {
  auto it = options_.find(key);
  if (it == options_.end()) fail(key, "is missing");
  read_.insert(key);
  return *it;
}

std::string OptionReader::expected(const std::string& key, std::string_view type) const {
  return cat("must be ", type, ", got ", json_excerpt(options_.at(key)));
}

namespace {

// A JSON integer that fits in int64 (nlohmann keeps large positive ones unsigned).
bool is_int64(const Json& v) {
  return v.is_number_integer() && !(v.is_number_unsigned() &&
                                    v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX));
}

// A number, or one of the strings json_number() writes for non-finite values.
bool read_number(const Json& v, double& out) {
  if (v.is_number()) {
    out = v.get<double>();
    return true;
  }
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (s == "nan")
    out = std::numeric_limits<double>::quiet_NaN();
  else if (s == "inf")
    out = kInf;
  else if (s == "-inf")
    out = -kInf;
  else
    return false;
  return true;
}

}  // namespace

std::int64_t OptionReader::integer(const std::string& key) {
  const Json& v = get(key);
  if (!is_int64(v)) fail(key, expected(key, "an integer"));
  return v.get<std::int64_t>();
}

double OptionReader::number(const std::string& key) {
  double out = 0;
  if (!read_number(get(key), out)) fail(key, expected(key, "a number"));
  return out;
}

bool OptionReader::boolean(const std::string& key) {
  const Json& v = get(key);
  if (!v.is_boolean()) fail(key, expected(key, "true or false"));
  return v.get<bool>();
}

std::string OptionReader::string(const std::string& key) {
  const Json& v = get(key);
  if (!v.is_string()) fail(key, expected(key, "a string"));
  return v.get<std::string>();
}

Ints OptionReader::integers(const std::string& key) {
  const Json& v = get(key);
  Ints out;
  if (!v.is_array()) fail(key, expected(key, "an array of integers"));
  for (const Json& e : v) {
    if (!is_int64(e)) fail(key, expected(key, "an array of integers"));
    out.push_back(e.get<std::int64_t>());
  }
  return out;
}

std::vector<std::string> OptionReader::strings(const std::string& key) {
  const Json& v = get(key);
  std::vector<std::string> out;
  if (!v.is_array()) fail(key, expected(key, "an array of strings"));
  for (const Json& e : v) {
    if (!e.is_string()) fail(key, expected(key, "an array of strings"));
    out.push_back(e.get<std::string>());
  }
  return out;
}

const Json& OptionReader::array(const std::string& key) {
  const Json& v = get(key);
  if (!v.is_array()) fail(key, expected(key, "an array"));
  return v;
}

const Json& OptionReader::object(const std::string& key) {
  const Json& v = get(key);
  if (!v.is_object()) fail(key, expected(key, "an object"));
  return v;
}

std::vector<std::pair<std::int64_t, std::int64_t>> OptionReader::pairs(const std::string& key) {
  return pairs_of(key, get(key));
}

std::vector<std::pair<std::int64_t, std::int64_t>> OptionReader::pairs_of(const std::string& key,
                                                                          const Json& v) const {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  if (!v.is_array()) fail(key, expected(key, "an array of [low, high] pairs"));
  for (const Json& e : v) {
    if (!e.is_array() || e.size() != 2 || !is_int64(e[0]) || !is_int64(e[1]))
      fail(key, expected(key, "an array of [low, high] pairs"));
    out.emplace_back(e[0].get<std::int64_t>(), e[1].get<std::int64_t>());
  }
  return out;
}

Padding OptionReader::padding(const std::string& key) {
  const Json& v = get(key);
  if (v.is_string()) return Padding(v.get<std::string>());
  return Padding(pairs_of(key, v));
}

int OptionReader::choice(const std::string& key, const std::vector<std::string>& names) {
  std::string s = string(key);
  for (std::size_t i = 0; i < names.size(); ++i)
    if (s == names[i]) return static_cast<int>(i);
  std::string known;
  for (const std::string& n : names) known += (known.empty() ? "\"" : ", \"") + n + "\"";
  fail(key, cat("must be one of ", known, ", got \"", s, "\""));
}

Channels OptionReader::channels(const std::string& key) {
  return choice(key, {"last", "first"}) == 0 ? Channels::last : Channels::first;
}

Initializer OptionReader::initializer(const std::string& key) {
  const Json& v = get(key);
  if (!v.is_object()) fail(key, expected(key, "an initializer object {\"name\": ...}"));
  OptionReader r(v, cat(where_, ", initializer '", key, "'"));
  namespace init = initializers;
  const std::string name = r.string("name");
  Initializer out;
  if (name == "zeros")
    out = init::zeros();
  else if (name == "ones")
    out = init::ones();
  else if (name == "full")
    out = init::full(r.number("value"));
  else if (name == "identity")
    out = init::identity(r.number("scale"));
  else if (name == "uniform")
    out = init::uniform(r.number("scale"));
  else if (name == "normal")
    out = init::normal(r.number("mean"), r.number("stddev"));
  else if (name == "lecun_uniform")
    out = init::lecun_uniform(r.number("scale"));
  else if (name == "lecun_normal")
    out = init::lecun_normal(r.number("scale"));
  else if (name == "glorot_uniform")
    out = init::glorot_uniform(r.number("scale"));
  else if (name == "glorot_normal")
    out = init::glorot_normal(r.number("scale"));
  else if (name == "he_uniform")
    out = init::he_uniform(r.number("scale"));
  else if (name == "he_normal")
    out = init::he_normal(r.number("scale"));
  else if (name == "orthogonal")
    out = init::orthogonal(r.number("scale"));
  else if (name == "variance_scaling") {
    double scale = r.number("scale");
    // The names in the enums' declaration order.
    int mode = r.choice("mode", {"fan_in", "fan_out", "fan_avg"});
    int dist = r.choice("distribution", {"normal", "truncated_normal", "uniform"});
    out = init::variance_scaling(scale, static_cast<init::FanMode>(mode),
                                 static_cast<init::Distribution>(dist));
  } else {
    r.fail("name", cat("names an unknown initializer '", name, "'"));
  }
  r.finish();
  return out;
}

Tensor OptionReader::tensor(const std::string& key) {
  const Json& v = get(key);
  if (!v.is_object()) fail(key, expected(key, "a tensor {\"dtype\", \"shape\", \"data\"}"));
  OptionReader r(v, cat(where_, ", tensor '", key, "'"));
  std::string dtype_text = r.string("dtype");
  DType dtype{};
  try {
    dtype = dtype_from_name(dtype_text);
  } catch (const Error& e) {
    r.fail("dtype", e.what());
  }
  Ints dims = r.integers("shape");
  for (std::int64_t d : dims)
    if (d < 0) r.fail("shape", cat("has a negative dimension ", d));
  const Json& data = r.get("data");
  Tensor t(dtype, Shape(dims));
  if (!data.is_array() || static_cast<std::int64_t>(data.size()) != t.numel())
    r.fail("data", cat("must be an array of ", t.numel(), " values for ", t.type().to_string()));
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(t.raw_data());
    for (std::size_t i = 0; i < data.size(); ++i) {
      const Json& e = data[i];
      const std::string bad =
          cat("has an invalid ", dtype_text, " value ", json_excerpt(e), " at position ", i);
      if constexpr (std::is_same_v<T, bool>) {
        if (!e.is_boolean()) r.fail("data", bad);
        out[i] = e.get<bool>();
      } else if constexpr (std::is_integral_v<T>) {
        if (!is_int64(e)) r.fail("data", bad);
        std::int64_t x = e.get<std::int64_t>();
        // Every integer dtype's range fits in int64.
        if (x < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
            x > static_cast<std::int64_t>(std::numeric_limits<T>::max()))
          r.fail("data", bad);
        out[i] = static_cast<T>(x);
      } else {
        double x = 0;
        if (!read_number(e, x)) r.fail("data", bad);
        out[i] = convert_element<T>(x);
      }
    }
  });
  r.finish();
  return t;
}

void OptionReader::finish() const {
  for (auto it = options_.begin(); it != options_.end(); ++it)
    if (read_.count(it.key()) == 0) throw Error(cat(where_, ": unknown option '", it.key(), "'"));
}

}  // namespace glia::detail
