// The bytes of an IDX file, read in order from a plain file or through gzip (detected
// by the gzip magic bytes, whatever the file's name): the IDX parser in idx.cpp reads
// the header, checks sizes against what the source can hold, then reads the data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace glia::detail {

class IdxSource {
 public:
  virtual ~IdxSource() = default;
  // Reads up to n bytes; fewer only at the end of the content.
  virtual std::size_t read(std::byte* out, std::size_t n) = 0;
  // The exact content size where it is known without reading (plain files).
  virtual std::optional<std::uint64_t> exact_size() const = 0;
  // An upper bound on the content size: caps what a corrupt header can make us allocate.
  virtual std::uint64_t max_size() const = 0;
  // True when nothing follows what was read (for gzip, this also checks the trailer's CRC).
  virtual bool at_end() = 0;
  // What the sizes in messages count: "the file" or "the decompressed data".
  virtual std::string content_name() const = 0;
};

// Opens `path` for reading; glia::Error naming `what` (the caller) and the file when it
// cannot be opened or is a corrupt gzip stream.
std::unique_ptr<IdxSource> open_idx_source(const std::string& path, const std::string& what);

}  // namespace glia::detail
