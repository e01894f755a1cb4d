// An environment variable set for a scope and restored after it (tests that point a
// cache or a compiler somewhere else).
//   glia::testing::ScopedEnv cache("GLIA_CPU_CACHE", dir.string());
#pragma once

#include <cstdlib>
#include <string>

namespace glia::testing {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_)
      ::setenv(name_, old_.c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

}  // namespace glia::testing
