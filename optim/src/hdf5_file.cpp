// The HDF5 layer of checkpoints. Every call's result is checked; HDF5's own error
// printing is off and its innermost message joins ours, so a truncated or corrupt file
// becomes a glia::Error naming the file and object. Files use the v1.10 format, whose
// metadata carries checksums; arrays are chunked with a Fletcher-32 checksum and scalars
// sit in their (checksummed) object header, so damaged bytes are reported rather than
// read as numbers.
#include "hdf5_file.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>

namespace glia::h5 {

namespace {

// Dataset chunks stay below this size (HDF5 limits a chunk to 4 GiB).
constexpr std::uint64_t kMaxChunkBytes = std::uint64_t{64} << 20;
constexpr int kMaxRank = 32;
constexpr int kMaxDepth = 32;

herr_t collect_message(unsigned, const H5E_error2_t* e, void* data) {
  auto* out = static_cast<std::vector<std::string>*>(data);
  if (e->desc != nullptr && e->desc[0] != '\0') out->emplace_back(e->desc);
  return 0;
}

// The innermost message on HDF5's error stack (the most specific), then clears it.
std::string hdf5_reason() {
  std::vector<std::string> messages;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_message, &messages);
  H5Eclear2(H5E_DEFAULT);
  return messages.empty() ? std::string() : messages.back();
}

// IEEE binary16, little-endian, defined as h5py defines it so numpy reads float16.
Id half_type() {
  Id t(H5Tcopy(H5T_IEEE_F32LE), H5Tclose);
  if (!t.valid() || H5Tset_fields(t.get(), 15, 10, 5, 0, 10) < 0 || H5Tset_size(t.get(), 2) < 0 ||
      H5Tset_ebias(t.get(), 15) < 0)
    throw Error("HDF5: cannot define the 16-bit float type: " + hdf5_reason());
  return t;
}

// Fixed-length strings: an attribute's value then lives in its object header, which
// carries a checksum (variable-length strings would sit in the unchecked global heap).
Id string_type(std::size_t length) {
  Id t(H5Tcopy(H5T_C_S1), H5Tclose);
  if (!t.valid() || H5Tset_size(t.get(), std::max<std::size_t>(length, 1)) < 0 ||
      H5Tset_strpad(t.get(), H5T_STR_NULLPAD) < 0 || H5Tset_cset(t.get(), H5T_CSET_UTF8) < 0)
    throw Error("HDF5: cannot define the string type: " + hdf5_reason());
  return t;
}

// FNV-1a: string datasets are raw data without HDF5 checksums, so they carry this one.
std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  return h;
}

// The file and memory types of a dtype. bool is stored as u8 and bf16 as raw u16 (HDF5 and
// numpy have no bfloat16); the dataset's "dtype" attribute names the glia dtype.
struct TypePair {
  hid_t file = -1, memory = -1;
  Id owned;  // the half type, when defined
};
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

// Whether a stored HDF5 type holds values of dtype `t` (class, size and sign).
bool type_fits(hid_t type, DType t) {
  H5T_class_t cls = H5Tget_class(type);
  std::size_t size = H5Tget_size(type);
  if (size != static_cast<std::size_t>(dtype_size(t))) return false;
  if (t == DType::f16 || t == DType::f32 || t == DType::f64) return cls == H5T_FLOAT;
  if (cls != H5T_INTEGER) return false;
  H5T_sign_t sign = H5Tget_sign(type);
  bool is_signed_int = t == DType::i32 || t == DType::i64;
  return sign == (is_signed_int ? H5T_SGN_2 : H5T_SGN_NONE);
}

std::string type_text(hid_t type) {
  H5T_class_t cls = H5Tget_class(type);
  const char* name = cls == H5T_INTEGER  ? "integer"
                     : cls == H5T_FLOAT  ? "float"
                     : cls == H5T_STRING ? "string"
                                         : "other";
  return cat(H5Tget_size(type), "-byte ", name);
}

std::string parent_of(const std::string& path) {
  std::size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

}  // namespace

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
  if (t.numel() > 0 &&
      H5Dwrite(ds.get(), types.memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.raw_data()) < 0)
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

// ---- Reading ---------------------------------------------------------------------------------

bool File::exists(const std::string& path) const {
  if (path == "/") return true;
  if (!exists(parent_of(path))) return false;
  htri_t r = H5Lexists(file_.get(), path.c_str(), H5P_DEFAULT);
  H5Eclear2(H5E_DEFAULT);
  return r > 0;
}

