// The forward pass of a model on traced values (apply, initial_values) and the compiled
// init and predict functions built from it.
#include "glia/layers/build.hpp"

#include <mutex>

#include "glia/autograd/grad.hpp"
#include "glia/compiler/jit.hpp"
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
    Applied out;
    if (state != nullptr) out.state = *state;
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      const ResolvedLayer& r = layers_[i];
      const LayerNode& node = *r.node;
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
        if (init != nullptr) {
          v = draw(spec, want, i, j, fail);
          (spec.is_state ? init->state : init->params)[r.name][spec.name] = v;
        } else if (record != nullptr) {
          v = zeros(want.shape, want.dtype);
        } else {
          v = lookup(spec.is_state ? state : params, r.name, spec, want, fail);
        }
        if (!spec.is_state && node.frozen && node.frozen(r.name, spec.name)) v = stop_grad(v);
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
      for (const auto& [name, value] : ctx.state_updates_) out.state[r.name][name] = value;
      if (record != nullptr) record->push_back(shapes_of(r, ctx.inputs_, values[i]));
    }
    out.output = values.back();
    return out;
  }

 private:
  LayerShapes shapes_of(const ResolvedLayer& r, const std::vector<Expr>& inputs,
                        const Expr& output) const {
    const LayerNode& node = *r.node;
    LayerShapes s{r.name, node.type, node.options, {}, {}, output.type(), {}};
    for (std::size_t in : r.inputs) s.inputs.push_back(layers_[in].name);
    InputShapes in_shapes;
    for (const Expr& e : inputs) {
      s.input_types.push_back(e.type());
      in_shapes.push_back(e.shape());
    }
    for (const ParamSpec& p : node.params)
      s.params.push_back({p.name,
                          {p.dtype, p.shape(in_shapes)},
                          p.is_state,
                          !p.is_state && node.frozen && node.frozen(r.name, p.name)});
    return s;
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
          declared_text(*r.node), ", got ", it->second.type().to_string());
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

// ---- Compiled init and predict ------------------------------------------------------------

namespace {
using InitCall = std::function<std::tuple<ParamMap, ParamMap>(const Tensor& key)>;
using PredictCall =
    std::function<Tensor(const ParamMap&, const ParamMap&, const std::map<std::string, Tensor>&)>;
using SingleCall = std::function<Tensor(const ParamMap&, const ParamMap&, const Tensor&)>;
using TrainCall = std::function<std::tuple<Tensor, ParamMap>(
    const ParamMap&, const ParamMap&, const std::map<std::string, Tensor>&, const Tensor&)>;

std::string types_key(const InputTypes& types) {
  std::string s;
  for (const auto& [name, t] : types) s += name + ":" + t.to_string() + ";";
  return s;
}
}  // namespace

struct InitFn::Impl {
  Model model;
  BuildOptions options;
  bool has_params = false;  // any parameter or state to draw
  std::mutex mutex;
  std::map<std::string, InitCall> compiled;  // by input types
  InitCall default_call;                     // compiled[default input types], once it is made
};

struct PredictFn::Impl {
  Model model;
  std::string single_input;  // the input's name when the model has exactly one
  PredictCall inference;
  // The same forward pass taking the single input as a tensor: no map to build per call.
  SingleCall inference_single;
  TrainCall train;
};

ModelState InitFn::operator()(std::uint64_t seed) const {
  InitCall call;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    call = impl_->default_call;
  }
  if (!call) {
    // The first call compiles (or finds) the default input types' function; later calls
    // skip building their key.
    ModelState s = (*this)(default_input_types(impl_->model), seed);
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->default_call = impl_->compiled[types_key(default_input_types(impl_->model))];
    return s;
  }
  auto [params, state] = call(random::key(seed));
  return {std::move(params), std::move(state)};
}

ModelState InitFn::operator()(const InputTypes& inputs, std::uint64_t seed) const {
  InitCall call;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    auto& slot = impl_->compiled[types_key(inputs)];
    if (!slot && !impl_->has_params) {
      // Nothing to draw, and jit needs an output: trace once for the shape checks alone.
      layer_shapes(impl_->model, inputs);
      slot = [](const Tensor&) { return std::tuple<ParamMap, ParamMap>{}; };
    }
    if (!slot) {
      Model model = impl_->model;
      slot = jit(
          [model, inputs](const Expr& key) {
            InitialValues v = initial_values(model, inputs, key);
            return std::tuple{v.params, v.state};
          },
          JitOptions{.backend = impl_->options.backend, .name = "init"});
    }
    call = slot;
  }
  auto [params, state] = call(random::key(seed));
  return {std::move(params), std::move(state)};
}

namespace {
std::map<std::string, Tensor> single(const PredictFn::Impl& impl, const Tensor& input) {
  check(!impl.single_input.empty(),
        "predict: the model has several inputs; pass a map of input name -> tensor");
  return {{impl.single_input, input}};
}
}  // namespace

Tensor PredictFn::operator()(const ModelState& s, const Tensor& input) const {
  check(!impl_->single_input.empty(),
        "predict: the model has several inputs; pass a map of input name -> tensor");
  return impl_->inference_single(s.params, s.state, input);
}
Tensor PredictFn::operator()(const ModelState& s,
                             const std::map<std::string, Tensor>& inputs) const {
  return impl_->inference(s.params, s.state, inputs);
}
TrainResult PredictFn::train(const ModelState& s, const Tensor& input, const Tensor& key) const {
  return train(s, single(*impl_, input), key);
}
TrainResult PredictFn::train(const ModelState& s, const std::map<std::string, Tensor>& inputs,
                             const Tensor& key) const {
  auto [output, state] = impl_->train(s.params, s.state, inputs, key);
  return {std::move(output), std::move(state)};
}

BuiltModel build(const Model& model, const BuildOptions& options) {
  std::vector<ResolvedLayer> layers = resolve_layers(model);  // names checked at build time
  BuiltModel built;
  built.init.impl_ = std::make_shared<InitFn::Impl>();
  built.init.impl_->model = model;
  built.init.impl_->options = options;
  for (const ResolvedLayer& r : layers)
    built.init.impl_->has_params = built.init.impl_->has_params || !r.node->params.empty();
  auto impl = std::make_shared<PredictFn::Impl>();
  impl->model = model;
  std::vector<std::string> input_names;
  for (const ResolvedLayer& r : layers)
    if (!r.node->forward) input_names.push_back(r.name);
  if (input_names.size() == 1) impl->single_input = input_names[0];
  impl->inference = jit(
      [model](const ExprParamMap& p, const ExprParamMap& s, const std::map<std::string, Expr>& x) {
        return apply(model, p, s, x, Mode::inference).output;
      },
      JitOptions{.backend = options.backend, .name = "predict"});
  if (input_names.size() == 1) {
    impl->inference_single = jit(
        [model, name = input_names[0]](const ExprParamMap& p, const ExprParamMap& s,
                                       const Expr& x) {
          return apply(model, p, s, {{name, x}}, Mode::inference).output;
        },
        JitOptions{.backend = options.backend, .name = "predict"});
  }
  impl->train = jit(
      [model](const ExprParamMap& p, const ExprParamMap& s, const std::map<std::string, Expr>& x,
              const Expr& key) {
        Applied a = apply(model, p, s, x, Mode::train, key);
        return std::tuple{a.output, a.state};
      },
      JitOptions{.backend = options.backend, .name = "predict_train"});
  built.predict.impl_ = std::move(impl);
  return built;
}

}  // namespace glia
