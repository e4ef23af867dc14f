// ember._core._image (python/ember/vision/utils.py's save_image): a uint8 (H, W, C) tensor to the
// bytes of a PNG or JPEG through the library's encoders (data::encode_png, libspng; encode_jpeg,
// TurboJPEG). Conversion only: the checks and the formats are the encoders'; where the bytes go is
// Python's.
#include <span>

#include "bindings.h"
#include "ember/data/encode.h"

namespace ember::python {

using namespace nb::literals;

namespace {

// The file's bytes that encode (data::encode_png or encode_jpeg) makes of a uint8 (H, W, C) tensor.
template <class Encode>
nb::bytes encode_tensor(const char* what, const Tensor& pixels, Encode encode) {
  EMBER_CHECK(pixels.dtype() == DType::UInt8, DTypeError, what, ": the pixels are ", dtype_name(pixels.dtype()),
              "; image samples are uint8");
  EMBER_CHECK(pixels.dim() == 3, ShapeError, what, ": pixels of shape ", shape_str(pixels.sizes()),
              "; expected (height, width, channels)");
  const Tensor px = pixels.to(Device::cpu()).contiguous();
  std::vector<uint8_t> bytes;
  {
    nb::gil_scoped_release release;
    bytes = encode(std::span<const uint8_t>(px.data_ptr<uint8_t>(), size_t(px.numel())), px.size(0), px.size(1),
                   px.size(2));
  }
  return nb::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

}  // namespace

void register_image_io(nb::module_& m) {
  nb::module_ sub = m.def_submodule("_image", "Image encoding behind ember.vision.utils.save_image");
  sub.def(
      "encode_png",
      [](const Tensor& pixels, int compression_level) {
        return encode_tensor("encode_png", pixels, [&](std::span<const uint8_t> px, int64_t h, int64_t w, int64_t c) {
          return data::encode_png(px, h, w, c, compression_level);
        });
      },
      "pixels"_a, "compression_level"_a = 6,
      "The PNG file's bytes for a uint8 (height, width, channels) tensor, channels 1..4 (L, LA, RGB, RGBA).");
  sub.def(
      "encode_jpeg",
      [](const Tensor& pixels, int quality) {
        return encode_tensor("encode_jpeg", pixels, [&](std::span<const uint8_t> px, int64_t h, int64_t w, int64_t c) {
          return data::encode_jpeg(px, h, w, c, quality);
        });
      },
      "pixels"_a, "quality"_a = 75,
      "The baseline JPEG file's bytes (Pillow's defaults) for a uint8 (height, width, 1 or 3) tensor.");
}

}  // namespace ember::python
