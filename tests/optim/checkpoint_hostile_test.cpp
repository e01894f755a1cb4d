// Checkpoint datasets whose declared shapes are hostile: far more data than the file holds,
// a product of dimensions beyond 64 bits, a shape that disagrees with the model, and
// empty datasets (a zero dimension), which must load. Each bad one is a glia::Error naming
// the file and the dataset, raised before any large allocation. The datasets are added to
// a saved checkpoint with the HDF5 API, as a damaged or hand-made file would hold them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>

#include "checkpoint_test_util.hpp"
#include "expect_error.hpp"

namespace glia {
namespace {

using testing::expect_error_parts;
using testing::TempDir;

// Adds an f32 dataset `name` of `dims` (no data written: chunked storage allocates chunks
// only when written, so the file stays small) with glia's dtype attribute.
void add_f32_dataset(const std::string& path, const std::string& name,
                     const std::vector<hsize_t>& dims) {
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0) << path;  // the other calls go on after a failure, to close the file
  if (H5Lexists(file, name.c_str(), H5P_DEFAULT) > 0) H5Ldelete(file, name.c_str(), H5P_DEFAULT);
  const std::vector<hsize_t> unlimited(dims.size(), H5S_UNLIMITED), chunk(dims.size(), 1);
  hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), unlimited.data());
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, static_cast<int>(dims.size()), chunk.data());
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t ds = H5Dcreate2(file, name.c_str(), H5T_IEEE_F32LE, space, lcpl, dcpl, H5P_DEFAULT);
  H5Pclose(lcpl);
  EXPECT_GE(ds, 0) << name;
  hid_t text = H5Tcopy(H5T_C_S1);
  H5Tset_size(text, 3);
  hid_t scalar = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(ds, "dtype", text, scalar, H5P_DEFAULT, H5P_DEFAULT);
  EXPECT_GE(H5Awrite(attr, text, "f32"), 0);
  H5Aclose(attr), H5Sclose(scalar), H5Tclose(text);
  H5Dclose(ds), H5Pclose(dcpl), H5Sclose(space);
  ASSERT_GE(H5Fclose(file), 0);
}

// `load` must fail naming every part, having allocated under 1 MiB of tensor storage.
void expect_refused(const std::function<void()>& load, const std::vector<std::string>& parts) {
  const AllocationStats before = allocation_stats();
  expect_error_parts(load, parts);
  EXPECT_LT(allocation_stats().bytes - before.bytes, 1 << 20) << parts.at(1);
}

class CheckpointHostile : public ::testing::Test {
 protected:
  void SetUp() override {
    save_checkpoint(path_, model_, TrainState{.model = build(model_).init(0)});
  }
  TempDir dir_;
  std::string path_ = dir_.file("m.h5");
  Model model_ = testing::small_classifier();
};

TEST_F(CheckpointHostile, ShapesBeyondTheFileAreRefusedBeforeAllocating) {
  // 2^40 floats (4 TiB) declared in a file of a few KB.
  add_f32_dataset(path_, "/params/dense_0/huge", {hsize_t{1} << 40});
  expect_refused([&] { load_checkpoint(path_); },
                 {path_,
                  "dataset /params/dense_0/huge declares f32[1099511627776], more data "
                  "than the file's"});
  expect_refused([&] { load_weights(path_, model_); }, {path_, "/params/dense_0/huge"});
}

TEST_F(CheckpointHostile, ShapesWhoseProductOverflowsAreRefused) {
  // 2^40 x 2^40 x 4 bytes = 2^82: wraps in 64-bit arithmetic.
  add_f32_dataset(path_, "/state/dense_0/wrap", {hsize_t{1} << 40, hsize_t{1} << 40});
  expect_refused([&] { load_checkpoint(path_); },
                 {path_, "dataset /state/dense_0/wrap declares f32[1099511627776][1099511627776]"});
  // Empty, but its other dimensions could not be indexed either.
  add_f32_dataset(path_, "/state/dense_0/wrap", {0, hsize_t{1} << 40, hsize_t{1} << 40});
  expect_refused([&] { load_checkpoint(path_); },
                 {path_,
                  "dataset /state/dense_0/wrap declares f32[0][1099511627776][1099511627776]"
                  ", whose non-zero dimensions multiply past 2^63 bytes"});
}

TEST_F(CheckpointHostile, AShapeThatDisagreesWithTheModelIsNamed) {
  add_f32_dataset(path_, "/params/dense_0/kernel", {6, 9});  // the model's is [6][8]
  Checkpoint c = load_checkpoint(path_);
  EXPECT_EQ(c.loop.train.model.params.at("dense_0").at("kernel").shape(), (Shape{6, 9}));
  expect_error_parts([&] { check_checkpoint(c, model_); },
                     {path_, "dense_0/kernel", "f32[6][9]", "f32[6][8]"});
  expect_error_parts([&] { load_weights(path_, model_); },
                     {path_, "dense_0/kernel", "f32[6][9]", "f32[6][8]"});
}

TEST_F(CheckpointHostile, EmptyDatasetsLoadWhateverTheirOtherDimensions) {
  // Dimensions far beyond the file's size are fine next to a zero: there is no data.
  LoopState s;
  s.train.model.params["a"]["w"] = Tensor(DType::f32, Shape{0, 1000000});
  s.train.model.params["a"]["v"] = Tensor(DType::f64, Shape{1000000, 0, 1000});
  s.train.model.state["b"]["u"] = Tensor(DType::u8, Shape{0});
  save_checkpoint(path_, model_, s);
  Checkpoint c = load_checkpoint(path_);
  EXPECT_EQ(c.loop.train.model.params.at("a").at("w").type(),
            (TensorType{DType::f32, Shape{0, 1000000}}));
  EXPECT_EQ(c.loop.train.model.params.at("a").at("v").type(),
            (TensorType{DType::f64, Shape{1000000, 0, 1000}}));
  EXPECT_EQ(c.loop.train.model.state.at("b").at("u").type(), (TensorType{DType::u8, Shape{0}}));
  // Hand-made: an empty dataset declared with a dimension of 2^40.
  add_f32_dataset(path_, "/state/b/x", {hsize_t{1} << 40, 0});
  EXPECT_EQ(load_checkpoint(path_).loop.train.model.state.at("b").at("x").shape(),
            (Shape{std::int64_t{1} << 40, 0}));
}

}  // namespace
}  // namespace glia
