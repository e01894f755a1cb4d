#include "src/user_cache.hpp"

#include <cstdlib>

namespace glia::detail {

std::string user_cache_dir(const char* variable, const char* sub) {
  auto set = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? v : nullptr;
  };
  if (const char* dir = set(variable)) return dir;
  if (const char* xdg = set("XDG_CACHE_HOME")) return std::string(xdg) + "/glia/" + sub;
  if (const char* home = set("HOME")) return std::string(home) + "/.cache/glia/" + sub;
  return "";
}

}  // namespace glia::detail
