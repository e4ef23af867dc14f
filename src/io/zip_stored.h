// The entries of a zip archive held in memory, for torch.save files (src/io/pth.cpp), and the writer
// of one (pth_serialize). Only stored (uncompressed) entries: torch's writer (miniz in
// PyTorchStreamWriter) never compresses, so a small reader of the central directory and a small
// writer are all a .pth needs (see zip_stored.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ember::io {

struct ZipEntry {
  uint64_t offset = 0;  // of the entry's data in the archive
  uint64_t size = 0;    // bytes (stored: compressed == uncompressed)
  uint16_t method = 0;  // 0 stored; anything else cannot be read (zip_read says so)
};

// name -> entry, from the central directory (zip64 records included). Every offset and size is
// checked against the buffer. Throws PthError(Archive) naming `source`.
std::map<std::string, ZipEntry> zip_list(std::span<const uint8_t> bytes, const std::string& source);

// The bytes of a stored entry (a view into `bytes`); PthError(Archive) for a compressed one.
std::span<const uint8_t> zip_read(std::span<const uint8_t> bytes, const std::string& name, const ZipEntry& e,
                                  const std::string& source);

// A zip archive of stored entries, in the given order, each entry's data starting at a multiple
// of 64 bytes (padding in the local header's extra field, as PyTorchStreamWriter aligns them so
// torch.load(mmap=True) can map them). CRC-32 filled in. No zip64: ValueError when the archive
// would reach 4 GiB.
std::vector<uint8_t> zip_write_stored(const std::vector<std::pair<std::string, std::vector<uint8_t>>>& entries);

// The zip format's CRC-32 (polynomial 0xEDB88320).
uint32_t zip_crc32(std::span<const uint8_t> data);

}  // namespace ember::io
