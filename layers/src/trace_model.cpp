// The forward pass of a model on traced values: apply, initial_values and layer_shapes
// walk the resolved layers once (ModelTracer), binding inputs, reading, drawing or
// sharing parameters, and gathering an outputs() model's heads.
#include "glia/autograd/grad.hpp"
#include "glia/layers/build.hpp"
#include "layer_spans.hpp"

namespace glia {

namespace {

std::string shapes_text(const std::vector<Expr>& xs) {
  std::string s;
  for (std::size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + xs[i].type().to_string();
  return s;
}

std::string declared_text(const LayerNode& n) {
  std::string s(dtype_name(n.input_dtype));
  for (std::int64_t d : n.input_shape) s += d < 0 ? "[?]" : "[" + std::to_string(d) + "]";
  return s;
}

bool matches_declared(const LayerNode& n, const TensorType& t) {
  if (t.dtype != n.input_dtype || t.shape.rank() != static_cast<int>(n.input_shape.size()))
    return false;
  for (int i = 0; i < t.shape.rank(); ++i)
    if (n.input_shape[static_cast<std::size_t>(i)] >= 0 &&
        n.input_shape[static_cast<std::size_t>(i)] != t.shape[i])
      return false;
  return true;
}

}  // namespace

// Walks the resolved layers once, either reading parameters from maps (apply) or
// drawing them from initializers (init).
class ModelTracer {
 public:
  ModelTracer(const Model& model, Mode mode, Expr key)
      : layers_(resolve_layers(model)), mode_(mode), key_(std::move(key)) {}

  // Parameters come from `params`/`state`, or are drawn into `init`, or (`record`) are
  // zeros, and each layer's types are appended to `record`.
  Applied run(const ExprParamMap* params, const ExprParamMap* state,
              const std::map<std::string, Expr>& inputs, InitialValues* init,
              std::vector<LayerShapes>* record = nullptr) {
    std::vector<Expr> values(layers_.size());
    std::vector<std::map<std::string, Expr>> further(layers_.size());  // set_output()'s
    ExprParamMap taken;  // each parameter group's values, for the layers sharing them
    Applied out;
    if (state != nullptr) out.state = *state;
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      const ResolvedLayer& r = layers_[i];
      const LayerNode& node = *r.node;
      if (!node.output_names.empty()) {  // outputs(): the heads by name
        std::vector<Expr> heads;
        for (std::size_t j = 0; j < r.inputs.size(); ++j) {
          heads.push_back(values[r.inputs[j]]);
          out.outputs[node.output_names[j]] = heads.back();
        }
        if (record != nullptr) record->push_back(shapes_of(r, heads, {}));
        continue;
      }
      if (!node.picks.empty()) {  // layer_output(): a further output of its input layer
        values[i] = picked(r, further[r.inputs[0]]);
        if (record != nullptr) record->push_back(shapes_of(r, {values[r.inputs[0]]}, values[i]));
        continue;
      }
      if (!node.forward) {
        values[i] = bind_input(r, inputs);
        if (record != nullptr) record->push_back(shapes_of(r, {}, values[i]));
        continue;
      }
      LayerContext ctx;
      ctx.name_ = r.name;
      ctx.mode_ = mode_;
      for (std::size_t in : r.inputs) ctx.inputs_.push_back(values[in]);
      InputShapes shapes;
      for (const Expr& e : ctx.inputs_) shapes.push_back(e.shape());
      auto fail = [&](const std::string& what) {
        throw Error(cat("layer '", r.name, "' (", node.type, ") with input(s) ",
                        shapes_text(ctx.inputs_), ": ", what));
      };
      for (std::size_t j = 0; j < node.params.size(); ++j) {
        const ParamSpec& spec = node.params[j];
        TensorType want;
        try {
          want = {spec.dtype, spec.shape(shapes)};
        } catch (const Error& e) {
          fail(e.what());
        }
        Expr v;
        if (r.shared()) {
          v = shared_value(r, spec, want, taken, out, init == nullptr && record == nullptr, fail);
        } else if (init != nullptr) {
          v = draw(spec, want, i, j, fail);
          (spec.is_state ? init->state : init->params)[r.name][spec.name] = v;
        } else if (record != nullptr) {
          v = zeros(want.shape, want.dtype);
        } else {
          v = lookup(spec.is_state ? state : params, r.name, spec, want, fail);
        }
        taken[r.params_of][spec.name] = v;
        if (!spec.is_state && node.frozen && node.frozen(r.params_of, spec.name)) v = stop_grad(v);
        ctx.params_[spec.name] = v;
      }
      if (node.stochastic && mode_ == Mode::train) {
        if (!key_.defined()) fail("a random key is needed in train mode (dropout)");
        ctx.key_ = random::fold_in(key_, static_cast<std::uint32_t>(i));
      }
      try {
        values[i] = node.forward(ctx);
      } catch (const Error& e) {
        fail(e.what());
      }
      if (!values[i].defined()) fail("the forward function returned an undefined Expr");
      if (spans_ != nullptr) spans_->push_back({r.name, node.type, current_graph().size()});
      for (const auto& [name, value] : ctx.state_updates_) out.state[r.params_of][name] = value;
      further[i] = std::move(ctx.outputs_);
      if (record != nullptr) record->push_back(shapes_of(r, ctx.inputs_, values[i]));
    }
    out.output = values.back();
    return out;
  }

