// Internal helpers shared by the dataset readers and the fuzz targets: whole-file reading (through
// io::read_user_file), gzip decompression that grows with the data and stops at what the format's
// header promises, and error throwing with a hint.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ember/io/user_file.h"

namespace ember::data::internal {

// Default cap on decompressed output: far above any dataset file we read, far below what a forged
// gzip header or a zip bomb could make us allocate.
inline constexpr uint64_t kMaxGunzipBytes = uint64_t{4} << 30;

// The hint given whenever a dataset file looks truncated or corrupt.
inline constexpr const char* kRedownloadHint =
    "the file is incomplete or corrupt: download it again (e.g. `ember data fetch fashion-mnist`)";

// True when bytes start with the gzip magic 1f 8b.
bool is_gzip(std::span<const uint8_t> bytes);

// What a format's header, read from the first decompressed bytes, says about the whole output.
struct SizePromise {
  enum class Status {
    need_more,        // the prefix is too short to tell
    known,            // bytes is the exact decompressed size the header promises
    not_this_format,  // the header is invalid: stop decompressing, let the parser report it
  };
  Status status = Status::need_more;
  uint64_t bytes = 0;
  std::string source;  // known: who promises it, for messages ("the IDX header (dims 3 x 4 x 4)")
};
using SizePromiseFn = std::function<SizePromise(std::span<const uint8_t> prefix)>;

// Decompresses every concatenated gzip member of `compressed`. The output buffer starts small and
// grows as data arrives (never sized from the gzip trailer's ISIZE, which a truncated or forged file
// sets at will), up to max_output bytes, or up to the size `promise` reads from the first
// decompressed bytes. With not_this_format, the prefix decompressed so far is returned for the
// parser to reject. Throws DataError naming source_name on truncated or corrupt data, trailing bytes
// that are not a gzip member, output larger than max_output, or output longer than promised.
std::vector<uint8_t> gunzip(std::span<const uint8_t> compressed, const std::string& source_name,
                            uint64_t max_output = kMaxGunzipBytes, const SizePromiseFn& promise = {});

// The IDX promise (defined in idx.cpp): the header plus the product of the dims, decided from the
// first 4 + 4 * ndim decompressed bytes; not_this_format for a header parse_idx would reject.
SizePromise idx_size_promise(std::span<const uint8_t> prefix);

struct FileBytes {
  std::vector<uint8_t> data;
  bool was_gzip = false;  // data is the decompressed content
};
// A dataset file read through io::read_user_file (regular files only, io::kDatasetFile's cap),
// decompressed when gunzip_if_gzip and the content starts with 1f 8b.
FileBytes read_file(const std::filesystem::path& path, bool gunzip_if_gzip, const SizePromiseFn& promise = {});

// The first max_count bytes as "1f 8b 08".
std::string hex_bytes(std::span<const uint8_t> bytes, size_t max_count);

// "1.5 MiB"-style size for messages.
using io::format_bytes;

[[noreturn]] void throw_data_error(const std::string& msg, const std::string& hint = {});
[[noreturn]] void throw_io_error(const std::string& msg, const std::string& hint = {});
[[noreturn]] void throw_value_error(const std::string& msg, const std::string& hint = {});

}  // namespace ember::data::internal
