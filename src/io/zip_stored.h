// The entries of a zip archive held in memory, for torch.save files (src/io/pth.cpp). Only stored
// (uncompressed) entries can be read: torch's writer (miniz in PyTorchStreamWriter) never
// compresses, so a small reader of the central directory is all a .pth needs (see zip_stored.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

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

}  // namespace ember::io
