// The one-file photo dataset: writer (parallel, resumable) and memory-mapped reader; see
// photo_cache.h for the layout.
#include "ember/data/photo_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "ember/core/error.h"
#include "ember/data/dataset.h"
#include "ember/data/decode.h"
#include "ember/data/photo_transforms.h"
#include "ember/io/atomic_file.h"
#include "ember/io/user_file.h"
#include "data/photo_cache_format.h"

namespace ember::data {
namespace fs = std::filesystem;
namespace {

constexpr int64_t kChunk = 64;  // pictures per parallel chunk (and per progress record)

// One source picture, ready to append.
struct Blob {
  std::vector<uint8_t> bytes;
  uint32_t width = 0, height = 0, encoding = 0, source_channels = 3;
};

Blob encode(const fs::path& file, const PhotoCacheOptions& opt) {
  const std::vector<uint8_t> src = io::read_user_file(file, io::kImageFile);
  DecodeOptions d;
  d.channels = 3;
  d.max_pixels = opt.max_pixels;
  // Grey as an image folder counts it (image_folder_splits.cpp: the header's channels, alpha aside).
  const uint32_t source_channels = probe_image(src, file.string()).channels_in_file >= 3 ? 3 : 1;
  Image pic = decode_image(src, d, file.string());
  const int64_t longer = std::max(pic.width, pic.height);
  if (longer > opt.max_side) {
    const double s = double(opt.max_side) / double(longer);
    const int64_t w = std::max<int64_t>(1, std::llround(double(pic.width) * s));
    const int64_t h = std::max<int64_t>(1, std::llround(double(pic.height) * s));
    pic = resize(pic, h, w);
  }
  Blob b;
  b.width = uint32_t(pic.width), b.height = uint32_t(pic.height);
  b.source_channels = source_channels;
  if (opt.raw) {
    b.encoding = 1;
    b.bytes = std::move(pic.pixels);
    return b;
  }
  tjhandle h = tjInitCompress();
  if (!h) throw OutOfMemoryError("TurboJPEG: cannot create a compressor", "check the memory available");
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(h, pic.pixels.data(), int(pic.width), 0, int(pic.height), TJPF_RGB, &jpeg, &size,
                             TJSAMP_420, opt.jpeg_quality, 0);
  if (rc != 0) {
    const std::string why = tjGetErrorStr2(h);
    tjFree(jpeg);
    tjDestroy(h);
    throw DataError(file.string() + ": cannot re-encode it as JPEG (" + why + ")", "store it raw with --raw");
  }
  b.bytes.assign(jpeg, jpeg + size);
  tjFree(jpeg);
  tjDestroy(h);
  return b;
}

nlohmann::json job_of(const fs::path& root, const PhotoCacheOptions& opt, int64_t count) {
  return {{"source", fs::absolute(root).lexically_normal().string()},
          {"max_side", opt.max_side},
          {"quality", opt.jpeg_quality},
          {"raw", opt.raw},
          {"count", count}};
}

}  // namespace

bool is_photo_cache(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  char m[8] = {};
  return in.read(m, 8) && std::memcmp(m, kMagic, 8) == 0;
}

PhotoCacheReport write_photo_cache(const fs::path& root, const fs::path& out, const PhotoCacheOptions& opt,
                                   const std::function<void(int64_t, int64_t)>& progress) {
  EMBER_CHECK(opt.max_side >= 8 && opt.max_side <= 16384, ValueError, "--max-side must be in [8, 16384], got ",
              opt.max_side);
  EMBER_CHECK(opt.jpeg_quality >= 1 && opt.jpeg_quality <= 100, ValueError, "--jpeg-quality must be in [1, 100], got ",
              opt.jpeg_quality);
  const ImageFolderListing listing = list_image_folder(root);
  EMBER_CHECK(!listing.files.empty(), DataError, "image folder '", root.string(), "': no image files in <class>/");
  const int64_t n = int64_t(listing.files.size());
  const fs::path partial = out.string() + ".partial", record = out.string() + ".partial.json";
  const nlohmann::json job = job_of(root, opt, n);
  PhotoCacheReport rep;
  std::vector<std::array<uint64_t, 7>> entries;
  int64_t done = 0;
  uint64_t data_end = kHeader;
  // A partial file of the same job: continue after its last recorded chunk.
  if (fs::exists(record) && fs::exists(partial)) {
    const nlohmann::json r = nlohmann::json::parse(io::read_user_text(record, io::kManifestFile), nullptr, false);
    if (r.is_object() && r.value("job", nlohmann::json()) == job && fs::file_size(partial) >= r.value("data_end", uint64_t(0))) {
      done = r.value("done", int64_t(0));
      data_end = r.value("data_end", uint64_t(kHeader));
      for (const auto& e : r.value("entries", nlohmann::json::array())) {
        std::vector<uint64_t> v = e.get<std::vector<uint64_t>>();
        v.resize(7, 0);  // a record from before the source's channels were kept: unknown
        entries.push_back({v[0], v[1], v[2], v[3], v[4], v[5], v[6]});
      }
      for (const auto& s : r.value("skipped", nlohmann::json::array())) rep.skipped.push_back(s.get<std::string>());
      rep.resumed = int64_t(entries.size());
    }
  }
  if (done == 0) {
    entries.clear(), rep.skipped.clear(), data_end = kHeader, rep.resumed = 0;
    std::ofstream f(partial, std::ios::binary | std::ios::trunc);
    const std::vector<uint8_t> zeros(kHeader, 0);
    f.write(reinterpret_cast<const char*>(zeros.data()), std::streamsize(zeros.size()));
    if (!f) throw IOError(partial.string() + ": cannot write", "check the disk space and the folder's permissions");
  }
  fs::resize_file(partial, data_end);  // drop what an interrupted chunk wrote after its record
  std::FILE* f = std::fopen(partial.string().c_str(), "r+b");
  if (!f) throw IOError(partial.string() + ": cannot open for writing", "check the folder's permissions");
  std::fseek(f, long(data_end), SEEK_SET);
  const int workers = std::max(1, opt.workers);
  try {
    while (done < n) {
      const int64_t end = std::min(n, done + kChunk);
      std::vector<std::optional<Blob>> blobs(size_t(end - done));
      std::vector<std::string> why(size_t(end - done));
      std::atomic<int64_t> next{done};
      auto work = [&] {
        for (int64_t i; (i = next.fetch_add(1)) < end;) {
          try {
            blobs[size_t(i - done)] = encode(listing.files[size_t(i)].first, opt);
          } catch (const Error& e) {
            why[size_t(i - done)] = reason_naming(listing.files[size_t(i)].first, e.what());
          }
        }
      };
      std::vector<std::thread> pool;
      for (int w = 1; w < workers; ++w) pool.emplace_back(work);
      work();
      for (auto& t : pool) t.join();
      for (int64_t i = done; i < end; ++i) {
        auto& b = blobs[size_t(i - done)];
        if (!b) {
          rep.skipped.push_back(why[size_t(i - done)]);
          continue;
        }
        if (std::fwrite(b->bytes.data(), 1, b->bytes.size(), f) != b->bytes.size())
          throw IOError(partial.string() + ": write failed (disk full?)", "free some space and run it again: it resumes");
        entries.push_back({data_end, b->bytes.size(), uint64_t(listing.files[size_t(i)].second), b->width, b->height,
                           b->encoding, b->source_channels});
        data_end += b->bytes.size();
        ++rep.written;
      }
      if (std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0)
        throw IOError(partial.string() + ": write failed (disk full?)", "free some space and run it again: it resumes");
      done = end;
      nlohmann::json r = {{"job", job}, {"done", done}, {"data_end", data_end}, {"entries", entries},
                          {"skipped", rep.skipped}};
      const std::string text = r.dump();
      io::write_file_atomic(record, std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
      if (progress) progress(done, n);
    }
    if (entries.empty()) throw DataError("no picture of '" + root.string() + "' could be read", "check the folder");
    if (too_many_undecodable(int64_t(rep.skipped.size()), n)) {
      // A rerun must read every file again (the folder is being fixed), not resume these skips.
      std::fclose(f);
      f = nullptr;
      std::error_code ec;
      fs::remove(partial, ec), fs::remove(record, ec);
      throw_too_many_undecodable(detail::cat("image folder '", root.string(), "'"), int64_t(rep.skipped.size()), n,
                                 rep.skipped);
    }
    // Index, metadata, header, then the checksum of all of it as the footer.
    std::vector<uint8_t> tail;
    for (const auto& e : entries) {
      put_u64(tail, e[0]);
      for (int k = 1; k < 7; ++k) put_u32(tail, uint32_t(e[size_t(k)]));
    }
    const nlohmann::json meta = {{"classes", listing.classes}, {"max_side", opt.max_side},
                                 {"encoding", opt.raw ? "raw" : "jpeg"}, {"quality", opt.jpeg_quality},
                                 {"source", job["source"]}, {"skipped", rep.skipped.size()}};
    const std::string mt = meta.dump();
    const uint64_t index_off = data_end, meta_off = index_off + tail.size();
    tail.insert(tail.end(), mt.begin(), mt.end());
    if (std::fwrite(tail.data(), 1, tail.size(), f) != tail.size())
      throw IOError(partial.string() + ": write failed (disk full?)", "free some space and run it again: it resumes");
    std::vector<uint8_t> head(kMagic, kMagic + 8);
    put_u32(head, kVersion), put_u32(head, 0), put_u64(head, entries.size()), put_u64(head, kHeader);
    put_u64(head, index_off), put_u64(head, meta_off), put_u64(head, mt.size()), put_u64(head, 0);
    std::fseek(f, 0, SEEK_SET);
    std::fwrite(head.data(), 1, head.size(), f);
    std::fflush(f);
    std::fclose(f);
    f = nullptr;
  } catch (...) {
    if (f) std::fclose(f);
    throw;
  }
  // The checksum over the finished body, read back once.
  const std::vector<uint8_t> body = io::read_user_file(partial, io::UserFileKind{"photo cache", uint64_t(1) << 40});
  std::vector<uint8_t> footer(kEndMagic, kEndMagic + 8);
  const std::vector<uint8_t> sum = sha256_raw(body);
  footer.insert(footer.end(), sum.begin(), sum.end());
  {
    std::ofstream app(partial, std::ios::binary | std::ios::app);
    app.write(reinterpret_cast<const char*>(footer.data()), std::streamsize(footer.size()));
    app.flush();
    if (!app) throw IOError(partial.string() + ": write failed (disk full?)", "free some space and run it again");
  }
  fs::rename(partial, out);
  std::error_code ec;
  fs::remove(record, ec);
  rep.bytes = fs::file_size(out);
  return rep;
}

void check_photo_cache_bytes(std::span<const uint8_t> bytes, const std::string& name) { (void)parse_photo_cache(bytes, name); }

PhotoCache::PhotoCache(const fs::path& file) : path_(file) {
  io::check_user_file(file, io::UserFileKind{"photo cache", uint64_t(1) << 40});
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IOError(file.string() + ": cannot open for reading: " + std::strerror(errno), "check the path");
  struct stat st {};
  ::fstat(fd, &st);
  map_size_ = size_t(st.st_size);
  if (map_size_ > 0) {
    void* m = ::mmap(nullptr, map_size_, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (m == MAP_FAILED) throw IOError(file.string() + ": cannot map it: " + std::strerror(errno), "check the memory limits");
    map_ = static_cast<const uint8_t*>(m);
  } else {
    ::close(fd);
  }
  try {
    PhotoCacheIndex p = parse_photo_cache(std::span(map_, map_size_), file.string());
    classes_ = std::move(p.classes);
    max_side_ = p.max_side;
    entries_.reserve(p.entries.size());
    for (const auto& e : p.entries)
      entries_.push_back({e[0], uint32_t(e[1]), uint32_t(e[2]), uint32_t(e[3]), uint32_t(e[4]), uint32_t(e[5]),
                          uint32_t(e[6])});
  } catch (...) {
    if (map_) ::munmap(const_cast<uint8_t*>(map_), map_size_);
    map_ = nullptr;
    throw;
  }
}

PhotoCache::~PhotoCache() {
  if (map_) ::munmap(const_cast<uint8_t*>(map_), map_size_);
}

int64_t PhotoCache::label(int64_t i) const {
  EMBER_CHECK(i >= 0 && i < size(), IndexError, "photo cache: picture ", i, " is outside [0, ", size(), ")");
  return entries_[size_t(i)].label;
}

std::span<const uint8_t> PhotoCache::bytes(int64_t i) const {
  EMBER_CHECK(i >= 0 && i < size(), IndexError, "photo cache: picture ", i, " is outside [0, ", size(), ")");
  const Entry& e = entries_[size_t(i)];
  return {map_ + e.offset, e.size};
}

bool PhotoCache::raw(int64_t i) const { return label(i) >= 0 && entries_[size_t(i)].encoding == 1; }
int64_t PhotoCache::width(int64_t i) const { return label(i) >= 0 ? entries_[size_t(i)].width : 0; }
int64_t PhotoCache::height(int64_t i) const { return label(i) >= 0 ? entries_[size_t(i)].height : 0; }
bool PhotoCache::source_grey(int64_t i) const { return label(i) >= 0 && entries_[size_t(i)].source_channels == 1; }

Image PhotoCache::picture(int64_t i) const {
  const std::span<const uint8_t> b = bytes(i);
  const Entry& e = entries_[size_t(i)];
  if (e.encoding == 1) {
    Image img(e.width, e.height, 3);
    std::memcpy(img.pixels.data(), b.data(), b.size());
    return img;
  }
  DecodeOptions d;
  d.channels = 3;
  d.apply_exif = false;  // applied when the cache was written
  return decode_image(b, d, path_.string() + " (picture " + std::to_string(i) + ")");
}

}  // namespace ember::data
