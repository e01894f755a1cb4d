// The training and evaluation steps: forward pass, loss, gradients, optimizer update and
// the new parameters, model state and optimizer state traced into one graph, compiled
// through jit once per input signature and run once per batch.
#include "glia/optim/step.hpp"

#include <algorithm>

#include <set>
#include <utility>

#include "glia/autograd/grad.hpp"

namespace glia {

namespace {

// random::fold_in(key, data) with `data` a traced u32-convertible scalar rather than a
// number fixed at trace time, so the step number can change without a new trace:
// threefry(threefry(key, (0, 0)) + (0, data), (0, 0)), as fold_in computes it.
Expr fold_in_traced(const Expr& key, const Expr& data) {
  Expr hashed = random::bits(key, Shape{2});
  // (0, data) as data * (0, 1): element-wise, so it fuses with its neighbours.
  Expr word = cast(data, DType::u32) * constant(Tensor::from<std::uint32_t>({0, 1}));
  Expr mixed = hashed + word;
  return random::bits(mixed, Shape{2});
}

std::vector<std::string> input_names(const Model& model) {
  std::vector<std::string> names;
  for (const ResolvedLayer& r : resolve_layers(model))
    if (!r.node->forward) names.push_back(r.name);
  return names;
}

using FrozenSet = std::set<std::pair<std::string, std::string>>;

struct ModelFacts {
  std::vector<std::string> inputs;  // the model's input layers, by name
  std::string input;                // the only one, where there is one
  FrozenSet frozen;                 // (layer, parameter)
  bool stochastic = false;
};

ModelFacts model_facts(const Model& model, const char* who) {
  check(model.defined(), who, ": the model is undefined");
  ModelFacts f;
  f.inputs = input_names(model);
  if (f.inputs.size() == 1) f.input = f.inputs[0];
  for (const ResolvedLayer& r : resolve_layers(model)) {
    const LayerNode& node = *r.node;
    f.stochastic = f.stochastic || node.stochastic;
    if (!node.frozen) continue;
    for (const ParamSpec& p : node.params)
      if (!p.is_state && node.frozen(r.name, p.name)) f.frozen.insert({r.name, p.name});
  }
  return f;
}

void check_scalar(const Expr& e, const std::string& what) {
  check(e.defined(), what, " returned an undefined Expr");
  check(e.rank() == 0, what, " must return a scalar, got ", e.type().to_string(),
        " (reduce it, e.g. with mean)");
}

std::map<std::string, Expr> metric_values(const std::map<std::string, MetricFn>& metrics,
                                          const Expr& y, const Expr& y_pred) {
  std::map<std::string, Expr> out;
  for (const auto& [name, fn] : metrics) {
    check(static_cast<bool>(fn), "metric '", name, "' is a null function");
    Expr m = fn(y, y_pred);
    check_scalar(m, cat("metric '", name, "'"));
    out[name] = m;
  }
  return out;
}

std::string keys_text(const OptState& s) {
  std::string out;
  for (const auto& [k, v] : s) out += (out.empty() ? "" : ", ") + k + " " + v.type().to_string();
  return out.empty() ? "(none)" : out;
}

// The new state must have the old one's entries and types, or every call would trace anew.
void check_same_state(const OptState& before, const OptState& after) {
  bool same = before.size() == after.size();
  for (auto a = before.begin(), b = after.begin(); same && a != before.end(); ++a, ++b)
    same = a->first == b->first && b->second.defined() && a->second.type() == b->second.type();
  check(same, "TrainStep: the optimizer's update changed its state from {", keys_text(before),
        "} to {", keys_text(after),
        "} (was the TrainState made by TrainStep::init with this optimizer?)");
}

void check_same_model_state(const ExprParamMap& before, const ExprParamMap& after) {
  for (const auto& [layer, entries] : after)
    for (const auto& [name, v] : entries) {
      auto l = before.find(layer);
      check(l != before.end() && l->second.count(name) != 0,
            "TrainStep: the forward pass made a "
            "new state entry ",
            layer, "/", name, " that the model state lacks");
      const TensorType& want = l->second.at(name).type();
      check(v.type() == want, "TrainStep: state ", layer, "/", name, " changed type from ",
            want.to_string(), " to ", v.type().to_string());
    }
}

// params + lr_scale * updates, leaf by leaf, in each parameter's dtype; frozen
// parameters stay as they are whatever the optimizer proposes (weight decay, noise).
ExprParamMap scaled_update(const ExprParamMap& params, const ExprParamMap& updates,
                           const Expr& lr_scale, const FrozenSet& frozen) {
  ExprParamMap out;
  for (const auto& [layer, entries] : params)
    for (const auto& [name, p] : entries) {
      auto l = updates.find(layer);
      check(l != updates.end() && l->second.count(name) != 0,
            "TrainStep: the optimizer gave no update for parameter ", layer, "/", name);
      const Expr& u = l->second.at(name);
      check(u.defined() && u.shape() == p.shape(), "TrainStep: the update of ", layer, "/", name,
            " is ", u.defined() ? u.type().to_string() : "undefined", ", expected the shape of ",
            p.type().to_string());
      if (frozen.count({layer, name}) != 0) {
        out[layer][name] = p;
        continue;
      }
      Expr next = p + u * cast(lr_scale, u.dtype());
      out[layer][name] = next.dtype() == p.dtype() ? next : cast(next, p.dtype());
    }
  return out;
}

// The function the training step's jit traces.
struct TrainGraph {
  Model model;
  LossFn loss;
  Transformation optimizer;
  std::map<std::string, MetricFn> metrics;
  ModelFacts facts;

