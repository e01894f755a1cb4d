// Reading checkpoints' HDF5 objects: every shape, type and size is checked against the
// dataset's dtype attribute and the file's size before any data is read, and HDF5's own
// checksums (metadata, Fletcher-32 chunks) turn damage into a glia::Error.
#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>

#include "glia/core/declared_size.hpp"
#include "hdf5_file.hpp"

namespace glia::h5 {

using namespace detail;

namespace {

constexpr int kMaxRank = 32;
constexpr int kMaxDepth = 32;

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

bool File::exists(const std::string& path) const {
  if (path == "/") return true;
  if (!exists(parent_of(path))) return false;
  htri_t r = H5Lexists(file_.get(), path.c_str(), H5P_DEFAULT);
  H5Eclear2(H5E_DEFAULT);
  return r > 0;
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
        // Native order, not H5_ITER_INC: for a group with many links (dense storage) an
        // ordered iteration first builds a table of every link, and libhdf5 1.10 frees
        // garbage pointers when a damaged link fails to decode into it (a crash, also in
        // h5py). The native order walks the name index instead and reports the damage.
        if (H5Literate(g.get(), H5_INDEX_NAME, H5_ITER_NATIVE, nullptr, collect_link, &names) < 0)
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
  // The data must fit in the file: a damaged shape must not make us allocate terabytes.
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  for (hsize_t d : dims)
    if (d > kMax) fail(cat("dataset ", path, " has a dimension of ", d, ", beyond 2^63"));
  const std::vector<std::int64_t> shape(dims.begin(), dims.end());
  // An empty dataset's non-zero dimensions are bounded by 2^63 bytes, others by the file.
  const DeclaredSize s = declared_size(shape, static_cast<std::uint64_t>(dtype_size(dtype)), kMax);
  if (!s.fits || (!s.empty && s.bytes > size_))
    fail(cat("dataset ", path, " declares ", TensorType{dtype, Shape(shape)}.to_string(), ", ",
             s.empty ? "whose non-zero dimensions multiply past 2^63 bytes"
                     : cat("more data than the file's ", size_, " bytes")));
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
  // Native order, sorted here: as for links (datasets_under), an ordered iteration over
  // many attributes builds a table that libhdf5 1.10 mishandles when one is damaged.
  if (H5Aiterate2(obj.get(), H5_INDEX_NAME, H5_ITER_NATIVE, &index, collect_attr, &names) < 0)
    fail(cat("cannot list the attributes of ", object));
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace glia::h5
