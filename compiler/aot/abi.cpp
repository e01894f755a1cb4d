// The C around the kernels: NAME.h (the ABI, documented), NAME.c's entry points, the
// weights file's head, and the Makefile and CMakeLists.txt that build libNAME.so.
#include "aot/emitter.hpp"
#include "glia/core/error.hpp"
#include "glia/core/hash.hpp"

#ifndef GLIA_VERSION
#define GLIA_VERSION "unknown"
#endif

namespace glia::aot::detail {

std::string header_text(const CSource& out, const CSourceOptions& options) {
  const std::string& name = out.name;
  const std::string N = upper(name);
  return cat(
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
}

std::string entry_points(const CSource& out, const CSourceOptions& options,
                         const std::string& calls, const std::string& load_reads) {
  const std::string& name = out.name;
  const std::string hash_text = hash_hex(out.weights_hash);
  std::string c;
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
  return c;
}

std::string weights_head(const CSource& out) {
  std::string head = "GLIAWTS1";
  for (std::uint64_t v : {std::uint64_t(out.weights_bytes), out.weights_hash})
    for (int i = 0; i < 8; ++i) head += static_cast<char>((v >> (8 * i)) & 0xff);
  return head;
}

std::string makefile_text(const std::string& name) {
  return cat("# Builds lib", name, ".so from ", name, ".c (generated by glia export).\n",
             "# ARCH: the instruction set to compile for (-march=native: this machine's; \n",
             "# e.g. -mavx2 -mfma for any AVX2 machine, or empty for a portable build).\n",
             "CC ?= cc\nARCH ?= -march=native\nCFLAGS ?= -O3 -std=c11\n\n", "lib", name,
             ".so: ", name, ".c ", name, ".h\n\t$(CC) $(CFLAGS) $(ARCH) -fPIC -shared -o $@ ", name,
             ".c -lm\n\nclean:\n\trm -f lib", name, ".so\n");
}

std::string cmake_text(const std::string& name) {
  const std::string N = upper(name);
  return cat("# Builds ", name, " (lib", name, ".so) from ", name,
             ".c, generated by glia export.\n", "cmake_minimum_required(VERSION 3.13)\nproject(",
             name, " C)\n", "set(CMAKE_C_STANDARD 11)\n", "option(", N,
             "_NATIVE \"Compile for this machine's instruction set\" ON)\n", "add_library(", name,
             " SHARED ", name, ".c)\n", "target_include_directories(", name,
             " PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})\n", "target_compile_options(", name,
             " PRIVATE -O3 $<$<BOOL:${", N, "_NATIVE}>:-march=native>)\n", "find_library(", N,
             "_LIBM m)\n", "if(", N, "_LIBM)\n  target_link_libraries(", name, " PRIVATE ${", N,
             "_LIBM})\nendif()\n");
}

}  // namespace glia::aot::detail
