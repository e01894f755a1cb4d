// The HDF5 layer of checkpoints: identifiers, files, types and writing (hdf5_read.cpp
// reads). Every call's result is checked; HDF5's own error printing is off and its
// innermost message joins ours, so a truncated or corrupt file becomes a glia::Error
// naming the file and object. Files use the v1.10 format, whose metadata carries
// checksums; arrays are chunked with a Fletcher-32 checksum and scalars sit in their
// (checksummed) object header, so damaged bytes are reported rather than read as numbers.
#include "hdf5_file.hpp"

#include <algorithm>
#include <filesystem>

#include "glia/core/hash.hpp"

namespace glia::h5 {

namespace {

// Dataset chunks stay below this size (HDF5 limits a chunk to 4 GiB).
constexpr std::uint64_t kMaxChunkBytes = std::uint64_t{64} << 20;

herr_t collect_message(unsigned, const H5E_error2_t* e, void* data) {
  auto* out = static_cast<std::vector<std::string>*>(data);
  if (e->desc != nullptr && e->desc[0] != '\0') out->emplace_back(e->desc);
  return 0;
}

// IEEE binary16, little-endian, defined as h5py defines it so numpy reads float16.
Id half_type() {
  Id t(H5Tcopy(H5T_IEEE_F32LE), H5Tclose);
  if (!t.valid() || H5Tset_fields(t.get(), 15, 10, 5, 0, 10) < 0 || H5Tset_size(t.get(), 2) < 0 ||
      H5Tset_ebias(t.get(), 15) < 0)
    throw Error("HDF5: cannot define the 16-bit float type: " + detail::hdf5_reason());
  return t;
}

}  // namespace

namespace detail {

std::string hdf5_reason() {
  std::vector<std::string> messages;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_message, &messages);
  H5Eclear2(H5E_DEFAULT);
  return messages.empty() ? std::string() : messages.back();
}

Id string_type(std::size_t length) {
  Id t(H5Tcopy(H5T_C_S1), H5Tclose);
  if (!t.valid() || H5Tset_size(t.get(), std::max<std::size_t>(length, 1)) < 0 ||
      H5Tset_strpad(t.get(), H5T_STR_NULLPAD) < 0 || H5Tset_cset(t.get(), H5T_CSET_UTF8) < 0)
    throw Error("HDF5: cannot define the string type: " + hdf5_reason());
  return t;
}

std::uint64_t fnv1a(const std::string& text) {
  return glia::fnv1a(kFnv1aBasis, text.data(), text.size());
}

TypePair types_of(DType t) {
  switch (t) {
    case DType::boolean:
    case DType::u8:
      return {H5T_STD_U8LE, H5T_NATIVE_UINT8, {}};
    case DType::u32:
      return {H5T_STD_U32LE, H5T_NATIVE_UINT32, {}};
    case DType::i32:
      return {H5T_STD_I32LE, H5T_NATIVE_INT32, {}};
    case DType::i64:
      return {H5T_STD_I64LE, H5T_NATIVE_INT64, {}};
    case DType::bf16:
      return {H5T_STD_U16LE, H5T_NATIVE_UINT16, {}};
    case DType::f16: {
      Id h = half_type();
      hid_t id = h.get();
      return {id, id, std::move(h)};
    }
    case DType::f32:
      return {H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {}};
    case DType::f64:
      return {H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {}};
  }
  throw Error("HDF5: no type for this dtype");
}

}  // namespace detail

using namespace detail;

std::unique_lock<std::recursive_mutex> lock() {
  static std::recursive_mutex mutex;
  std::unique_lock<std::recursive_mutex> guard(mutex);
  // Per thread in thread-safe builds of HDF5, global otherwise: set it every time.
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  return guard;
}

Id& Id::operator=(Id&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = other.id_;
    close_ = other.close_;
    other.id_ = -1;
  }
  return *this;
}

void Id::reset() {
  if (id_ >= 0 && close_ != nullptr) close_(id_);
  id_ = -1;
}

// ---- Files -----------------------------------------------------------------------------------

void File::fail(const std::string& what) const {
  std::string reason = hdf5_reason();
  throw Error(cat(path_, ": ", what, reason.empty() ? "" : " (HDF5: " + reason + ")"));
}

namespace {

// File access without HDF5's file locks: each save writes its own temporary file and
// readers only see finished files, while locks fail on some network file systems.
Id file_access() {
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
#if H5_VERSION_GE(1, 10, 7)
  if (fapl.valid()) H5Pset_file_locking(fapl.get(), false, true);
#endif
  return fapl;
}

}  // namespace

File File::create(const std::string& path) {
  Id fapl = file_access();
  // The v1.10 format: checksums on the superblock, object headers and chunk indexes.
  if (!fapl.valid() || H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V110, H5F_LIBVER_V110) < 0)
    throw Error(cat(path, ": cannot set up HDF5 file access: ", hdf5_reason()));
  Id file(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()), H5Fclose);
  if (!file.valid()) throw Error(cat(path, ": cannot create the file (HDF5: ", hdf5_reason(), ")"));
  return File(path, std::move(file), 0);
}

File File::open(const std::string& path) {
  std::error_code ec;
  check(std::filesystem::exists(path, ec), path, ": no such file");
  check(std::filesystem::is_regular_file(path, ec), path, ": not a regular file");
  std::uintmax_t size = std::filesystem::file_size(path, ec);
  check(!ec, path, ": cannot read its size: ", ec.message());
  htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 <= 0) {
    std::string reason = hdf5_reason();
    throw Error(cat(path, ": not an HDF5 file (", size, " bytes",
                    reason.empty() ? "" : "; HDF5: " + reason, ")"));
  }
  Id fapl = file_access();
  Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
  if (!file.valid())
    throw Error(cat(path, ": cannot open the HDF5 file, it is truncated or corrupt (HDF5: ",
                    hdf5_reason(), ")"));
  return File(path, std::move(file), size);
}

