// write_atomically: temporary file, fsync, rename (see glia/datasets/atomic_file.hpp).
#include "glia/datasets/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "glia/core/error.hpp"

namespace glia::detail {

namespace {

// Flushes the file's data to disk, so the rename never exposes a file whose bytes are
// still only in the page cache when the machine goes down.
void sync_file(const std::string& file, std::string_view who) {
  int fd = ::open(file.c_str(), O_RDONLY);
  check(fd >= 0, who, ": cannot reopen '", file, "' to flush it: ", std::strerror(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  check(rc == 0, who, ": flushing '", file, "' failed: ", std::strerror(err));
}

}  // namespace

void write_atomically(const std::string& path, std::string_view who,
                      const std::function<void(const std::string& tmp)>& write) {
  const std::string tmp = path + ".tmp";
  try {
    write(tmp);
    sync_file(tmp, who);
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    check(!ec, who, ": cannot move '", tmp, "' to '", path, "': ", ec.message());
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
}

}  // namespace glia::detail
