// Image encoding, the decoders' counterpart (data/decode.h): 8-bit interleaved pixels in, a file's
// bytes out. ember.vision.utils.save_image writes its PNGs (and JPEGs) through here, so a saved grid
// reads back in Pillow (or ember's decoder) with the pixels torchvision's Pillow path writes.
//
// Thread safety: may be called from many threads at once (each call owns its encoder).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace ember::data {

// The PNG (libspng, 8 bits per sample, not interlaced, zlib level compression_level 0..9) of
// `pixels`: (height, width, channels) row-major, interleaved; channels 1 grey, 2 grey+alpha,
// 3 RGB, 4 RGBA (Pillow's modes L, LA, RGB, RGBA). ValueError for sides < 1, more than PNG's
// 2^31 - 1 per side, a channel count outside 1..4, a pixel span of another size or a level outside
// 0..9; DataError when libspng fails (with its message).
std::vector<uint8_t> encode_png(std::span<const uint8_t> pixels, int64_t height, int64_t width, int64_t channels,
                                int compression_level = 6);

// The baseline JPEG (TurboJPEG) of `pixels` as Pillow's Image.save(f, "JPEG", quality=quality) writes
// it: channels 1 (grey) or 3 (RGB, 4:2:0 chroma subsampling), standard Huffman tables, the accurate
// integer DCT. ValueError for sides outside 1..65535, other channel counts (JPEG has no alpha), a
// pixel span of another size or quality outside 1..100; DataError when TurboJPEG fails.
std::vector<uint8_t> encode_jpeg(std::span<const uint8_t> pixels, int64_t height, int64_t width, int64_t channels,
                                 int quality = 75);

}  // namespace ember::data
