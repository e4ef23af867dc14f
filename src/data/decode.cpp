// The decoding front-end: sniffs the format from the first bytes, reads the header, checks the
// pixel budget before any pixel buffer exists, hands the bytes to the format's decoder and applies
// the EXIF orientation. BMP, GIF (first frame), TGA and PNM go through stb_image here.
#include <stb/stb_image.h>

#include <algorithm>
#include <cstdlib>
#include <cctype>
#include <cstring>
#include <memory>

#include "data/decode_internal.h"
#include "data/file_bytes.h"
#include "ember/core/error.h"
#include "ember/io/user_file.h"

namespace ember::data {
namespace {

enum class Format { Unknown, Jpeg, Png, WebP, Bmp, Gif, Pnm, Tga };

bool starts_with(std::span<const uint8_t> b, const char* magic, size_t offset = 0) {
  const size_t n = std::strlen(magic);
  return b.size() >= offset + n && std::memcmp(b.data() + offset, magic, n) == 0;
}

// TGA has no magic number: its 18-byte header is checked field by field (as stb does).
bool looks_like_tga(std::span<const uint8_t> b) {
  if (b.size() < 18) return false;
  const uint8_t colour_map = b[1], type = b[2], bits = b[16];
  if (colour_map > 1) return false;
  if (type != 1 && type != 2 && type != 3 && type != 9 && type != 10 && type != 11) return false;
  if ((b[12] | b[13]) == 0 || (b[14] | b[15]) == 0) return false;  // width, height 0
  return bits == 8 || bits == 15 || bits == 16 || bits == 24 || bits == 32;
}

Format sniff(std::span<const uint8_t> b) {
  if (b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return Format::Jpeg;
  if (starts_with(b, "\x89PNG\r\n\x1a\n")) return Format::Png;
  if (starts_with(b, "RIFF") && starts_with(b, "WEBP", 8)) return Format::WebP;
  if (starts_with(b, "BM")) return Format::Bmp;
  if (starts_with(b, "GIF87a") || starts_with(b, "GIF89a")) return Format::Gif;
  if (b.size() >= 2 && b[0] == 'P' && (b[1] == '5' || b[1] == '6')) return Format::Pnm;
  if (looks_like_tga(b)) return Format::Tga;
  return Format::Unknown;
}

const char* format_name(Format f) {
  switch (f) {
    case Format::Jpeg: return "JPEG";
    case Format::Png: return "PNG";
    case Format::WebP: return "WebP";
    case Format::Bmp: return "BMP";
    case Format::Gif: return "GIF";
    case Format::Pnm: return "PNM";
    case Format::Tga: return "TGA";
    case Format::Unknown: break;
  }
  return "unknown";
}

[[noreturn]] void throw_unknown_format(std::span<const uint8_t> bytes, const std::string& name) {
  throw DataError(detail::cat(name, ": cannot decode image: expected a PNG, JPEG, WebP, BMP, GIF, TGA or PPM/PGM "
                              "image, found ",
                              bytes.empty() ? std::string("an empty file")
                                            : detail::cat(bytes.size(), " bytes starting ", internal::hex_bytes(bytes, 8))),
                  "convert the file to JPEG or PNG, or remove it from the folder");
}

int stb_size(std::span<const uint8_t> b) { return int(std::min<size_t>(b.size(), INT32_MAX)); }

ImageInfo probe_stb(std::span<const uint8_t> bytes, Format f, const std::string& name) {
  int w = 0, h = 0, c = 0;
  if (!stbi_info_from_memory(bytes.data(), stb_size(bytes), &w, &h, &c)) {
    const char* why = stbi_failure_reason();
    internal::throw_decode_error(name, format_name(f),
                                 detail::cat("its header is corrupt (stb_image: ", why ? why : "unknown error", ")"));
  }
  ImageInfo info;
  info.width = w, info.height = h, info.channels_in_file = c, info.format = format_name(f);
  return info;
}

uint32_t le16(std::span<const uint8_t> b, size_t at) { return uint32_t(b[at]) | uint32_t(b[at + 1]) << 8; }
uint32_t le32(std::span<const uint8_t> b, size_t at) { return le16(b, at) | le16(b, at + 2) << 16; }

// The bytes an uncompressed BMP or TGA needs for its pixels, from its header; 0 when the header does
// not say (compressed, an unknown header): stb_image reads zeros past the end of a cut file and
// returns a picture with a black band, where Pillow refuses the file ("image file is truncated").
uint64_t uncompressed_size(std::span<const uint8_t> b, Format f) {
  if (f == Format::Bmp && b.size() >= 34) {
    const uint32_t off = le32(b, 10), dib = le32(b, 14);
    uint64_t w = 0, h = 0, bpp = 0;
    if (dib == 12) {
      w = le16(b, 18), h = le16(b, 20), bpp = le16(b, 24);
    } else if (dib >= 40) {
      const uint32_t compression = le32(b, 30);
      if (compression != 0 && compression != 3) return 0;  // RLE, JPEG/PNG inside
      w = uint64_t(std::abs(int64_t(int32_t(le32(b, 18))))), h = uint64_t(std::abs(int64_t(int32_t(le32(b, 22)))));
      bpp = le16(b, 28);
    } else {
      return 0;
    }
    return uint64_t(off) + (w * bpp + 31) / 32 * 4 * h;
  }
  if (f == Format::Pnm) {
    // "P5"/"P6", then width, height and maxval as decimal numbers between whitespace and '#'
    // comments, then one whitespace byte and the samples (2 bytes each above maxval 255). stb_image
    // reads past the end of a cut 16-bit file (found by fuzz_decode), so the size is checked here.
    size_t at = 2;
    uint64_t v[3] = {0, 0, 0};
    for (int k = 0; k < 3; ++k) {
      while (at < b.size() && (std::isspace(b[at]) || b[at] == '#')) {
        if (b[at] == '#')
          while (at < b.size() && b[at] != '\n') ++at;
        else
          ++at;
      }
      if (at >= b.size() || !std::isdigit(b[at])) return uint64_t(-1);  // a header cut short: refused
      while (at < b.size() && std::isdigit(b[at]) && v[k] < (uint64_t(1) << 32)) v[k] = v[k] * 10 + (b[at++] - '0');
    }
    const uint64_t channels = b[1] == '6' ? 3 : 1, bytes_per = v[2] > 255 ? 2 : 1;
    if (v[0] >= (uint64_t(1) << 24) || v[1] >= (uint64_t(1) << 24)) return uint64_t(-1);
    return at + 1 + v[0] * v[1] * channels * bytes_per;
  }
  if (f == Format::Tga && b.size() >= 18) {
    const uint32_t type = b[2];
    if (type != 1 && type != 2 && type != 3) return 0;  // RLE
    const uint64_t cmap = b[1] ? uint64_t(le16(b, 5)) * ((b[7] + 7u) / 8u) : 0;
    return 18 + uint64_t(b[0]) + cmap + uint64_t(le16(b, 12)) * le16(b, 14) * ((b[16] + 7u) / 8u);
  }
  return 0;
}

// stb gives RGB for every file (grey replicated, alpha dropped, a GIF's first frame through its
// palette); grey is then Pillow's convert("L") of that, which leaves a grey file's values as they are.
Image decode_stb(std::span<const uint8_t> bytes, Format f, const DecodeOptions& opt, const std::string& name) {
  if (const uint64_t need = uncompressed_size(bytes, f); need == uint64_t(-1))
    internal::throw_decode_error(name, format_name(f),
                                 "its header is cut short or declares a side of 2^24 pixels or more");
  else if (need > bytes.size())
    internal::throw_decode_error(name, format_name(f),
                                 detail::cat("truncated, the file ends early (", bytes.size(), " bytes of the ", need,
                                             " its header needs)"));
  int w = 0, h = 0, c = 0;
  std::unique_ptr<uint8_t, void (*)(void*)> px(stbi_load_from_memory(bytes.data(), stb_size(bytes), &w, &h, &c, 3),
                                               stbi_image_free);
  if (!px) {
    const char* why = stbi_failure_reason();
    internal::throw_decode_error(name, format_name(f), detail::cat("stb_image: ", why ? why : "unknown error"));
  }
  Image img(w, h, opt.channels);
  const size_t n = size_t(w) * size_t(h);
  if (opt.channels == 3) std::memcpy(img.pixels.data(), px.get(), n * 3);
  else internal::rgb_to_grey(px.get(), img.pixels.data(), n);
  return img;
}

// ImageOps.exif_transpose's methods: 2 FLIP_LEFT_RIGHT, 3 ROTATE_180, 4 FLIP_TOP_BOTTOM,
// 5 TRANSPOSE, 6 ROTATE_270 (a quarter turn clockwise), 7 TRANSVERSE, 8 ROTATE_90. For each output
// pixel (x, y), the input pixel it comes from.
Image apply_orientation(const Image& in, int orientation) {
  if (orientation < 2 || orientation > 8) return in;
  const int64_t W = in.width, H = in.height, C = in.channels;
  const bool swap = orientation >= 5;
  Image out(swap ? H : W, swap ? W : H, C);
  for (int64_t y = 0; y < out.height; ++y) {
    uint8_t* dst = out.row(y);
    for (int64_t x = 0; x < out.width; ++x) {
      int64_t sx = 0, sy = 0;
      switch (orientation) {
        case 2: sx = W - 1 - x, sy = y; break;
        case 3: sx = W - 1 - x, sy = H - 1 - y; break;
        case 4: sx = x, sy = H - 1 - y; break;
        case 5: sx = y, sy = x; break;
        case 6: sx = y, sy = H - 1 - x; break;
        case 7: sx = W - 1 - y, sy = H - 1 - x; break;
        default: sx = W - 1 - y, sy = x; break;  // 8
      }
      const uint8_t* src = in.row(sy) + sx * C;
      for (int64_t c = 0; c < C; ++c) dst[x * C + c] = src[c];
    }
  }
  return out;
}

constexpr const char* kExtensions[] = {".jpg", ".jpeg", ".jpe", ".jfif", ".png", ".webp", ".bmp",
                                       ".gif", ".tga",  ".ppm", ".pgm"};

}  // namespace

namespace internal {

void throw_decode_error(const std::string& name, const char* format, const std::string& why) {
  throw DataError(detail::cat(name, ": cannot decode image: ", format, " data: ", why),
                  "the file is truncated or corrupt: copy or download it again, re-save it with an image editor, or "
                  "remove it from the folder");
}

void rgb_to_grey(const uint8_t* rgb, uint8_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = rgb[3 * i], g = rgb[3 * i + 1], b = rgb[3 * i + 2];
    out[i] = uint8_t((r * 19595u + g * 38470u + b * 7471u + 0x8000u) >> 16);
  }
}

void inverted_cmyk_to_rgb(const uint8_t* cmyk, uint8_t* rgb, size_t n) {
  // Pillow reads the inverted samples back as C = 255 - c (rawmode CMYK;I); then cmyk2rgb.
  auto muldiv255 = [](int a, int b) {
    const int t = a * b + 128;
    return ((t >> 8) + t) >> 8;
  };
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = cmyk + 4 * i;
    const int nk = p[3];  // 255 - K, K = 255 - p[3]
    for (int c = 0; c < 3; ++c) rgb[3 * i + size_t(c)] = uint8_t(std::clamp(nk - muldiv255(255 - p[c], nk), 0, 255));
  }
}

int exif_orientation_from_tiff(std::span<const uint8_t> t) {
  if (t.size() < 8) return 1;
  const bool le = t[0] == 'I' && t[1] == 'I';
  if (!le && !(t[0] == 'M' && t[1] == 'M')) return 1;
  auto u16 = [&](size_t o) -> uint32_t { return le ? uint32_t(t[o] | t[o + 1] << 8) : uint32_t(t[o] << 8 | t[o + 1]); };
  auto u32 = [&](size_t o) -> uint32_t {
    return le ? uint32_t(t[o]) | uint32_t(t[o + 1]) << 8 | uint32_t(t[o + 2]) << 16 | uint32_t(t[o + 3]) << 24
              : uint32_t(t[o]) << 24 | uint32_t(t[o + 1]) << 16 | uint32_t(t[o + 2]) << 8 | uint32_t(t[o + 3]);
  };
  if (u16(2) != 42) return 1;
  const uint64_t ifd = u32(4);
  if (ifd + 2 > t.size()) return 1;
  const uint32_t count = u16(size_t(ifd));
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t e = ifd + 2 + uint64_t(i) * 12;
    if (e + 12 > t.size()) return 1;
    if (u16(size_t(e)) != 0x0112) continue;
    const uint32_t type = u16(size_t(e + 2));
    // SHORT as the standard says; a LONG seen in the wild is read too (Pillow reads either).
    const uint32_t v = type == 3 ? u16(size_t(e + 8)) : type == 4 ? u32(size_t(e + 8)) : 0;
    return v >= 1 && v <= 8 ? int(v) : 1;
  }
  return 1;
}

}  // namespace internal

