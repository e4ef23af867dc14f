// What the per-format decoders (decode_jpeg.cpp, decode_png.cpp, decode_webp.cpp) share with the
// front-end decode.cpp: the pixel conversions Pillow's convert() does, EXIF parsing, and errors.
// The front-end sniffs the format, checks the pixel budget and applies the orientation; a decoder
// only turns bytes into pixels of the requested channel count.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "ember/data/decode.h"

namespace ember::data::internal {

// Throws DataError "<name>: cannot decode image: <format> data: <why>" with a hint to replace the file.
[[noreturn]] void throw_decode_error(const std::string& name, const char* format, const std::string& why);

// Pillow's rgb2l (Convert.c, macro L24): L = (R*19595 + G*38470 + B*7471 + 0x8000) >> 16, the ITU-R
// 601-2 weights 0.299/0.587/0.114 in 16-bit fixed point, rounded. n pixels; out may alias rgb.
void rgb_to_grey(const uint8_t* rgb, uint8_t* out, size_t n);

// "400,000,000": pixel counts in messages (decode.cpp's budget, image_folder.cpp's summary).
std::string grouped(int64_t v);
// Pillow's cmyk2rgb on CMYK as libjpeg gives it for an Adobe file (stored inverted; Pillow opens it
// with rawmode "CMYK;I"): with k' = 255 - K the ink, R = k' - k'*C/255 rounded as MULDIV255.
void inverted_cmyk_to_rgb(const uint8_t* cmyk, uint8_t* rgb, size_t n);

// The orientation (1..8) in a TIFF structure (EXIF payload after "Exif\0\0"); 1 when absent,
// out of range or unreadable. Bounds-checked: never reads outside `tiff`.
int exif_orientation_from_tiff(std::span<const uint8_t> tiff);

ImageInfo probe_jpeg(std::span<const uint8_t> bytes, const std::string& name);
Image decode_jpeg(std::span<const uint8_t> bytes, const ImageInfo& info, const DecodeOptions& opt,
                  const std::string& name);
ImageInfo probe_png(std::span<const uint8_t> bytes, const std::string& name);
Image decode_png(std::span<const uint8_t> bytes, const ImageInfo& info, const DecodeOptions& opt,
                 const std::string& name);
ImageInfo probe_webp(std::span<const uint8_t> bytes, const std::string& name);
Image decode_webp(std::span<const uint8_t> bytes, const ImageInfo& info, const DecodeOptions& opt,
                  const std::string& name);

}  // namespace ember::data::internal
