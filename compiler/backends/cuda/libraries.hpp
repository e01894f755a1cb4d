// Internal to the `cuda` backend: the CUDA driver, NVRTC, cuBLASLt and cuDNN, loaded with
// dlopen the first time the backend needs them. Linking the libraries would cost every
// glia process ~120 ms at start-up (they are hundreds of megabytes), and a machine without
// them (or without a driver: no GPU) still runs everything else. The backend drives the
// device through the driver API (contexts, memory, streams, modules, CUDA graphs), so no
// CUDA runtime is linked either; cuBLASLt and cuDNN run on the driver's primary context.
#pragma once

#include <cublasLt.h>
#include <cuda.h>
#include <cudnn.h>
#include <nvrtc.h>
#ifdef GLIA_HAVE_NCCL
#include <nccl.h>
#endif

namespace glia::detail::cuda {

// The driver's entry points by their exported names: cuda.h maps the plain names onto
// these (cuMemAlloc -> cuMemAlloc_v2), so calls through the table may use either.
#define GLIA_DRIVER_FUNCTIONS(X) \
  X(cuInit)                      \
  X(cuDriverGetVersion)          \
  X(cuGetErrorName)              \
  X(cuGetErrorString)            \
  X(cuDeviceGetCount)            \
  X(cuDeviceGet)                 \
  X(cuDeviceGetName)             \
  X(cuDeviceGetAttribute)        \
  X(cuDeviceTotalMem_v2)         \
  X(cuDevicePrimaryCtxRetain)    \
  X(cuCtxGetCurrent)             \
  X(cuCtxSetCurrent)             \
  X(cuMemGetInfo_v2)             \
  X(cuMemAlloc_v2)               \
  X(cuMemFree_v2)                \
  X(cuMemHostAlloc)              \
  X(cuMemFreeHost)               \
  X(cuMemcpyHtoD_v2)             \
  X(cuMemcpyDtoH_v2)             \
  X(cuMemcpyDtoD_v2)             \
  X(cuMemcpyHtoDAsync_v2)        \
  X(cuMemcpyDtoHAsync_v2)        \
  X(cuMemcpyDtoDAsync_v2)        \
  X(cuMemsetD32Async)            \
  X(cuMemsetD8Async)             \
  X(cuStreamCreate)              \
  X(cuStreamDestroy_v2)          \
  X(cuStreamSynchronize)         \
  X(cuStreamBeginCapture_v2)     \
  X(cuStreamEndCapture)          \
  X(cuGraphInstantiateWithFlags) \
  X(cuGraphLaunch)               \
  X(cuGraphDestroy)              \
  X(cuGraphExecDestroy)          \
  X(cuModuleLoadData)            \
  X(cuModuleUnload)              \
  X(cuModuleGetFunction)         \
  X(cuLaunchKernel)

#define GLIA_NVRTC_FUNCTIONS(X) \
  X(nvrtcVersion)               \
  X(nvrtcCreateProgram)         \
  X(nvrtcCompileProgram)        \
  X(nvrtcDestroyProgram)        \
  X(nvrtcGetProgramLogSize)     \
  X(nvrtcGetProgramLog) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) X(nvrtcGetErrorString)

#define GLIA_CUBLASLT_FUNCTIONS(X)        \
  X(cublasLtCreate)                       \
  X(cublasLtDestroy)                      \
  X(cublasLtGetVersion)                   \
  X(cublasLtGetStatusName)                \
  X(cublasLtGetStatusString)              \
  X(cublasLtMatmul)                       \
  X(cublasLtMatmulDescCreate)             \
  X(cublasLtMatmulDescDestroy)            \
  X(cublasLtMatmulDescSetAttribute)       \
  X(cublasLtMatrixLayoutCreate)           \
  X(cublasLtMatrixLayoutDestroy)          \
  X(cublasLtMatrixLayoutSetAttribute)     \
  X(cublasLtMatmulPreferenceCreate)       \
  X(cublasLtMatmulPreferenceDestroy)      \
  X(cublasLtMatmulPreferenceSetAttribute) \
  X(cublasLtMatmulAlgoGetHeuristic)

#define GLIA_CUDNN_FUNCTIONS(X)                     \
  X(cudnnGetVersion)                                \
  X(cudnnGetErrorString)                            \
  X(cudnnCreate)                                    \
  X(cudnnDestroy)                                   \
  X(cudnnSetStream)                                 \
  X(cudnnCreateTensorDescriptor)                    \
  X(cudnnDestroyTensorDescriptor)                   \
  X(cudnnSetTensorNdDescriptor)                     \
  X(cudnnCreateFilterDescriptor)                    \
  X(cudnnDestroyFilterDescriptor)                   \
  X(cudnnSetFilterNdDescriptor)                     \
  X(cudnnCreateConvolutionDescriptor)               \
  X(cudnnDestroyConvolutionDescriptor)              \
  X(cudnnSetConvolutionNdDescriptor)                \
  X(cudnnSetConvolutionGroupCount)                  \
  X(cudnnSetConvolutionMathType)                    \
  X(cudnnFindConvolutionForwardAlgorithm)           \
  X(cudnnFindConvolutionBackwardDataAlgorithm)      \
  X(cudnnFindConvolutionBackwardFilterAlgorithm)    \
  X(cudnnConvolutionForward)                        \
  X(cudnnConvolutionBackwardData)                   \
  X(cudnnConvolutionBackwardFilter)                 \
  X(cudnnGetConvolutionForwardWorkspaceSize)        \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize)   \
  X(cudnnGetConvolutionBackwardFilterWorkspaceSize) \
  X(cudnnGetConvolutionForwardAlgorithm_v7)         \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)    \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)  \
  X(cudnnTransformTensor)                           \
  X(cudnnCreatePoolingDescriptor)                   \
  X(cudnnDestroyPoolingDescriptor)                  \
  X(cudnnSetPoolingNdDescriptor)                    \
  X(cudnnPoolingForward)                            \
  X(cudnnPoolingBackward)

#define GLIA_NCCL_FUNCTIONS(X) \
  X(ncclGetVersion)            \
  X(ncclGetUniqueId)           \
  X(ncclCommInitRank)          \
  X(ncclAllReduce)             \
  X(ncclGetErrorString)

#define GLIA_CUDA_POINTER(name) decltype(&::name) name = nullptr;

struct DriverLibrary {
  GLIA_DRIVER_FUNCTIONS(GLIA_CUDA_POINTER)
};
struct NvrtcLibrary {
  GLIA_NVRTC_FUNCTIONS(GLIA_CUDA_POINTER)
};
struct CublasLtLibrary {
  GLIA_CUBLASLT_FUNCTIONS(GLIA_CUDA_POINTER)
};
struct CudnnLibrary {
  GLIA_CUDNN_FUNCTIONS(GLIA_CUDA_POINTER)
};
#ifdef GLIA_HAVE_NCCL
struct NcclLibrary {
  GLIA_NCCL_FUNCTIONS(GLIA_CUDA_POINTER)
};
#endif

#undef GLIA_CUDA_POINTER

// Each library, loaded once (thread-safe); glia::Error naming the files tried and what
// dlopen said when it cannot be loaded. driver_library() only loads libcuda: device.hpp
// initialises it.
const DriverLibrary& driver_library();
const NvrtcLibrary& nvrtc();
const CublasLtLibrary& cublaslt();
const CudnnLibrary& cudnn();
#ifdef GLIA_HAVE_NCCL
const NcclLibrary& nccl();  // libnccl.so.2: needs no GPU to load
#endif

}  // namespace glia::detail::cuda
