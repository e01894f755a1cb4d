// Internal to the `cuda` backend: cuDNN's descriptors of a convolution, made from its
// views (cudnn_views.hpp) and destroyed with the functions of the loaded library, and the
// check of a cuDNN call's status.
#pragma once

#include <memory>
#include <type_traits>

#include "backends/cuda/cudnn_views.hpp"
#include "backends/cuda/libraries.hpp"

namespace glia::detail::cuda::conv {

// glia::Error "cuda: <what> failed: <cuDNN's words>" unless the call succeeded.
void check_dnn(cudnnStatus_t status, const char* what);

struct DestroyTensor {
  void operator()(cudnnTensorDescriptor_t d) const { cudnn().cudnnDestroyTensorDescriptor(d); }
};
struct DestroyFilter {
  void operator()(cudnnFilterDescriptor_t d) const { cudnn().cudnnDestroyFilterDescriptor(d); }
};
struct DestroyConv {
  void operator()(cudnnConvolutionDescriptor_t d) const {
    cudnn().cudnnDestroyConvolutionDescriptor(d);
  }
};
using TensorDesc = std::unique_ptr<std::remove_pointer_t<cudnnTensorDescriptor_t>, DestroyTensor>;
using FilterDesc = std::unique_ptr<std::remove_pointer_t<cudnnFilterDescriptor_t>, DestroyFilter>;
using ConvDesc = std::unique_ptr<std::remove_pointer_t<cudnnConvolutionDescriptor_t>, DestroyConv>;

cudnnDataType_t data_type(DType dtype);
// A tensor descriptor of the view's dims and strides.
TensorDesc tensor_desc(cudnnDataType_t type, const Dims& v);
// dims in cuDNN's [K, C, R, S] order whatever the layout.
FilterDesc filter_desc(cudnnDataType_t type, Layout layout, const Ints& dims);
// Cross-correlation (glia's convolution, like XLA's, does not flip the kernel) with the
// spec's low padding on both ends. f32 is held to FMA math (no TF32: it must agree with
// the cpu to 1e-4); f16 and bf16 may use tensor ops, and accumulate in f32.
ConvDesc conv_desc(const ConvSpec& s);

}  // namespace glia::detail::cuda::conv
