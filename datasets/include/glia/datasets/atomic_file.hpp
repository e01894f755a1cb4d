// Writing a file so that a crash or error mid-write never leaves half a file at its path:
// the content goes to a temporary file in the same folder, which is flushed to disk and
// then renamed over the path (a rename within one file system is atomic).
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace glia::detail {

// Calls `write(tmp)` to fill the temporary file `tmp`, then fsyncs and renames it to
// `path`; on any failure the temporary file is removed and the glia::Error (naming `who`,
// the caller, and the file) propagates.
void write_atomically(const std::string& path, std::string_view who,
                      const std::function<void(const std::string& tmp)>& write);

}  // namespace glia::detail