bool File::is_group(const std::string& path) const {
  if (!exists(path)) return false;
  Id obj = open_object(path);
  return H5Iget_type(obj.get()) == H5I_GROUP;
}

namespace {

herr_t collect_link(hid_t, const char* name, const H5L_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}

}  // namespace

std::vector<std::string> File::datasets_under(const std::string& group) const {
  std::vector<std::string> out;
  std::function<void(const std::string&, const std::string&, int)> walk =
      [&](const std::string& abs, const std::string& rel, int depth) {
        if (depth > kMaxDepth) fail(cat("groups nest deeper than ", kMaxDepth, " under ", group));
        Id g = open_object(abs);
        if (H5Iget_type(g.get()) != H5I_GROUP) fail(cat(abs, " is not a group"));
        std::vector<std::string> names;
        if (H5Literate(g.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_link, &names) < 0)
          fail(cat("cannot list group ", abs));
        for (const std::string& n : names) {
          std::string child = abs == "/" ? "/" + n : abs + "/" + n;
          std::string child_rel = rel.empty() ? n : rel + "/" + n;
          Id obj = open_object(child);
          H5I_type_t type = H5Iget_type(obj.get());
          if (type == H5I_GROUP)
            walk(child, child_rel, depth + 1);
          else if (type == H5I_DATASET)
            out.push_back(child_rel);
          else
            fail(cat(child, " is neither a group nor a dataset"));
        }
      };
  walk(group, "", 0);
  std::sort(out.begin(), out.end());
  return out;
}

Tensor File::read_tensor(const std::string& path) const {
  Id ds(H5Dopen2(file_.get(), path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) fail(cat("cannot open dataset ", path));
  std::string dtype_text = read_attr_string(path, "dtype");
  DType dtype{};
  try {
    dtype = dtype_from_name(dtype_text);
  } catch (const Error&) {
    fail(cat("dataset ", path, " has an unknown dtype attribute '", dtype_text, "'"));
  }
  Id space(H5Dget_space(ds.get()), H5Sclose);
  Id type(H5Dget_type(ds.get()), H5Tclose);
  if (!space.valid() || !type.valid()) fail(cat("cannot read the shape and type of ", path));
  if (!type_fits(type.get(), dtype))
    fail(cat("dataset ", path, " is stored as ", type_text(type.get()), " but its dtype is ",
             dtype_text));
  int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0 || rank > kMaxRank) fail(cat("dataset ", path, " has an invalid rank ", rank));
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0 && H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0)
    fail(cat("cannot read the shape of ", path));
  std::vector<std::int64_t> shape;
  // The data must fit in the file: a damaged shape must not make us allocate terabytes.
  std::uint64_t bytes = static_cast<std::uint64_t>(dtype_size(dtype));
  for (hsize_t d : dims) {
    if (d > size_ || (d > 0 && bytes > size_ / d))
      fail(cat("dataset ", path, " claims more data than the file's ", size_, " bytes"));
    bytes *= d;
    shape.push_back(static_cast<std::int64_t>(d));
  }
  TypePair types = types_of(dtype);
  Tensor t(dtype, Shape(shape));
  if (t.numel() > 0 &&
      H5Dread(ds.get(), types.memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.raw_data()) < 0)
    fail(cat("cannot read dataset ", path, ": its data is damaged"));
  if (dtype == DType::boolean) {
    auto* b = static_cast<std::uint8_t*>(t.raw_data());
    for (std::int64_t i = 0; i < t.numel(); ++i) b[i] = b[i] != 0 ? 1 : 0;
  }
  return t;
}

