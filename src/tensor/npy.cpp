// The .npy format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
// Accepted and rejected inputs are listed in docs/npy.md.
#include "stitch/npy.h"

#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <string_view>
#include <system_error>

#include <unistd.h>

#include "stitch/error.h"
#include "stitch/shape.h"

namespace stitch {

// Payload bytes are copied as they are; a big-endian host would need swaps.
static_assert(std::endian::native == std::endian::little, "npy I/O assumes a little-endian host");

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
// numpy pads the header so the data starts on a 64-byte boundary (ARRAY_ALIGN).
constexpr size_t kHeaderAlignment = 64;
// A header is a short dict; numpy's own reader refuses one over 10,000 bytes
// unless told otherwise. This bounds the text parsed and leaves room for any
// rank a shape can have.
constexpr uint64_t kMaxNpyHeaderBytes = uint64_t{1} << 20;

[[noreturn]] void fail(const std::string& what, const std::string& message) {
  throw UserError(what + ": " + message);
}

// Header text comes from untrusted bytes; show it printable and short.
std::string printable(std::string_view text) {
  constexpr size_t kMaxShown = 40;
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out += static_cast<char>(c);
    } else {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  if (text.size() > kMaxShown) out += "...";
  return out + "'";
}

struct DescrSpelling {
  std::string_view descr;
  DType dtype;
};

// The first spelling of each dtype is the one written: numpy's own, and for
// bf16 what np.save writes for an ml_dtypes.bfloat16 array. The rest are read
// as the same bytes: byte order means nothing for one-byte types, plain numpy
// saves a 2-byte void as '|V2', and str(dtype) under ml_dtypes is 'bfloat16'.
constexpr DescrSpelling kDescrs[] = {
    {"<f2", DType::f16},  {"<V2", DType::bf16},     {"<f4", DType::f32},  {"<f8", DType::f64},
    {"|i1", DType::i8},   {"<i4", DType::i32},      {"<i8", DType::i64},  {"|b1", DType::boolean},
    {"<i1", DType::i8},   {">i1", DType::i8},       {"=i1", DType::i8},   {"<b1", DType::boolean},
    {">b1", DType::boolean}, {"=b1", DType::boolean}, {"|V2", DType::bf16}, {"bfloat16", DType::bf16},
};

std::string_view descr_for(DType dtype) {
  for (const DescrSpelling& s : kDescrs) {
    if (s.dtype == dtype) return s.descr;
  }
  STITCH_ASSERT(false, "dtype without an npy descr");
}

DType dtype_for_descr(std::string_view descr, const std::string& what) {
  for (const DescrSpelling& s : kDescrs) {
    if (s.descr == descr) return s.dtype;
  }
  if (descr.size() >= 3 && descr[0] == '>') {
    fail(what, "big-endian data (dtype " + printable(descr) +
                   ") is not supported; save with a.astype(a.dtype.newbyteorder('<'))");
  }
  if (descr.size() >= 2 && descr[1] == 'u') {
    fail(what, "unsigned dtype " + printable(descr) +
                   " is not supported (Stitch has no unsigned types); save with a.astype(np.int64)");
  }
  fail(what, "unsupported dtype " + printable(descr) +
                 "; Stitch reads <f2 <f4 <f8 |i1 <i4 <i8 |b1 and <V2 (bfloat16, docs/npy.md)");
}

struct NpyHeader {
  std::optional<std::string> descr;
  std::optional<bool> fortran_order;
  std::optional<std::vector<int64_t>> shape;
};

// Reads the Python dict literal numpy writes with repr(): string keys, a string
// descr, True/False, a tuple of non-negative ints; any order, any spacing, an
// optional trailing comma, as ast.literal_eval would accept.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& what) : text_(text), what_(what) {}

  NpyHeader parse() {
    NpyHeader header;
    expect('{');
    skip_space();
    while (!at('}')) {
      const std::string key = parse_string();
      expect(':');
      if (key == "descr") {
        if (header.descr) fail_malformed("duplicate key 'descr'");
        skip_space();
        if (at('[')) fail(what_, "structured dtypes are not supported");
        header.descr = parse_string();
      } else if (key == "fortran_order") {
        if (header.fortran_order) fail_malformed("duplicate key 'fortran_order'");
        header.fortran_order = parse_bool();
      } else if (key == "shape") {
        if (header.shape) fail_malformed("duplicate key 'shape'");
        header.shape = parse_shape();
      } else {
        fail_malformed("unexpected key " + printable(key));
      }
      skip_space();
      if (at(',')) {
        ++pos_;
        skip_space();
      } else if (!at('}')) {
        fail_malformed("expected ',' or '}'");
      }
    }
    ++pos_;
    skip_space();
    if (pos_ != text_.size()) fail_malformed("unexpected text after the closing '}'");
    if (!header.descr) fail_malformed("no 'descr' key");
    if (!header.fortran_order) fail_malformed("no 'fortran_order' key");
    if (!header.shape) fail_malformed("no 'shape' key");
    return header;
  }

