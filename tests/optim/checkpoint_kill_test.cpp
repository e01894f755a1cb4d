// A checkpoint survives its writer being killed: a child process saves large checkpoints
// over one path in a loop and is killed with SIGKILL at a random moment after its first
// complete save; the file must then load and be exactly one of the complete saves.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <thread>

#include "checkpoint_test_util.hpp"

namespace glia {
namespace {

// Save number k: 8 MiB of parameters holding k and -k, with step k.
TrainState numbered_state(std::int64_t k) {
  TrainState s;
  s.model.params["big"]["w"] = Tensor::full({1024, 1024}, static_cast<double>(k));
  s.model.params["big"]["v"] = Tensor::full({1024, 1024}, static_cast<double>(-k));
  s.optimizer["0/count"] = Tensor::scalar(static_cast<double>(k), DType::i64);
  s.step = k;
  return s;
}

// The child: saves 1, 2, 3, ... and reports the first complete save on the pipe.
[[noreturn]] void write_forever(const std::string& path, int report_fd) {
  Model model = testing::small_classifier();
  for (std::int64_t k = 1; k < 100000; ++k) {
    try {
      save_checkpoint(path, model, numbered_state(k));
    } catch (...) {
      _exit(2);
    }
    if (k == 1) {
      char one = 1;
      if (::write(report_fd, &one, 1) != 1) _exit(3);
    }
  }
  _exit(0);
}

TEST(CheckpointKill, TheFileIsAlwaysOneCompleteSave) {
  std::mt19937 random(12345);
  for (int round = 0; round < 5; ++round) {
    testing::TempDir dir;
    std::string path = dir.file("m.h5");
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(fds[0]);
      write_forever(path, fds[1]);
    }
    ::close(fds[1]);
    char byte = 0;
    ASSERT_EQ(::read(fds[0], &byte, 1), 1) << "the child never finished its first save";
    ::close(fds[0]);
    std::this_thread::sleep_for(std::chrono::microseconds(random() % 300000));
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the child ended on its own with status " << status;

    Checkpoint c = load_checkpoint(path);
    std::int64_t k = c.loop.train.step;
    ASSERT_GE(k, 1);
    testing::expect_same(c.loop.train.model.params, numbered_state(k).model.params, "params");
    testing::expect_same(c.loop.train.optimizer, numbered_state(k).optimizer);
  }
}

}  // namespace
}  // namespace glia
