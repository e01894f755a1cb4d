// Model values: input and custom layers, freezing, and resolving the DAG into named
// layers in topological order.
#include "glia/layers/model.hpp"

#include <functional>
#include <mutex>
#include <set>
#include <unordered_map>

#include "layer_config.hpp"

namespace glia {

const LayerNode& Model::node() const {
  check(node_ != nullptr, "Model: an undefined model (default-constructed) was used");
  return *node_;
}

const Expr& LayerContext::input(std::size_t i) const {
  check(i < inputs_.size(), "layer '", name_, "': no input ", i, " (it has ", inputs_.size(), ")");
  return inputs_[i];
}

const Expr& LayerContext::param(const std::string& name) const {
  auto it = params_.find(name);
  check(it != params_.end(), "layer '", name_, "': no parameter or state named '", name, "'");
  return it->second;
}

const Expr& LayerContext::key() const {
  check(key_.defined(), "layer '", name_,
        "': no random key (stochastic layers get one in train mode only)");
  return key_;
}

void LayerContext::update_state(const std::string& name, const Expr& value) {
  check(params_.count(name) != 0, "layer '", name_, "': no state named '", name, "' to update");
  check(value.type() == params_.at(name).type(), "layer '", name_, "': state '", name, "' is ",
        params_.at(name).type(), ", the update is ", value.type());
  state_updates_[name] = value;
}

void LayerContext::set_output(const std::string& name, const Expr& value) {
  check(!name.empty(), "layer '", name_, "': a further output needs a name");
  check(value.defined(), "layer '", name_, "': output '", name, "' is an undefined Expr");
  outputs_[name] = value;
}

Model input(const std::string& name, std::vector<std::int64_t> shape, DType dtype) {
  check(!name.empty(), "input: the name must not be empty");
  for (std::int64_t d : shape)
    check(d >= -1, "input '", name, "': dimension ", d, " is invalid (use -1 for a run-time size)");
  auto node = std::make_shared<LayerNode>();
  node->type = "input";
  node->name = name;
  node->input_shape = std::move(shape);
  node->input_dtype = dtype;
  return Model(std::move(node));
}

Model Model::then_expr(std::function<Expr(const Expr&)> fn) const {
  check(static_cast<bool>(fn), "Model::then: the function is empty");
  return layer("function", {*this},
               [fn = std::move(fn)](LayerContext& c) { return fn(c.input()); });
}

Model layer(const std::string& type, std::vector<Model> inputs, ForwardFn forward,
            std::vector<ParamSpec> params, const LayerOptions& options) {
  check(!type.empty(), "layer: the type must not be empty");
  check(static_cast<bool>(forward), "layer '", type, "': the forward function is empty");
  check(!inputs.empty(), "layer '", type, "': a layer needs at least one input");
  auto node = std::make_shared<LayerNode>();
  node->type = type;
  node->name = options.name;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    check(inputs[i].defined(), "layer '", type, "': input ", i, " is an undefined model");
    check(inputs[i].node().output_names.empty(), "layer '", type, "': input ", i,
          " is an outputs() model; give the layer one of its heads");
    node->inputs.push_back(inputs[i].ptr());
  }
  std::set<std::string> names;
  for (const ParamSpec& p : params) {
    check(!p.name.empty() && names.insert(p.name).second, "layer '", type,
          "': parameter names must be non-empty and unique, got '", p.name, "'");
    check(static_cast<bool>(p.shape) && static_cast<bool>(p.initializer.fn), "layer '", type,
          "': parameter '", p.name, "' needs a shape function and an initializer");
  }
  node->params = std::move(params);
  node->forward = std::move(forward);
  return Model(std::move(node));
}

