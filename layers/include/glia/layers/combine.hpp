// Layers that combine or split models: concatenate, add, subtract, multiply, split and
// constant. Axes count the batch axis (axis 0, which none of them joins or splits); -1 is
// the last axis.
//   glia::Model y = glia::add({glia::dense(x, 8), glia::constant(bias, {})});
#pragma once

#include <vector>

#include "glia/layers/model.hpp"

namespace glia {

struct CombineOptions {
  std::string name;
};
Model concatenate(const std::vector<Model>& xs, std::int64_t axis = -1,
                  const CombineOptions& options = {});
Model add(const std::vector<Model>& xs, const CombineOptions& options = {});  // broadcasting
Model subtract(const Model& a, const Model& b, const CombineOptions& options = {});
Model multiply(const std::vector<Model>& xs, const CombineOptions& options = {});
// `parts` equal slices along `axis`, one model each; a named split names its parts
// `<name>_<k>`.
std::vector<Model> split(const Model& x, std::int64_t parts, std::int64_t axis = -1,
                         const CombineOptions& options = {});
// A layer whose value is `value` (no inputs; not trained). The options argument has no
// default: glia::constant(t) alone is the Expr function of the same name.
Model constant(const Tensor& value, const CombineOptions& options);

}  // namespace glia
