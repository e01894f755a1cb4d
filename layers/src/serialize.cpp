// model_to_json and model_from_json. The document, one layer a line:
//   {"format": "glia.model", "version": 1, "output": "<layer>", "layers": [
//     {"name":"x","type":"input","inputs":[],"shape":[-1,4],"dtype":"f32"},
//     {"name":"dense_0","type":"dense","inputs":["x"],"options":{...},"frozen":["kernel"]}]}
// Layers come in topological order; each layer's options are its recorded config, read
// back by the layer table (layer_table.cpp) with the layer's public builder.
#include "glia/layers/serialize.hpp"

#include <map>
#include <set>

#include "layer_table.hpp"
#include "option_reader.hpp"

namespace glia {

namespace {

using detail::Json;

constexpr const char* kFormat = "glia.model";
constexpr int kVersion = 1;

bool is_input_layer(const LayerNode& n) { return n.type == "input" && !n.forward; }

Json layer_json(const ResolvedLayer& l, const std::vector<ResolvedLayer>& order) {
  const LayerNode& n = *l.node;
  Json j = Json::object();
  j["name"] = l.name;
  j["type"] = n.type;
  Json inputs = Json::array();
  for (std::size_t i : l.inputs) inputs.push_back(order[i].name);
  j["inputs"] = inputs;
  if (is_input_layer(n)) {
    j["shape"] = n.input_shape;
    j["dtype"] = std::string(dtype_name(n.input_dtype));
    return j;
  }
  if (!n.output_names.empty()) {  // outputs(): the heads' names, in the order of "inputs"
    j["names"] = n.output_names;
    return j;
  }
  if (l.shared()) j["shares"] = l.params_of;
  check(!n.config.empty(), "model_to_json: custom layer '", l.name, "' (type ", n.type,
        ") has no JSON description");
  Json options = Json::parse(n.config);
  for (auto it = options.begin(); it != options.end(); ++it)
    check(!it->is_null(), "model_to_json: layer '", l.name, "' (", n.type, "): option '", it.key(),
          "' is a custom initializer, which has no JSON description");
  j["options"] = std::move(options);
  Json frozen = Json::array();
  for (const ParamSpec& p : n.params)
    if (n.frozen && n.frozen(l.name, p.name)) frozen.push_back(p.name);
  if (!frozen.empty()) j["frozen"] = std::move(frozen);
  return j;
}

// The layer named and frozen as recorded (the builders leave both unset).
Model finish_layer(const Model& m, const std::string& name, detail::OptionReader& r) {
  auto node = std::make_shared<LayerNode>(m.node());
  node->name = name;
  if (!r.has("frozen")) return Model(std::move(node));
  std::vector<std::string> names = r.strings("frozen");
  std::set<std::string> frozen(names.begin(), names.end());
  for (const std::string& p : frozen) {
    bool known = false;
    std::string params;
    for (const ParamSpec& spec : node->params) {
      known = known || spec.name == p;
      params += (params.empty() ? "" : ", ") + spec.name;
    }
    if (!known)
      r.fail("frozen", cat("names '", p, "', which is not a parameter of the layer (it has: ",
                           params.empty() ? "none" : params, ")"));
  }
  node->frozen = [frozen](const std::string&, const std::string& p) {
    return frozen.count(p) != 0;
  };
  return Model(std::move(node));
}

Model read_layer(const Json& j, std::size_t position, const std::map<std::string, Model>& built) {
  check(j.is_object(), "model_from_json: layer ", position, " must be a JSON object, got ",
        detail::json_excerpt(j));
  detail::OptionReader r(j, cat("model_from_json: layer ", position));
  const std::string name = r.string("name"), type = r.string("type");
  check(!name.empty(), "model_from_json: layer ", position, " has an empty name");
  const std::string where = cat("model_from_json: layer '", name, "' (", type, ")");
  r.set_where(where);
  std::vector<Model> inputs;
  for (const std::string& in : r.strings("inputs")) {
    auto it = built.find(in);
    if (it == built.end()) r.fail("inputs", cat("names '", in, "', which is not an earlier layer"));
    inputs.push_back(it->second);
  }
  Model m;
  if (type == "outputs") {
    std::vector<std::string> names = r.strings("names");
    if (names.size() != inputs.size())
      r.fail("names", cat("has ", names.size(), " names for ", inputs.size(), " inputs"));
    std::map<std::string, Model> heads;
    for (std::size_t i = 0; i < names.size(); ++i)
      if (!heads.emplace(names[i], inputs[i]).second)
        r.fail("names", cat("repeats '", names[i], "'"));
    r.finish();
    auto node = std::make_shared<LayerNode>(outputs(heads).node());
    node->name = name;
    return Model(std::move(node));
  }
  if (type == "input") {
    check(inputs.empty(), where, ": an input layer has no inputs");
    Ints shape = r.integers("shape");
    std::string dtype = r.string("dtype");
    try {
      m = input(name, shape, dtype_from_name(dtype));
    } catch (const Error& e) {
      throw Error(cat(where, ": ", e.what()));
    }
  } else {
    detail::OptionReader options(r.object("options"), where);
    m = detail::rebuild_layer(type, inputs, options, where);
  }
  m = finish_layer(m, name, r);
  if (r.has("shares")) {  // weight sharing with an earlier layer
    std::string holder = r.string("shares");
    auto it = built.find(holder);
    if (it == built.end() || it->second.node().params.empty())
      r.fail("shares", cat("names '", holder, "', which is not an earlier layer with parameters"));
    auto node = std::make_shared<LayerNode>(m.node());
    node->shares = it->second.node().shares ? it->second.node().shares : it->second.ptr();
    m = Model(std::move(node));
  }
  r.finish();
  return m;
}

}  // namespace

std::string model_to_json(const Model& model) {
  std::vector<ResolvedLayer> order = resolve_layers(model);
  // One layer a line: readable, and still plain JSON.
  std::string out = cat("{\n  \"format\": \"", kFormat, "\",\n  \"version\": ", kVersion, ",\n");
  try {
    out += cat("  \"output\": ", Json(order.back().name).dump(), ",\n  \"layers\": [\n");
    for (std::size_t i = 0; i < order.size(); ++i)
      out += cat("    ", layer_json(order[i], order).dump(), i + 1 < order.size() ? ",\n" : "\n");
  } catch (const Json::exception& e) {  // a name that is not valid UTF-8
    throw Error(cat("model_to_json: ", e.what()));
  }
  return out + "  ]\n}\n";
}

Model model_from_json(std::string_view text) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::exception& e) {  // a syntax error, or a number beyond 64 bits (406)
    throw Error(cat("model_from_json: malformed JSON: ", e.what()));
  }
  check(doc.is_object(), "model_from_json: expected a JSON object, got ",
        detail::json_excerpt(doc));
  detail::OptionReader r(doc, "model_from_json");
  std::string format = r.string("format");
  check(format == kFormat, "model_from_json: the format is '", format, "', expected '", kFormat,
        "'");
  std::int64_t version = r.integer("version");
  check(version == kVersion, "model_from_json: unsupported version ", version,
        " (this build reads version ", kVersion, ")");
  const std::string output = r.string("output");
  std::map<std::string, Model> built;
  const Json& layers = r.array("layers");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    Model m = read_layer(layers[i], i, built);
    const std::string& name = m.node().name;
    check(built.emplace(name, m).second, "model_from_json: two layers are named '", name, "'");
  }
  r.finish();
  auto it = built.find(output);
  check(it != built.end(), "model_from_json: the output '", output, "' is not one of the layers");
  return it->second;
}

}  // namespace glia
