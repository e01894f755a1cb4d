// The training and evaluation steps: forward pass, loss, gradients, optimizer update and
// the new parameters, model state and optimizer state traced into one graph, compiled
// through jit once per input signature and run once per batch.
#include "glia/optim/step.hpp"

#include <algorithm>

#include <set>
#include <utility>

#include "data_parallel.hpp"
#include "glia/autograd/grad.hpp"
#include "objective.hpp"
#include "step_checks.hpp"

namespace glia {

namespace {

using detail::ModelFacts;

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

// The function the training step's jit traces: x is one Expr or named ones (several
// inputs), y likewise (several outputs).
struct TrainGraph {
  Model model;
  detail::Objective objective;
  Transformation optimizer;
  ModelFacts facts;
  detail::DataParallel dp;

  using Result = std::tuple<ExprParamMap, ExprParamMap, OptState, Expr, detail::NamedExprs>;
  template <class Y>
  Result operator()(const ExprParamMap& params, const ExprParamMap& state, const OptState& opt,
                    const Expr& x, const Y& y, const Expr& step, const Expr& lr_scale,
                    const Expr& key) const {
    return (*this)(params, state, opt, detail::NamedExprs{{facts.input, x}}, y, step, lr_scale,
                   key);
  }
  template <class Y>
  Result operator()(const ExprParamMap& params, const ExprParamMap& state, const OptState& opt,
                    const detail::NamedExprs& x, const Y& y, const Expr& step, const Expr& lr_scale,
                    const Expr& key) const {
    Expr dropout_key;
    if (facts.stochastic) {
      dropout_key = fold_in_traced(random::fold_in(key, kDropoutStream), step);
      // Each process's shard draws its own masks (rank 0 the ones of one process).
      if (dp.rank() > 0) dropout_key = random::fold_in(dropout_key, std::uint32_t(dp.rank()));
    }
    // Data parallel: the shard's loss weighted by its example count n, so that summing the
    // gradients over the processes and dividing by the total gives the whole batch's.
    const double n = dp.active() ? double(x.begin()->second.dim(0)) : 1.0;
    Applied forward;
    Expr shard_loss;
    detail::NamedExprs parts;  // each head's loss (several outputs)
    auto loss_of = [&](const ExprParamMap& p) {
      forward = apply(model, p, state, x, Mode::train, dropout_key);
      parts.clear();
      shard_loss = objective.loss(forward, y, parts);
      return dp.active() ? shard_loss * n : shard_loss;
    };
    auto [loss_value, grads] = value_and_grad(loss_of)(params);
    detail::check_same_model_state(state, forward.state);
    detail::NamedExprs metrics = objective.metrics(forward, y);
    metrics.insert(parts.begin(), parts.end());
    ExprParamMap next_state = forward.state;
    if (dp.active()) {
      detail::GlobalStats global = detail::reduce_stats(dp, n, shard_loss, metrics);
      for (auto& [layer, values] : next_state)
        for (auto& [name, e] : values)
          if (is_float(e.dtype())) e = e * n;
      detail::reduce_buckets(dp, grads, next_state, global.total);
      loss_value = global.loss;
      metrics = global.metrics;
    }
    auto [updates, next_opt] = optimizer.update(grads, opt, params);
    detail::check_same_state(opt, next_opt);
    ExprParamMap next = detail::scaled_update(params, updates, lr_scale, facts.frozen);
    return {next, next_state, next_opt, loss_value, metrics};
  }
};

struct EvalGraph {
  Model model;
  detail::Objective objective;
  std::string input;
  detail::DataParallel dp;

  template <class Y>
  std::tuple<Expr, detail::NamedExprs> operator()(const ExprParamMap& params,
                                                  const ExprParamMap& state, const Expr& x,
                                                  const Y& y) const {
    return (*this)(params, state, detail::NamedExprs{{input, x}}, y);
  }
  template <class Y>
  std::tuple<Expr, detail::NamedExprs> operator()(const ExprParamMap& params,
                                                  const ExprParamMap& state,
                                                  const detail::NamedExprs& x, const Y& y) const {
    Applied out = apply(model, params, state, x, Mode::inference);
    detail::NamedExprs metrics = objective.metrics(out, y), parts;
    Expr l = objective.has_loss() ? objective.loss(out, y, parts) : scalar(0);
    metrics.insert(parts.begin(), parts.end());
    if (!dp.active()) return {l, metrics};
    detail::GlobalStats global =
        detail::reduce_stats(dp, double(x.begin()->second.dim(0)), l, metrics);
    return {global.loss, global.metrics};
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

// One x and one y are left to the model's check of x's type and the loss's of y's, whose
// messages name the input and its declared shape.
template <class X, class Y>
void check_batch(const X& x, const Y& y, const char* who, const ModelFacts& facts,
                 const detail::Objective& objective) {
  std::int64_t examples = detail::examples_of(x, who, facts);
  if constexpr (std::is_same_v<X, Tensor> && std::is_same_v<Y, Tensor>) examples = -1;
  objective.check_targets(y, examples);
}

}  // namespace

using TensorMap = std::map<std::string, Tensor>;

struct TrainStep::Impl {
  Model model;
  Transformation optimizer;
  BuiltModel built;
  Jitted<TrainGraph> step;
  Jitted<OptInitGraph> opt_init;
  ModelFacts facts;
  detail::Objective objective;

