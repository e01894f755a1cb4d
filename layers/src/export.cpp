// export_predict: trace the inference forward pass with every parameter a graph parameter,
// bind the trained values as constants (compiler/passes: bind_parameters), optimise (the
// bound constants fold where small: batch-norm statistics into scales), lower for the C
// target and emit.
#include "glia/layers/export.hpp"

#include "glia/compiler/passes.hpp"
#include "layer_spans.hpp"

namespace glia {

namespace {

// Ops and dtypes exported C never computes, and why.
std::string unexportable(const Node& n) {
  if (n.type.dtype == DType::f16 || n.type.dtype == DType::bf16)
    return cat("it computes in ", dtype_name(n.type.dtype), " (exported C computes f32 and f64)");
  switch (n.op) {
    case Op::random_bits:
      return "it draws random bits";
    case Op::all_reduce:
      return "it sums across processes (a training step's all_reduce)";
    case Op::scatter_add:
    case Op::select_and_scatter:
      return cat("it uses ", op_name(n.op), ", a gradient op");
    default:
      return "";
  }
}

// Which layer traced node `id`.
const detail::LayerSpan* layer_of(const std::vector<detail::LayerSpan>& spans, ValueId id) {
  for (const auto& s : spans)
    if (id < s.end) return &s;
  return nullptr;
}

}  // namespace

ExportResult export_predict(const Model& model, const ModelState& state, const InputTypes& inputs,
                            const ExportOptions& options) {
  std::vector<ResolvedLayer> layers = resolve_layers(model);
  if (std::vector<std::string> heads = output_names(model); !heads.empty()) {
    std::string names;
    for (const std::string& h : heads) names += (names.empty() ? "" : ", ") + h;
    throw Error(cat("export: the exported ABI gives one output; the model has ", heads.size(), " (",
                    names, "): export each head's model on its own"));
  }
  std::string input_name;
  int input_count = 0;
  std::string layer_text;
  for (const ResolvedLayer& r : layers) {
    if (!r.node->forward) input_name = r.name, ++input_count;
    layer_text += (layer_text.empty() ? "" : " -> ") + r.name;
  }
  check(input_count == 1, "export: the exported ABI takes one input; the model has ", input_count);
  check(inputs.size() == 1 && inputs.count(input_name) == 1, "export: give the type of input '",
        input_name, "' (and no other)");
  const TensorType input_type = inputs.at(input_name);
  check(input_type.dtype == DType::f32 && input_type.shape.rank() >= 1,
        "export: the exported ABI takes an f32 input with a batch dimension; input '", input_name,
        "' is ", input_type.to_string());

  Graph traced("predict");
  std::vector<std::optional<Tensor>> bound;
  std::vector<detail::LayerSpan> spans;
  {
    TraceScope scope(traced);
    ExprParamMap params, st;
    auto bind_all = [&](const ParamMap& from, ExprParamMap& to, const char* what) {
      for (const auto& [layer, values] : from)
        for (const auto& [name, t] : values) {
          to[layer][name] = parameter(t.type(), cat(what, ".", layer, ".", name));
          bound.emplace_back(t.to_host());  // trained values may still be on a device
        }
    };
    bind_all(state.params, params, "params");
    bind_all(state.state, st, "state");
    Expr x = parameter(input_type, input_name);
    bound.emplace_back(std::nullopt);
    Applied a = detail::apply_with_spans(model, params, st, {{input_name, x}}, spans);
    traced.set_outputs({a.output.id()});
  }
  check(traced.type(traced.outputs()[0]).dtype == DType::f32,
        "export: the exported ABI gives f32; the model's output is ",
        traced.type(traced.outputs()[0]).to_string());
  // Live nodes a C kernel cannot compute, named by their layer.
  std::vector<bool> live(std::size_t(traced.size()), false);
  for (ValueId o : traced.outputs()) live[std::size_t(o)] = true;
  for (ValueId id = traced.size(); id-- > 0;)
    if (live[std::size_t(id)])
      for (ValueId in : traced.node(id).inputs) live[std::size_t(in)] = true;
  for (ValueId id = 0; id < traced.size(); ++id) {
    if (!live[std::size_t(id)]) continue;
    std::string why = unexportable(traced.node(id));
    if (why.empty()) continue;
    const detail::LayerSpan* l = layer_of(spans, id);
    throw Error(cat("export: layer '", l ? l->name : "?", "' (", l ? l->type : "?",
                    ") cannot be exported: ", why));
  }

  Graph graph = optimize(bind_parameters(prune(traced), bound), {});
  ExportResult result;
  aot::CTarget target;
  result.program = lower(graph, target);
  if (const ReferenceSpec* ref = aot::unwritable(result.program)) {
    // Name the first layer that traced an op of this kind.
    const detail::LayerSpan* l = nullptr;
    for (ValueId id = 0; id < traced.size() && l == nullptr; ++id)
      if (live[std::size_t(id)] && traced.node(id).op == ref->op) l = layer_of(spans, id);
    throw Error(cat("export: layer '", l ? l->name : "?", "' (", l ? l->type : "?",
                    ") cannot be exported: its ", op_name(ref->op), " (",
                    graph.type(ref->node).to_string(), ") has no C kernel: ", ref->reason));
  }
  aot::CSourceOptions c;
  c.name = options.name;
  c.weights_file = options.weights_file;
  c.model = options.model.empty() ? layer_text : options.model;
  c.batch = input_type.shape[0];
  result.source = aot::emit_c(result.program, c);
  if (options.output.empty()) return result;
  result.files = aot::write_files(result.source, options.output);
  if (!options.build) {
    result.build_note = "not built (build off)";
  } else if (options.build_options.compiler.empty() && aot::find_c_compiler().empty()) {
    result.build_note = "not built: no C compiler found (set CC, or install cc, gcc or clang)";
  } else {
    aot::Built b = aot::build_library(options.output, options.name, options.build_options);
    result.library = b.library;
    result.build_note = b.command;
  }
  return result;
}

}  // namespace glia
