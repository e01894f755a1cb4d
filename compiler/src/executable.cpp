// What every executable shares: checking a run's inputs against the graph.
#include "glia/compiler/backend.hpp"

namespace glia {

void check_run_inputs(const Graph& graph, std::span<const Tensor> inputs) {
  check(inputs.size() == graph.parameters().size(), "run: graph '", graph.name(), "' takes ",
        graph.parameters().size(), " input(s), got ", inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorType& want = graph.type(graph.parameters()[i]);
    check(inputs[i].defined(), "run: graph '", graph.name(), "' input ", i, " is undefined");
    // The message's text only on a mismatch: building it costs more than a tiny run.
    if (!(inputs[i].type() == want))
      throw Error(cat("run: graph '", graph.name(), "' input ", i, " expected ", want.to_string(),
                      ", got ", inputs[i].type().to_string()));
  }
}

}  // namespace glia
