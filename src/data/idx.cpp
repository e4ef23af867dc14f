// IDX reader (the MNIST family's format: magic 00 00 <type> <ndim>, ndim big-endian uint32 dims,
// then the row-major payload) and the image/label pairing on top of it. Every size is checked
// against the bytes actually present before anything is allocated from a header value.
#include <iomanip>

#include "data/file_bytes.h"
#include "ember/core/error.h"
#include "ember/data/readers.h"

namespace ember::data {
namespace {

using internal::kRedownloadHint;
using internal::throw_data_error;

constexpr uint8_t kTypeUint8 = 0x08;
constexpr int kMaxDims = 4;

const char* idx_type_name(uint8_t type) {
  switch (type) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
    default: return "not an IDX type";
  }
}

std::string hex32(uint32_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << std::setw(8) << std::setfill('0') << v;
  return os.str();
}

uint32_t read_be32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}

// "0x00000801 (labels, 1 dimension)"
std::string describe_magic(uint32_t magic) {
  const int ndim = static_cast<int>(magic & 0xff);
  std::string kind = ndim == 1 ? "labels, " : ndim == 3 ? "images, " : "";
  return detail::cat(hex32(magic), " (", kind, ndim, ndim == 1 ? " dimension" : " dimensions", ")");
}

// "1 byte", "2 bytes"
std::string bytes_count(uint64_t n) { return detail::cat(n, n == 1 ? " byte" : " bytes"); }

std::string dims_text(const std::vector<int64_t>& dims) {
  std::ostringstream os;
  for (size_t i = 0; i < dims.size(); ++i) os << (i ? " x " : "") << dims[i];
  return os.str();
}

std::string first_bytes_hint(std::span<const uint8_t> bytes) {
  if (internal::is_gzip(bytes)) return "this is gzip data: read it with read_idx(), which decompresses it";
  if (bytes.size() >= 1 && bytes[0] == '<')
    return "this looks like an HTML/XML page, probably a failed download: download the file again";
  return "expected an IDX file such as train-images-idx3-ubyte(.gz)";
}

// Whether `magic` is magic of an uint8 IDX header (for the pairing messages).
uint32_t magic_of(const IdxArray& a) { return (uint32_t{kTypeUint8} << 8) | static_cast<uint32_t>(a.dims.size()); }

}  // namespace

namespace internal {

// What the IDX header at the start of decompressed data promises: the header plus the product of
// the dims, so a .gz is decompressed into no more than that (see internal::gunzip). An invalid
// header stops decompression early; parse_idx then says what is wrong with it.
SizePromise idx_size_promise(std::span<const uint8_t> prefix) {
  using Status = SizePromise::Status;
  if (prefix.size() < 4) return {};
  const int ndim = prefix[3];
  if (prefix[0] != 0 || prefix[1] != 0 || prefix[2] != kTypeUint8 || ndim < 1 || ndim > kMaxDims)
    return {Status::not_this_format, 0, {}};
  const size_t header = 4 + 4 * static_cast<size_t>(ndim);
  if (prefix.size() < header) return {};
  std::vector<int64_t> dims;
  uint64_t total = 1;
  for (int i = 0; i < ndim; ++i) {
    dims.push_back(read_be32(prefix.data() + 4 + 4 * i));
    if (__builtin_mul_overflow(total, uint64_t(dims.back()), &total)) return {Status::not_this_format, 0, {}};
  }
  if (__builtin_add_overflow(total, uint64_t{header}, &total)) return {Status::not_this_format, 0, {}};
  return {Status::known, total, detail::cat("the IDX header (dims ", dims_text(dims), ")")};
}

}  // namespace internal