 private:
  [[noreturn]] void fail_malformed(const std::string& message) const {
    fail(what_, "malformed .npy header: " + message + " at offset " + std::to_string(pos_) +
                    " of " + printable(text_));
  }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

  void expect(char c) {
    skip_space();
    if (!at(c)) fail_malformed(std::string("expected '") + c + "'");
    ++pos_;
  }

  // No escapes: numpy's descrs and keys never need them.
  std::string parse_string() {
    skip_space();
    if (!at('\'') && !at('"')) fail_malformed("expected a string");
    const char quote = text_[pos_++];
    const size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != quote && text_[pos_] != '\n') {
      if (text_[pos_] == '\\') fail_malformed("unsupported string literal");
      ++pos_;
    }
    if (pos_ == text_.size() || text_[pos_] == '\n') fail_malformed("unterminated string");
    return std::string(text_.substr(start, pos_++ - start));
  }

  bool parse_bool() {
    skip_space();
    for (const auto& [word, value] : {std::pair{std::string_view("True"), true},
                                      std::pair{std::string_view("False"), false}}) {
      if (text_.substr(pos_, word.size()) == word && !is_identifier_char(pos_ + word.size())) {
        pos_ += word.size();
        return value;
      }
    }
    fail_malformed("expected True or False");
  }

  bool is_identifier_char(size_t i) const {
    if (i >= text_.size()) return false;
    const char c = text_[i];
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }

  // "()", "(3,)", "(2, 3)", "(2, 3,)"; "(3)" is an int in Python, not a tuple.
  std::vector<int64_t> parse_shape() {
    expect('(');
    std::vector<int64_t> dims;
    bool saw_comma = false;
    skip_space();
    while (!at(')')) {
      dims.push_back(parse_dim());
      skip_space();
      if (at(',')) {
        ++pos_;
        saw_comma = true;
        skip_space();
      } else if (!at(')')) {
        fail_malformed("expected ',' or ')' in shape");
      }
    }
    if (dims.size() == 1 && !saw_comma) fail_malformed("shape must be a tuple, as in (3,)");
    ++pos_;
    return dims;
  }

  int64_t parse_dim() {
    skip_space();
    const bool negative = at('-');
    if (negative) ++pos_;
    if (!(pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9')) {
      fail_malformed("expected an integer dimension");
    }
    int64_t value = 0;
    bool too_large = false;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const int digit = text_[pos_++] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) too_large = true;
      if (!too_large) value = value * 10 + digit;
    }
    if (negative && value != 0) fail(what_, "negative dimension -" + std::to_string(value) + " in shape");
    if (too_large) fail(what_, "dimension in shape does not fit in 64 bits");
    return value;
  }

  std::string_view text_;
  const std::string& what_;
  size_t pos_ = 0;
};

uint64_t read_le(std::string_view bytes, size_t offset, size_t width) {
  uint64_t v = 0;
  for (size_t i = 0; i < width; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  }
  return v;
}

std::string shape_repr(const std::vector<int64_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + (shape.size() == 1 ? ",)" : ")");
}

// Payload size from the header, or an error when it is over the limit on one
// tensor (docs/limits.md).
uint64_t payload_bytes(DType dtype, const std::vector<int64_t>& shape, const std::string& what) {
  check_tensor_size(what, dtype, shape);
  int64_t bytes = dtype_size(dtype);
  for (int64_t d : shape) bytes *= d;  // at most kMaxTensorBytes, checked above
  return static_cast<uint64_t>(bytes);
}

}  // namespace

