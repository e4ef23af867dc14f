// libFuzzer target for the image decoders (data/decode.h): arbitrary bytes go to probe_image and
// decode_image, as grey and as RGB, full size and DCT-scaled, under a small pixel budget so a forged
// header costs a refusal, not gigabytes. A DataError is the expected outcome for bad input; anything
// else (crash, sanitizer report, other exception, an image whose buffer does not match its size) is
// a bug. The first byte picks the options; the rest is the file.
#include <cstddef>
#include <cstdint>
#include <span>

#include "ember/core/error.h"
#include "ember/data/decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t knobs = data[0];
  const std::span<const uint8_t> bytes(data + 1, size - 1);
  try {
    const ember::data::ImageInfo info = ember::data::probe_image(bytes, "fuzz");
    if (info.width <= 0 || info.height <= 0 || info.exif_orientation < 1 || info.exif_orientation > 8)
      __builtin_trap();
  } catch (const ember::DataError&) {
  }
  ember::data::DecodeOptions o;
  o.channels = (knobs & 1) ? 1 : 3;
  o.max_pixels = 1 << 20;  // 4 MB of RGB at most per input
  o.apply_exif = (knobs & 2) != 0;
  const int64_t min_side = (knobs >> 2) & 31;
  o.min_width = min_side, o.min_height = min_side;
  try {
    const ember::data::Image im = ember::data::decode_image(bytes, o, "fuzz");
    if (im.channels != o.channels || im.width <= 0 || im.height <= 0 ||
        im.pixels.size() != size_t(im.width * im.height * im.channels))
      __builtin_trap();
  } catch (const ember::DataError&) {
  }
  return 0;
}
