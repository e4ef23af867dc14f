// safetensors reader/writer on raw bytes (no Tensor dependency), hardened against corrupt and
// hostile files. Format: 8-byte little-endian header length N, N bytes of JSON, then the data
// buffer. Spec: huggingface/safetensors README; error categories follow the Rust SafeTensorError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/error.h"

namespace ember::io {

// Declaration order matches the Rust reference's Dtype order (smallest item first); the writer lays
// out data by descending order, then by name, exactly as the Python package does.
enum class StDType { BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64 };

size_t st_dtype_size(StDType dtype);            // bytes per element: 1, 2, 4 or 8
std::string_view st_dtype_name(StDType dtype);  // "F32", "BF16", ... as the spec spells them
std::optional<StDType> st_dtype_from_name(std::string_view name);  // nullopt for unknown names

// The failure categories of the Rust reference, one-to-one.
enum class StErrorKind {
  HeaderTooSmall,                // file shorter than the 8-byte length prefix
  InvalidHeaderLength,           // N runs past the end of the file
  HeaderTooLarge,                // N > 100 MB (kStMaxHeaderSize)
  InvalidHeader,                 // header bytes are not valid UTF-8
  InvalidHeaderStart,            // header does not start with '{'
  InvalidHeaderDeserialization,  // not JSON, not an object, NUL bytes, duplicate keys, bad field types
  TensorInvalidInfo,             // data_offsets span != numel * itemsize
  InvalidOffset,                 // begin > end, end past the buffer, overlapping ranges
  MetadataIncompleteBuffer,      // a gap between tensors, or bytes after the last one
  ValidationOverflow,            // shape product * itemsize does not fit in 64 bits
};
std::string_view st_error_kind_name(StErrorKind kind);

// Thrown by st_parse / st_load for malformed files. what() reads
// "safetensors: <source>: <Kind>: <detail>", so the category is greppable in logs too.
class SafetensorsError : public FormatError {
 public:
  SafetensorsError(StErrorKind kind, const std::string& msg) : FormatError(msg), kind_(kind) {}
  StErrorKind kind() const noexcept { return kind_; }

 private:
  StErrorKind kind_;
};

// A dtype the safetensors format has and ember does not read (F8_E4M3, F8_E5M2, F8_E8M0, F4,
// F6_E2M3, F6_E3M2, C64): the file is not damaged, so callers say "unsupported", not "corrupt".
// Its kind() is InvalidHeaderDeserialization, as for an unknown dtype.
class SafetensorsDTypeError : public SafetensorsError {
 public:
  SafetensorsDTypeError(const std::string& msg, std::string tensor, std::string dtype)
      : SafetensorsError(StErrorKind::InvalidHeaderDeserialization, msg), tensor_(std::move(tensor)),
        dtype_(std::move(dtype)) {}
  const std::string& tensor() const noexcept { return tensor_; }
  const std::string& dtype() const noexcept { return dtype_; }

 private:
  std::string tensor_, dtype_;
};

inline constexpr uint64_t kStMaxHeaderSize = 100'000'000;

struct StTensor {
  std::string name;
  StDType dtype = StDType::F32;
  std::vector<int64_t> shape;  // empty = 0-dim scalar (one element); a 0 dim = no elements
  std::vector<uint8_t> data;   // little-endian, row-major, contiguous; size = numel * itemsize
};

struct StFile {
  std::vector<StTensor> tensors;  // st_parse returns them sorted by name
  std::map<std::string, std::string> metadata;  // "__metadata__"; omitted from the file when empty
  const StTensor* find(std::string_view name) const;  // nullptr when absent
};

// Header: compact JSON with every object's keys sorted (== Python json.dumps(sort_keys=True,
// separators=(",", ":"), ensure_ascii=False)), space-padded so 8 + N is a multiple of 8.
// Data: ordered by dtype size descending, then name, so every tensor is aligned to its itemsize.
// Throws ValueError for a file that cannot be written (duplicate or reserved name, negative dim,
// data size != numel * itemsize, names or metadata that are not valid UTF-8).
std::vector<uint8_t> st_serialize(const StFile& file);

// Validates the header completely (sizes, JSON, keys, dtypes, shapes, offsets) before allocating any
// tensor; throws SafetensorsError naming `source_name`. Offsets need not be aligned (data is memcpy'd).
StFile st_parse(std::span<const uint8_t> bytes, const std::string& source_name);

// Reads the whole file (through read_user_file: a regular file of at most kCheckpointFile's cap) and
// parses it. IOError when it cannot be read or is not a regular file, SafetensorsError when malformed.
StFile st_load(const std::filesystem::path& path);

// st_serialize + write_file_atomic: the previous file survives any failure.
void st_save(const std::filesystem::path& path, const StFile& file);

}  // namespace ember::io
