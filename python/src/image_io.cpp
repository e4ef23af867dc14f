// ember._core._image (python/ember/vision/utils.py's save_image): a uint8 (H, W, C) tensor to the
// bytes of a PNG through the library's encoder (data::encode_png, libspng). Conversion only: the
// checks and the format are encode_png's; where the bytes go is Python's.
#include <span>

#include "bindings.h"
#include "ember/data/encode.h"

namespace ember::python {

using namespace nb::literals;

void register_image_io(nb::module_& m) {
  nb::module_ sub = m.def_submodule("_image", "Image encoding behind ember.vision.utils.save_image");
  sub.def(
      "encode_png",
      [](const Tensor& pixels, int compression_level) {
        EMBER_CHECK(pixels.dtype() == DType::UInt8, DTypeError, "encode_png: the pixels are ",
                    dtype_name(pixels.dtype()), "; PNG samples are uint8");
        EMBER_CHECK(pixels.dim() == 3, ShapeError, "encode_png: pixels of shape ", shape_str(pixels.sizes()),
                    "; expected (height, width, channels)");
        const Tensor px = pixels.to(Device::cpu()).contiguous();
        std::vector<uint8_t> png;
        {
          nb::gil_scoped_release release;
          png = data::encode_png(std::span<const uint8_t>(px.data_ptr<uint8_t>(), size_t(px.numel())), px.size(0),
                                 px.size(1), px.size(2), compression_level);
        }
        return nb::bytes(reinterpret_cast<const char*>(png.data()), png.size());
      },
      "pixels"_a, "compression_level"_a = 6,
      "The PNG file's bytes for a uint8 (height, width, channels) tensor, channels 1..4 (L, LA, RGB, RGBA).");
}

}  // namespace ember::python