IdxArray parse_idx(std::span<const uint8_t> bytes, const std::string& name) {
  const size_t size = bytes.size();
  if (size == 0) {
    throw_data_error(
        detail::cat(name, ": empty file (0 bytes), expected an IDX file (4-byte magic number, dims, data)"),
                     kRedownloadHint);
  }
  if (size < 4) {
    throw_data_error(detail::cat(name, ": file too short: ", size,
                                 " bytes, expected at least the 4-byte IDX magic number"),
                     kRedownloadHint);
  }
  const uint32_t magic = read_be32(bytes.data());
  if (bytes[0] != 0 || bytes[1] != 0) {
    throw_data_error(detail::cat(name, ": not an IDX file: magic number ", hex32(magic), " (bytes ",
                                 internal::hex_bytes(bytes, 4), ") where the first two bytes must be 00 00"),
                     first_bytes_hint(bytes));
  }
  const uint8_t type = bytes[2];
  if (type != kTypeUint8) {
    throw_data_error(detail::cat(name, ": unsupported IDX element type 0x", internal::hex_bytes(bytes.subspan(2), 1),
                                 " (", idx_type_name(type),
                                 ") at byte offset 2; only 0x08 (unsigned byte) is supported"),
                     "ember reads uint8 IDX files (MNIST, Fashion-MNIST, KMNIST, EMNIST)");
  }
  const int ndim = bytes[3];
  if (ndim < 1 || ndim > kMaxDims) {
    throw_data_error(detail::cat(name, ": IDX header (magic ", hex32(magic), ") has ", ndim,
                                 " dimensions at byte offset 3; expected 1 to ", kMaxDims),
                     ndim == 0 ? kRedownloadHint : "");
  }
  const size_t header = 4 + 4 * static_cast<size_t>(ndim);
  if (size < header) {
    throw_data_error(detail::cat(name, ": truncated IDX header: ", size, " bytes, but a header with ", ndim,
                                 " dimensions needs ", header, " bytes"),
                     kRedownloadHint);
  }

  IdxArray out;
  out.dims.resize(static_cast<size_t>(ndim));
  uint64_t numel = 1;
  bool overflow = false;
  for (int i = 0; i < ndim; ++i) {
    const uint32_t d = read_be32(bytes.data() + 4 + 4 * i);
    out.dims[i] = d;
    if (!overflow && __builtin_mul_overflow(numel, uint64_t{d}, &numel)) overflow = true;
  }
  if (overflow) {
    throw_data_error(detail::cat(name, ": IDX dims ", dims_text(out.dims),
                                 " (header bytes 4..", header - 1, ") overflow: their product exceeds 2^64"),
                     kRedownloadHint);
  }
  // Compare with what is present before allocating anything from the header.
  const uint64_t payload = size - header;
  if (numel != payload) {
    std::string detail_text =
        numel > payload
            ? detail::cat(bytes_count(numel - payload), " short: the data ends at byte offset ", size,
                          ", expected it to end at ", uint64_t{header} + numel)
            : detail::cat(bytes_count(payload - numel), " extra after the data, starting at byte offset ",
                          header + numel);
    throw_data_error(detail::cat(name, ": IDX dims ", dims_text(out.dims), " need ", numel,
                                 " data bytes after the ", header, "-byte header (", uint64_t{header} + numel,
                                 " bytes in all), but the file has ", size, " bytes: ", detail_text),
                     kRedownloadHint);
  }
  out.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return out;
}

IdxArray read_idx(const std::filesystem::path& path) {
  internal::FileBytes file = internal::read_file(path, /*gunzip_if_gzip=*/true, internal::idx_size_promise);
  // Offsets in messages refer to the decompressed bytes: say so.
  return parse_idx(file.data, file.was_gzip ? path.string() + " (decompressed)" : path.string());
}

LabeledImages load_idx_pair(const std::filesystem::path& images_path, const std::filesystem::path& labels_path,
                            int64_t num_classes) {
  if (num_classes < 1 || num_classes > 256) {
    internal::throw_value_error(
        detail::cat("load_idx_pair: num_classes ", num_classes, " is out of range; uint8 labels allow 1 to 256"));
  }
  const std::string swap_hint = "did you swap the images and labels paths?";
  IdxArray images = read_idx(images_path);
  const size_t ind = images.dims.size();
  if (ind != 3 && ind != 4) {
    throw_data_error(detail::cat(images_path.string(), ": not an IDX image file: magic number ",
                                 describe_magic(magic_of(images)), " where ", describe_magic(0x803),
                                 " was expected (or 4 dimensions: N, C, H, W)"),
                     ind == 1 ? swap_hint : "");
  }
  IdxArray labels = read_idx(labels_path);
  if (labels.dims.size() != 1) {
    throw_data_error(detail::cat(labels_path.string(), ": not an IDX label file: magic number ",
                                 describe_magic(magic_of(labels)), " where ", describe_magic(0x801), " was expected"),
                     swap_hint);
  }

  LabeledImages out;
  out.n = images.dims[0];
  out.c = ind == 4 ? images.dims[1] : 1;
  out.h = images.dims[ind - 2];
  out.w = images.dims[ind - 1];
  out.num_classes = num_classes;
  if (out.n != labels.dims[0]) {
    throw_data_error(detail::cat(images_path.string(), " has ", out.n, " images but ", labels_path.string(), " has ",
                                 labels.dims[0], " labels; they must match"),
                     "use the images and labels files of the same split (train-* with train-*, t10k-* with t10k-*)");
  }
  if (out.n == 0) throw_data_error(detail::cat(images_path.string(), ": contains 0 images"));
  if (out.c == 0 || out.h == 0 || out.w == 0) {
    throw_data_error(detail::cat(images_path.string(), ": images of size ", out.c, " x ", out.h, " x ", out.w,
                                 " (C x H x W) have no pixels"));
  }
  out.labels.resize(labels.data.size());
  for (size_t i = 0; i < labels.data.size(); ++i) {
    const uint8_t v = labels.data[i];
    if (v >= num_classes) {
      throw_data_error(detail::cat(labels_path.string(), ": label ", int{v}, " at index ", i, " (byte offset ", 8 + i,
                                   ") is out of range for ", num_classes, " classes (expected 0 to ", num_classes - 1,
                                   ")"),
                       "check num_classes, or that this labels file belongs to this dataset");
    }
    out.labels[i] = v;
  }
  out.images = std::move(images.data);
  return out;
}

}  // namespace ember::data
