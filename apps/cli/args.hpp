// The numbers and lists the command line and a checkpoint's config entries hold, parsed
// strictly: the whole text must be the value (no spaces, no trailing text, in range), so
// that "0.1x", " 5" or "-1" for an unsigned never turn into a silently different value.
// A library of its own (glia_cli_args) so the fuzz harness tests/fuzz/cli_args_fuzz.cpp
// calls exactly what `glia` calls.
//   std::optional<std::int64_t> n = glia::cli::parse_int64("128");   // 128
//   glia::cli::split_list("cpu,,interp");                            // {"cpu", "interp"}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace glia::cli {

// A decimal integer with an optional sign ('+' or '-'); nullopt for anything else or a
// value out of range. parse_uint64 refuses a '-' sign.
std::optional<std::int64_t> parse_int64(std::string_view text);
std::optional<std::uint64_t> parse_uint64(std::string_view text);
// A decimal number, fixed or scientific ("0.5", "1e-3"), with an optional sign; "inf" and
// "nan" included; nullopt for anything else or a value beyond double's range.
std::optional<double> parse_double(std::string_view text);

// The check of a flag that takes a positive, finite number: empty when `text` is one,
// else the message to show ("not a number: x", "must be positive, got -1").
std::string check_positive(std::string_view text);

// A comma-separated list, its empty items dropped: "a,,b," gives {"a", "b"}.
std::vector<std::string> split_list(std::string_view list);

}  // namespace glia::cli