Model outputs(const std::map<std::string, Model>& heads) {
  check(!heads.empty(), "outputs: give at least one head");
  auto node = std::make_shared<LayerNode>();
  node->type = "outputs";
  // Never called (the tracer gathers the heads itself); defined, so that no code takes
  // the node for an input layer, which is the one kind without a forward function.
  node->forward = [](LayerContext&) -> Expr {
    throw Error("outputs(): the heads node has no forward pass of its own");
  };
  for (const auto& [name, head] : heads) {
    check(!name.empty(), "outputs: a head's name must not be empty");
    check(head.defined(), "outputs: head '", name, "' is an undefined model");
    check(head.node().output_names.empty(), "outputs: head '", name,
          "' is itself an outputs() model; list its heads instead");
    node->inputs.push_back(head.ptr());
    node->output_names.push_back(name);
  }
  return Model(std::move(node));
}

std::vector<std::string> output_names(const Model& model) { return model.node().output_names; }

Model layer_output(const Model& layer, const std::string& name) {
  check(layer.defined(), "layer_output: the layer is an undefined model");
  check(!name.empty(), "layer_output: the output's name must not be empty");
  check(layer.node().forward && layer.node().output_names.empty() && layer.node().picks.empty(),
        "layer_output: '", name, "' of a ", layer.node().type,
        " node; give the layer whose forward sets it (an lstm, a gru)");
  auto node = std::make_shared<LayerNode>();
  node->type = "layer_output";
  node->picks = name;
  // Never called: the tracer reads the input layer's output itself (see outputs()).
  node->forward = [](LayerContext&) -> Expr {
    throw Error("layer_output(): the node has no forward pass of its own");
  };
  node->inputs.push_back(layer.ptr());
  node->options = "output=" + name;
  node->config = detail::ConfigWriter().string("output", name).str();
  return Model(std::move(node));
}

namespace {
// The first application of a shared block (what every copy of it points at).
NodePtr share_root(const NodePtr& n) { return n->shares ? n->shares : n; }
}  // namespace

Model reapply(const Model& output, const std::vector<std::pair<Model, Model>>& replace) {
  check(output.defined(), "reapply: the model is undefined");
  std::vector<ResolvedLayer> order = resolve_layers(output);
  std::unordered_map<const LayerNode*, NodePtr> to;
  for (const auto& [f, t] : replace) {
    check(f.defined() && t.defined(), "reapply: an undefined model in the replacements");
    check(t.node().output_names.empty(), "reapply: a replacement is an outputs() model");
    check(to.emplace(f.ptr().get(), t.ptr()).second, "reapply: a model is replaced twice");
  }
  std::vector<NodePtr> mapped(order.size());
  std::size_t found = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const ResolvedLayer& r = order[i];
    if (auto it = to.find(r.node.get()); it != to.end()) {
      mapped[i] = it->second;
      ++found;
      continue;
    }
    bool changed = false;
    for (std::size_t in : r.inputs) changed = changed || mapped[in] != order[in].node;
    if (!changed) {
      mapped[i] = r.node;
      continue;
    }
    auto copy = std::make_shared<LayerNode>(*r.node);
    copy->name.clear();  // named <type>_<k> when built, beside the original
    copy->inputs.clear();
    for (std::size_t in : r.inputs) copy->inputs.push_back(mapped[in]);
    if (!r.node->params.empty()) copy->shares = share_root(r.node);
    mapped[i] = std::move(copy);
  }
  check(found == to.size(), "reapply: ", to.size() - found, " of the replaced models ",
        to.size() - found == 1 ? "is" : "are", " not among the model's layers");
  return Model(mapped.back());
}

struct Shared::State {
  std::function<Model(const Model&)> block;
  // Held while the first application builds the block: a Shared value may be called from
  // several threads, and a second first call would build a second set of parameters.
  std::mutex mutex;
  Model input, output;  // the first application, set once under the mutex
};

Shared::Shared(std::function<Model(const Model&)> block) : state_(std::make_shared<State>()) {
  check(static_cast<bool>(block), "Shared: the block is an empty function");
  state_->block = std::move(block);
}