  using Result =
      std::tuple<ExprParamMap, ExprParamMap, OptState, Expr, std::map<std::string, Expr>>;
  Result operator()(const ExprParamMap& params, const ExprParamMap& state, const OptState& opt,
                    const Expr& x, const Expr& y, const Expr& step, const Expr& lr_scale,
                    const Expr& key) const {
    return (*this)(params, state, opt, std::map<std::string, Expr>{{facts.input, x}}, y, step,
                   lr_scale, key);
  }
  // Several inputs, by name.
  Result operator()(const ExprParamMap& params, const ExprParamMap& state, const OptState& opt,
                    const std::map<std::string, Expr>& x, const Expr& y, const Expr& step,
                    const Expr& lr_scale, const Expr& key) const {
    Expr dropout_key;
    if (facts.stochastic) dropout_key = fold_in_traced(random::fold_in(key, kDropoutStream), step);
    Applied forward;
    auto loss_of = [&](const ExprParamMap& p) {
      forward = apply(model, p, state, x, Mode::train, dropout_key);
      Expr l = loss(y, forward.output);
      check_scalar(l, "TrainStep: the loss");
      check(is_float(l.dtype()), "TrainStep: the loss must be floating point, got ",
            l.type().to_string());
      return l;
    };
    auto [loss_value, grads] = value_and_grad(loss_of)(params);
    auto [updates, next_opt] = optimizer.update(grads, opt, params);
    check_same_state(opt, next_opt);
    check_same_model_state(state, forward.state);
    ExprParamMap next = scaled_update(params, updates, lr_scale, facts.frozen);
    return {next, forward.state, next_opt, loss_value, metric_values(metrics, y, forward.output)};
  }
};

struct EvalGraph {
  Model model;
  LossFn loss;
  std::map<std::string, MetricFn> metrics;
  std::string input;

