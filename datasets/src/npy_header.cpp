// The .npy preamble and header dict: a small parser for the Python literal numpy writes
// (single- or double-quoted keys in any order, whitespace anywhere, a trailing comma in
// the dict and in tuples), and numpy.save's exact header layout for writing.
#include "npy_header.hpp"

#include <array>
#include <cstring>
#include <limits>
#include <optional>

namespace glia::detail {

namespace {

constexpr std::array<unsigned char, 6> kMagic = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::size_t kAlign = 64;         // numpy's ARRAY_ALIGN
constexpr std::size_t kGrowthDigits = 21;  // numpy's GROWTH_AXIS_MAX_DIGITS

struct NpyType {
  const char* code;  // the descr without its byte-order character
  DType dtype;
};
constexpr std::array<NpyType, 8> kTypes{{{"f4", f32},
                                         {"f8", f64},
                                         {"f2", f16},
                                         {"i4", i32},
                                         {"i8", i64},
                                         {"u4", u32},
                                         {"u1", u8},
                                         {"b1", boolean}}};
constexpr const char* kSupported = "'<f4', '<f8', '<f2', '<i4', '<i8', '<u4', '|u1', '|b1'";

std::uint64_t load_le(std::span<const std::byte> b, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint64_t>(b[at + i]);
  return v;
}

DType dtype_of_descr(const std::string& descr, std::string_view context) {
  const std::string code = descr.size() >= 2 ? descr.substr(1) : "";
  const NpyType* type = nullptr;
  for (const NpyType& t : kTypes)
    if (code == t.code) type = &t;
  const char order = descr.empty() ? '?' : descr[0];
  if (type != nullptr && dtype_size(type->dtype) == 1 && std::strchr("<>|", order) != nullptr)
    return type->dtype;  // one byte: the byte order means nothing
  if (type != nullptr && order == '<') return type->dtype;
  check(!(type != nullptr && order == '>'), context, ": holds big-endian data ('", descr,
        "'); only little-endian is read (convert with numpy: a.astype('<", code, "'))");
  throw Error(cat(context, ": has unsupported dtype '", descr, "' (supported: ", kSupported, ")"));
}

// A recursive-descent reader of the header dict; every failure names the offset.
class DictParser {
 public:
  DictParser(std::string_view text, std::string_view context) : s_(text), context_(context) {}

  NpyHeader parse() {
    std::optional<std::string> descr;
    std::optional<bool> fortran;
    std::optional<std::vector<std::int64_t>> shape;
    expect('{', "'{' opening the header dict");
    while (true) {
      skip_spaces();
      if (eat('}')) break;
      const std::string key = string_literal();
      expect(':', cat("':' after '", key, "'"));
      skip_spaces();
      auto seen = [&](bool present) {
        check(!present, context_, ": the header repeats the key '", key, "'");
      };
      if (key == "descr") {
        seen(descr.has_value());
        descr = string_literal();
      } else if (key == "fortran_order") {
        seen(fortran.has_value());
        fortran = boolean();
      } else if (key == "shape") {
        seen(shape.has_value());
        shape = tuple();
      } else {
        throw Error(cat(context_, ": the header has an unexpected key '", key,
                        "' (expected descr, fortran_order and shape)"));
      }
      skip_spaces();
      if (eat(',')) continue;
      expect('}', "',' or '}' after a value");
      break;
    }
    skip_spaces();
    if (i_ != s_.size()) fail("text after the closing '}'");
    check(descr.has_value(), context_, ": the header has no 'descr' key: ", excerpt());
    check(fortran.has_value(), context_, ": the header has no 'fortran_order' key: ", excerpt());
    check(shape.has_value(), context_, ": the header has no 'shape' key: ", excerpt());
    check(!*fortran, context_,
          ": the array is stored in Fortran order (fortran_order: True); only C order is read "
          "(save numpy.ascontiguousarray(a) instead)");
    return {dtype_of_descr(*descr, context_), Shape(*shape)};
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    throw Error(
        cat(context_, ": malformed header: expected ", what, " at offset ", i_, " of ", excerpt()));
  }
  std::string excerpt() const {
    std::string t(s_.substr(0, 96));
    return cat("\"", t, s_.size() > 96 ? "...\"" : "\"");
  }
  void skip_spaces() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  bool eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c, std::string_view what) {
    skip_spaces();
    if (!eat(c)) fail(what);
  }
  std::string string_literal() {
    skip_spaces();
    char quote = i_ < s_.size() ? s_[i_] : '\0';
    if (quote != '\'' && quote != '"') fail("a quoted string");
    std::size_t end = s_.find(quote, i_ + 1);
    if (end == std::string_view::npos) fail("a closing quote");
    std::string out(s_.substr(i_ + 1, end - i_ - 1));
    if (out.find('\\') != std::string::npos) fail("a string without escapes");
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.substr(i_, 4) == "True") {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_, 5) == "False") {
      i_ += 5;
      return false;
    }
    fail("True or False");
  }
  // (), (n,), (n, m), (n, m,): a one-element tuple needs its comma, as in Python.
  std::vector<std::int64_t> tuple() {
    std::vector<std::int64_t> dims;
    if (!eat('(')) fail("a tuple for 'shape'");
    bool comma = false;
    while (true) {
      skip_spaces();
      if (eat(')')) break;
      dims.push_back(dimension());
      skip_spaces();
      comma = eat(',');
      if (!comma) {
        expect(')', "',' or ')' in the shape");
        break;
      }
    }
    if (dims.size() == 1 && !comma) fail("a ',' after the only dimension, as in (5,)");
    return dims;
  }
  std::int64_t dimension() {
    std::size_t start = i_;
    std::int64_t v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      int digit = s_[i_] - '0';
      if (v > (std::numeric_limits<std::int64_t>::max() - digit) / 10)
        fail("a dimension below 2^63");
      v = v * 10 + digit;
      ++i_;
    }
    if (i_ == start) fail("a non-negative integer dimension");
    eat('L');  // Python 2's long literals, as old numpy wrote them
    return v;
  }

  std::string_view s_;
  std::string context_;
  std::size_t i_ = 0;
};

}  // namespace