 private:
  LayerShapes shapes_of(const ResolvedLayer& r, const std::vector<Expr>& inputs,
                        const Expr& output) const {
    const LayerNode& node = *r.node;
    LayerShapes s{r.name, node.type, node.options, {}, {}, {}, {}};
    if (output.defined()) s.output = output.type();
    for (std::size_t in : r.inputs) s.inputs.push_back(layers_[in].name);
    for (const Expr& e : inputs) s.input_types.push_back(e.type());
    if (!node.output_names.empty()) {  // the heads, by name
      for (std::size_t j = 0; j < r.inputs.size(); ++j)
        s.options += cat(j ? ", " : "", node.output_names[j], "=", layers_[r.inputs[j]].name);
      return s;
    }
    if (r.shared()) {  // its parameters are counted once, at the layer holding them
      s.options += cat(s.options.empty() ? "" : ", ", "shares ", r.params_of);
      return s;
    }
    InputShapes in_shapes;
    for (const Expr& e : inputs) in_shapes.push_back(e.shape());
    for (const ParamSpec& p : node.params)
      s.params.push_back({p.name,
                          {p.dtype, p.shape(in_shapes)},
                          p.is_state,
                          !p.is_state && node.frozen && node.frozen(r.name, p.name)});
    return s;
  }

  Expr picked(const ResolvedLayer& r, const std::map<std::string, Expr>& given) const {
    const ResolvedLayer& from = layers_[r.inputs[0]];
    auto it = given.find(r.node->picks);
    if (it != given.end()) return it->second;
    std::string names;
    for (const auto& [name, e] : given) names += (names.empty() ? "" : ", ") + name;
    throw Error(cat("layer '", r.name, "' (layer_output): layer '", from.name, "' (",
                    from.node->type, ") gives no output '", r.node->picks,
                    "'; its outputs: ", names.empty() ? "none besides its main one" : names));
  }

  Expr bind_input(const ResolvedLayer& r, const std::map<std::string, Expr>& inputs) {
    auto it = inputs.find(r.name);
    if (it == inputs.end()) {
      std::string given;
      for (const auto& [name, e] : inputs) given += (given.empty() ? "" : ", ") + name;
      throw Error(cat("model: no value for input '", r.name, "' (", declared_text(*r.node),
                      "); inputs given: ", given.empty() ? "none" : given));
    }
    check(matches_declared(*r.node, it->second.type()), "model: input '", r.name, "' expects ",
          declared_text(*r.node), ", got ", it->second.type());
    return it->second;
  }

  template <class Fail>
  Expr draw(const ParamSpec& spec, const TensorType& want, std::size_t layer, std::size_t j,
            const Fail& fail) {
    Expr k = random::fold_in(random::fold_in(key_, static_cast<std::uint32_t>(layer)),
                             static_cast<std::uint32_t>(j));
    Expr v;
    try {
      v = spec.initializer.fn(k, want);
    } catch (const Error& e) {
      fail(cat("initializer ", spec.initializer.name, " of '", spec.name, "': ", e.what()));
    }
    if (v.type() != want)
      fail(cat("initializer ", spec.initializer.name, " of '", spec.name, "' gave ",
               v.type().to_string(), ", expected ", want.to_string()));
    return v;
  }

