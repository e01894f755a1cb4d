// The model builder's core: a Model is an immutable value, a handle to the output
// node of a DAG of layer nodes. Layers are free functions taking their input model(s)
// and an options struct; a layer node holds its parameter specs (name, shape from the
// input shapes, initializer) and a forward function written with Expr ops.
//   glia::Model x = glia::input("data", {-1, 784});
//   glia::Model y = glia::dense(glia::dense(x, 128, {.activation = "relu"}), 10);
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "glia/core/expr.hpp"

namespace glia {

enum class Mode { inference, train };

// A parameter's initial value, traced from a random key (u32[2]) and the parameter's type.
struct Initializer {
  std::string name;  // "glorot_uniform", for display
  std::function<Expr(const Expr& key, const TensorType& type)> fn;
  // The built-in initializers' name and arguments as a JSON object, from which
  // model_from_json remakes them; empty for a custom initializer (not serializable).
  std::string config;
};

// What a layer knows at build time: the shapes of its inputs (batch included).
using InputShapes = std::vector<Shape>;

struct ParamSpec {
  std::string name;
  std::function<Shape(const InputShapes& inputs)> shape;
  Initializer initializer;
  DType dtype = DType::f32;
  bool is_state =
      false;  // model state (e.g. running statistics), updated in train mode, not trained
};

class LayerContext;
using ForwardFn = std::function<Expr(LayerContext& ctx)>;

struct LayerNode;
using NodePtr = std::shared_ptr<const LayerNode>;

struct LayerNode {
  std::string type;  // "dense"
  std::string name;  // empty: named `<type>_<k>` when the model is built
  std::vector<NodePtr> inputs;
  std::vector<ParamSpec> params;
  ForwardFn forward;        // null for input layers
  bool stochastic = false;  // draws random numbers in train mode (dropout)
  std::string options;      // "units=128, activation=relu", for display
  // Built-in layers: their options as a JSON object (see serialize.hpp), from which
  // model_from_json rebuilds the layer; empty for input and custom layers.
  std::string config;
  // Which parameters are frozen, asked with the layer's built name; null: none.
  std::function<bool(const std::string& layer, const std::string& param)> frozen;
  // Input layers only: the declared shape (-1 for a dimension given at run time) and dtype.
  std::vector<std::int64_t> input_shape;
  DType input_dtype = DType::f32;
  // Weight sharing: this layer uses the parameters of `shares` (the block's first
  // application) instead of its own; null: its own. See reapply().
  NodePtr shares;
  // An outputs() node: the name of each input (head); empty for every other layer.
  std::vector<std::string> output_names;
  // A layer_output() node: the name of the further output of its input layer it gives.
  std::string picks;
};

class Model {
 public:
  Model() = default;
  explicit Model(NodePtr node) : node_(std::move(node)) {}
  const LayerNode& node() const;
  const NodePtr& ptr() const { return node_; }
  bool defined() const { return node_ != nullptr; }

  // Pipelines: x.then(flatten).then(dense, 10, DenseOptions{}).then("softmax").
  // A layer function gets this model first, then `args` (a function passed by name takes
  // every argument, defaulted ones too, or wrap it in a lambda); a function of one Expr
  // (activations::relu, a lambda) becomes a layer applying it; a name is the activation
  // layer of that name (activation.hpp).
  template <class Fn, class... Args>
  requires(!std::is_convertible_v<Fn, std::string>) Model then(Fn&& layer, Args&&... args)
  const {
    if constexpr (sizeof...(Args) == 0 && !std::is_invocable_v<Fn, const Model&> &&
                  std::is_invocable_r_v<Expr, Fn, const Expr&>)
      return then_expr(std::function<Expr(const Expr&)>(std::forward<Fn>(layer)));
    else
      return std::forward<Fn>(layer)(*this, std::forward<Args>(args)...);
  }
  Model then(const std::string& activation) const;