std::string check_pixel_budget(const std::string& name, int64_t w, int64_t h, int64_t max_pixels) {
  if (max_pixels <= 0) return {};
  const int64_t pixels = w * h;  // each side < 2^31: no overflow
  if (pixels > max_pixels)
    throw DataError(detail::cat(name, ": the image is ", w, "x", h, " = ", internal::grouped(pixels),
                                " pixels, more than the budget of ", internal::grouped(max_pixels),
                                " (a decompression bomb, or a photo far larger than training needs); refused before "
                                "decoding it"),
                    detail::cat("scale the image down, or raise the budget with --max-image-pixels N (0: no limit; "
                                "decoding takes about ", io::format_bytes(uint64_t(pixels) * 4), " for this one)"));
  if (pixels > max_pixels / 2)
    return detail::cat(name, ": a large image (", w, "x", h, " = ", internal::grouped(pixels),
                       " pixels, over half the budget of ", internal::grouped(max_pixels),
                       " --max-image-pixels): decoding it takes about ", io::format_bytes(uint64_t(pixels) * 4));
  return {};
}

ImageInfo probe_image(std::span<const uint8_t> bytes, const std::string& name) {
  const Format f = sniff(bytes);
  ImageInfo info;
  switch (f) {
    case Format::Jpeg: info = internal::probe_jpeg(bytes, name); break;
    case Format::Png: info = internal::probe_png(bytes, name); break;
    case Format::WebP: info = internal::probe_webp(bytes, name); break;
    case Format::Unknown: throw_unknown_format(bytes, name);
    default: info = probe_stb(bytes, f, name); break;
  }
  // stb_image accepts a PGM of 23x0; a picture needs a pixel.
  if (info.width <= 0 || info.height <= 0)
    internal::throw_decode_error(name, format_name(f),
                                 detail::cat("its header gives an empty picture, ", info.width, "x", info.height));
  return info;
}