  // One step on x and y, each a Tensor or named Tensors. The state is donated: parameters
  // and optimizer state nobody else holds are updated in place, so there are never two
  // copies of them. A bad batch is reported before the state is given up, leaving it as
  // it was.
  template <class X, class Y>
  StepOutput run(TrainState& state, const X& x, const Y& y) const {
    check_batch(x, y, "TrainStep", facts, objective);
    auto [params, model_state, opt, loss, metrics] =
        step.call_donating(std::move(state.model.params), std::move(state.model.state),
                           std::move(state.optimizer), X(x), Y(y), step_scalars().step(state.step),
                           step_scalars().lr_scale(state.lr_scale), step_scalars().key(state.seed));
    state.model.params = std::move(params);
    state.model.state = std::move(model_state);
    state.optimizer = std::move(opt);
    ++state.step;
    return to_output(loss, metrics);
  }
};

namespace {
std::shared_ptr<TrainStep::Impl> make_train_step(Model model, LossFn loss, OutputLosses losses,
                                                 Transformation optimizer,
                                                 const StepOptions& options) {
  ModelFacts facts = detail::model_facts(model, "TrainStep");
  check(optimizer.init && optimizer.update,
        "TrainStep: the optimizer needs both init and update functions");
  detail::Objective objective(model, std::move(loss), std::move(losses), options, "TrainStep");
  check(objective.has_loss(), "TrainStep: the loss is a null function");
  return std::make_shared<TrainStep::Impl>(TrainStep::Impl{
      model, optimizer, build(model, {.backend = options.backend}),
      jit(TrainGraph{model, objective, optimizer, facts,
                     detail::data_parallel(options, "TrainStep")},
          JitOptions{.backend = options.backend, .name = "train_step"}),
      jit(OptInitGraph{optimizer}, JitOptions{.backend = options.backend, .name = "opt_init"}),
      facts, objective});
}
}  // namespace

TrainStep::TrainStep(Model model, LossFn loss, Transformation optimizer, StepOptions options)
    : impl_(make_train_step(std::move(model), std::move(loss), {}, std::move(optimizer), options)) {
}

TrainStep::TrainStep(Model model, OutputLosses losses, Transformation optimizer,
                     StepOptions options)
    : impl_(make_train_step(std::move(model), nullptr, std::move(losses), std::move(optimizer),
                            options)) {}

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
StepOutput TrainStep::operator()(TrainState& state, const TensorMap& x, const Tensor& y) const {
  return impl_->run(state, x, y);
}
StepOutput TrainStep::operator()(TrainState& state, const Tensor& x, const TensorMap& y) const {
  return impl_->run(state, x, y);
}
StepOutput TrainStep::operator()(TrainState& state, const TensorMap& x, const TensorMap& y) const {
  return impl_->run(state, x, y);
}

const Model& TrainStep::model() const { return impl_->model; }

std::string TrainStep::graph_text(const TrainState& state, const Tensor& x, const Tensor& y) const {
  check_batch(x, y, "TrainStep", impl_->facts, impl_->objective);
  return impl_->step.graph_text(state.model.params, state.model.state, state.optimizer, x, y,
                                Tensor::scalar(static_cast<double>(state.step), DType::i64),
                                Tensor::scalar(state.lr_scale, DType::f32),
                                random::key(state.seed));
}

std::string TrainStep::describe(const TrainState& state, const Tensor& x, const Tensor& y) const {
  check_batch(x, y, "TrainStep", impl_->facts, impl_->objective);
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
  detail::Objective objective;

  template <class X, class Y>
  StepOutput run(const ModelState& state, const X& x, const Y& y) const {
    check_batch(x, y, "EvalStep", facts, objective);
    auto [loss, metrics] = step(state.params, state.state, x, y);
    return to_output(loss, metrics);
  }
};

namespace {
std::shared_ptr<EvalStep::Impl> make_eval_step(const Model& model, LossFn loss, OutputLosses losses,
                                               const StepOptions& options) {
  ModelFacts facts = detail::model_facts(model, "EvalStep");
  detail::Objective objective(model, std::move(loss), std::move(losses), options, "EvalStep");
  return std::make_shared<EvalStep::Impl>(EvalStep::Impl{
      jit(EvalGraph{model, objective, facts.input, detail::data_parallel(options, "EvalStep")},
          JitOptions{.backend = options.backend, .name = "eval_step"}),
      facts, objective});
}
}  // namespace

EvalStep::EvalStep(Model model, LossFn loss, StepOptions options)
    : impl_(make_eval_step(model, std::move(loss), {}, options)) {}
EvalStep::EvalStep(Model model, OutputLosses losses, StepOptions options)
    : impl_(make_eval_step(model, nullptr, std::move(losses), options)) {}

StepOutput EvalStep::operator()(const ModelState& state, const Tensor& x, const Tensor& y) const {
  return impl_->run(state, x, y);
}
StepOutput EvalStep::operator()(const ModelState& state, const TensorMap& x,
                                const Tensor& y) const {
  return impl_->run(state, x, y);
}
StepOutput EvalStep::operator()(const ModelState& state, const Tensor& x,
                                const TensorMap& y) const {
  return impl_->run(state, x, y);
}
StepOutput EvalStep::operator()(const ModelState& state, const TensorMap& x,
                                const TensorMap& y) const {
  return impl_->run(state, x, y);
}

CacheStats EvalStep::cache_stats() const { return impl_->step.cache_stats(); }

}  // namespace glia
