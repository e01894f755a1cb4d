// Printing a Program: one line per kernel with its spec and where its outputs live.
#include <map>
#include <sstream>

#include "glia/compiler/program.hpp"

namespace glia {

namespace {

std::string dims_text(const std::vector<std::int64_t>& d) {
  std::string s;
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? "x" : "") + std::to_string(d[i]);
  return s;
}

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

const char* step_name(EpilogueSpec::Step s) {
  switch (s) {
    case EpilogueSpec::Step::add:
      return "add";
    case EpilogueSpec::Step::relu:
      return "relu";
    case EpilogueSpec::Step::tanh:
      return "tanh";
    case EpilogueSpec::Step::logistic:
      return "logistic";
  }
  return "?";
}

}  // namespace

std::string EpilogueSpec::text() const {
  std::string t;
  std::size_t operand = 0;
  for (Step s : steps) {
    t += t.empty() ? " + " : ", ";
    if (s == Step::add)
      t += operands[operand++].bias ? "bias" : "residual";
    else
      t += step_name(s);
  }
  return t;
}

const char* Kernel::kind() const {
  return std::visit(
      Overloaded{
          [](const MatmulSpec&) { return "matmul"; }, [](const ConvSpec&) { return "convolution"; },
          [](const PoolSpec&) { return "pooling"; }, [](const DirectSpec&) { return "direct"; },
          [](const FusedSpec&) { return "fused"; },
          [](const ReferenceSpec&) { return "reference"; }, [](const ScanSpec&) { return "scan"; },
          [](const CollectiveSpec&) { return "collective"; },
          [](const ConvPoolSpec&) { return "convolution+pooling"; }},
      spec);
}

std::string Kernel::describe(const Graph& graph) const {
  return std::visit(
      Overloaded{
          [](const MatmulSpec& s) {
            std::ostringstream out;
            out << "matmul ";
            for (std::int64_t b : s.batch) out << b << " x ";
            out << "[" << s.m << "x" << s.k << "]·[" << s.k << "x" << s.n << "]"
                << s.epilogue.text();
            return out.str();
          },
          [](const ConvSpec& s) {
            const char* pass = s.pass == ConvSpec::Pass::forward ? "convolution"
                               : s.pass == ConvSpec::Pass::backward_data
                                   ? "convolution_backward_data"
                                   : "convolution_backward_weights";
            return cat(pass, " src ", dims_text(s.src.dims), ", weights ",
                       dims_text(s.weights.dims), ", dst ", dims_text(s.dst.dims),
                       s.epilogue.text());
          },
          [](const PoolSpec& s) {
            if (s.kind == PoolSpec::Kind::max)
              return cat("max_pool ", dims_text(s.input.dims), " -> ", dims_text(s.output.dims));
            return cat("max_pool_backward ", dims_text(s.output.dims), " <- ",
                       dims_text(s.source.dims), s.positive_input_only ? " where input > 0" : "");
          },
          [&](const DirectSpec& s) {
            const Node& n = graph.node(s.node);
            std::string text = cat("direct ", op_name(s.op));
            if (const auto* a = std::get_if<AxisAttrs>(&n.attrs)) text += cat(" axis ", a->axis);
            if (const auto* a = std::get_if<ArgReduceAttrs>(&n.attrs))
              text += cat(" axis ", a->axis);
            for (std::size_t i = 0; i < n.inputs.size(); ++i)
              text += cat(i ? ", " : " ", graph.type(n.inputs[i]).to_string());
            return cat(text, " -> ", n.type.to_string());
          },
          [&](const FusedSpec& s) {
            std::string text = "fused[";
            if (s.sweeps.size() > 1) text += cat(s.sweeps.size(), " phases: ");
            for (std::size_t i = 0; i < s.sweeps.size(); ++i) {
              if (i > 0) text += " | ";
              for (std::size_t j = 0; j < s.sweeps[i].ops.size(); ++j)
                text += (j > 0 ? " " : "") + s.sweeps[i].ops[j];
            }
            ValueId widest = outputs.front();
            for (ValueId o : outputs)
              if (graph.type(o).shape.numel() > graph.type(widest).shape.numel()) widest = o;
            return text + "] " + graph.type(widest).to_string();
          },
          [](const ReferenceSpec& s) {
            return cat("reference ", op_name(s.op), " (",
                       s.reason.empty() ? "an undeclared fallback" : s.reason, ")");
          },
          [&](const ScanSpec& s) {
            const auto& a = std::get<ScanAttrs>(graph.node(s.node).attrs);
            return cat("scan ", a.body->name(), a.reverse ? " reversed" : "", " x", a.length, ", ",
                       s.results.size(), " result(s)");
          },
          [](const CollectiveSpec& s) {
            return cat("all_reduce bucket ", s.bucket, " of communicator ", s.communicator, ": ",
                       dtype_name(s.dtype), "[", s.count, "] in place");
          },
          [](const ConvPoolSpec& s) {
            std::string conv =
                cat("src ", dims_text(s.conv.src.dims), ", weights ",
                    dims_text(s.conv.weights.dims), s.conv.epilogue.text(), ", max_pool ",
                    dims_text(s.pool.window), " -> ", dims_text(s.pool.output.dims));
            if (s.pass == ConvPoolSpec::Pass::forward) return cat("convolution+max_pool ", conv);
            return cat("convolution_backward_weights through max_pool ", conv,
                       s.positive_only ? " where > 0" : "");
          }},
      spec);
}

