// A thin layer over the HDF5 C API for checkpoints: identifiers closed by destructors,
// tensors as datasets with a glia dtype attribute, string and number attributes, and
// every failure turned into a glia::Error naming the file and the object. Private to
// glia_optim: hdf5.h stays out of the public headers.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "glia/core/tensor.hpp"

namespace glia::h5 {

// The serial HDF5 library is not thread-safe: every use holds this lock.
std::unique_lock<std::recursive_mutex> lock();

// An HDF5 identifier, closed with its own close function when it goes out of scope.
class Id {
 public:
  using Closer = herr_t (*)(hid_t);
  Id() = default;
  Id(hid_t id, Closer close) : id_(id), close_(close) {}
  Id(Id&& other) noexcept : id_(other.id_), close_(other.close_) { other.id_ = -1; }
  Id& operator=(Id&& other) noexcept;
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  ~Id() { reset(); }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset();
  hid_t release() {
    hid_t id = id_;
    id_ = -1;
    return id;
  }

 private:
  hid_t id_ = -1;
  Closer close_ = nullptr;
};

// One open file. Errors name `path` and the object involved, with HDF5's own reason.
class File {
 public:
  static File create(const std::string& path);  // fails if the file exists
  static File open(const std::string& path);    // read-only
  const std::string& path() const { return path_; }
  hid_t id() const { return file_.get(); }
  // Flushes and closes; a failure throws (the destructor closes quietly).
  void close();

  // ---- Writing (paths are absolute, e.g. "/params/dense_0/kernel") ----
  void write_group(const std::string& path);
  void write_tensor(const std::string& path, const Tensor& t);
  void write_string(const std::string& path, const std::string& text);  // scalar dataset
  void write_attr(const std::string& object, const std::string& name, std::int64_t value);
  void write_attr(const std::string& object, const std::string& name, std::uint64_t value);
  void write_attr(const std::string& object, const std::string& name, double value);
  void write_attr(const std::string& object, const std::string& name, const std::string& value);

  // ---- Reading ----
  bool exists(const std::string& path) const;  // a link of that name (parents must exist)
  bool is_group(const std::string& path) const;
  // The datasets under a group, as paths relative to it ("0/mu/dense_0/kernel"), sorted.
  std::vector<std::string> datasets_under(const std::string& group) const;
  Tensor read_tensor(const std::string& path) const;
  std::string read_string(const std::string& path) const;
  std::int64_t read_i64(const std::string& object, const std::string& name) const;
  std::uint64_t read_u64(const std::string& object, const std::string& name) const;
  double read_f64(const std::string& object, const std::string& name) const;
  std::string read_attr_string(const std::string& object, const std::string& name) const;
  bool has_attr(const std::string& object, const std::string& name) const;
  std::vector<std::string> attr_names(const std::string& object) const;

  [[noreturn]] void fail(const std::string& what) const;

 private:
  File(std::string path, Id file, std::uintmax_t size)
      : path_(std::move(path)), file_(std::move(file)), size_(size) {}
  Id open_object(const std::string& path) const;
  Id open_attr(const std::string& object, const std::string& name) const;
  template <class T>
  T read_number(const std::string& object, const std::string& name, hid_t mem_type,
                const char* kind) const;
  void write_number(const std::string& object, const std::string& name, hid_t mem_type,
                    hid_t file_type, const void* value);

  std::string path_;
  Id file_;
  std::uintmax_t size_ = 0;  // the file's size when opened, to bound what a dataset claims
};

namespace detail {  // shared by hdf5_file.cpp (writing) and hdf5_read.cpp

// The innermost message on HDF5's error stack (the most specific), then clears it.
std::string hdf5_reason();
// Fixed-length strings: an attribute's value then lives in its object header, which
// carries a checksum (variable-length strings would sit in the unchecked global heap).
Id string_type(std::size_t length);
// FNV-1a: string datasets are raw data without HDF5 checksums, so they carry this one.
std::uint64_t fnv1a(const std::string& text);
// The file and memory types of a dtype. bool is stored as u8 and bf16 as raw u16 (HDF5 and
// numpy have no bfloat16); the dataset's "dtype" attribute names the glia dtype.
struct TypePair {
  hid_t file = -1, memory = -1;
  Id owned;  // the half type, when defined
};
TypePair types_of(DType t);

}  // namespace detail

}  // namespace glia::h5
