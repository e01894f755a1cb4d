// Plain and gzip sources of IDX bytes. A gzip file is read whole into memory (it is a
// tenth of the data for MNIST) and inflated on demand, so the parser can stop after the
// header and check the declared size against a bound before allocating anything.
#include "idx_source.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <vector>

#include "glia/core/error.hpp"

namespace glia::detail {
namespace {

namespace fs = std::filesystem;

// Deflate cannot compress better than about 1032:1 (RFC 1951: a 258-byte match costs at
// least two bits), so a gzip file of n bytes inflates to at most this much.
constexpr std::uint64_t kMaxDeflateRatio = 1032;

class PlainSource : public IdxSource {
 public:
  PlainSource(std::ifstream in, std::uint64_t size, std::string path, std::string what)
      : in_(std::move(in)), size_(size), path_(std::move(path)), what_(std::move(what)) {}

  std::size_t read(std::byte* out, std::size_t n) override {
    in_.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(n));
    check(!in_.bad(), what_, ": '", path_, "': read error: ", std::strerror(errno));
    std::size_t got = static_cast<std::size_t>(in_.gcount());
    read_ += got;
    return got;
  }
  std::optional<std::uint64_t> exact_size() const override { return size_; }
  std::uint64_t max_size() const override { return size_; }
  bool at_end() override { return read_ >= size_; }
  std::string content_name() const override { return "the file"; }

 private:
  std::ifstream in_;
  std::uint64_t size_;
  std::uint64_t read_ = 0;
  std::string path_, what_;
};

class GzipSource : public IdxSource {
 public:
  GzipSource(std::vector<unsigned char> compressed, std::string path, std::string what)
      : compressed_(std::move(compressed)), path_(std::move(path)), what_(std::move(what)) {
    // 15 + 16: the largest window, gzip wrapping only (no raw zlib streams).
    check(inflateInit2(&stream_, 15 + 16) == Z_OK, what_, ": '", path_,
          "': cannot start zlib's inflate (out of memory?)");
  }
  ~GzipSource() override { inflateEnd(&stream_); }
  GzipSource(const GzipSource&) = delete;
  GzipSource& operator=(const GzipSource&) = delete;

  std::size_t read(std::byte* out, std::size_t n) override {
    std::size_t produced = 0;
    while (produced < n && !finished_) {
      if (stream_.avail_in == 0) feed();
      std::size_t want = std::min<std::size_t>(n - produced, std::numeric_limits<uInt>::max());
      stream_.next_out = reinterpret_cast<Bytef*>(out + produced);
      stream_.avail_out = static_cast<uInt>(want);
      int ret = inflate(&stream_, Z_NO_FLUSH);
      produced += want - stream_.avail_out;
      if (ret == Z_STREAM_END) {
        end_of_member();
      } else if (ret == Z_BUF_ERROR) {
        // No progress possible: the input ran out before the end-of-stream marker.
        fail(cat("the gzip stream is truncated (", compressed_.size(),
                 " bytes end before its end-of-stream marker)"));
      } else if (ret != Z_OK) {
        fail(cat("corrupt gzip data (",
                 stream_.msg != nullptr ? stream_.msg : "zlib error " + std::to_string(ret), ")"));
      }
    }
    decompressed_ += produced;
    return produced;
  }
  std::optional<std::uint64_t> exact_size() const override { return std::nullopt; }
  std::uint64_t max_size() const override {
    return static_cast<std::uint64_t>(compressed_.size()) * kMaxDeflateRatio;
  }
  bool at_end() override {
    std::byte extra{};
    return read(&extra, 1) == 0;
  }
  std::string content_name() const override { return "the decompressed data"; }

 private:
  std::size_t unfed() const { return compressed_.size() - fed_; }

  // Hands zlib the next slice of the compressed bytes (avail_in is 32-bit).
  void feed() {
    std::size_t n = std::min<std::size_t>(unfed(), std::numeric_limits<uInt>::max());
    stream_.next_in = compressed_.data() + fed_;
    stream_.avail_in = static_cast<uInt>(n);
    fed_ += n;
  }

  // A gzip file may hold several members one after another (as `cat a.gz b.gz` makes);
  // anything else after a member is garbage.
  void end_of_member() {
    std::size_t rest = stream_.avail_in + unfed();
    if (rest == 0) {
      finished_ = true;
      return;
    }
    if (stream_.avail_in < 2) {
      // Put the unread bytes back in one slice so the next member's magic can be seen.
      fed_ -= stream_.avail_in;
      stream_.avail_in = 0;
      feed();
    }
    if (stream_.avail_in >= 2 && stream_.next_in[0] == 0x1f && stream_.next_in[1] == 0x8b) {
      check(inflateReset(&stream_) == Z_OK, what_, ": '", path_, "': inflateReset failed");
      return;
    }
    fail(cat(rest, " bytes of garbage after the end of the gzip stream"));
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw Error(cat(what_, ": '", path_, "' is a corrupt gzip file: ", why, " after ",
                    decompressed_, " decompressed bytes"));
  }

  std::vector<unsigned char> compressed_;
  std::size_t fed_ = 0;
  std::uint64_t decompressed_ = 0;
  z_stream stream_{};
  bool finished_ = false;
  std::string path_, what_;
};

}  // namespace

std::unique_ptr<IdxSource> open_idx_source(const std::string& path, const std::string& what) {
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  check(status.type() != fs::file_type::not_found, what, ": '", path, "' does not exist");
  check(!fs::is_directory(status), what, ": '", path, "' is a folder, not an IDX file");
  std::uint64_t size = fs::file_size(path, ec);
  check(!ec, what, ": cannot get the size of '", path, "': ", ec.message());
  std::ifstream in(path, std::ios::binary);
  check(in.is_open(), what, ": cannot open '", path, "': ", std::strerror(errno));

  unsigned char magic[2] = {0, 0};
  in.read(reinterpret_cast<char*>(magic), 2);
  bool gzip = in.gcount() == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  in.clear();
  in.seekg(0);
  check(in.good(), what, ": cannot read '", path, "'");
  if (!gzip) return std::make_unique<PlainSource>(std::move(in), size, path, what);

  std::vector<unsigned char> compressed(static_cast<std::size_t>(size));
  in.read(reinterpret_cast<char*>(compressed.data()), static_cast<std::streamsize>(size));
  check(static_cast<std::uint64_t>(in.gcount()) == size, what, ": '", path, "': read only ",
        in.gcount(), " of its ", size, " bytes");
  return std::make_unique<GzipSource>(std::move(compressed), path, what);
}

}  // namespace glia::detail
