// The AOT exporter's driver: NAME.c from a Program (one static function per kernel over
// restrict pointers into the placement, the constants in the source or the weights file),
// assembled with the ABI text of abi.cpp; and writing the files.
#include <algorithm>
#include <fstream>
#include <set>

#include "aot/emitter.hpp"
#include "glia/compiler/aot.hpp"
#include "glia/core/attrs.hpp"
#include "glia/core/elementwise.hpp"
#include "glia/core/error.hpp"
#include "glia/core/hash.hpp"

#ifndef GLIA_VERSION
#define GLIA_VERSION "unknown"
#endif

namespace glia::aot {

using detail::c_type;
using detail::lit;

namespace {

bool valid_name(const std::string& n) {
  if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) return false;
  for (char c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

}  // namespace

CSource emit_c(const Program& p, const CSourceOptions& options) {
  const Graph& g = p.graph;
  const std::string& name = options.name;
  check(valid_name(name), "export: the name '", name,
        "' is not a C identifier ([A-Za-z_][A-Za-z0-9_]*)");
  check(g.parameters().size() == 1 && g.outputs().size() == 1,
        "export: the exported ABI takes one input and gives one output; the graph has ",
        g.parameters().size(), " input(s) and ", g.outputs().size(), " output(s)");
  CSource out;
  out.name = name;
  out.input = g.type(g.parameters()[0]);
  out.output = g.type(g.outputs()[0]);
  check(out.input.dtype == DType::f32 && out.output.dtype == DType::f32,
        "export: the exported ABI takes and gives f32; the model takes ", out.input.to_string(),
        " and gives ", out.output.to_string());
  if (const ReferenceSpec* r = unwritable(p))
    throw Error(cat("export: ", op_name(r->op), " (", g.type(r->node).to_string(),
                    ") cannot be written as C: ", r->reason.empty() ? "no C kernel" : r->reason));

  detail::Emitter e{p};
  e.scratch_offset = (p.memory.arena_bytes + 63) / 64 * 64;
  std::set<ValueId> constants;
  std::string kernels, calls;
  bool has_matmul = false;
  for (std::size_t i = 0; i < p.kernels.size(); ++i) {
    const Kernel& k = p.kernels[i];
    e.used.clear();
    std::string body = std::visit(
        [&](const auto& s) -> std::string {
          using S = std::decay_t<decltype(s)>;
          if constexpr (std::is_same_v<S, MatmulSpec>) {
            has_matmul = true;
            return detail::emit_matmul(e, k, s);
          } else if constexpr (std::is_same_v<S, ConvSpec>) {
            return detail::emit_conv(e, s);
          } else if constexpr (std::is_same_v<S, PoolSpec>) {
            return detail::emit_pool(e, s);
          } else if constexpr (std::is_same_v<S, DirectSpec>) {
            return detail::emit_direct(e, s);
          } else if constexpr (std::is_same_v<S, FusedSpec>) {
            return detail::emit_fused(e, s);
          } else if constexpr (std::is_same_v<S, ScanSpec>) {
            // CTarget declines loops; unwritable() stops an export before it gets here.
            throw Error(cat("aot: a loop (", k.describe(p.graph), ") has no C form yet"));
          } else if constexpr (std::is_same_v<S, CollectiveSpec>) {
            // CTarget declines collectives: a predictor sums across no processes.
            throw Error(cat("aot: a collective (", k.describe(p.graph), ") has no C form"));
          } else if constexpr (std::is_same_v<S, ConvPoolSpec>) {
            // CTarget declines them: the exporter writes the convolution and the pooling.
            throw Error(cat("aot: a fused convolution and pooling (", k.describe(p.graph),
                            ") has no C form"));
          } else {
            return s.op == Op::dot_general ? detail::emit_general_dot(e, s.node)
                                           : detail::emit_general_conv(e, s.node);
          }
        },
        k.spec);
    // Values that share arena bytes (an output written in place of an input it reads
    // element for element) get no restrict: the compiler must not store an element of one
    // before it loads that element of the other.
    auto bytes_of = [&](ValueId v) {
      return g.type(v).shape.numel() * std::int64_t(dtype_size(g.type(v).dtype));
    };
    auto shares = [&](ValueId v) {
      const Placement& a = p.placement[std::size_t(v)];
      for (ValueId w : e.used) {
        const Placement& b = p.placement[std::size_t(w)];
        if (w != v && b.kind == Placement::Kind::arena && a.offset < b.offset + bytes_of(w) &&
            b.offset < a.offset + bytes_of(v))
          return true;
      }
      return false;
    };
    std::string decls;
    for (ValueId v : e.used) {
      const Placement& pl = p.placement[std::size_t(v)];
      const std::string t = c_type(g.type(v).dtype), n = cat("v", v);
      switch (pl.kind) {
        case Placement::Kind::input:
          decls += cat("const float* restrict ", n, " = input;\n");
          break;
        case Placement::Kind::constant:
          decls += cat("const ", t, "* restrict ", n, " = glia_c", v, ";\n");
          constants.insert(v);
          break;
        case Placement::Kind::arena:
          decls += cat(t, shares(v) ? "* " : "* restrict ", n, " = (", t, "*)(ws + ",
                       lit(pl.offset), ");\n");
          break;
        case Placement::Kind::output:
          decls += cat("float* restrict ", n, " = output;\n");
          break;
        case Placement::Kind::none:
          throw Error(cat("export: value %", v, " has no storage"));
      }
    }
    std::string unused;
    for (const char* arg : {"input", "output", "ws"})
      if (decls.find(std::string(" = ") + arg) == std::string::npos &&
          decls.find(std::string("(") + arg) == std::string::npos &&
          body.find(std::string("(") + arg) == std::string::npos)
        unused += cat("(void)", arg, ";\n");
    kernels += cat("/* ", k.describe(g), " */\nstatic int glia_kernel", i,
                   "(const float* restrict input, float* restrict output,\n",
                   "                        unsigned char* restrict ws) {\n",
                   detail::indent(unused + decls + body + "return 0;\n", 1), "}\n\n");
    calls += cat("  if ((rc = glia_kernel", i, "(input, output, ws)) != 0) return rc;\n");
  }
  // A graph output that is no kernel's: the input itself or a constant.
  const ValueId result = g.outputs()[0];
  const Placement& rp = p.placement[std::size_t(result)];
  const std::int64_t out_bytes = out.output.shape.numel() * 4;
  if (rp.kind == Placement::Kind::input) {
    calls += cat("  memcpy(output, input, ", lit(out_bytes), ");\n");
  } else if (rp.kind == Placement::Kind::constant) {
    constants.insert(result);
    calls += cat("  memcpy(output, glia_c", result, ", ", lit(out_bytes), ");\n");
  }
  out.workspace_bytes =
      std::max<std::int64_t>(64, (e.scratch_offset + e.scratch_bytes + 63) / 64 * 64);

  // Constants: weights (in the source or the file) and small ones in the source.
  std::string consts, load_reads;
  std::uint64_t hash = kFnv1aBasis;
  for (ValueId v : constants) {
    const Tensor& t = std::get<ConstantAttrs>(g.node(v).attrs).value;
    const std::int64_t numel = t.numel(), bytes = std::int64_t(t.nbytes());
    const std::string ct = c_type(t.dtype()),
                      arr = cat("glia_c", v, "[", lit(std::max<std::int64_t>(numel, 1)), "]");
    const bool weight = bytes >= options.weight_bytes;
    if (weight) {
      hash = fnv1a(hash, t.data_ptr(), t.nbytes());
      out.weights_bytes += bytes;
    }
    if (weight && options.weights_file) {
      consts += cat("/* ", t.type().to_string(), ", from ", name,
                    ".weights */\nstatic _Alignas(64) ", ct, " ", arr, ";\n");
      load_reads += cat("  ok = ok && glia_read(f, glia_c", v, ", ", lit(bytes), ", &h);\n");
      out.weights.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
      continue;
    }
    consts += cat("/* ", t.type().to_string(), " */\nstatic ", weight ? "_Alignas(64) " : "",
                  "const ", ct, " ", arr, " = {");
    for (std::int64_t i = 0; i < numel; ++i)
      consts +=
          cat(i % 8 == 0 ? "\n  " : " ", detail::element_literal(t, i), i + 1 < numel ? "," : "");
    if (numel == 0) consts += "0";
    consts += "\n};\n";
  }
  out.weights_hash = hash;
  out.info =
      cat("glia exported predictor ", name, "\nmodel: ", options.model,
          "\ninput: ", out.input.to_string(), "\noutput: ", out.output.to_string(),
          "\nbatch: ", options.batch, "\nworkspace: ", out.workspace_bytes,
          " bytes\nweights: ", out.weights_bytes, " bytes ",
          options.weights_file ? "in " + name + ".weights" : std::string("in the source"),
          ", fnv1a64 ", hash_hex(hash), "\nkernels: ", p.kernels.size(), "\nglia: ", GLIA_VERSION);

  out.header = detail::header_text(out, options);

  // ---- NAME.c -----------------------------------------------------------------------------
  std::string c =
      cat("/* ", name, ".c: generated by glia ", GLIA_VERSION,
          " from the lowered predict program. Do not edit.\n * model: ", options.model, "\n */\n",
          "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n",
          options.weights_file ? "#include <stdio.h>\n" : "", "\n#include \"", name,
          ".h\"\n\n/* ---- glia's element-wise math (core/elementwise_math.h) ---- */\n",
          elementwise_source(), "\n");
  if (has_matmul)
    c += cat("/* ---- glia's AOT runtime (compiler/aot/runtime.h) ---- */\n", runtime_source(),
             "\n");
  c += "/* ---- constants ---- */\n" + consts + "\n/* ---- kernels ---- */\n" + kernels;
  c += "/* ---- the ABI ---- */\n" + detail::entry_points(out, options, calls, load_reads);
  out.source = c;
  if (options.weights_file) out.weights = detail::weights_head(out) + out.weights;
  out.makefile = detail::makefile_text(name);
  out.cmake = detail::cmake_text(name);
  return out;
}

std::vector<std::filesystem::path> write_files(const CSource& s, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  check(!ec, "export: cannot create ", dir.string(), ": ", ec.message());
  std::vector<std::pair<std::string, const std::string*>> files{{s.name + ".h", &s.header},
                                                                {s.name + ".c", &s.source},
                                                                {"Makefile", &s.makefile},
                                                                {"CMakeLists.txt", &s.cmake}};
  if (!s.weights.empty()) files.push_back({s.name + ".weights", &s.weights});
  std::vector<std::filesystem::path> written;
  for (const auto& [file, text] : files) {
    std::filesystem::path path = dir / file, tmp = dir / (file + ".tmp");
    {
      std::ofstream f(tmp, std::ios::binary);
      f.write(text->data(), std::streamsize(text->size()));
      check(f.good(), "export: cannot write ", tmp.string());
    }
    std::filesystem::rename(tmp, path, ec);
    check(!ec, "export: cannot write ", path.string(), ": ", ec.message());
    written.push_back(path);
  }
  return written;
}

}  // namespace glia::aot
