// Image decoding for the photo pipeline: a file's bytes in, an 8-bit interleaved Image out, with
// the pixels Pillow's Image.open(f).convert("RGB") (or convert("L")) gives for the same file, so a
// model trained here sees what torchvision's ImageFolder would have fed it.
//
//   format  library (src/data/)                 notes
//   JPEG    libjpeg-turbo TurboJPEG (decode_jpeg)  ISLOW IDCT + fancy upsampling as Pillow; baseline
//                                                  and progressive; grey, RGB, CMYK and YCCK (Adobe,
//                                                  inverted, as Pillow reads them); DCT scaling
//   PNG     libspng (decode_png)                1/2/4/8/16-bit grey, grey+alpha, RGB, RGBA, palette
//                                                  (+tRNS); interlaced; 16-bit samples keep their
//                                                  high byte; alpha dropped as convert("RGB") does
//   WebP    libwebp (decode_webp)               lossy and lossless, alpha dropped
//   BMP, GIF (first frame), TGA, PPM/PGM: stb_image (decode.cpp)
//
// Thread safety: every function here may be called from many threads at once (each thread keeps
// its own TurboJPEG handle).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "ember/data/image.h"

namespace ember::data {

// Pillow's decompression-bomb limits: Image.MAX_IMAGE_PIXELS warns above 89,478,485 pixels and
// refuses above twice that. ember refuses above the budget and warns above half of it.
inline constexpr int64_t kMaxImagePixels = 178956970;

// What a file's header says, read without decoding the pixels (nothing is allocated for them).
struct ImageInfo {
  int64_t width = 0, height = 0;  // as stored (before any EXIF rotation)
  int64_t channels_in_file = 0;   // 1 grey, 2 grey+alpha, 3 RGB (YCbCr), 4 RGBA or CMYK
  std::string format;             // "JPEG", "PNG", "WebP", "BMP", "GIF", "TGA", "PNM"
  int exif_orientation = 1;       // EXIF tag 0x0112, 1..8 (1 when absent or unreadable)
  bool progressive = false;       // JPEG: a progressive (multi-scan) file
  // The size decode_image gives with apply_exif (orientations 5..8 swap the sides).
  int64_t oriented_width() const { return exif_orientation >= 5 ? height : width; }
  int64_t oriented_height() const { return exif_orientation >= 5 ? width : height; }
};

// Reads only the header (and, for JPEG, the markers before the first scan: EXIF lives there).
// DataError naming `name_for_errors` when the bytes are no image format listed above or the header
// is corrupt.
ImageInfo probe_image(std::span<const uint8_t> bytes, const std::string& name_for_errors);

struct DecodeOptions {
  int channels = 3;                      // 1 (Pillow's convert("L")) or 3 (convert("RGB"))
  int64_t max_pixels = kMaxImagePixels;  // width x height above this: DataError before decoding; 0: no limit
  // DCT-domain scaling (JPEG only): decode at the smallest of 1/8, 1/4, 1/2, 1/1 whose output,
  // ceil(side / r), is still >= min_width x min_height (sides as oriented, after EXIF). Pillow's
  // draft() asks side // target >= r instead, which can stay one step closer to 1/1 when ceil() would
  // reach the target (447 -> 224 is 1/2 here, 1/1 in draft()). 0 and 0: full size. Other formats
  // always decode at full size.
  int64_t min_width = 0, min_height = 0;
  bool apply_exif = true;  // rotate/flip by the EXIF orientation as ImageOps.exif_transpose does
                           // (a JPEG's first APP1 Exif segment; a PNG eXIf chunk before the image
                           // data; WebP's EXIF is not read). torchvision's ImageFolder does not.
};

// The pixel budget on a header's width x height: DataError above max_pixels (the message names the
// file, the size and --max-image-pixels); returns a warning text above half of it, "" otherwise.
// max_pixels <= 0: no limit.
std::string check_pixel_budget(const std::string& name_for_errors, int64_t width, int64_t height,
                               int64_t max_pixels);

// Decodes `bytes` into a (height, width, channels) Image. The header is checked against the pixel
// budget before any pixel buffer is allocated. DataError (what, where, how to fix) for an unknown
// format, a corrupt or truncated file, an image over the budget, or channels other than 1 and 3.
// `warning`, when given, receives check_pixel_budget's warning ("" when none).
Image decode_image(std::span<const uint8_t> bytes, const DecodeOptions& opt, const std::string& name_for_errors,
                   std::string* warning = nullptr);

// The extensions decode_image reads, lower case with the dot (".jpg", ".png", ".webp", ...).
std::span<const char* const> image_extensions();
// True when `extension` (any case, with the dot) is one of image_extensions().
bool is_image_extension(std::string extension);

}  // namespace ember::data