Tensor parse_npy(const std::string& bytes, const std::string& what) {
  const std::string_view data(bytes);
  if (data.substr(0, kMagic.size()) != kMagic) {
    fail(what, "not a .npy file (it does not start with \\x93NUMPY)");
  }
  if (data.size() < kMagic.size() + 2) fail(what, "truncated .npy file: no format version");
  const int major = static_cast<unsigned char>(data[6]);
  const int minor = static_cast<unsigned char>(data[7]);
  if (major < 1 || major > 3 || minor != 0) {
    fail(what, "unsupported .npy format version " + std::to_string(major) + "." +
                   std::to_string(minor) + " (Stitch reads 1.0, 2.0 and 3.0)");
  }
  const size_t length_width = major == 1 ? 2 : 4;
  const size_t header_start = kMagic.size() + 2 + length_width;
  if (data.size() < header_start) fail(what, "truncated .npy file: no header length");
  const uint64_t header_length = read_le(data, kMagic.size() + 2, length_width);
  if (header_length > data.size() - header_start) {
    fail(what, "truncated .npy file: the header claims " + std::to_string(header_length) +
                   " bytes but only " + std::to_string(data.size() - header_start) + " follow");
  }
  if (header_length > kMaxNpyHeaderBytes) {
    fail(what, "the .npy header claims " + std::to_string(header_length) + " bytes; the limit is " +
                   std::to_string(kMaxNpyHeaderBytes) + " (docs/limits.md)");
  }
  // Version 1.0/2.0 headers are latin-1 and 3.0 ones UTF-8; every accepted
  // header is ASCII, so bytes compare the same under either.
  const NpyHeader header = HeaderParser(data.substr(header_start, header_length), what).parse();
  const DType dtype = dtype_for_descr(*header.descr, what);
  if (*header.fortran_order) {
    fail(what, "Fortran-order arrays are not supported; save with np.ascontiguousarray");
  }

  const uint64_t expected = payload_bytes(dtype, *header.shape, what);
  const size_t payload_start = header_start + header_length;
  const uint64_t actual = data.size() - payload_start;
  if (actual != expected) {
    fail(what, std::string(actual < expected ? "truncated" : "oversized") + " payload: " +
                   std::string(dtype_name(dtype)) + shape_repr(*header.shape) + " needs " +
                   std::to_string(expected) + " bytes of data, the file has " + std::to_string(actual));
  }

  Tensor tensor = allocate_tensor(what, dtype, *header.shape);
  if (tensor.nbytes() > 0) std::memcpy(tensor.raw(), data.data() + payload_start, tensor.nbytes());
  // A bool byte other than 0 or 1 is not a valid C++ bool; numpy reads it as true.
  if (tensor.dtype() == DType::boolean) {
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      if (tensor.get_i64(i) != 0) tensor.set_i64(i, 1);
    }
  }
  return tensor;
}

Tensor read_npy(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path, "cannot read: is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  // The whole file is read before its header is parsed: refuse one that
  // cannot hold a tensor within the limit before reading it.
  const uintmax_t file_bytes = std::filesystem::file_size(path, ec);
  constexpr uintmax_t kMaxFileBytes = static_cast<uintmax_t>(kMaxTensorBytes) + kMaxNpyHeaderBytes + 64;
  if (!ec && file_bytes > kMaxFileBytes) {
    fail(path, "the file is " + std::to_string(file_bytes) + " bytes; a .npy file within the limit of " +
                   std::to_string(kMaxTensorBytes) + " bytes per tensor is at most " +
                   std::to_string(kMaxFileBytes) + " (docs/limits.md)");
  }
  std::string bytes;
  try {
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::bad_alloc&) {
    fail(path, "out of memory: the host did not give the " + std::to_string(file_bytes) +
                   " bytes to read the file");
  }
  if (in.bad()) fail(path, std::string("cannot read: ") + std::strerror(errno));
  return parse_npy(bytes, path);
}

std::string serialize_npy(const Tensor& t) {
  std::string dict = "{'descr': '" + std::string(descr_for(t.dtype())) +
                     "', 'fortran_order': False, 'shape': " + shape_repr(t.shape()) + ", }";
  const auto padded_length = [&](size_t prefix_size) {
    const size_t unpadded = prefix_size + dict.size() + 1;
    return dict.size() + 1 + (kHeaderAlignment - unpadded % kHeaderAlignment) % kHeaderAlignment;
  };
  // Version 1.0 stores the header length in 16 bits; numpy moves to 2.0 past that.
  const bool needs_v2 = padded_length(kMagic.size() + 2 + 2) > 0xFFFF;
  const size_t length_width = needs_v2 ? 4 : 2;
  const size_t header_length = padded_length(kMagic.size() + 2 + length_width);
  dict.resize(header_length - 1, ' ');
  dict += '\n';

  std::string out(kMagic);
  out += static_cast<char>(needs_v2 ? 2 : 1);
  out += '\0';
  for (size_t i = 0; i < length_width; ++i) out += static_cast<char>((header_length >> (8 * i)) & 0xFF);
  out += dict;
  out.append(reinterpret_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

// Written to a temporary file beside `path`, then renamed over it, so a failed
// or interrupted write never leaves a truncated result where a good one was.
void write_npy(const std::string& path, const Tensor& t) {
  const std::string bytes = serialize_npy(t);
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(path, std::string("cannot open for writing: ") + std::strerror(errno));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      int err = errno;
      std::remove(tmp.c_str());
      fail(path, std::string("cannot write: ") + std::strerror(err));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    fail(path, std::string("cannot write: ") + std::strerror(err));
  }
}

}  // namespace stitch
