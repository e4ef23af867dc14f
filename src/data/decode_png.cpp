// PNG through libspng (Debian libspng-dev 0.7). Why libspng and not libpng: one context and one
// call decode any colour type and bit depth to RGB8 (palette expanded, alpha dropped, 16-bit
// samples to their high byte, low bit depths scaled), with no setjmp error handling, and it puts
// limits on chunk sizes and the ancillary-chunk cache, so a hostile file cannot make it buffer
// megabytes of text chunks; it is also faster than libpng at decoding.
//
// Pillow's convert("RGB") agrees with that for every colour type but one: a 16-bit grey PNG opens
// in Pillow as mode "I" and convert() clips the 16-bit value to 255 (an ordinary 16-bit grey photo
// turns almost white). ember keeps the high byte there too, as Pillow does for 16-bit RGB, RGBA and
// grey+alpha; test_data_decode.cpp pins both.
#include <spng.h>

#include <memory>
#include <vector>

#include "data/decode_internal.h"
#include "ember/core/error.h"

namespace ember::data::internal {
namespace {

// Text, ICC and other ancillary chunks: a real photo's are a few hundred KB at most.
constexpr size_t kMaxChunkBytes = size_t{64} << 20;
constexpr size_t kMaxChunkCacheBytes = size_t{64} << 20;

using Ctx = std::unique_ptr<spng_ctx, void (*)(spng_ctx*)>;

Ctx open(std::span<const uint8_t> bytes, const std::string& name) {
  Ctx ctx(spng_ctx_new(0), spng_ctx_free);
  if (!ctx) throw_decode_error(name, "PNG", "libspng could not allocate its context (out of memory)");
  spng_set_chunk_limits(ctx.get(), kMaxChunkBytes, kMaxChunkCacheBytes);
  if (int e = spng_set_png_buffer(ctx.get(), bytes.data(), bytes.size()); e != 0)
    throw_decode_error(name, "PNG", detail::cat("libspng: ", spng_strerror(e)));
  return ctx;
}

spng_ihdr read_ihdr(spng_ctx* ctx, const std::string& name, size_t n_bytes) {
  spng_ihdr ihdr{};
  if (int e = spng_get_ihdr(ctx, &ihdr); e != 0)
    throw_decode_error(name, "PNG", detail::cat("its header is unreadable (libspng: ", spng_strerror(e), "; ", n_bytes,
                                                " bytes)"));
  return ihdr;
}

int orientation_of(spng_ctx* ctx) {
  spng_exif exif{};
  if (spng_get_exif(ctx, &exif) != 0 || !exif.data) return 1;
  return exif_orientation_from_tiff({reinterpret_cast<const uint8_t*>(exif.data), exif.length});
}

}  // namespace

ImageInfo probe_png(std::span<const uint8_t> bytes, const std::string& name) {
  Ctx ctx = open(bytes, name);
  const spng_ihdr ihdr = read_ihdr(ctx.get(), name, bytes.size());
  ImageInfo info;
  info.width = ihdr.width, info.height = ihdr.height, info.format = "PNG";
  switch (ihdr.color_type) {
    case SPNG_COLOR_TYPE_GRAYSCALE: info.channels_in_file = 1; break;
    case SPNG_COLOR_TYPE_GRAYSCALE_ALPHA: info.channels_in_file = 2; break;
    case SPNG_COLOR_TYPE_TRUECOLOR_ALPHA: info.channels_in_file = 4; break;
    default: info.channels_in_file = 3; break;  // truecolour, palette
  }
  info.exif_orientation = orientation_of(ctx.get());  // an eXIf chunk before the image data
  return info;
}

Image decode_png(std::span<const uint8_t> bytes, const ImageInfo& info, const DecodeOptions& opt,
                 const std::string& name) {
  Ctx ctx = open(bytes, name);
  const spng_ihdr ihdr = read_ihdr(ctx.get(), name, bytes.size());
  size_t size = 0;
  if (int e = spng_decoded_image_size(ctx.get(), SPNG_FMT_RGB8, &size); e != 0)
    throw_decode_error(name, "PNG", detail::cat("libspng: ", spng_strerror(e)));
  Image out(ihdr.width, ihdr.height, opt.channels);
  std::vector<uint8_t> rgb;
  uint8_t* dst = out.pixels.data();
  if (opt.channels != 3) {
    rgb.resize(size);
    dst = rgb.data();
  }
  if (int e = spng_decode_image(ctx.get(), dst, size, SPNG_FMT_RGB8, 0); e != 0)
    throw_decode_error(name, "PNG",
                       detail::cat(e == SPNG_IO_EOF || e == SPNG_EOF ? "truncated, the file ends early " : "", "(libspng: ",
                                   spng_strerror(e), "; ", bytes.size(), " bytes, ", ihdr.width, "x", ihdr.height, ")"));
  if (opt.channels == 1) {
    const size_t n = size_t(ihdr.width) * size_t(ihdr.height);
    if (info.channels_in_file <= 2) {
      for (size_t i = 0; i < n; ++i) out.pixels[i] = rgb[3 * i];  // grey: R = G = B
    } else {
      rgb_to_grey(rgb.data(), out.pixels.data(), n);
    }
  }
  return out;
}

}  // namespace ember::data::internal
