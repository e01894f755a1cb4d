// Internal: where glia keeps compiled code between processes (the cuda backend's CUBINs,
// the cpu backend's compiled fused kernels).
#pragma once

#include <string>

namespace glia::detail {

// $`variable` where it is set (as it is: a caller may give a value such as "off" its own
// meaning), else $XDG_CACHE_HOME/glia/`sub`, else $HOME/.cache/glia/`sub`; empty where
// none of them is set.
std::string user_cache_dir(const char* variable, const char* sub);

}  // namespace glia::detail
