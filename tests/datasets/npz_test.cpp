// read_npz: archives written by numpy (savez and savez_compressed, read back value for
// value), and a stored archive built here byte by byte, then damaged: flipped data (CRC),
// cut short, a member that is not .npy, a file that is no zip.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "datasets/file_util.hpp"
#include "expect_error.hpp"
#include "glia/datasets/npy.hpp"

namespace glia {
namespace {

using testing::expect_error_parts;
using testing::TempDir;

TEST(Npz, ReadsNumpysStoredAndCompressedArchives) {
  if (!testing::have_numpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
  TempDir dir;
  const std::string script = dir.file("write.py");
  std::ofstream(script) << "import numpy as np, sys\n"
                           "d = sys.argv[1]\n"
                           "a = dict(x=(np.arange(12, dtype=np.float32).reshape(3, 4) - 5) / 2,\n"
                           "         labels=np.array([3, 1, 4], dtype=np.int64),\n"
                           "         mask=np.array([[True, False], [False, True]]),\n"
                           "         big=np.arange(100000, dtype=np.float64) % 7)\n"
                           "np.savez(d + '/stored.npz', **a)\n"
                           "np.savez_compressed(d + '/packed.npz', **a)\n";
  ASSERT_EQ(std::system(("/usr/bin/python3 " + script + " " + dir.path()).c_str()), 0);
  std::vector<float> x;
  for (int i = 0; i < 12; ++i) x.push_back(static_cast<float>(i - 5) / 2);
  std::vector<double> big;
  for (int i = 0; i < 100000; ++i) big.push_back(i % 7);
  for (const char* file : {"stored.npz", "packed.npz"}) {
    SCOPED_TRACE(file);
    std::map<std::string, Tensor> a = read_npz(dir.file(file));
    ASSERT_EQ(a.size(), 4u);
    EXPECT_TRUE(equal(a.at("x"), Tensor::from<float>(x, Shape{3, 4})));
    EXPECT_TRUE(equal(a.at("labels"), Tensor::from<std::int64_t>({3, 1, 4})));
    EXPECT_TRUE(equal(a.at("mask"), Tensor::from<bool>({true, false, false, true}, Shape{2, 2})));
    EXPECT_TRUE(equal(a.at("big"), Tensor::from<double>(big)));
  }
}

// A zip of stored members, as numpy.savez writes one, built here.
std::string stored_zip(const std::vector<std::pair<std::string, std::vector<std::byte>>>& members) {
  std::vector<testing::ZipMember> zip;
  for (const auto& [name, data] : members) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(data.data());
    zip.push_back(testing::stored_member(name, testing::Bytes(p, p + data.size())));
  }
  const testing::Bytes bytes = testing::zip_archive(zip);
  return std::string(bytes.begin(), bytes.end());
}

TEST(Npz, DamagedArchivesAreErrorsNamingTheMember) {
  TempDir dir;
  Tensor w = Tensor::from<float>({1.5f, -2, 3}, Shape{3, 1});
  const std::string good = stored_zip({{"w.npy", encode_npy(w)}});
  std::ofstream(dir.file("good.npz"), std::ios::binary) << good;
  std::map<std::string, Tensor> a = read_npz(dir.file("good.npz"));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_TRUE(equal(a.at("w"), w));

  std::string flipped = good;
  flipped[good.find("w.npy") + 5 + 100] ^= 0x10;  // inside the array's data
  std::ofstream(dir.file("flipped.npz"), std::ios::binary) << flipped;
  expect_error_parts([&] { read_npz(dir.file("flipped.npz")); },
                     {dir.file("flipped.npz"), "member 'w.npy'", "CRC mismatch"});
  std::ofstream(dir.file("cut.npz"), std::ios::binary) << good.substr(0, good.size() / 2);
  expect_error_parts([&] { read_npz(dir.file("cut.npz")); }, {dir.file("cut.npz"), "zip"});
  std::ofstream(dir.file("text.npz"), std::ios::binary)
      << stored_zip({{"notes.txt", encode_npy(w)}});
  expect_error_parts([&] { read_npz(dir.file("text.npz")); },
                     {"member 'notes.txt'", "not a .npy file"});
  std::ofstream(dir.file("plain.npz"), std::ios::binary) << "just some text, no archive";
  expect_error_parts([&] { read_npz(dir.file("plain.npz")); }, {"not a zip archive"});
  expect_error_parts([&] { read_npz(dir.file("none.npz")); }, {"none.npz", "no such file"});
}

}  // namespace
}  // namespace glia