Model Shared::operator()(const Model& x) const {
  check(x.defined(), "Shared: the input is an undefined model");
  std::unique_lock lock(state_->mutex);
  if (state_->output.defined()) {
    const Model input = state_->input, output = state_->output;
    lock.unlock();  // reapply reads the built block only: other threads may reapply at once
    return reapply(output, {{input, x}});
  }
  Model y = state_->block(x);
  check(y.defined(), "Shared: the block returned an undefined model");
  state_->input = x;
  state_->output = y;
  return y;
}

Model freeze(const Model& model,
             std::function<bool(const std::string& layer, const std::string& param)> frozen) {
  std::unordered_map<const LayerNode*, NodePtr> copies;
  std::function<NodePtr(const NodePtr&)> copy = [&](const NodePtr& n) -> NodePtr {
    if (auto it = copies.find(n.get()); it != copies.end()) return it->second;
    auto c = std::make_shared<LayerNode>(*n);
    for (NodePtr& in : c->inputs) in = copy(in);
    if (c->shares) c->shares = copy(c->shares);  // the copies share among themselves
    if (!c->params.empty()) {
      auto before = n->frozen;
      c->frozen = [before, frozen](const std::string& l, const std::string& p) {
        return (before && before(l, p)) || frozen(l, p);
      };
    }
    copies[n.get()] = c;
    return c;
  };
  return Model(copy(model.ptr()));
}

std::vector<ResolvedLayer> resolve_layers(const Model& model) {
  std::vector<ResolvedLayer> order;
  std::unordered_map<const LayerNode*, std::size_t> position;
  std::unordered_map<const LayerNode*, bool> visiting;
  // Iterative post-order DFS: deep sequential models must not overflow the stack.
  std::vector<std::pair<const LayerNode*, std::size_t>> stack{{&model.node(), 0}};
  std::unordered_map<const LayerNode*, NodePtr> owner{{&model.node(), model.ptr()}};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs.size()) {
      const NodePtr& in = node->inputs[next++];
      if (position.count(in.get()) == 0) {
        check(!visiting[in.get()], "model: layer inputs form a cycle");
        visiting[in.get()] = true;
        owner[in.get()] = in;
        stack.emplace_back(in.get(), 0);
      }
      continue;
    }
    ResolvedLayer r{owner.at(node), node->name, {}, {}};
    for (const NodePtr& in : node->inputs) {
      check(in->output_names.empty(), "model: an outputs() model is the input of a layer; ",
            "only the model's last node may gather outputs");
      r.inputs.push_back(position.at(in.get()));
    }
    position[node] = order.size();
    order.push_back(std::move(r));
    stack.pop_back();
  }
  std::map<std::string, int> counts;
  std::set<std::string> taken;
  for (const ResolvedLayer& r : order)
    if (!r.name.empty())
      check(taken.insert(r.name).second, "model: two layers are named '", r.name, "'");
  for (ResolvedLayer& r : order) {
    if (!r.name.empty()) continue;
    std::string name;
    do name = r.node->type + "_" + std::to_string(counts[r.node->type]++);
    while (taken.count(name) != 0);
    taken.insert(name);
    r.name = name;
  }
  // Sharing groups: the first layer of each in this order holds the parameters.
  std::unordered_map<const LayerNode*, const ResolvedLayer*> holder;
  for (ResolvedLayer& r : order) {
    r.params_of = r.name;
    if (r.node->params.empty()) continue;
    const LayerNode* root = share_root(r.node).get();
    auto [it, first] = holder.emplace(root, &r);
    if (first) continue;
    const LayerNode& h = *it->second->node;
    bool same = h.params.size() == r.node->params.size();
    for (std::size_t j = 0; same && j < h.params.size(); ++j)
      same = h.params[j].name == r.node->params[j].name &&
             h.params[j].is_state == r.node->params[j].is_state &&
             h.params[j].dtype == r.node->params[j].dtype;
    check(same, "model: layer '", r.name, "' (", r.node->type, ") shares parameters with layer '",
          it->second->name, "' (", h.type, ") but declares others");
    r.params_of = it->second->name;
  }
  return order;
}

}  // namespace glia