  // A parameter of a layer sharing another's: the value the group's first layer took (for
  // state in apply, its latest update, so that applications update it in turn).
  template <class Fail>
  static Expr shared_value(const ResolvedLayer& r, const ParamSpec& spec, const TensorType& want,
                           const ExprParamMap& taken, const Applied& out, bool applying,
                           const Fail& fail) {
    Expr v = taken.at(r.params_of).at(spec.name);
    if (applying && spec.is_state) v = out.state.at(r.params_of).at(spec.name);
    if (v.shape() != want.shape)
      fail(cat("it shares parameters with layer '", r.params_of, "', whose '", spec.name, "' is ",
               v.type().to_string(), "; here it would be ", want.to_string()));
    return v;
  }

  template <class Fail>
  static Expr lookup(const ExprParamMap* map, const std::string& layer, const ParamSpec& spec,
                     const TensorType& want, const Fail& fail) {
    const char* what = spec.is_state ? "state" : "parameter";
    if (map == nullptr || map->count(layer) == 0 || map->at(layer).count(spec.name) == 0)
      fail(cat(what, " '", spec.name, "' is missing (expected ", want.to_string(), ")"));
    Expr v = map->at(layer).at(spec.name);
    // A float parameter may be given in another float dtype (f64 for gradient checks).
    bool dtype_ok = v.dtype() == want.dtype || (is_float(v.dtype()) && is_float(want.dtype));
    if (v.shape() != want.shape || !dtype_ok)
      fail(cat(what, " '", spec.name, "' is ", v.type().to_string(), ", expected ",
               want.to_string()));
    return v;
  }

  std::vector<ResolvedLayer> layers_;
  Mode mode_;
  Expr key_;

 public:
  std::vector<detail::LayerSpan>* spans_ = nullptr;
};

InputTypes default_input_types(const Model& model, std::int64_t batch) {
  InputTypes types;
  for (const ResolvedLayer& r : resolve_layers(model)) {
    if (r.node->forward) continue;
    std::vector<std::int64_t> dims = r.node->input_shape;
    for (std::int64_t& d : dims)
      if (d < 0) d = batch;
    types[r.name] = {r.node->input_dtype, Shape(dims)};
  }
  return types;
}

Applied apply(const Model& model, const ExprParamMap& params, const ExprParamMap& state,
              const std::map<std::string, Expr>& inputs, Mode mode, const Expr& key) {
  return ModelTracer(model, mode, key).run(&params, &state, inputs, nullptr);
}

namespace detail {
Applied apply_with_spans(const Model& model, const ExprParamMap& params, const ExprParamMap& state,
                         const std::map<std::string, Expr>& inputs, std::vector<LayerSpan>& spans) {
  ModelTracer tracer(model, Mode::inference, {});
  tracer.spans_ = &spans;
  return tracer.run(&params, &state, inputs, nullptr);
}
}  // namespace detail

InitialValues initial_values(const Model& model, const InputTypes& inputs, const Expr& key) {
  check(key.defined() && key.dtype() == DType::u32 && key.shape() == Shape{2},
        "init: the key must be u32[2], got ", key.defined() ? key.type().to_string() : "undefined");
  std::map<std::string, Expr> values;
  for (const auto& [name, type] : inputs) values[name] = zeros(type.shape, type.dtype);
  InitialValues init;
  ModelTracer(model, Mode::inference, key).run(nullptr, nullptr, values, &init);
  return init;
}

std::vector<LayerShapes> layer_shapes(const Model& model, const InputTypes& inputs) {
  std::vector<LayerShapes> shapes;
  Graph graph("layer_shapes");
  TraceScope scope(graph);
  std::map<std::string, Expr> values;
  for (const auto& [name, type] : inputs) values[name] = zeros(type.shape, type.dtype);
  ModelTracer(model, Mode::inference, {}).run(nullptr, nullptr, values, nullptr, &shapes);
  return shapes;
}

}  // namespace glia
