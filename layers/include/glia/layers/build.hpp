// build(model) -> {init, predict}: the model's two pure functions, compiled through jit.
// init draws parameters (and state such as batch-norm running statistics) from a seed;
// predict applies the model; in train mode it also returns the updated state and uses a
// random key for dropout. apply() is the same forward pass inside a trace, for training
// steps that put forward, loss and update into one graph.
//   auto [init, predict] = glia::build(model);
//   glia::ModelState state = init(/*seed=*/0);
//   glia::Tensor y = predict(state, x);
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "glia/compiler/registry.hpp"
#include "glia/layers/model.hpp"

namespace glia {

// layer name -> parameter name -> value
using ParamMap = std::map<std::string, std::map<std::string, Tensor>>;
using ExprParamMap = std::map<std::string, std::map<std::string, Expr>>;

struct ModelState {
  ParamMap params;  // trained
  ParamMap state;   // updated by the forward pass in train mode (running statistics)
};

// The input types a model is built for: input name -> type.
using InputTypes = std::map<std::string, TensorType>;
// The model's declared input types with each -1 (run-time) dimension set to `batch`.
InputTypes default_input_types(const Model& model, std::int64_t batch = 1);

// ---- Inside a trace ---------------------------------------------------------------------
struct Applied {
  Expr output;                          // undefined for an outputs() model
  std::map<std::string, Expr> outputs;  // an outputs() model's heads; empty otherwise
  ExprParamMap state;                   // the updated state (train mode); the given state otherwise
};
// The model's forward pass on traced values. Shape errors name the layer, its input
// shapes and what it expected. `key` is required in train mode when a layer is stochastic.
Applied apply(const Model& model, const ExprParamMap& params, const ExprParamMap& state,
              const std::map<std::string, Expr>& inputs, Mode mode = Mode::inference,
              const Expr& key = {});
struct InitialValues {
  ExprParamMap params, state;
};
// Traced initial parameters and state for inputs of the given types, from a u32[2] key.
InitialValues initial_values(const Model& model, const InputTypes& inputs, const Expr& key);

// ---- Shapes (for summary and to_dot) ------------------------------------------------------
struct LayerShapes {
  struct Param {
    std::string name;
    TensorType type;
    bool is_state = false;
    bool frozen = false;  // LayerNode::frozen, asked with the built layer name
  };
  std::string name, type, options;
  std::vector<std::string> inputs;  // the names of its input layers
  std::vector<TensorType> input_types;
  TensorType output;
  std::vector<Param> params;  // parameters and state, in declaration order
};
// Every layer (input layers included) in topological order with the types it sees when the
// model is traced on inputs of the given types; shape errors as in apply().
std::vector<LayerShapes> layer_shapes(const Model& model, const InputTypes& inputs);

// ---- Compiled functions -----------------------------------------------------------------
struct BuildOptions {
  std::string backend = default_backend();
};
struct BuiltModel;

class InitFn {
 public:
  struct Impl;  // opaque
  // Parameters for the model's declared inputs (run-time dimensions taken as 1).
  ModelState operator()(std::uint64_t seed = 0) const;
  ModelState operator()(const InputTypes& inputs, std::uint64_t seed = 0) const;

 private:
  friend BuiltModel build(const Model& model, const BuildOptions& options);
  std::shared_ptr<Impl> impl_;
};

struct TrainResult {
  Tensor output;
  ParamMap state;
};

class PredictFn {
 public:
  struct Impl;  // opaque
  // Inference mode. A model with one input takes a tensor; otherwise input name -> tensor.
  Tensor operator()(const ModelState& state, const Tensor& input) const;
  Tensor operator()(const ModelState& state, const std::map<std::string, Tensor>& inputs) const;
  // An outputs() model's heads by name (a model with one output: {"output": y}).
  std::map<std::string, Tensor> outputs(const ModelState& state, const Tensor& input) const;
  std::map<std::string, Tensor> outputs(const ModelState& state,
                                        const std::map<std::string, Tensor>& inputs) const;
  // Train mode: dropout active (random from `key`, a u32[2] tensor), state updated.
  TrainResult train(const ModelState& state, const Tensor& input, const Tensor& key) const;
  TrainResult train(const ModelState& state, const std::map<std::string, Tensor>& inputs,
                    const Tensor& key) const;

 private:
  friend BuiltModel build(const Model& model, const BuildOptions& options);
  std::shared_ptr<Impl> impl_;
};

struct BuiltModel {
  InitFn init;
  PredictFn predict;
};
BuiltModel build(const Model& model, const BuildOptions& options = {});

}  // namespace glia
