// A one-file photo dataset, as FFCV's .beton: every picture of a folder written once, shrunk to a
// maximum side and re-encoded (JPEG) or stored raw, with labels, class names, an index and a
// checksum. `ember data cache DIR -o photos.ember` writes one; `ember train --data photos.ember`
// memory-maps it, so an epoch reads no small files and decodes small pictures.
//
// File layout (integers little-endian):
//   header, 64 bytes: "EMBDSET1" | u32 version (1) | u32 reserved | u64 count | u64 data_offset (64)
//                     | u64 index_offset | u64 meta_offset | u64 meta_size | u64 reserved
//   data:             the pictures' bytes, one after another
//   index:            count x 32 bytes: u64 offset | u32 size | u32 label | u32 width | u32 height
//                     | u32 encoding (0 JPEG, 1 raw RGB) | u32 the source file's channels (1 grey,
//                     3 colour; 0 in caches written before it was recorded: read as colour), so a
//                     cache of grey pictures trains as grey as its folder does
//   meta:             JSON: classes, max_side, encoding, quality, source folder, ember version
//   footer, 40 bytes: "EMBDSEND" | SHA-256 of every byte before the footer
// A reader checks the magic, the sizes against the file, every index entry against the data
// region and the checksum, and names what is wrong (a truncated file, a foreign file, a flipped
// byte) before anything is decoded.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ember/data/decode.h"
#include "ember/data/image.h"

namespace ember::data {

struct PhotoCacheOptions {
  int64_t max_side = 256;    // pictures larger than this on their longer side are shrunk to it
  int jpeg_quality = 90;     // re-encoding quality (1..100)
  bool raw = false;          // store decoded RGB instead of JPEG (larger, no decode per sample)
  int workers = 2;           // decode/resize/encode threads
  int64_t max_pixels = kMaxImagePixels;  // per source picture, checked on its header
};

struct PhotoCacheReport {
  int64_t written = 0, resumed = 0;     // pictures written this time, and taken from a partial file
  std::vector<std::string> skipped;     // "<file>: why" for pictures that could not be read
  uint64_t bytes = 0;                   // the file's size
};

// Writes the folder `root` (root/<class>/<file>, as image folders are listed) to `out`. Resumable:
// the work goes to `out` + ".partial" with a progress record beside it; a rerun with the same
// folder and options continues where an interrupted one stopped; the finished file replaces `out`
// atomically. `progress` (may be empty) is called after each chunk with (done, total).
PhotoCacheReport write_photo_cache(const std::filesystem::path& root, const std::filesystem::path& out,
                                   const PhotoCacheOptions& opt,
                                   const std::function<void(int64_t, int64_t)>& progress = {});

// True when the file starts with the cache's magic (cheap: reads 8 bytes).
bool is_photo_cache(const std::filesystem::path& file);

class PhotoCache {
 public:
  // Maps and checks the file (see the layout above). Throws IOError (unreadable) or DataError
  // naming the file and what is wrong, with how to fix it (rebuild it with `ember data cache`).
  explicit PhotoCache(const std::filesystem::path& file);
  ~PhotoCache();
  PhotoCache(const PhotoCache&) = delete;
  PhotoCache& operator=(const PhotoCache&) = delete;

  int64_t size() const { return int64_t(entries_.size()); }
  const std::vector<std::string>& classes() const { return classes_; }
  int64_t label(int64_t i) const;
  // The stored bytes of picture i (JPEG or raw RGB) and how it is stored.
  std::span<const uint8_t> bytes(int64_t i) const;
  bool raw(int64_t i) const;
  // Picture i's stored size, and whether its source file was grey (a grey JPEG or PNG; the cache
  // stores every picture as RGB).
  int64_t width(int64_t i) const;
  int64_t height(int64_t i) const;
  bool source_grey(int64_t i) const;
  // Picture i decoded to RGB.
  Image picture(int64_t i) const;
  const std::filesystem::path& path() const { return path_; }
  int64_t max_side() const { return max_side_; }

 private:
  struct Entry {
    uint64_t offset = 0;
    uint32_t size = 0, label = 0, width = 0, height = 0, encoding = 0, source_channels = 0;
  };
  std::filesystem::path path_;
  const uint8_t* map_ = nullptr;
  size_t map_size_ = 0;
  std::vector<Entry> entries_;
  std::vector<std::string> classes_;
  int64_t max_side_ = 0;
};

// The cache's pictures read straight from a buffer, for the fuzzer: the same checks as the
// constructor, on `bytes` (no file). Throws DataError.
void check_photo_cache_bytes(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace ember::data
