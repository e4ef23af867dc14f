// A decompression bomb for the pixel-budget tests: a valid W x H 8-bit grey PNG of zeros, deflated
// row by row with zlib, so a 20000 x 20000 image (400 MB of pixels) is a few hundred KB on disk and
// takes well under a second to write. Depends on zlib and the standard library only (the unit and
// the end-to-end tests both include it).
#pragma once

#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

namespace ember::test {

// Returns false when zlib fails or the file cannot be written.
inline bool write_zero_png(const std::filesystem::path& path, uint32_t width, uint32_t height) {
  using Bytes = std::vector<uint8_t>;
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
  be32(ihdr, width);
  be32(ihdr, height);
  ihdr.insert(ihdr.end(), {8, 0, 0, 0, 0});  // 8-bit grey, deflate, filter 0, no interlace
  chunk("IHDR", ihdr);
  // Each row: filter byte 0, then `width` zero pixels.
  const Bytes row(size_t(width) + 1, 0);
  z_stream zs{};
  if (deflateInit(&zs, Z_BEST_COMPRESSION) != Z_OK) return false;
  Bytes idat, buf(1 << 16);
  for (uint32_t y = 0; y <= height; ++y) {
    const bool last = y == height;
    zs.next_in = const_cast<Bytef*>(row.data());
    zs.avail_in = last ? 0 : uInt(row.size());
    int rc = Z_OK;
    do {
      zs.next_out = buf.data();
      zs.avail_out = uInt(buf.size());
      rc = deflate(&zs, last ? Z_FINISH : Z_NO_FLUSH);
      if (rc == Z_STREAM_ERROR) {
        deflateEnd(&zs);
        return false;
      }
      idat.insert(idat.end(), buf.begin(), buf.begin() + std::ptrdiff_t(buf.size() - zs.avail_out));
    } while (zs.avail_out == 0 || (last && rc != Z_STREAM_END));
  }
  deflateEnd(&zs);
  chunk("IDAT", idat);
  chunk("IEND", {});
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(png.data()), std::streamsize(png.size()));
  return bool(out);
}

}  // namespace ember::test