  std::tuple<Expr, std::map<std::string, Expr>> operator()(const ExprParamMap& params,
                                                           const ExprParamMap& state, const Expr& x,
                                                           const Expr& y) const {
    return (*this)(params, state, std::map<std::string, Expr>{{input, x}}, y);
  }
  std::tuple<Expr, std::map<std::string, Expr>> operator()(const ExprParamMap& params,
                                                           const ExprParamMap& state,
                                                           const std::map<std::string, Expr>& x,
                                                           const Expr& y) const {
    Expr out = apply(model, params, state, x, Mode::inference).output;
    Expr l = scalar(0);
    if (loss) {
      l = loss(y, out);
      check_scalar(l, "EvalStep: the loss");
    }
    return {l, metric_values(metrics, y, out)};
  }
};

// The optimizer's initial state, with a constant beside it: jit needs at least one
// output and an optimizer such as plain SGD keeps no state.
struct OptInitGraph {
  Transformation optimizer;
  std::tuple<OptState, Expr> operator()(const ExprParamMap& params) const {
    return {optimizer.init(params), scalar(0)};
  }
};

// The step's scalars may come back on a device (the cuda backend's outputs stay there);
// to_host() is free for host ones.
StepOutput to_output(const Tensor& loss, const std::map<std::string, Tensor>& metrics) {
  StepOutput out;
  out.loss = loss.to_host().item<double>();
  for (const auto& [name, t] : metrics) out.metrics[name] = t.to_host().item<double>();
  return out;
}

// The step's scalar inputs, kept per thread and rewritten in place when nobody else holds
// them (the compiled step lets go of its inputs when it returns): a warm step allocates
// nothing at all. Fresh ones would cost three tensor allocations a step, made before jit
// sees the arguments, so no speed of jit's lookup makes this cache unnecessary.
class StepScalars {
 public:
  Tensor step(std::int64_t value) { return refill(step_, DType::i64, static_cast<double>(value)); }
  Tensor lr_scale(double value) { return refill(lr_scale_, DType::f32, value); }
  Tensor key(std::uint64_t seed) {
    if (!key_.unique_storage() || seed != key_seed_) {
      key_ = random::key(seed);
      key_seed_ = seed;
    }
    return key_;
  }

 private:
  static Tensor refill(Tensor& t, DType dtype, double value) {
    if (!t.unique_storage()) t = Tensor::scalar(value, dtype);
    if (dtype == DType::i64)
      t.data<std::int64_t>()[0] = static_cast<std::int64_t>(value);
    else
      t.data<float>()[0] = static_cast<float>(value);
    return t;
  }
  Tensor step_, lr_scale_, key_;
  std::uint64_t key_seed_ = 0;
};

StepScalars& step_scalars() {
  thread_local StepScalars scalars;
  return scalars;
}

void check_batch(const Tensor& x, const Tensor& y, const char* who, const ModelFacts& facts) {
  check(x.defined() && y.defined(), who, ": x and y must be defined tensors");
  if (facts.inputs.size() != 1) {
    std::string names;
    for (const std::string& n : facts.inputs) names += (names.empty() ? "" : ", ") + n;
    throw Error(cat(who, ": the model has ", facts.inputs.size(), " inputs (", names,
                    "): pass x as a map from input name to tensor"));
  }
}

// Named inputs: exactly the model's, each defined, all with y's examples.
void check_batch(const std::map<std::string, Tensor>& x, const Tensor& y, const char* who,
                 const ModelFacts& facts) {
  check(y.defined(), who, ": y must be a defined tensor");
  std::string names;
  for (const std::string& n : facts.inputs) names += (names.empty() ? "" : ", ") + n;
  for (const auto& [name, t] : x) {
    check(std::find(facts.inputs.begin(), facts.inputs.end(), name) != facts.inputs.end(), who,
          ": the model has no input '", name, "' (its inputs: ", names, ")");
    check(t.defined(), who, ": input '", name, "' is an undefined tensor");
    check(t.rank() >= 1 && y.rank() >= 1 && t.shape()[0] == y.shape()[0], who, ": input '", name,
          "' ", t.type().to_string(), " and y ", y.type().to_string(),
          " must hold the same number of examples");
  }
  for (const std::string& n : facts.inputs)
    check(x.count(n) != 0, who, ": no tensor for input '", n, "' (its inputs: ", names, ")");
}

}  // namespace

struct TrainStep::Impl {
  Model model;
  Transformation optimizer;
  BuiltModel built;
  Jitted<TrainGraph> step;
  Jitted<OptInitGraph> opt_init;
  ModelFacts facts;

