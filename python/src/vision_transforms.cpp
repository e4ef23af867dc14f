// ember._core._vision: the C++ side of ember.vision.transforms.batch_plan — a data::SampleTransform
// (crop with padding, flip, scale, normalise, erase in one pass per sample) run over selected rows
// of a uint8 batch with the GIL released, and the per-sample parameters it draws, for replaying.
#include <nanobind/nanobind.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cstring>
#include <vector>

#include "bindings.h"
#include "ember/core/error.h"
#include "ember/data/batch_transform.h"
#include "ember/data/transforms.h"
#include "ember/ops.h"

namespace ember::python {
namespace {

using namespace nb::literals;

struct SamplePlan {
  data::SampleTransform transform;
  bool uint8_out;
};

}  // namespace

void register_vision_transforms(nb::module_& m) {
  nb::module_ v = m.def_submodule("_vision", "C++ kernels of ember.vision.transforms.");
  nb::class_<SamplePlan>(v, "SamplePlan",
                         "One fused per-sample pass (data::SampleTransform) bound to an image geometry.")
      .def("__init__",
           [](SamplePlan* self, int64_t channels, int64_t height, int64_t width, bool scale, bool normalize,
              std::vector<float> mean, std::vector<float> std, int64_t crop_padding, bool reflect, double hflip_p,
              double erase_p, std::array<double, 2> erase_scale, std::array<double, 2> erase_ratio, bool uint8_out,
              bool scale_by_reciprocal) {
             data::TransformOptions o;
             o.scale = scale;
             o.scale_by_reciprocal = scale_by_reciprocal;
             o.normalize = normalize;
             o.mean = mean;
             o.std = std;
             o.crop_padding = crop_padding;
             o.pad_mode = reflect ? data::PadMode::Reflect : data::PadMode::Zero;
             o.hflip_p = hflip_p;
             o.erase_p = erase_p;
             o.erase_scale = erase_scale;
             o.erase_ratio = erase_ratio;
             EMBER_CHECK(!uint8_out || (!scale && !normalize), ValueError,
                         "SamplePlan: a uint8 output cannot be scaled or normalised");
             new (self) SamplePlan{data::SampleTransform(o, channels, height, width, mean, std), uint8_out};
           },
           "channels"_a, "height"_a, "width"_a, "scale"_a, "normalize"_a, "mean"_a, "std"_a, "crop_padding"_a,
           "reflect"_a, "hflip_p"_a, "erase_p"_a, "erase_scale"_a, "erase_ratio"_a, "uint8_out"_a,
           "scale_by_reciprocal"_a = false)
      .def("params",
           [](const SamplePlan& p, uint64_t seed, int64_t epoch, int64_t index) {
             const auto& t = p.transform;
             const data::SampleParams s =
                 data::draw_sample_params(t.options(), seed, epoch, index, t.height(), t.width());
             nb::dict d;
             d["crop_top"] = s.crop_dy;
             d["crop_left"] = s.crop_dx;
             d["flip"] = s.flip;
             d["erase"] = s.erase;
             d["erase_top"] = s.erase_top;
             d["erase_left"] = s.erase_left;
             d["erase_height"] = s.erase_h;
             d["erase_width"] = s.erase_w;
             return d;
           },
           "seed"_a, "epoch"_a, "index"_a,
           "The parameters sample `index` gets: crop offsets into the padded image, flip, the erased box.")
      .def("run",
           [](const SamplePlan& p, nb::handle images, const std::vector<int64_t>& indices, uint64_t seed,
              int64_t epoch, bool channels_last) {
             // images: a C-contiguous uint8 NumPy array, checked by the Python side (_plan.py).
             nb::dict ai = nb::cast<nb::dict>(images.attr("__array_interface__"));
             nb::tuple shape = nb::cast<nb::tuple>(ai["shape"]);
             const uintptr_t address = nb::cast<uintptr_t>(nb::cast<nb::tuple>(ai["data"])[0]);
             const auto& t = p.transform;
             data::ImageBatch batch{reinterpret_cast<const uint8_t*>(address), nb::cast<int64_t>(shape[0]),
                                    t.channels(), t.height(), t.width(), channels_last};
             const int64_t count = int64_t(indices.size());
             Tensor out = empty({count, t.channels(), t.height(), t.width()},
                                TensorOptions{p.uint8_out ? DType::UInt8 : DType::Float32});
             {
               nb::gil_scoped_release unlocked;
               data::transform_rows(t, batch, indices.data(), count, seed, epoch, get_num_threads(),
                                    p.uint8_out ? nullptr : out.data_ptr<float>(),
                                    p.uint8_out ? out.data_ptr<uint8_t>() : nullptr);
             }
             return out;
           },
           "images"_a, "indices"_a, "seed"_a, "epoch"_a, "channels_last"_a,
           "The transformed rows `indices` of images, as a (B, C, H, W) tensor.");
}

}  // namespace ember::python
