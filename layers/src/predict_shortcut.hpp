// Internal to build.cpp: what a single-input predict remembers of its last call's
// signature (parameter and state names, leaf types) to run the compiled executable
// directly when the next call matches.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "glia/compiler/jit.hpp"
#include "glia/layers/build.hpp"

namespace glia::detail {

// The names of a parameter map, layer by layer, to tell a later call's maps apart.
using MapKeys = std::vector<std::pair<std::string, std::vector<std::string>>>;

inline MapKeys map_keys(const ParamMap& m) {
  MapKeys keys;
  for (const auto& [layer, inner] : m) {
    keys.emplace_back(layer, std::vector<std::string>{});
    for (const auto& [name, t] : inner) keys.back().second.push_back(name);
  }
  return keys;
}

inline bool same_keys(const ParamMap& m, const MapKeys& keys) {
  if (m.size() != keys.size()) return false;
  auto k = keys.begin();
  for (const auto& [layer, inner] : m) {
    if (layer != k->first || inner.size() != k->second.size()) return false;
    auto name = k->second.begin();
    for (const auto& [key, t] : inner)
      if (key != *name++) return false;
    ++k;
  }
  return true;
}

// The single-input predict's last signature: a call with the same parameter and state
// names and leaf types runs its executable directly, without jit building the
// arguments' structure text (which costs more than a tiny model's forward pass).
struct PredictShortcut {
  std::shared_ptr<const CompiledEntry> entry;
  MapKeys params, state;
  std::vector<TensorType> types;  // of the leaves: params, state, then the input
};

}  // namespace glia::detail
