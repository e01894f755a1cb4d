// The backend registry: backends by name, created once on first use. `interp` is
// always there; other backends register a factory.
//   auto exe = glia::compile_graph(graph, "interp");
//   for (auto& name : glia::backend_names()) std::cout << name << "\n";
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "glia/compiler/backend.hpp"

namespace glia {

using BackendFactory = std::function<std::unique_ptr<Backend>()>;

// Throws glia::Error when the name is empty or already registered.
void register_backend(const std::string& name, BackendFactory factory);
// The backend of that name; glia::Error listing the known names for an unknown one.
const Backend& backend(std::string_view name);
std::vector<std::string> backend_names();  // sorted
// The backend build(), the training step, the loop and `glia train` use unless told
// otherwise: "cpu" where glia was built with oneDNN, else "interp".
std::string default_backend();

// Verifies the graph (when options.verify), checks that the backend supports every op
// in it (glia::Error naming the ones it does not) and compiles it.
std::unique_ptr<Executable> compile_graph(const Graph& graph, std::string_view backend_name,
                                          const CompileOptions& options = {});

}  // namespace glia