Image decode_image(std::span<const uint8_t> bytes, const DecodeOptions& opt, const std::string& name,
                   std::string* warning) {
  EMBER_CHECK(opt.channels == 1 || opt.channels == 3, DataError, "decode_image(", name,
              "): channels must be 1 (grey) or 3 (RGB), got ", opt.channels);
  const Format f = sniff(bytes);
  const ImageInfo info = probe_image(bytes, name);  // DataError for an unknown format or a bad header
  const std::string w = check_pixel_budget(name, info.width, info.height, opt.max_pixels);
  if (warning) *warning = w;
  Image img;
  switch (f) {
    case Format::Jpeg: img = internal::decode_jpeg(bytes, info, opt, name); break;
    case Format::Png: img = internal::decode_png(bytes, info, opt, name); break;
    case Format::WebP: img = internal::decode_webp(bytes, info, opt, name); break;
    default: img = decode_stb(bytes, f, opt, name); break;
  }
  if (opt.apply_exif && info.exif_orientation != 1) img = apply_orientation(img, info.exif_orientation);
  return img;
}

std::span<const char* const> image_extensions() { return kExtensions; }

bool is_image_extension(std::string ext) {
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  for (const char* e : kExtensions)
    if (ext == e) return true;
  return false;
}

std::string internal::grouped(int64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace ember::data
