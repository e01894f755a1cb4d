// summary (a table of layers with their shapes, options and parameter counts) and
// to_dot (the layer graph in Graphviz DOT); both trace the model once through
// layer_shapes to learn every layer's shapes.
#include "glia/layers/display.hpp"

#include <algorithm>
#include <array>
#include <iomanip>
#include <sstream>

namespace glia {

namespace {

std::string types_text(const std::vector<TensorType>& types) {
  std::string s;
  for (std::size_t i = 0; i < types.size(); ++i) s += (i ? ", " : "") + types[i].to_string();
  return s;
}

std::int64_t bytes_of(const TensorType& t) { return t.shape.numel() * dtype_size(t.dtype); }

std::string human_bytes(std::int64_t n) {
  if (n < 1024) return cat(n, " B");
  std::ostringstream out;
  out << std::fixed << std::setprecision(1);
  if (n < 1024 * 1024)
    out << static_cast<double>(n) / 1024 << " KiB";
  else
    out << static_cast<double>(n) / (1024.0 * 1024.0) << " MiB";
  return out.str();
}

constexpr std::size_t kColumns = 6;
using Row = std::array<std::string, kColumns>;

}  // namespace

std::string summary(const Model& model, const InputTypes& inputs) {
  std::vector<LayerShapes> layers = layer_shapes(model, inputs);
  std::vector<Row> rows{{"Layer", "Inputs", "Output", "Options", "Params", "Bytes"}};
  std::int64_t trainable = 0, frozen = 0, state_values = 0, state_entries = 0, bytes = 0;
  for (const LayerShapes& l : layers) {
    std::int64_t count = 0, layer_bytes = 0;
    for (const LayerShapes::Param& p : l.params) {
      std::int64_t n = p.type.shape.numel();
      count += n;
      layer_bytes += bytes_of(p.type);
      if (p.is_state) {
        state_values += n;
        ++state_entries;
      } else {
        (p.frozen ? frozen : trainable) += n;
      }
    }
    bytes += layer_bytes;
    // An outputs() node passes its heads on: its output column lists them.
    std::string output = l.type == "outputs" ? types_text(l.input_types) : l.output.to_string();
    rows.push_back({cat(l.name, " (", l.type, ")"), types_text(l.input_types), output, l.options,
                    std::to_string(count), std::to_string(layer_bytes)});
  }
  std::array<std::size_t, kColumns> width{};
  for (const Row& r : rows)
    for (std::size_t c = 0; c < kColumns; ++c) width[c] = std::max(width[c], r[c].size());
  auto rule = [&](char fill) {
    std::string s = "+";
    for (std::size_t w : width) s += std::string(w + 2, fill) + "+";
    return s + "\n";
  };
  auto line = [&](const Row& r) {
    std::string s = "|";
    for (std::size_t c = 0; c < kColumns; ++c) {
      std::string pad(width[c] - r[c].size(), ' ');
      bool number = c >= 4;  // Params and Bytes are right-aligned
      s += " " + (number ? pad + r[c] : r[c] + pad) + " |";
    }
    return s + "\n";
  };
  std::string out = rule('-') + line(rows[0]) + rule('=');
  for (std::size_t i = 1; i < rows.size(); ++i) out += line(rows[i]);
  out += rule('-');
  out += cat("Total parameters: ", trainable + frozen, "\n");
  out += cat("  trainable:      ", trainable, "\n");
  out += cat("  frozen:         ", frozen, "\n");
  out += cat("State entries:    ", state_entries, " (", state_values, " values)\n");
  out += cat("Total bytes:      ", bytes, " (", human_bytes(bytes), ")\n");
  return out;
}

std::string summary(const Model& model) { return summary(model, default_input_types(model)); }

namespace {
std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') q += '\\';
    q += ch;
  }
  return q + "\"";
}
}  // namespace

std::string to_dot(const Model& model, const InputTypes& inputs) {
  std::vector<LayerShapes> layers = layer_shapes(model, inputs);
  std::string out = "digraph model {\n  node [shape=box];\n";
  for (const LayerShapes& l : layers) {
    // DOT reads the two characters \n in a label as a line break.
    std::string label = quoted(cat(l.name, " (", l.type, ")"));
    label.insert(label.size() - 1,
                 "\\n" + (l.type == "outputs" ? l.options : l.output.to_string()));
    out += cat("  ", quoted(l.name), " [label=", label, "];\n");
  }
  for (const LayerShapes& l : layers)
    for (const std::string& in : l.inputs)
      out += cat("  ", quoted(in), " -> ", quoted(l.name), ";\n");
  return out + "}\n";
}

std::string to_dot(const Model& model) { return to_dot(model, default_input_types(model)); }

}  // namespace glia
