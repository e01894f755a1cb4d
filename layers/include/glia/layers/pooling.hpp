// Pooling layers over the spatial axes of channels-last ([N, spatial..., C]) inputs.
//   glia::Model y = glia::max_pool(x, {.kernel_size = {2, 2}});
#pragma once

#include "glia/layers/convolution.hpp"

namespace glia {

struct PoolOptions {
  std::vector<std::int64_t> kernel_size{};  // one value broadcasts to every spatial axis
  std::vector<std::int64_t> strides{};      // empty: equal to the kernel size
  Padding padding = "valid";
  std::vector<std::int64_t> window_dilation{};
  Channels channels = Channels::last;
  double norm = 2;  // lp_pool's p
  std::string name{};
};
Model max_pool(const Model& x, const PoolOptions& options = {});
// The window sum / the window's size: padding counts (PyTorch's count_include_pad=True).
Model avg_pool(const Model& x, const PoolOptions& options = {});
Model lp_pool(const Model& x, const PoolOptions& options = {});  // (sum x^p)^(1/p), no abs

struct AdaptivePoolOptions {
  std::vector<std::int64_t> output_size{};  // per spatial axis (one value broadcasts)
  Channels channels = Channels::last;
  double norm = 2;
  std::string name{};
};
// Pools to a fixed output size with PyTorch's bins: start floor(i*in/out), end ceil((i+1)*in/out).
Model adaptive_avg_pool(const Model& x, const AdaptivePoolOptions& options);
Model adaptive_max_pool(const Model& x, const AdaptivePoolOptions& options);
Model adaptive_lp_pool(const Model& x, const AdaptivePoolOptions& options);

struct GlobalPoolOptions {
  bool keep_axes = false;
  Channels channels = Channels::last;
  double norm = 2;
  std::string name{};
};
Model global_avg_pool(const Model& x, const GlobalPoolOptions& options = {});
Model global_max_pool(const Model& x, const GlobalPoolOptions& options = {});
Model global_lp_pool(const Model& x, const GlobalPoolOptions& options = {});

}  // namespace glia
