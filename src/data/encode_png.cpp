// PNG encoding through libspng (the library that decodes PNGs in decode_png.cpp): one encoder
// context per call writing into its own buffer, no files touched — the caller decides where the
// bytes go (save_image writes them to a path or a Python file object).
#include <spng.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "ember/core/error.h"
#include "ember/data/encode.h"

namespace ember::data {
namespace {

using Ctx = std::unique_ptr<spng_ctx, void (*)(spng_ctx*)>;

void check_spng(int e, const char* step) {
  if (e != 0) throw DataError(detail::cat("encode_png: libspng failed to ", step, ": ", spng_strerror(e)));
}

uint8_t color_type_of(int64_t channels) {
  switch (channels) {
    case 1: return SPNG_COLOR_TYPE_GRAYSCALE;
    case 2: return SPNG_COLOR_TYPE_GRAYSCALE_ALPHA;
    case 3: return SPNG_COLOR_TYPE_TRUECOLOR;
    default: return SPNG_COLOR_TYPE_TRUECOLOR_ALPHA;
  }
}

}  // namespace

std::vector<uint8_t> encode_png(std::span<const uint8_t> pixels, int64_t height, int64_t width, int64_t channels,
                                int compression_level) {
  constexpr int64_t kMaxSide = 2147483647;  // PNG's IHDR: 31-bit width and height
  EMBER_CHECK(height >= 1 && width >= 1 && height <= kMaxSide && width <= kMaxSide, ValueError,
              "encode_png: the image is ", height, "x", width, " (height x width); PNG needs sides from 1 to ",
              kMaxSide);
  EMBER_CHECK(channels >= 1 && channels <= 4, ValueError, "encode_png: ", channels,
              " channels; PNG takes 1 (grey), 2 (grey+alpha), 3 (RGB) or 4 (RGBA)");
  EMBER_CHECK(compression_level >= 0 && compression_level <= 9, ValueError, "encode_png: compression level ",
              compression_level, " is outside zlib's 0..9");
  const uint64_t expected = uint64_t(height) * uint64_t(width) * uint64_t(channels);
  EMBER_CHECK(pixels.size() == expected, ValueError, "encode_png: ", pixels.size(), " bytes of pixels for a ", height,
              "x", width, "x", channels, " image, which holds ", expected);

  Ctx ctx(spng_ctx_new(SPNG_CTX_ENCODER), spng_ctx_free);
  if (!ctx) throw DataError("encode_png: libspng could not allocate its encoder (out of memory)");
  check_spng(spng_set_option(ctx.get(), SPNG_ENCODE_TO_BUFFER, 1), "write to a buffer");
  check_spng(spng_set_option(ctx.get(), SPNG_IMG_COMPRESSION_LEVEL, compression_level), "set the compression level");
  spng_ihdr ihdr{};
  ihdr.width = uint32_t(width);
  ihdr.height = uint32_t(height);
  ihdr.bit_depth = 8;
  ihdr.color_type = color_type_of(channels);
  check_spng(spng_set_ihdr(ctx.get(), &ihdr), "set the header");
  check_spng(spng_encode_image(ctx.get(), pixels.data(), pixels.size(), SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE),
             "encode the image");
  size_t size = 0;
  int error = 0;
  // The buffer is libspng's, allocated with malloc: ours to free once copied.
  std::unique_ptr<void, void (*)(void*)> png(spng_get_png_buffer(ctx.get(), &size, &error), std::free);
  check_spng(error, "hand over the encoded bytes");
  const auto* bytes = static_cast<const uint8_t*>(png.get());
  return std::vector<uint8_t>(bytes, bytes + size);
}

}  // namespace ember::data
