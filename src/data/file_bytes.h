// Internal helpers shared by the dataset readers and the fuzz targets: whole-file reading, gzip
// decompression with an output cap, and error throwing with a hint.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace ember::data::internal {

// Default cap on decompressed output: far above any dataset file we read, far below what a forged
// gzip header or a zip bomb could make us allocate.
inline constexpr uint64_t kMaxGunzipBytes = uint64_t{4} << 30;

// The hint given whenever a dataset file looks truncated or corrupt.
inline constexpr const char* kRedownloadHint =
    "the file is incomplete or corrupt: download it again (e.g. `ember data fetch fashion-mnist`)";

// True when bytes start with the gzip magic 1f 8b.
bool is_gzip(std::span<const uint8_t> bytes);

// Decompresses every concatenated gzip member of `compressed`. Throws DataError naming
// source_name on truncated or corrupt data, trailing bytes that are not a gzip member, or output
// larger than max_output bytes.
std::vector<uint8_t> gunzip(std::span<const uint8_t> compressed, const std::string& source_name,
                            uint64_t max_output = kMaxGunzipBytes);

struct FileBytes {
  std::vector<uint8_t> data;
  bool was_gzip = false;  // data is the decompressed content
};
FileBytes read_file(const std::filesystem::path& path, bool gunzip_if_gzip);

// The first max_count bytes as "1f 8b 08".
std::string hex_bytes(std::span<const uint8_t> bytes, size_t max_count);

// "1.5 MiB"-style size for messages.
std::string format_bytes(uint64_t n);

[[noreturn]] void throw_data_error(const std::string& msg, const std::string& hint = {});
[[noreturn]] void throw_io_error(const std::string& msg, const std::string& hint = {});
[[noreturn]] void throw_value_error(const std::string& msg, const std::string& hint = {});

}  // namespace ember::data::internal