  // One step on x, a Tensor or named Tensors. The state is donated: parameters and
  // optimizer state nobody else holds are updated in place, so there are never two copies
  // of them. A bad batch is reported before the state is given up, leaving it as it was.
  template <class X>
  StepOutput run(TrainState& state, const X& x, const Tensor& y) const {
    check_batch(x, y, "TrainStep", facts);
    auto [params, model_state, opt, loss, metrics] = step.call_donating(
        std::move(state.model.params), std::move(state.model.state), std::move(state.optimizer),
        X(x), Tensor(y), step_scalars().step(state.step), step_scalars().lr_scale(state.lr_scale),
        step_scalars().key(state.seed));
    state.model.params = std::move(params);
    state.model.state = std::move(model_state);
    state.optimizer = std::move(opt);
    ++state.step;
    return to_output(loss, metrics);
  }
};

TrainStep::TrainStep(Model model, LossFn loss, Transformation optimizer, StepOptions options) {
  ModelFacts facts = model_facts(model, "TrainStep");
  check(static_cast<bool>(loss), "TrainStep: the loss is a null function");
  check(optimizer.init && optimizer.update,
        "TrainStep: the optimizer needs both init and update functions");
  impl_ = std::make_shared<Impl>(
      Impl{model, optimizer, build(model, {.backend = options.backend}),
           jit(TrainGraph{model, std::move(loss), optimizer, std::move(options.metrics), facts},
               JitOptions{.backend = options.backend, .name = "train_step"}),
           jit(OptInitGraph{optimizer}, JitOptions{.backend = options.backend, .name = "opt_init"}),
           facts});
}

TrainState TrainStep::init(std::uint64_t seed) const { return init(impl_->built.init(seed), seed); }

TrainState TrainStep::init(ModelState model, std::uint64_t seed) const {
  TrainState s;
  s.optimizer = std::get<0>(impl_->opt_init(model.params));
  s.model = std::move(model);
  s.seed = seed;
  return s;
}

StepOutput TrainStep::operator()(TrainState& state, const Tensor& x, const Tensor& y) const {
  return impl_->run(state, x, y);
}

StepOutput TrainStep::operator()(TrainState& state, const std::map<std::string, Tensor>& x,
                                 const Tensor& y) const {
  return impl_->run(state, x, y);
}

const Model& TrainStep::model() const { return impl_->model; }

std::string TrainStep::graph_text(const TrainState& state, const Tensor& x, const Tensor& y) const {
  check_batch(x, y, "TrainStep", impl_->facts);
  return impl_->step.graph_text(state.model.params, state.model.state, state.optimizer, x, y,
                                Tensor::scalar(static_cast<double>(state.step), DType::i64),
                                Tensor::scalar(state.lr_scale, DType::f32),
                                random::key(state.seed));
}

std::string TrainStep::describe(const TrainState& state, const Tensor& x, const Tensor& y) const {
  check_batch(x, y, "TrainStep", impl_->facts);
  return impl_->step
      .compiled(state.model.params, state.model.state, state.optimizer, x, y,
                Tensor::scalar(static_cast<double>(state.step), DType::i64),
                Tensor::scalar(state.lr_scale, DType::f32), random::key(state.seed))
      ->executable->describe();
}

CacheStats TrainStep::cache_stats() const { return impl_->step.cache_stats(); }

struct EvalStep::Impl {
  Jitted<EvalGraph> step;
  ModelFacts facts;
};

EvalStep::EvalStep(Model model, LossFn loss, StepOptions options) {
  ModelFacts facts = model_facts(model, "EvalStep");
  impl_ = std::make_shared<Impl>(
      Impl{jit(EvalGraph{model, std::move(loss), std::move(options.metrics), facts.input},
               JitOptions{.backend = options.backend, .name = "eval_step"}),
           facts});
}

StepOutput EvalStep::operator()(const ModelState& state, const Tensor& x, const Tensor& y) const {
  check_batch(x, y, "EvalStep", impl_->facts);
  auto [loss, metrics] = impl_->step(state.params, state.state, x, y);
  return to_output(loss, metrics);
}

StepOutput EvalStep::operator()(const ModelState& state, const std::map<std::string, Tensor>& x,
                                const Tensor& y) const {
  check_batch(x, y, "EvalStep", impl_->facts);
  auto [loss, metrics] = impl_->step(state.params, state.state, x, y);
  return to_output(loss, metrics);
}

CacheStats EvalStep::cache_stats() const { return impl_->step.cache_stats(); }

}  // namespace glia
