// Internal to the `cuda` backend: NVRTC, cuBLASLt and cuDNN, loaded with dlopen the first
// time the backend needs them. Linking them would cost every glia process ~120 ms at
// start-up (they are hundreds of megabytes), and a machine without them still runs
// everything else. The CUDA runtime itself is linked statically (no start-up cost; with
// no driver it reports one).
#pragma once

#include <cublasLt.h>
#include <cudnn.h>
#include <nvrtc.h>

namespace glia::detail::cuda {

#define GLIA_NVRTC_FUNCTIONS(X)                                                                 \
  X(nvrtcVersion)                                                                               \
  X(nvrtcCreateProgram)                                                                         \
  X(nvrtcCompileProgram) X(nvrtcDestroyProgram) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) \
      X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) X(nvrtcGetErrorString)

#define GLIA_CUBLASLT_FUNCTIONS(X)                                                                 \
  X(cublasLtCreate)                                                                                \
  X(cublasLtDestroy)                                                                               \
  X(cublasLtGetVersion) X(cublasLtMatmul) X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy) \
      X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate)                              \
          X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute)                       \
              X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy)                 \
                  X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic)

#define GLIA_CUDNN_FUNCTIONS(X)                                                                    \
  X(cudnnGetVersion)                                                                               \
  X(cudnnGetErrorString)                                                                           \
  X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream) X(cudnnCreateTensorDescriptor)                  \
      X(cudnnDestroyTensorDescriptor) X(cudnnSetTensorNdDescriptor) X(cudnnCreateFilterDescriptor) \
          X(cudnnDestroyFilterDescriptor) X(cudnnSetFilterNdDescriptor)                            \
              X(cudnnCreateConvolutionDescriptor) X(cudnnDestroyConvolutionDescriptor)             \
                  X(cudnnSetConvolutionNdDescriptor) X(cudnnSetConvolutionGroupCount)              \
                      X(cudnnSetConvolutionMathType) X(cudnnFindConvolutionForwardAlgorithmEx)     \
                          X(cudnnFindConvolutionBackwardDataAlgorithmEx)                           \
                              X(cudnnFindConvolutionBackwardFilterAlgorithmEx)                     \
                                  X(cudnnConvolutionForward) X(cudnnConvolutionBackwardData)       \
                                      X(cudnnConvolutionBackwardFilter)                            \
                                          X(cudnnGetConvolutionForwardWorkspaceSize)               \
                                              X(cudnnGetConvolutionBackwardDataWorkspaceSize) X(   \
                                                  cudnnGetConvolutionBackwardFilterWorkspaceSize)  \
                                                  X(cudnnCreatePoolingDescriptor)                  \
                                                      X(cudnnDestroyPoolingDescriptor)             \
                                                          X(cudnnSetPoolingNdDescriptor)           \
                                                              X(cudnnPoolingForward)               \
                                                                  X(cudnnPoolingBackward)

#define GLIA_CUDA_POINTER(name) decltype(&::name) name = nullptr;

struct NvrtcLibrary {
  GLIA_NVRTC_FUNCTIONS(GLIA_CUDA_POINTER)
};
struct CublasLtLibrary {
  GLIA_CUBLASLT_FUNCTIONS(GLIA_CUDA_POINTER)
};
struct CudnnLibrary {
  GLIA_CUDNN_FUNCTIONS(GLIA_CUDA_POINTER)
};

#undef GLIA_CUDA_POINTER

// Each library, loaded once (thread-safe); glia::Error naming the files tried and what
// dlopen said when it cannot be loaded.
const NvrtcLibrary& nvrtc();
const CublasLtLibrary& cublaslt();
const CudnnLibrary& cudnn();

}  // namespace glia::detail::cuda
