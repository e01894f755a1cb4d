// The training loop's progress output: periodic lines without a terminal, and one
// redrawn bar on a terminal.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "optim/loop_test_util.hpp"

namespace glia {
namespace {

using namespace loop_testing;  // NOLINT
using ::testing::HasSubstr;

TEST(Loop, ProgressLinesWhenNotATerminal) {
  std::ostringstream out;
  Loop loop = trainer(
      linear_model(), mse, local_sgd(0.05),
      {.metrics = {{"target", mean_target}}, .output = &out, .progress = ProgressMode::lines});
  LoopState s = loop.run(make_batches(20), {.epochs = 2});
  std::vector<std::string> lines = lines_of(out.str());
  // Every 10% of the epoch (batches 2, 4, ..., 18), then the epoch's line, per epoch.
  ASSERT_EQ(lines.size(), 20u) << out.str();
  std::regex periodic(R"(Epoch (\d)/2 (\d+)/20 loss \S+ target \S+ \d+ samples/s ETA \d\d:\d\d)");
  for (int e = 0; e < 2; ++e) {
    for (int i = 0; i < 9; ++i) {
      const std::string& l = lines[static_cast<std::size_t>(e * 10 + i)];
      std::smatch m;
      ASSERT_TRUE(std::regex_match(l, m, periodic)) << l;
      EXPECT_EQ(m[1], std::to_string(e + 1));
      EXPECT_EQ(m[2], std::to_string(2 * (i + 1)));
    }
    std::string end = lines[static_cast<std::size_t>(e * 10 + 9)];
    std::string head = "Epoch " + std::to_string(e + 1) + "/2 20/20 loss " +
                       g4(s.history[e].at("loss")) + " target " + g4(s.history[e].at("target"));
    EXPECT_EQ(end.substr(0, head.size()), head) << end;
    EXPECT_TRUE(std::regex_match(end.substr(head.size()), std::regex(R"( \d+ samples/s \d+\.\ds)")))
        << end;
  }
  EXPECT_EQ(out.str().find('\r'), std::string::npos);
}

TEST(Loop, ProgressBarOnATerminal) {
  std::ostringstream out;
  Loop loop = trainer(linear_model(), mse, local_sgd(0.05),
                      {.output = &out, .progress = ProgressMode::bar});
  loop.run(make_batches(3), {.epochs = 1});
  std::string text = out.str();
  EXPECT_EQ(text.substr(0, 16), "\rEpoch 1/1 [====");  // batch 1 of 3: 10 of 30 columns
  EXPECT_THAT(text, HasSubstr("\rEpoch 1/1 [" + std::string(30, '=') + "] 3/3 loss "));
  EXPECT_THAT(text, HasSubstr("ETA 00:00"));
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(lines_of(text).size(), 1u);  // one line, redrawn
}

}  // namespace
}  // namespace glia
