// The AOT exporter's driver: the C target, NAME.h and NAME.c from a Program (ABI, weights,
// one static function per kernel, the entry points), the weights file and build files.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "aot/emitter.hpp"
#include "glia/compiler/aot.hpp"
#include "glia/core/attrs.hpp"
#include "glia/core/elementwise.hpp"
#include "glia/core/error.hpp"

#ifndef GLIA_VERSION
#define GLIA_VERSION "unknown"
#endif

namespace glia::aot {

namespace detail {

std::string c_type(DType t) {
  switch (t) {
    case DType::boolean:
      return "glia_bool";
    case DType::u8:
      return "glia_u8";
    case DType::u32:
      return "glia_u32";
    case DType::i32:
      return "glia_i32";
    case DType::i64:
      return "glia_i64";
    case DType::f32:
      return "float";
    case DType::f64:
      return "double";
    default:
      throw Error(cat("export: no C type for ", dtype_name(t), " values"));
  }
}

std::string lit(std::int64_t v) {
  if (v == INT64_MIN) return "(-9223372036854775807LL - 1)";
  std::string s = std::to_string(v);
  return v > INT32_MAX || v < INT32_MIN ? s + "LL" : s;
}

}  // namespace detail

using detail::c_type;
using detail::lit;

namespace {

bool plain_dtype(DType d) { return d != DType::f16 && d != DType::bf16; }

bool valid_name(const std::string& n) {
  if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) return false;
  for (char c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

std::uint64_t fnv1a(std::uint64_t h, const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}
constexpr std::uint64_t kFnvBasis = 0xcbf29ce484222325ULL;

// One element of a constant as a C literal.
std::string element(const Tensor& t, std::int64_t i) {
  char buf[64];
  auto real = [&](double v, bool f32) -> std::string {
    if (v != v) return "NAN";
    if (v == INFINITY) return "INFINITY";
    if (v == -INFINITY) return "-INFINITY";
    if (v == 0) return std::signbit(v) ? "-0.0" : "0";
    std::snprintf(buf, sizeof buf, "%a", v);
    return std::string(buf) + (f32 ? "f" : "");
  };
  switch (t.dtype()) {
    case DType::f32:
      return real(t.data<float>()[i], true);
    case DType::f64:
      return real(t.data<double>()[i], false);
    case DType::i32:
      return lit(t.data<std::int32_t>()[i]);
    case DType::i64:
      return lit(t.data<std::int64_t>()[i]);
    case DType::u8:
      return std::to_string(t.data<std::uint8_t>()[i]);
    case DType::u32:
      return std::to_string(t.data<std::uint32_t>()[i]) + "u";
    case DType::boolean:
      return t.data<bool>()[i] ? "1" : "0";
    default:
      throw Error(cat("export: no C literal for ", dtype_name(t.dtype()), " constants"));
  }
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// A C string literal of `text`.
std::string c_string_literal(const std::string& text) {
  std::string s = "\"";
  for (char c : text) {
    if (c == '\n')
      s += "\\n\"\n    \"";
    else if (c == '"' || c == '\\')
      s += std::string("\\") + c;
    else
      s += c;
  }
  return s + "\"";
}

// Indents generated statements two spaces per open brace.
std::string indent(const std::string& code, int depth) {
  std::string out, line;
  std::size_t at = 0;
  while (at < code.size()) {
    std::size_t end = code.find('\n', at);
    if (end == std::string::npos) end = code.size();
    line = code.substr(at, end - at);
    at = end + 1;
    int closes = 0;
    while (closes < int(line.size()) && line[std::size_t(closes)] == '}') ++closes;
    depth -= closes > 0 ? 1 : 0;
    if (!line.empty()) out += std::string(std::size_t(std::max(depth, 0)) * 2, ' ') + line;
    out += '\n';
    for (char ch : line) depth += ch == '{' ? 1 : ch == '}' ? -1 : 0;
    depth += closes > 0 ? 1 : 0;
  }
  return out;
}

}  // namespace

bool CTarget::accepts(const Graph& graph, const Kernel& kernel) const {
  for (const auto* list : {&kernel.inputs, &kernel.outputs, &kernel.temporaries, &kernel.covered})
    for (ValueId v : *list)
      if (!plain_dtype(graph.type(v).dtype)) return false;
  return std::visit(
      [&](const auto& s) {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, MatmulSpec>) {
          return s.dtype == DType::f32;
        } else if constexpr (std::is_same_v<S, ConvSpec>) {
          return s.pass != ConvSpec::Pass::backward_weights && s.dtype == DType::f32;
        } else if constexpr (std::is_same_v<S, PoolSpec>) {
          return s.kind == PoolSpec::Kind::max && s.dtype == DType::f32;
        } else if constexpr (std::is_same_v<S, DirectSpec>) {
          return s.op != Op::scatter_add;
        } else if constexpr (std::is_same_v<S, FusedSpec>) {
          for (const auto& sweep : s.sweeps) {
            for (const auto& in : sweep.code)
              if (in.code == FusedSpec::Code::random) return false;
            for (const auto& r : sweep.reductions)
              if (r.dtype == DType::boolean) return false;
          }
          return true;
        } else {
          return false;
        }
      },
      kernel.spec);
}

std::string CTarget::fallback_reason(const Graph& graph, ValueId node) const {
  const Node& n = graph.node(node);
  if (!plain_dtype(n.type.dtype)) return "exported C computes no 16-bit floats";
  for (ValueId in : n.inputs)
    if (!plain_dtype(graph.type(in).dtype)) return "exported C computes no 16-bit floats";
  switch (n.op) {
    case Op::random_bits:
      return "random bits (a stochastic layer in train mode)";
    case Op::scatter_add:
    case Op::select_and_scatter:
      return "a gradient op, which predict does not need";
    case Op::convolution:
      return n.type.dtype == DType::f32 ? "a convolution gradient form" : "a non-f32 convolution";
    case Op::dot_general:
      return n.type.dtype == DType::f32 ? "axes that do not fold into a strided matmul"
                                        : "a non-f32 matrix product";
    case Op::window_max:
      return "a non-f32 max pool";
    default:
      return "no C kernel for this op";
  }
}

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
  // Reference kernels: general f32 convolutions and f32/f64 dot_generals have loops of
  // their own here.
  auto general = [&](const ReferenceSpec& r) {
    const DType t = g.type(r.node).dtype;
    if (r.op == Op::dot_general) return t == DType::f32 || t == DType::f64;
    return r.op == Op::convolution && t == DType::f32 &&
           std::get<ConvAttrs>(g.node(r.node).attrs).batch_groups == 1;
  };
  for (const Kernel& k : p.kernels)
    if (const auto* r = std::get_if<ReferenceSpec>(&k.spec); r != nullptr && !general(*r))
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
            return detail::emit_conv(e, k, s);
          } else if constexpr (std::is_same_v<S, PoolSpec>) {
            return detail::emit_pool(e, s);
          } else if constexpr (std::is_same_v<S, DirectSpec>) {
            return detail::emit_direct(e, s);
          } else if constexpr (std::is_same_v<S, FusedSpec>) {
            return detail::emit_fused(e, s);
          } else {
            return s.op == Op::dot_general ? detail::emit_general_dot(e, s.node)
                                           : detail::emit_general_conv(e, s.node);
          }
        },
        k.spec);
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
          decls += cat(t, "* restrict ", n, " = (", t, "*)(ws + ", lit(pl.offset), ");\n");
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
                   indent(unused + decls + body + "return 0;\n", 1), "}\n\n");
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
  std::uint64_t hash = kFnvBasis;
  std::vector<ValueId> weights;
  for (ValueId v : constants) {
    const Tensor& t = std::get<ConstantAttrs>(g.node(v).attrs).value;
    const std::int64_t numel = t.numel(), bytes = std::int64_t(t.nbytes());
    const std::string ct = c_type(t.dtype()),
                      arr = cat("glia_c", v, "[", lit(std::max<std::int64_t>(numel, 1)), "]");
    const bool weight = bytes >= options.weight_bytes;
    if (weight) {
      weights.push_back(v);
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
      consts += cat(i % 8 == 0 ? "\n  " : " ", element(t, i), i + 1 < numel ? "," : "");
    if (numel == 0) consts += "0";
    consts += "\n};\n";
  }
  out.weights_hash = hash;
  char hash_text[17];
  std::snprintf(hash_text, sizeof hash_text, "%016" PRIx64, hash);

  const std::string N = upper(name);
  out.info =
      cat("glia exported predictor ", name, "\nmodel: ", options.model,
          "\ninput: ", out.input.to_string(), "\noutput: ", out.output.to_string(),
          "\nbatch: ", options.batch, "\nworkspace: ", out.workspace_bytes,
          " bytes\nweights: ", out.weights_bytes, " bytes ",
          options.weights_file ? "in " + name + ".weights" : std::string("in the source"),
          ", fnv1a64 ", hash_text, "\nkernels: ", p.kernels.size(), "\nglia: ", GLIA_VERSION);

  // ---- NAME.h -----------------------------------------------------------------------------
  std::string h = cat(
      "/* ", name, ".h: a predictor exported by glia ", GLIA_VERSION, " (glia export).\n",
      " *\n * model:  ", options.model, "\n * input:  ", out.input.to_string(), " (", name,
      "_INPUT_SIZE floats, dense row-major)\n * output: ", out.output.to_string(), " (", name,
      "_OUTPUT_SIZE floats, dense row-major)\n *\n",
      " * Plain C with no dependency beyond libc and libm; nothing is allocated while it runs.\n",
      options.weights_file
          ? cat(" *   ", name, "_load_weights(path)   reads ", name,
                ".weights (checked by size and hash) once, before\n",
                " *                            any prediction; returns 0, or non-zero on a "
                "missing, short or\n *                            mismatched file.\n")
          : std::string(),
      " *   ", name, "_predict(in, out)       runs the model on one input of ", name,
      "_INPUT_SIZE floats into\n", " *                            ", name,
      "_OUTPUT_SIZE floats, using the library's own static workspace\n",
      " *                            (one call at a time).\n", " *   ", name,
      "_predict_ws(in, out, ws) the same with a caller's workspace of ", name, "_WORKSPACE_SIZE\n",
      " *                            bytes, 64-byte aligned: one per thread for concurrent "
      "calls.\n",
      " *   Both return 0; 1 when the weights are not loaded, 2 when an index computed from the\n",
      " *   input is out of range. `in` and `out` must not overlap.\n", " *   ", name,
      "_info()                model, shapes, glia version and weights hash, as text.\n */\n",
      "#ifndef ", N, "_H\n#define ", N, "_H\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
      "#define ", name, "_INPUT_SIZE ", out.input.shape.numel(), "\n", "#define ", name,
      "_OUTPUT_SIZE ", out.output.shape.numel(), "\n", "#define ", name, "_BATCH ", options.batch,
      "\n", "#define ", name, "_WORKSPACE_SIZE ", out.workspace_bytes, "\n\n",
      options.weights_file ? cat("int ", name, "_load_weights(const char* path);\n")
                           : std::string(),
      "int ", name, "_predict(const float* input, float* output);\n", "int ", name,
      "_predict_ws(const float* input, float* output, void* workspace);\n", "const char* ", name,
      "_info(void);\n\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* ", N, "_H */\n");
  out.header = h;

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
  c += "/* ---- the ABI ---- */\n";
  if (options.weights_file) {
    c += cat(
        "static int glia_weights_loaded = 0;\n\n",
        "static int glia_read(FILE* f, void* dst, size_t bytes, uint64_t* h) {\n",
        "  size_t i;\n  const unsigned char* p = (const unsigned char*)dst;\n",
        "  if (fread(dst, 1, bytes, f) != bytes) return 0;\n",
        "  for (i = 0; i < bytes; ++i) *h = (*h ^ p[i]) * 0x100000001b3ULL;\n  return 1;\n}\n\n",
        "int ", name, "_load_weights(const char* path) {\n",
        "  unsigned char head[24];\n  uint64_t size = 0, want = 0, h = 0xcbf29ce484222325ULL;\n",
        "  int ok, i;\n  FILE* f = fopen(path, \"rb\");\n  glia_weights_loaded = 0;\n",
        "  if (!f) return 1;\n",
        "  if (fread(head, 1, 24, f) != 24 || memcmp(head, \"GLIAWTS1\", 8) != 0) {\n",
        "    fclose(f);\n    return 2;\n  }\n",
        "  for (i = 7; i >= 0; --i) size = size << 8 | head[8 + i], want = want << 8 | head[16 + "
        "i];\n",
        "  if (size != ", out.weights_bytes, "ULL || want != 0x", hash_text, "ULL) {\n",
        "    fclose(f);\n    return 3;\n  }\n  ok = 1;\n", load_reads,
        "  ok = ok && fgetc(f) == EOF;\n  fclose(f);\n",
        "  if (!ok) return 4;\n  if (h != want) return 5;\n",
        "  glia_weights_loaded = 1;\n  return 0;\n}\n\n");
  }
  c += cat(
      "int ", name, "_predict_ws(const float* input, float* output, void* workspace) {\n",
      "  unsigned char* ws = (unsigned char*)workspace;\n  int rc = 0;\n  (void)ws;\n  (void)rc;\n",
      options.weights_file ? "  if (!glia_weights_loaded) return 1;\n" : "", calls,
      "  return 0;\n}\n\n", "static _Alignas(64) unsigned char glia_workspace[", name,
      "_WORKSPACE_SIZE];\n\n", "int ", name,
      "_predict(const float* input, float* output) {\n  return ", name,
      "_predict_ws(input, output, glia_workspace);\n}\n\n", "const char* ", name,
      "_info(void) {\n  return ", c_string_literal(out.info), ";\n}\n");
  out.source = c;

  if (options.weights_file) {
    std::string head = "GLIAWTS1";
    for (std::uint64_t v : {std::uint64_t(out.weights_bytes), hash})
      for (int i = 0; i < 8; ++i) head += static_cast<char>((v >> (8 * i)) & 0xff);
    out.weights = head + out.weights;
  }
  const std::string flags = "-O3 -march=native -std=c11";
  out.makefile =
      cat("# Builds lib", name, ".so from ", name, ".c (generated by glia export).\n",
          "# ARCH: the instruction set to compile for (-march=native: this machine's; \n",
          "# e.g. -mavx2 -mfma for any AVX2 machine, or empty for a portable build).\n",
          "CC ?= cc\nARCH ?= -march=native\nCFLAGS ?= -O3 -std=c11\n\n", "lib", name, ".so: ", name,
          ".c ", name, ".h\n\t$(CC) $(CFLAGS) $(ARCH) -fPIC -shared -o $@ ", name,
          ".c -lm\n\nclean:\n\trm -f lib", name, ".so\n");
  out.cmake = cat(
      "# Builds ", name, " (lib", name, ".so) from ", name, ".c, generated by glia export.\n",
      "cmake_minimum_required(VERSION 3.13)\nproject(", name, " C)\n", "set(CMAKE_C_STANDARD 11)\n",
      "option(", N, "_NATIVE \"Compile for this machine's instruction set\" ON)\n", "add_library(",
      name, " SHARED ", name, ".c)\n", "target_include_directories(", name,
      " PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})\n", "target_compile_options(", name,
      " PRIVATE -O3 $<$<BOOL:${", N, "_NATIVE}>:-march=native>)\n", "find_library(", N,
      "_LIBM m)\n", "if(", N, "_LIBM)\n  target_link_libraries(", name, " PRIVATE ${", N,
      "_LIBM})\nendif()\n");
  (void)flags;
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