namespace {

// Reads a scalar string from a dataset or an attribute (variable or fixed length).
template <class ReadFn>
std::string read_text(hid_t stored_type, hid_t space, const ReadFn& read, const File& f,
                      const std::string& what) {
  if (H5Tget_class(stored_type) != H5T_STRING) f.fail(cat(what, " is not a string"));
  if (H5Sget_simple_extent_npoints(space) != 1) f.fail(cat(what, " is not a single string"));
  htri_t variable = H5Tis_variable_str(stored_type);
  if (variable < 0) f.fail(cat("cannot read the type of ", what));
  if (variable > 0) {
    Id mem(H5Tcopy(H5T_C_S1), H5Tclose);
    if (!mem.valid() || H5Tset_size(mem.get(), H5T_VARIABLE) < 0) f.fail(cat("cannot read ", what));
    char* p = nullptr;
    if (read(mem.get(), &p) < 0 || p == nullptr) f.fail(cat("cannot read ", what));
    std::string out(p);
    H5free_memory(p);
    return out;
  }
  // The stored type itself as the memory type: no conversion, no padding rules applied.
  std::size_t size = H5Tget_size(stored_type);
  Id mem(H5Tcopy(stored_type), H5Tclose);
  if (!mem.valid() || size == 0) f.fail(cat("cannot read ", what));
  std::string out(size, '\0');
  if (read(mem.get(), out.data()) < 0) f.fail(cat("cannot read ", what));
  out.resize(std::strlen(out.c_str()));
  return out;
}

}  // namespace

std::string File::read_string(const std::string& path) const {
  Id ds(H5Dopen2(file_.get(), path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) fail(cat("cannot open dataset ", path));
  Id space(H5Dget_space(ds.get()), H5Sclose);
  Id type(H5Dget_type(ds.get()), H5Tclose);
  if (!space.valid() || !type.valid()) fail(cat("cannot read the type of ", path));
  if (H5Tget_size(type.get()) > size_)
    fail(cat("dataset ", path, " claims more data than the file"));
  std::string text = read_text(
      type.get(), space.get(),
      [&](hid_t mem, void* buf) {
        return H5Dread(ds.get(), mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
      },
      *this, "dataset " + path);
  if (read_u64(path, "fnv1a64") != fnv1a(text))
    fail(cat("dataset ", path, " does not match its checksum: the file is damaged"));
  return text;
}

std::string File::read_attr_string(const std::string& object, const std::string& name) const {
  Id a = open_attr(object, name);
  Id space(H5Aget_space(a.get()), H5Sclose);
  Id type(H5Aget_type(a.get()), H5Tclose);
  if (!space.valid() || !type.valid()) fail(cat("cannot read attribute '", name, "' of ", object));
  return read_text(
      type.get(), space.get(), [&](hid_t mem, void* buf) { return H5Aread(a.get(), mem, buf); },
      *this, cat("attribute '", name, "' of ", object));
}

template <class T>
T File::read_number(const std::string& object, const std::string& name, hid_t mem_type,
                    const char* kind) const {
  Id a = open_attr(object, name);
  Id space(H5Aget_space(a.get()), H5Sclose);
  Id type(H5Aget_type(a.get()), H5Tclose);
  if (!space.valid() || !type.valid()) fail(cat("cannot read attribute '", name, "' of ", object));
  H5T_class_t cls = H5Tget_class(type.get());
  bool want_float = std::is_floating_point_v<T>;
  if (cls != (want_float ? H5T_FLOAT : H5T_INTEGER) ||
      H5Sget_simple_extent_npoints(space.get()) != 1)
    fail(cat("attribute '", name, "' of ", object, " is not a single ", kind));
  T value{};
  if (H5Aread(a.get(), mem_type, &value) < 0)
    fail(cat("cannot read attribute '", name, "' of ", object));
  return value;
}

std::int64_t File::read_i64(const std::string& object, const std::string& name) const {
  return read_number<std::int64_t>(object, name, H5T_NATIVE_INT64, "integer");
}
std::uint64_t File::read_u64(const std::string& object, const std::string& name) const {
  return read_number<std::uint64_t>(object, name, H5T_NATIVE_UINT64, "integer");
}
double File::read_f64(const std::string& object, const std::string& name) const {
  return read_number<double>(object, name, H5T_NATIVE_DOUBLE, "number");
}

bool File::has_attr(const std::string& object, const std::string& name) const {
  htri_t r = H5Aexists_by_name(file_.get(), object.c_str(), name.c_str(), H5P_DEFAULT);
  if (r < 0) fail(cat("cannot look up attribute '", name, "' of ", object));
  return r > 0;
}

namespace {

herr_t collect_attr(hid_t, const char* name, const H5A_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}

}  // namespace

std::vector<std::string> File::attr_names(const std::string& object) const {
  Id obj = open_object(object);
  std::vector<std::string> names;
  hsize_t index = 0;
  if (H5Aiterate2(obj.get(), H5_INDEX_NAME, H5_ITER_INC, &index, collect_attr, &names) < 0)
    fail(cat("cannot list the attributes of ", object));
  return names;
}

}  // namespace glia::h5