 private:
  Model then_expr(std::function<Expr(const Expr&)> fn) const;
  NodePtr node_;
};

// What a forward function sees while the model is traced.
class LayerContext {
 public:
  const std::vector<Expr>& inputs() const { return inputs_; }
  const Expr& input(std::size_t i = 0) const;
  const Expr& param(const std::string& name) const;  // a parameter or state value
  Mode mode() const { return mode_; }
  bool training() const { return mode_ == Mode::train; }
  // The layer's own random key (train mode, stochastic layers only).
  const Expr& key() const;
  // A new value for a state entry (train mode); it becomes the model's updated state.
  void update_state(const std::string& name, const Expr& value);
  // A further output of the layer, besides the one its forward returns (a recurrent
  // layer's final states): layer_output(model, name) reads it.
  void set_output(const std::string& name, const Expr& value);
  const std::string& layer_name() const { return name_; }

 private:
  friend class ModelTracer;
  std::string name_;
  std::vector<Expr> inputs_;
  std::map<std::string, Expr> params_;
  std::map<std::string, Expr> state_updates_;
  std::map<std::string, Expr> outputs_;
  Mode mode_ = Mode::inference;
  Expr key_;
};

// An input of the model: `shape` may use -1 for dimensions given at run time (the batch).
Model input(const std::string& name, std::vector<std::int64_t> shape, DType dtype = DType::f32);

struct LayerOptions {
  std::string name;  // empty: named `<type>_<k>` when the model is built
};
// A custom layer (Axon's `layer`): a forward function over Exprs plus declared parameters.
//   glia::Model y = glia::layer("scale", {x}, [](glia::LayerContext& c) {
//     return c.input() * c.param("s"); }, {{"s", [](auto&) { return glia::Shape{}; },
//     glia::ones()}});
Model layer(const std::string& type, std::vector<Model> inputs, ForwardFn forward,
            std::vector<ParamSpec> params = {}, const LayerOptions& options = {});

// A model with several outputs (Axon's container): predict gives each head by name, and a
// training step takes a loss per head. It must be the model's last node.
//   glia::Model m = glia::outputs({{"digit", digit}, {"parity", parity}});
Model outputs(const std::map<std::string, Model>& heads);
// The names of an outputs() model's heads; empty for a model with one output.
std::vector<std::string> output_names(const Model& model);

// A further output of a layer that gives several, by name (see LayerContext::set_output):
//   glia::Model seq = glia::lstm(x, 64);
//   glia::Model cell = glia::layer_output(seq, "cell");  // the final cell state
// Naming an output the layer does not give fails when the model is built.
Model layer_output(const Model& layer, const std::string& name);

// Weight sharing: the layers of `output` that depend on a `from` model, applied again with
// each `from` replaced by its `to`, using the same parameters (one set, trained by every
// application; batch-norm statistics are updated by each application in turn). Layers that
// depend on no `from` are reused as they are.
//   glia::Model left = glia::input("left", {-1, 784}), right = glia::input("right", {-1, 784});
//   glia::Model a = glia::dense(left, 32);
//   glia::Model b = glia::reapply(a, {{left, right}});  // the same kernel and bias
Model reapply(const Model& output, const std::vector<std::pair<Model, Model>>& replace);

// A block of layers applied at several places with one set of parameters, as a module
// called twice in PyTorch: the first call builds the block, later calls reapply it.
//   glia::Shared encoder([](const glia::Model& x) { return glia::dense(x, 32); });
//   glia::Model a = encoder(left), b = encoder(right);
class Shared {
 public:
  explicit Shared(std::function<Model(const Model&)> block);
  Model operator()(const Model& x) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// A copy of the model whose parameters matching `frozen(layer, param)` are frozen:
// the training step leaves them unchanged (their gradient is stopped).
Model freeze(
    const Model& model,
    std::function<bool(const std::string& layer, const std::string& param)> frozen =
        [](const std::string&, const std::string&) { return true; });

// A layer of a model in topological order, with the name it has when built.
struct ResolvedLayer {
  NodePtr node;
  std::string name;
  std::vector<std::size_t> inputs;  // positions of its input layers in the order
  // The layer whose name its parameters are stored under: its own name, or for a layer
  // sharing parameters (reapply), the name of the group's first layer in this order.
  std::string params_of;
  bool shared() const { return params_of != name; }
};
// The layers the output depends on, inputs first; unnamed layers get `<type>_<k>`
// (k counting layers of that type in this order). Throws glia::Error on a repeated name.
std::vector<ResolvedLayer> resolve_layers(const Model& model);

}  // namespace glia
