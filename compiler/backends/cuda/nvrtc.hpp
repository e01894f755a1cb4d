// Internal to the `cuda` backend: NVRTC compiles generated kernel programs to CUBIN for
// one GPU architecture, with two caches — in the process, and on disk, so that a second
// process does not compile again. Needs no GPU.
#pragma once

#include <string>

namespace glia::detail::cuda {

// Where a compiled module came from.
enum class CacheHit { none, memory, disk };

// The CUBIN of `source` for `arch` ("sm_90"); glia::Error with NVRTC's log when it does
// not compile. The disk cache (cache_dir()) is keyed by NVRTC's version, the arch, the
// options and the source.
std::string compile_cubin(const std::string& source, const std::string& arch,
                          CacheHit* hit = nullptr);

// The disk cache's folder: $GLIA_CUDA_CACHE, else $XDG_CACHE_HOME/glia/cuda, else
// $HOME/.cache/glia/cuda; empty (no disk cache) when none is set, or GLIA_CUDA_CACHE is
// "off".
std::string cache_dir();

}  // namespace glia::detail::cuda
