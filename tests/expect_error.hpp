// One way to assert on a glia::Error in the test suites: the call must throw a
// glia::Error whose message contains the given part (each of the given parts).
//   glia::testing::expect_error([] { glia::optimizers::sgd(-1); }, "learning_rate");
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "glia/core/error.hpp"

namespace glia::testing {

inline void expect_error_parts(const std::function<void()>& fn,
                               const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected glia::Error containing '" << parts.at(0) << "'";
  } catch (const Error& e) {
    for (const std::string& p : parts) EXPECT_THAT(e.what(), ::testing::HasSubstr(p));
  }
}

inline void expect_error(const std::function<void()>& fn, const std::string& part) {
  expect_error_parts(fn, {part});
}

}  // namespace glia::testing
