// Layers that join or split models: concatenate, add, subtract, multiply, split and
// constant. Axes here count the batch axis (axis 0), which none of them may join or split.
#include "glia/layers/combine.hpp"

#include "layer_util.hpp"

namespace glia {

namespace {

std::vector<Model> non_empty(const std::vector<Model>& xs, std::string_view type) {
  check(!xs.empty(), type, ": needs at least one input");
  return xs;
}

// The normalized axis, which must not be the batch axis.
int feature_axis(const Expr& x, std::int64_t axis, std::string_view type) {
  int a = x.shape().normalize_axis(axis, type);
  check(a != 0, type, ": axis ", axis, " is the batch axis, which is kept as it is");
  return a;
}

}  // namespace

Model concatenate(const std::vector<Model>& xs, std::int64_t axis, const CombineOptions& o) {
  Model m =
      layer("concatenate", non_empty(xs, "concatenate"),
            [axis](LayerContext& c) {
              const std::vector<Expr>& in = c.inputs();
              for (const Expr& e : in)
                check(e.rank() == in[0].rank(), "concatenate: inputs must have the same rank, got ",
                      in[0].rank(), " and ", e.rank());
              return glia::concatenate(in, feature_axis(in[0], axis, "concatenate"));
            },
            {}, {o.name});
  return detail::with_options(m, cat("axis=", axis),
                              detail::ConfigWriter().integer("axis", axis).str());
}

Model add(const std::vector<Model>& xs, const CombineOptions& o) {
  Model m = layer("add", non_empty(xs, "add"),
                  [](LayerContext& c) {
                    Expr y = c.input(0);
                    for (std::size_t i = 1; i < c.inputs().size(); ++i) y = y + c.input(i);
                    return y;
                  },
                  {}, {o.name});
  return detail::with_config(m, "{}");
}

Model subtract(const Model& a, const Model& b, const CombineOptions& o) {
  Model m = layer("subtract", {a, b}, [](LayerContext& c) { return c.input(0) - c.input(1); }, {},
                  {o.name});
  return detail::with_config(m, "{}");
}

Model multiply(const std::vector<Model>& xs, const CombineOptions& o) {
  Model m = layer("multiply", non_empty(xs, "multiply"),
                  [](LayerContext& c) {
                    Expr y = c.input(0);
                    for (std::size_t i = 1; i < c.inputs().size(); ++i) y = y * c.input(i);
                    return y;
                  },
                  {}, {o.name});
  return detail::with_config(m, "{}");
}

std::vector<Model> split(const Model& x, std::int64_t parts, std::int64_t axis,
                         const CombineOptions& o) {
  check(parts >= 1, "split: parts must be positive, got ", parts);
  std::vector<Model> out;
  for (std::int64_t k = 0; k < parts; ++k) {
    // A named split names its parts `<name>_<k>`, as the names must be unique.
    std::string name = o.name.empty() ? "" : cat(o.name, "_", k);
    Model m =
        layer("split", {x},
              [parts, axis, k](LayerContext& c) {
                const Expr& in = c.input();
                check(in.rank() >= 1, "split: expected an input with a batch axis, got a scalar");
                int a = feature_axis(in, axis, "split");
                std::int64_t d = in.dim(a);
                check(d % parts == 0, "split: axis ", a, " of size ", d, " does not divide into ",
                      parts, " equal parts");
                return slice_axis(in, k * (d / parts), d / parts, a);
              },
              {}, {name});
    out.push_back(detail::with_options(m, cat("part=", k, " of ", parts, ", axis=", axis),
                                       detail::ConfigWriter()
                                           .integer("parts", parts)
                                           .integer("axis", axis)
                                           .integer("part", k)
                                           .str()));
  }
  return out;
}

Model constant(const Tensor& value, const CombineOptions& o) {
  check(value.defined(), "constant: the tensor is undefined");
  // No inputs and no parameters: the tracer runs its forward like any other layer's.
  auto node = std::make_shared<LayerNode>();
  node->type = "constant";
  node->name = o.name;
  node->forward = [value](LayerContext&) { return Expr(value); };
  node->options = cat("value=", value.type().to_string());
  node->config = detail::ConfigWriter().tensor("value", value).str();
  return Model(std::move(node));
}

}  // namespace glia