void File::close() {
  if (!file_.valid()) return;
  if (H5Fflush(file_.get(), H5F_SCOPE_GLOBAL) < 0) fail("cannot flush the file");
  hid_t id = file_.release();  // not closed again by the destructor when closing fails
  if (H5Fclose(id) < 0) fail("cannot close the file");
}

Id File::open_object(const std::string& path) const {
  Id obj(H5Oopen(file_.get(), path.c_str(), H5P_DEFAULT), H5Oclose);
  if (!obj.valid()) fail(cat("cannot open ", path));
  return obj;
}

Id File::open_attr(const std::string& object, const std::string& name) const {
  Id a(H5Aopen_by_name(file_.get(), object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
       H5Aclose);
  if (!a.valid()) fail(cat("cannot open attribute '", name, "' of ", object));
  return a;
}

// ---- Writing ---------------------------------------------------------------------------------

void File::write_group(const std::string& path) {
  Id lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  if (!lcpl.valid() || H5Pset_create_intermediate_group(lcpl.get(), 1) < 0)
    fail("cannot set up link creation");
  Id g(H5Gcreate2(file_.get(), path.c_str(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  if (!g.valid()) fail(cat("cannot create group ", path));
}

void File::write_tensor(const std::string& path, const Tensor& t) {
  check(t.defined(), path_, ": cannot write ", path, ": the tensor is undefined");
  TypePair types = types_of(t.dtype());
  int rank = t.rank();
  std::vector<hsize_t> dims(t.shape().dims().begin(), t.shape().dims().end());
  Id space(rank == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(rank, dims.data(), nullptr),
           H5Sclose);
  Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  Id lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  if (!space.valid() || !dcpl.valid() || !lcpl.valid() ||
      H5Pset_create_intermediate_group(lcpl.get(), 1) < 0 ||
      H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER) < 0)
    fail(cat("cannot set up dataset ", path));
  if (rank == 0 || t.numel() == 0) {
    // Compact: the few bytes live in the checksummed object header.
    if (H5Pset_layout(dcpl.get(), H5D_COMPACT) < 0) fail(cat("cannot set up dataset ", path));
  } else {
    // One chunk (split along the largest dimension while too big) with a checksum.
    std::vector<hsize_t> chunk = dims;
    auto bytes = [&] {
      std::uint64_t n = static_cast<std::uint64_t>(dtype_size(t.dtype()));
      for (hsize_t d : chunk) n *= d;
      return n;
    };
    while (bytes() > kMaxChunkBytes) {
      auto largest = std::max_element(chunk.begin(), chunk.end());
      *largest = (*largest + 1) / 2;
    }
    if (H5Pset_chunk(dcpl.get(), rank, chunk.data()) < 0 || H5Pset_fletcher32(dcpl.get()) < 0)
      fail(cat("cannot set up the chunks of dataset ", path));
  }
  Id ds(H5Dcreate2(file_.get(), path.c_str(), types.file, space.get(), lcpl.get(), dcpl.get(),
                   H5P_DEFAULT),
        H5Dclose);
  if (!ds.valid()) fail(cat("cannot create dataset ", path));
  // Parameters and optimizer state may live on a device between steps: write a host copy.
  const Tensor host = t.to_host();
  if (t.numel() > 0 &&
      H5Dwrite(ds.get(), types.memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, host.raw_data()) < 0)
    fail(cat("cannot write dataset ", path));
  write_attr(path, "dtype", std::string(dtype_name(t.dtype())));
}

void File::write_string(const std::string& path, const std::string& text) {
  Id type = string_type(text.size());
  Id space(H5Screate(H5S_SCALAR), H5Sclose);
  Id lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  if (!space.valid() || !lcpl.valid() || H5Pset_create_intermediate_group(lcpl.get(), 1) < 0)
    fail(cat("cannot set up dataset ", path));
  Id ds(H5Dcreate2(file_.get(), path.c_str(), type.get(), space.get(), lcpl.get(), H5P_DEFAULT,
                   H5P_DEFAULT),
        H5Dclose);
  std::string padded = text.empty() ? std::string(1, '\0') : text;
  if (!ds.valid() ||
      H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, padded.data()) < 0)
    fail(cat("cannot write dataset ", path));
  write_attr(path, "fnv1a64", fnv1a(text));
}

void File::write_number(const std::string& object, const std::string& name, hid_t mem_type,
                        hid_t file_type, const void* value) {
  Id obj = open_object(object);
  Id space(H5Screate(H5S_SCALAR), H5Sclose);
  Id a(H5Acreate2(obj.get(), name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
       H5Aclose);
  if (!a.valid() || H5Awrite(a.get(), mem_type, value) < 0)
    fail(cat("cannot write attribute '", name, "' of ", object));
}

void File::write_attr(const std::string& object, const std::string& name, std::int64_t value) {
  write_number(object, name, H5T_NATIVE_INT64, H5T_STD_I64LE, &value);
}
void File::write_attr(const std::string& object, const std::string& name, std::uint64_t value) {
  write_number(object, name, H5T_NATIVE_UINT64, H5T_STD_U64LE, &value);
}
void File::write_attr(const std::string& object, const std::string& name, double value) {
  write_number(object, name, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, &value);
}
void File::write_attr(const std::string& object, const std::string& name,
                      const std::string& value) {
  Id type = string_type(value.size());
  std::string padded = value.empty() ? std::string(1, '\0') : value;
  write_number(object, name, type.get(), type.get(), padded.data());
}

}  // namespace glia::h5
