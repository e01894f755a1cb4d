// A FusedSpec sweep as a C function for the native module: the AOT exporter's loop nest
// (aot/emit_fused.cpp), its outer loop over [lo, hi) where threads may split it, over
// pointers taken from the run's value table by value id.
#include "aot/emitter.hpp"
#include "backends/cpu/fused_program.hpp"
#include "glia/core/error.hpp"

namespace glia::detail::cpu::fused {

std::optional<NativeSweep> native_sweep(const Program& program, const FusedSpec& spec,
                                        std::size_t index,
                                        const std::set<std::pair<ValueId, ValueId>>& in_place,
                                        const std::string& name, std::string& text) {
  std::set<ValueId> shared;  // may share storage with another value of the sweep
  for (const auto& [input, output] : in_place) shared.insert(input), shared.insert(output);
  aot::detail::Emitter e{program};
  e.ivdep = true;
  aot::detail::SweepText body;
  std::string params, args;
  try {
    body = aot::detail::emit_sweep(e, spec.sweeps[index], index, true);
    // Restrict parameters, except where an output may take an input's storage (in place,
    // or donated): there a restrict pointer would let the compiler store an element
    // before it loads the same element of the other value. Stores come last in a sweep
    // and its loops carry no dependence through memory, so the innermost loop is marked
    // `ivdep` and vectorises without checks for aliasing.
    for (ValueId v : e.used) {
      const std::string t = aot::detail::c_type(program.graph.type(v).dtype);
      params += cat(t, shared.count(v) ? "* v" : "* restrict v", v, ", ");
      args += cat("(", t, "*)values[", v, "], ");
    }
  } catch (const Error&) {
    return std::nullopt;  // 16-bit floats have no C type here
  }
  if (e.scratch_bytes > 0) return std::nullopt;
  text =
      cat("static void ", name, "_body(", params, "int64_t lo, int64_t hi, void* partial) {\n",
          aot::detail::indent("(void)lo;\n(void)hi;\n(void)partial;\n" + body.text, 1), "}\nvoid ",
          name, "(unsigned char* const* values, int64_t lo, int64_t hi, void* partial) {\n  ", name,
          "_body(", args, "lo, hi, partial);\n}\n");
  NativeSweep n;
  n.split = body.splittable;
  n.outer = body.outer;
  n.partials = body.partials;
  if (body.partials > 0) {
    // The threads' partials, in thread order, combined into the results.
    text += cat("static void ", name, "_merge_body(", params,
                "const unsigned char* partials, int count) {\n", aot::detail::indent(body.merge, 1),
                "}\nvoid ", name,
                "_merge(unsigned char* const* values, const void* partials, int count) {\n  ", name,
                "_merge_body(", args, "(const unsigned char*)partials, count);\n}\n");
  }
  return n;
}

}  // namespace glia::detail::cpu::fused