const Kernel* Program::kernel_of(ValueId value) const {
  for (const Kernel& k : kernels)
    for (ValueId c : k.covered)
      if (c == value) return &k;
  return nullptr;
}

std::string Program::describe(const std::function<std::string(std::size_t)>& note) const {
  std::ostringstream lines;
  std::map<std::string, int> counts;
  int donations = 0;
  for (std::size_t i = 0; i < graph.parameters().size(); ++i)
    lines << "    %" << graph.parameters()[i] << " = input " << i << " : "
          << graph.type(graph.parameters()[i]).to_string() << "\n";
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    const Kernel& kernel = kernels[k];
    counts[kernel.kind()] += 1;
    lines << "    ";
    for (std::size_t i = 0; i < kernel.outputs.size(); ++i)
      lines << (i > 0 ? ", %" : "%") << kernel.outputs[i];
    lines << " = " << kernel.describe(graph) << " :";
    for (ValueId out : kernel.outputs) {
      const Placement& p = placement[static_cast<std::size_t>(out)];
      lines << " " << graph.type(out).to_string();
      if (p.kind == Placement::Kind::arena) lines << " @arena+" << p.offset;
      if (p.kind == Placement::Kind::output) lines << " -> output buffer " << p.index;
      if (p.donor >= 0) {
        lines << " (in place of input " << p.donor << " when donated)";
        ++donations;
      }
    }
    if (kernel.covered.size() > kernel.outputs.size())
      lines << " [" << kernel.covered.size() << " nodes]";
    if (note) {
      std::string extra = note(k);
      if (!extra.empty()) lines << " -> " << extra;
    }
    lines << "\n";
  }
  std::ostringstream out;
  out << "program '" << graph.name() << "': " << graph.size() << " values, "
      << graph.parameters().size() << " input(s), " << graph.outputs().size() << " output(s); "
      << kernels.size() << " kernel(s):";
  for (const auto& [kind, count] : counts) out << " " << count << " " << kind;
  out << "\n  arena: " << memory.arena_bytes << " B for " << memory.value_count << " values (peak "
      << memory.peak_live_bytes << " B live); " << donations
      << " output(s) can update a donated input in place\n  kernels:\n"
      << lines.str() << to_text(graph);
  return out.str();
}

}  // namespace glia
