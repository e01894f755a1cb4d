// cuDNN's descriptors of a convolution (cudnn_descriptors.hpp).
#include "backends/cuda/cudnn_descriptors.hpp"

#include <vector>

#include "glia/core/error.hpp"

namespace glia::detail::cuda::conv {

void check_dnn(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS)
    throw Error(cat("cuda: ", what, " failed: ", cudnn().cudnnGetErrorString(status)));
}

namespace {
std::vector<int> ints(const Ints& v) { return {v.begin(), v.end()}; }
}  // namespace

cudnnDataType_t data_type(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return CUDNN_DATA_DOUBLE;
    case DType::f16:
      return CUDNN_DATA_HALF;
    case DType::bf16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

TensorDesc tensor_desc(cudnnDataType_t type, const Dims& v) {
  cudnnTensorDescriptor_t raw = nullptr;
  check_dnn(cudnn().cudnnCreateTensorDescriptor(&raw), "cudnnCreateTensorDescriptor");
  TensorDesc desc(raw);
  std::vector<int> dims = ints(v.dims), strides = ints(v.strides);
  check_dnn(
      cudnn().cudnnSetTensorNdDescriptor(raw, type, int(dims.size()), dims.data(), strides.data()),
      "cudnnSetTensorNdDescriptor");
  return desc;
}

FilterDesc filter_desc(cudnnDataType_t type, Layout layout, const Ints& dims) {
  cudnnFilterDescriptor_t raw = nullptr;
  check_dnn(cudnn().cudnnCreateFilterDescriptor(&raw), "cudnnCreateFilterDescriptor");
  FilterDesc desc(raw);
  std::vector<int> d = ints(dims);
  check_dnn(cudnn().cudnnSetFilterNdDescriptor(
                raw, type, layout == Layout::nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                int(d.size()), d.data()),
            "cudnnSetFilterNdDescriptor");
  return desc;
}

ConvDesc conv_desc(const ConvSpec& s) {
  cudnnConvolutionDescriptor_t raw = nullptr;
  check_dnn(cudnn().cudnnCreateConvolutionDescriptor(&raw), "cudnnCreateConvolutionDescriptor");
  ConvDesc desc(raw);
  std::vector<int> pad, stride, dilation;
  if (s.strides.size() == 1) {  // the unit height
    pad.push_back(0);
    stride.push_back(1);
    dilation.push_back(1);
  }
  for (std::size_t i = 0; i < s.strides.size(); ++i) {
    pad.push_back(int(s.padding_low[i]));
    stride.push_back(int(s.strides[i]));
    dilation.push_back(int(s.dilations[i]));
  }
  check_dnn(
      cudnn().cudnnSetConvolutionNdDescriptor(
          raw, int(pad.size()), pad.data(), stride.data(), dilation.data(), CUDNN_CROSS_CORRELATION,
          s.dtype == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT),
      "cudnnSetConvolutionNdDescriptor");
  check_dnn(cudnn().cudnnSetConvolutionGroupCount(raw, int(s.groups)),
            "cudnnSetConvolutionGroupCount");
  cudnnMathType_t math = s.dtype == DType::f32   ? CUDNN_FMA_MATH
                         : s.dtype == DType::f64 ? CUDNN_DEFAULT_MATH
                                                 : CUDNN_TENSOR_OP_MATH;
  check_dnn(cudnn().cudnnSetConvolutionMathType(raw, math), "cudnnSetConvolutionMathType");
  return desc;
}

}  // namespace glia::detail::cuda::conv