NpyLayout parse_npy_preamble(std::span<const std::byte> first, std::uint64_t total,
                             std::string_view context) {
  check(total >= 10, context, ": is truncated: ", total,
        " bytes, shorter than the 10-byte .npy preamble");
  for (std::size_t i = 0; i < kMagic.size(); ++i)
    check(std::to_integer<unsigned char>(first[i]) == kMagic[i], context,
          ": is not a .npy file (the magic bytes \\x93NUMPY are missing)");
  NpyLayout l;
  l.major = std::to_integer<int>(first[6]);
  const int minor = std::to_integer<int>(first[7]);
  check(l.major >= 1 && l.major <= 3 && minor == 0, context, ": has unsupported .npy version ",
        l.major, ".", minor, " (1.0, 2.0 and 3.0 are read)");
  const int length_bytes = l.major == 1 ? 2 : 4;
  l.header_offset = 8 + static_cast<std::size_t>(length_bytes);
  check(total >= l.header_offset, context, ": is truncated: ", total, " bytes, shorter than the ",
        l.header_offset, "-byte .npy preamble");
  const std::uint64_t header_len = load_le(first, 8, length_bytes);
  check(header_len <= total - l.header_offset, context, ": is truncated: the header declares ",
        header_len, " bytes after the preamble, the file has ", total - l.header_offset);
  l.data_offset = l.header_offset + static_cast<std::size_t>(header_len);
  return l;
}

NpyHeader parse_npy_header(std::string_view text, std::string_view context) {
  std::size_t end = text.find_last_not_of(" \t\r\n");
  text = end == std::string_view::npos ? std::string_view{} : text.substr(0, end + 1);
  return DictParser(text, context).parse();
}

std::string npy_header_bytes(const TensorType& type, std::string_view context) {
  std::string descr;
  for (const NpyType& t : kTypes)
    if (t.dtype == type.dtype) descr = cat(dtype_size(t.dtype) == 1 ? "|" : "<", t.code);
  check(!descr.empty(), context, ": ", type.to_string(),
        " has no .npy dtype (supported: ", kSupported, ")");
  return npy_header_bytes(descr, type.shape.dims());
}

std::string npy_header_bytes(std::string_view descr, const std::vector<std::int64_t>& dims) {
  std::string shape = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) shape += (i ? ", " : "") + std::to_string(dims[i]);
  shape += dims.size() == 1 ? ",)" : ")";
  std::string dict =
      cat("{'descr': '", descr, "', 'fortran_order': False, 'shape': ", shape, ", }");
  // numpy leaves room for the first dimension to grow to 21 digits in place.
  if (!dims.empty()) dict.append(kGrowthDigits - std::to_string(dims[0]).size(), ' ');
  const std::size_t hlen = dict.size() + 1;  // with the newline
  // Version 1.0 stores the header length in a u16; 2.0 in a u32.
  int major = 1;
  std::size_t prefix = 10;
  if (hlen + kAlign - (prefix + hlen) % kAlign > 0xFFFF) {
    major = 2;
    prefix = 12;
  }
  const std::size_t pad = kAlign - (prefix + hlen) % kAlign;  // numpy's: 1 to 64 spaces
  const std::uint64_t declared = hlen + pad;
  std::string out(kMagic.begin(), kMagic.end());
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t i = 0; i < prefix - 8; ++i)
    out += static_cast<char>((declared >> (8 * i)) & 0xFF);
  return out + dict + std::string(pad, ' ') + "\n";
}

}  // namespace glia::detail
