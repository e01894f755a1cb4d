// The compiled init and predict functions that build() makes from the traced forward
// pass (trace_model.cpp), cached per input signature through jit.
#include <mutex>

#include "glia/compiler/jit.hpp"
#include "glia/layers/build.hpp"

namespace glia {

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

using HeadsCall = std::function<std::map<std::string, Tensor>(
    const ParamMap&, const ParamMap&, const std::map<std::string, Tensor>&)>;

struct PredictFn::Impl {
  Model model;
  std::string single_input;        // the input's name when the model has exactly one
  std::vector<std::string> heads;  // an outputs() model's
  HeadsCall heads_call;
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

void check_one_output(const PredictFn::Impl& impl) {
  if (impl.heads.empty()) return;
  std::string names;
  for (const std::string& n : impl.heads) names += (names.empty() ? "" : ", ") + n;
  throw Error(cat("predict: the model has several outputs (", names,
                  "); call predict.outputs(...) for them by name"));
}
}  // namespace

Tensor PredictFn::operator()(const ModelState& s, const Tensor& input) const {
  check_one_output(*impl_);
  check(!impl_->single_input.empty(),
        "predict: the model has several inputs; pass a map of input name -> tensor");
  return impl_->inference_single(s.params, s.state, input);
}
Tensor PredictFn::operator()(const ModelState& s,
                             const std::map<std::string, Tensor>& inputs) const {
  check_one_output(*impl_);
  return impl_->inference(s.params, s.state, inputs);
}
std::map<std::string, Tensor> PredictFn::outputs(const ModelState& s, const Tensor& input) const {
  return outputs(s, single(*impl_, input));
}
std::map<std::string, Tensor> PredictFn::outputs(
    const ModelState& s, const std::map<std::string, Tensor>& inputs) const {
  if (impl_->heads.empty()) return {{"output", impl_->inference(s.params, s.state, inputs)}};
  return impl_->heads_call(s.params, s.state, inputs);
}
TrainResult PredictFn::train(const ModelState& s, const Tensor& input, const Tensor& key) const {
  return train(s, single(*impl_, input), key);
}
TrainResult PredictFn::train(const ModelState& s, const std::map<std::string, Tensor>& inputs,
                             const Tensor& key) const {
  check_one_output(*impl_);
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
  impl->heads = output_names(model);
  if (!impl->heads.empty()) {
    impl->heads_call = jit(
        [model](const ExprParamMap& p, const ExprParamMap& s,
                const std::map<std::string, Expr>& x) {
          return apply(model, p, s, x, Mode::inference).outputs;
        },
        JitOptions{.backend = options.backend, .name = "predict"});
  }
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
