// Reading a layer's JSON options back (model_from_json): typed getters that throw a
// glia::Error naming the layer and the option when one is missing or ill-typed, and a
// final check that no unknown option was given. Internal to glia_layers (nlohmann/json).
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "glia/layers/convolution.hpp"

namespace glia::detail {

using Json = nlohmann::ordered_json;

class OptionReader {
 public:
  // `where` names what is read, for messages: "layer 'dense_0' (dense)".
  OptionReader(const Json& options, std::string where);

  std::int64_t integer(const std::string& key);
  double number(const std::string& key);  // also "nan", "inf", "-inf"
  bool boolean(const std::string& key);
  std::string string(const std::string& key);
  Ints integers(const std::string& key);
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs(const std::string& key);
  Padding padding(const std::string& key);
  Channels channels(const std::string& key);  // "last" or "first"
  // The position of the option's value in `names` (a string enum).
  int choice(const std::string& key, const std::vector<std::string>& names);
  Initializer initializer(const std::string& key);
  Tensor tensor(const std::string& key);
  std::vector<std::string> strings(const std::string& key);
  const Json& array(const std::string& key);
  const Json& object(const std::string& key);
  bool has(const std::string& key) const { return options_.contains(key); }
  // glia::Error if an option was given that no getter asked for.
  void finish() const;

  [[noreturn]] void fail(const std::string& key, const std::string& what) const;
  const std::string& where() const { return where_; }
  void set_where(std::string where) { where_ = std::move(where); }

 private:
  const Json& get(const std::string& key);
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs_of(const std::string& key,
                                                              const Json& v) const;
  std::string expected(const std::string& key, std::string_view type) const;

  const Json& options_;
  std::string where_;
  std::set<std::string> read_;
};

// A JSON value as short text for messages (long values are cut).
std::string json_excerpt(const Json& value);

}  // namespace glia::detail
