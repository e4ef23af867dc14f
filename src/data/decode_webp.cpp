// WebP (lossy and lossless) through libwebp, decoded straight into the Image's buffer as RGB: alpha
// is dropped without compositing, as Pillow's convert("RGB") drops it. An animated file is refused
// (Pillow would give its first frame; libwebp's simple API does not decode animations).
#include <webp/decode.h>

#include <vector>

#include "data/decode_internal.h"
#include "ember/core/error.h"

namespace ember::data::internal {
namespace {

const char* status_text(VP8StatusCode s) {
  switch (s) {
    case VP8_STATUS_OK: return "ok";
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "corrupt bitstream";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "truncated, the file ends early";
  }
  return "unknown error";
}

WebPBitstreamFeatures features_of(std::span<const uint8_t> bytes, const std::string& name) {
  WebPBitstreamFeatures f{};
  if (VP8StatusCode s = WebPGetFeatures(bytes.data(), bytes.size(), &f); s != VP8_STATUS_OK)
    throw_decode_error(name, "WebP", detail::cat("its header is unreadable (libwebp: ", status_text(s), "; ",
                                                 bytes.size(), " bytes)"));
  return f;
}

}  // namespace

ImageInfo probe_webp(std::span<const uint8_t> bytes, const std::string& name) {
  const WebPBitstreamFeatures f = features_of(bytes, name);
  ImageInfo info;
  info.width = f.width, info.height = f.height, info.format = "WebP";
  info.channels_in_file = f.has_alpha ? 4 : 3;
  return info;
}

Image decode_webp(std::span<const uint8_t> bytes, const ImageInfo& info, const DecodeOptions& opt,
                  const std::string& name) {
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) throw_decode_error(name, "WebP", "libwebp's version does not match its header");
  if (VP8StatusCode s = WebPGetFeatures(bytes.data(), bytes.size(), &config.input); s != VP8_STATUS_OK)
    throw_decode_error(name, "WebP", detail::cat("libwebp: ", status_text(s)));
  if (config.input.has_animation)
    throw DataError(detail::cat(name, ": an animated WebP image: ember decodes still images only"),
                    "save its first frame as a still image (e.g. `convert 'in.webp[0]' out.png`)");
  Image out(info.width, info.height, opt.channels);
  std::vector<uint8_t> rgb;
  uint8_t* dst = out.pixels.data();
  if (opt.channels != 3) {
    rgb.resize(size_t(info.width) * size_t(info.height) * 3);
    dst = rgb.data();
  }
  config.output.colorspace = MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = dst;
  config.output.u.RGBA.stride = int(info.width * 3);
  config.output.u.RGBA.size = size_t(info.width) * size_t(info.height) * 3;
  const VP8StatusCode s = WebPDecode(bytes.data(), bytes.size(), &config);
  WebPFreeDecBuffer(&config.output);  // external memory: frees nothing of ours
  if (s != VP8_STATUS_OK)
    throw_decode_error(name, "WebP", detail::cat("libwebp: ", status_text(s), " (", bytes.size(), " bytes, ",
                                                 info.width, "x", info.height, ")"));
  if (opt.channels == 1) rgb_to_grey(rgb.data(), out.pixels.data(), size_t(info.width) * size_t(info.height));
  return out;
}

}  // namespace ember::data::internal
