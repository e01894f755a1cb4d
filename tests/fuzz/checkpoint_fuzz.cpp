// Fuzz harness: load_checkpoint on any bytes in a file (HDF5 through the system libhdf5,
// then every object glia reads: attributes, string datasets with their checksums, tensors
// against their dtype attributes and the file size, the loop state). Where the file loads,
// its architecture is rebuilt and the weights are read again against it, as `glia eval`
// and `glia predict` do. A glia::Error is the expected answer to bad input.
//
// After each input no HDF5 object (file, group, dataset, attribute, type, space) may be
// left open: a handle glia forgot on an error path aborts here. That check is what makes
// tests/sanitize/lsan.supp's libhdf5 entry safe: it hides only blocks libhdf5 loses by itself.
#include <hdf5.h>

#include <cstdio>
#include <cstdlib>

#include "fuzz_input.hpp"
#include "glia/layers/serialize.hpp"
#include "glia/optim/checkpoint.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = glia::fuzz::scratch_file(data, size, "x.h5");
  try {
    glia::Checkpoint c = glia::load_checkpoint(path);
    glia::Model model = c.model();
    glia::check_checkpoint(c, model);
    glia::load_weights(path, model);
  } catch (const glia::Error&) {
  }
  const ssize_t open = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  if (open != 0) {
    std::fprintf(stderr, "checkpoint_fuzz: %zd HDF5 objects left open after the input\n", open);
    std::abort();
  }
  return 0;
}
