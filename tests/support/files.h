// File helpers shared by the unit tests: scratch directories, byte and text files, and the IDX,
// gzip and PNG writers of the data tests (which also get support/errors.h's expect_error).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/errors.h"

namespace ember::test {

using Bytes = std::vector<uint8_t>;

class TempDir {
 public:
  explicit TempDir(const std::string& tag = "test") {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("ember_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  // The sorted names of the directory's entries.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::filesystem::path& p, const Bytes& b) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}
inline void write_text(const std::filesystem::path& p, const std::string& s) {
  write_bytes(p, Bytes(s.begin(), s.end()));
}
inline Bytes read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// IDX bytes: 00 00 08 ndim, big-endian dims, payload.
inline Bytes make_idx(const std::vector<uint32_t>& dims, const Bytes& payload) {
  Bytes b = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(d >> s));
  }
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

// n 28x28 images in Fashion-MNIST's file names (<split>-images-idx3-ubyte, -labels-idx1-ubyte)
// whose label picks a bright horizontal band: a dataset a training run learns in a few steps.
inline void write_band_split(const std::filesystem::path& dir, const std::string& split, uint32_t n) {
  Bytes images, labels;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t label = (i * 7 + 3) % 10;
    for (uint32_t r = 0; r < 28; ++r)
      for (uint32_t c = 0; c < 28; ++c)
        images.push_back(static_cast<uint8_t>(r / 3 == label ? 200 + (i + c) % 50 : (i * 31 + r * 7 + c) % 40));
    labels.push_back(static_cast<uint8_t>(label));
  }
  write_bytes(dir / (split + "-images-idx3-ubyte"), make_idx({n, 28, 28}, images));
  write_bytes(dir / (split + "-labels-idx1-ubyte"), make_idx({n}, labels));
}

// One gzip member (zlib's deflate with the gzip wrapper) at the given compression level.
inline Bytes gzip_bytes(const Bytes& in, int level = 6) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  Bytes out(deflateBound(&zs, uLong(in.size())) + 32);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// A PNG written by hand (8-bit grey or RGB, filter 0 on every row), so the tests do not depend on
// stb_image_write. pixels: (h, w, channels) interleaved.
inline Bytes make_png(int w, int h, int channels, const Bytes& pixels) {
  auto be32 = [](Bytes& b, uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(v >> s));
  };
  Bytes png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  auto chunk = [&](const char* type, const Bytes& data) {
    be32(png, uint32_t(data.size()));
    Bytes td(type, type + 4);
    td.insert(td.end(), data.begin(), data.end());
    png.insert(png.end(), td.begin(), td.end());
    be32(png, uint32_t(crc32(0, td.data(), uInt(td.size()))));
  };
  Bytes ihdr;
  be32(ihdr, uint32_t(w));
  be32(ihdr, uint32_t(h));
  ihdr.insert(ihdr.end(), {8, uint8_t(channels == 3 ? 2 : 0), 0, 0, 0});
  chunk("IHDR", ihdr);
  Bytes raw;
  for (int y = 0; y < h; ++y) {
    raw.push_back(0);
    raw.insert(raw.end(), pixels.begin() + y * w * channels, pixels.begin() + (y + 1) * w * channels);
  }
  uLongf n = compressBound(uLong(raw.size()));
  Bytes z(n);
  EXPECT_EQ(compress(z.data(), &n, raw.data(), uLong(raw.size())), Z_OK);
  z.resize(n);
  chunk("IDAT", z);
  chunk("IEND", {});
  return png;
}

}  // namespace ember::test
