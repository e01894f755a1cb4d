// Fuzz harness: read_npz on any bytes in a file (the zip directory, zip64 fields, stored
// and deflated members, CRCs, then each member through decode_npy). A glia::Error is the
// expected answer to bad input; anything else is a bug.
#include "fuzz_input.hpp"
#include "glia/datasets/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    glia::read_npz(glia::fuzz::scratch_file(data, size, "x.npz"));
  } catch (const glia::Error&) {
  }
  return 0;
}
