// dlopen of the CUDA driver, NVRTC, cuBLASLt and cuDNN: by soname first (the loader's paths, where
// ldconfig lists the toolkit), then in the toolkit's library folder found at build time.
#include "backends/cuda/libraries.hpp"

#include <dlfcn.h>

#include <string>
#include <vector>

#include "glia/core/error.hpp"

#ifndef GLIA_CUDA_LIBRARY_DIR
#define GLIA_CUDA_LIBRARY_DIR "/usr/local/cuda/lib64"
#endif

namespace glia::detail::cuda {

namespace {

void* open_library(const char* what, const std::vector<std::string>& names,
                   const char* hint = "is the CUDA toolkit installed?") {
  std::string tried;
  for (const std::string& name : names) {
    for (const std::string& path : {name, std::string(GLIA_CUDA_LIBRARY_DIR) + "/" + name}) {
      if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
      const char* why = dlerror();
      tried += cat("\n  ", path, ": ", why != nullptr ? why : "not found");
    }
  }
  throw Error(cat("cuda: cannot load ", what, " (", hint, "); tried:", tried));
}

template <class F>
void bind(void* handle, const char* library, const char* name, F& function) {
  function = reinterpret_cast<F>(dlsym(handle, name));
  check(function != nullptr, "cuda: ", library, " has no ", name, " (too old a version?)");
}

}  // namespace

#define GLIA_CUDA_BIND(name) bind(handle, library, #name, made.name);

const DriverLibrary& driver_library() {
  static const DriverLibrary lib = [] {
    const char* library = "the CUDA driver";
    void* handle = open_library(library, {"libcuda.so.1"}, "it comes with the NVIDIA GPU driver");
    DriverLibrary made;
    GLIA_DRIVER_FUNCTIONS(GLIA_CUDA_BIND)
    return made;
  }();
  return lib;
}

const NvrtcLibrary& nvrtc() {
  static const NvrtcLibrary lib = [] {
    const char* library = "NVRTC";
    void* handle = open_library(library, {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"});
    NvrtcLibrary made;
    GLIA_NVRTC_FUNCTIONS(GLIA_CUDA_BIND)
    return made;
  }();
  return lib;
}

const CublasLtLibrary& cublaslt() {
  static const CublasLtLibrary lib = [] {
    const char* library = "cuBLASLt";
    void* handle =
        open_library(library, {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"});
    CublasLtLibrary made;
    GLIA_CUBLASLT_FUNCTIONS(GLIA_CUDA_BIND)
    return made;
  }();
  return lib;
}

const CudnnLibrary& cudnn() {
  static const CudnnLibrary lib = [] {
    const char* library = "cuDNN";
    void* handle = open_library(library, {"libcudnn.so.9", "libcudnn.so"});
    CudnnLibrary made;
    GLIA_CUDNN_FUNCTIONS(GLIA_CUDA_BIND)
    return made;
  }();
  return lib;
}

#ifdef GLIA_HAVE_NCCL
const NcclLibrary& nccl() {
  static const NcclLibrary lib = [] {
    const char* library = "NCCL";
    void* handle = open_library(library, {"libnccl.so.2", "libnccl.so"},
                                "it comes with the CUDA toolkit or the libnccl2 package");
    NcclLibrary made;
    GLIA_NCCL_FUNCTIONS(GLIA_CUDA_BIND)
    return made;
  }();
  return lib;
}
#endif

#undef GLIA_CUDA_BIND

}  // namespace glia::detail::cuda
