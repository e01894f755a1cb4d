// The pass pipeline compile_graph runs before a backend compiles: simplify, CSE and
// dead-code elimination, repeated while they keep shrinking the graph (one pass's
// output is often the next one's opportunity: folding makes duplicates, merging makes
// dead code).
#include "glia/compiler/passes.hpp"

namespace glia {

namespace {

constexpr int kMaxRounds = 4;

// glia::verify, naming the pass that broke the graph.
void verify_after(const char* pass, const Graph& g) {
  try {
    verify(g);
  } catch (const Error& e) {
    throw Error(cat("optimize: the graph is invalid after ", pass, ": ", e.what()));
  }
}

}  // namespace

Graph optimize(const Graph& graph, const CompileOptions& options) {
  auto run = [&](const char* name, Graph (*pass)(const Graph&), const Graph& g) {
    Graph out = pass(g);
    if (options.verify) verify_after(name, out);
    return out;
  };
  Graph g = run("prune", &prune, graph);
  for (int round = 0; round < kMaxRounds; ++round) {
    std::int64_t before = g.size();
    g = run("simplify", &simplify, g);
    g = run("eliminate_common_subexpressions", &eliminate_common_subexpressions, g);
    g = run("prune", &prune, g);
    if (g.size() >= before) break;
  }
  return g;
}

}  // namespace glia
