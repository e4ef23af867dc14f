// ember._core._vision: the C++ side of ember.vision.transforms.batch_plan — a data::SampleTransform
// (crop with padding, flip, scale, normalise, erase in one pass per sample) run over selected rows
// of a uint8 batch with the GIL released, and the per-sample parameters it draws, for replaying.
#include <nanobind/nanobind.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <nanobind/stl/optional.h>

#include <array>
#include <optional>
#include <cstring>
#include <string>
#include <vector>

#include "bindings.h"
#include "ember/core/error.h"
#include "ember/data/batch_transform.h"
#include "ember/data/decode.h"
#include "ember/data/transforms.h"
#include "ember/ops.h"

namespace ember::python {
namespace {

using namespace nb::literals;

struct SamplePlan {
  data::SampleTransform transform;  // for the output geometry
  bool uint8_out;
  std::optional<data::PhotoSteps> photo;  // resize / centre crop / random resized crop first
  int64_t in_height, in_width;            // the rows' geometry (0 x 0: files of any size)
};

}  // namespace

void register_vision_transforms(nb::module_& m) {
  nb::module_ v = m.def_submodule("_vision", "C++ kernels of ember.vision.transforms.");
  v.def(
      "picture_extensions",
      [] {
        std::vector<std::string> out;
        for (const char* e : data::image_extensions()) out.emplace_back(e);
        return out;
      },
      "The file extensions ember's decoders read (lower case, with the dot): SamplePlan.run_files's.");
  nb::class_<SamplePlan>(v, "SamplePlan",
                         "One fused per-sample pass (data::SampleTransform) bound to an image geometry.")
      .def("__init__",
           [](SamplePlan* self, int64_t channels, int64_t height, int64_t width, bool scale, bool normalize,
              std::vector<float> mean, std::vector<float> std, int64_t crop_padding, bool reflect, double hflip_p,
              double erase_p, std::array<double, 2> erase_scale, std::array<double, 2> erase_ratio, bool uint8_out,
              bool scale_by_reciprocal, std::optional<std::array<int64_t, 2>> resize,
              std::optional<std::array<int64_t, 2>> center_crop,
              std::optional<std::array<int64_t, 2>> random_resized_crop, std::array<double, 2> rrc_scale,
              std::array<double, 2> rrc_ratio, std::optional<std::array<int64_t, 2>> resize_shorter) {
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
             // height, width: the rows'; the pass runs on what the photo steps leave.
             std::optional<data::PhotoSteps> photo;
             int64_t out_h = height, out_w = width;
             if (random_resized_crop) {
               data::PhotoSteps s;
               s.random_resized_crop = true;
               s.out_height = out_h = (*random_resized_crop)[0];
               s.out_width = out_w = (*random_resized_crop)[1];
               s.scale = rrc_scale;
               s.ratio = rrc_ratio;
               photo = s;
             } else if (resize || center_crop || resize_shorter) {
               data::PhotoSteps s;
               if (resize_shorter) {  // (size, max_size): Resize(int) on files of any size
                 s.resize_shorter = (*resize_shorter)[0];
                 s.resize_max_size = (*resize_shorter)[1];
                 out_h = out_w = 0;  // depends on the picture: only a centre crop makes it fixed
               } else if (resize) {
                 s.resize_height = out_h = (*resize)[0];
                 s.resize_width = out_w = (*resize)[1];
               }
               if (center_crop) {
                 s.crop_height = out_h = (*center_crop)[0];
                 s.crop_width = out_w = (*center_crop)[1];
               }
               s.out_height = out_h;
               s.out_width = out_w;
               photo = s;
             }
             EMBER_CHECK(out_h >= 1 && out_w >= 1, ValueError, "SamplePlan: the output size must be positive, got ",
                         out_h, " x ", out_w);
             new (self) SamplePlan{data::SampleTransform(o, channels, out_h, out_w, mean, std), uint8_out, photo,
                                   height, width};
           },
           "channels"_a, "height"_a, "width"_a, "scale"_a, "normalize"_a, "mean"_a, "std"_a, "crop_padding"_a,
           "reflect"_a, "hflip_p"_a, "erase_p"_a, "erase_scale"_a, "erase_ratio"_a, "uint8_out"_a,
           "scale_by_reciprocal"_a = false, "resize"_a = nb::none(), "center_crop"_a = nb::none(),
           "random_resized_crop"_a = nb::none(), "rrc_scale"_a = std::array<double, 2>{0.08, 1.0},
           "rrc_ratio"_a = std::array<double, 2>{3.0 / 4.0, 4.0 / 3.0}, "resize_shorter"_a = nb::none())
      .def("params",
           [](const SamplePlan& p, uint64_t seed, int64_t epoch, int64_t index,
              std::optional<std::array<int64_t, 2>> image_size) {
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
             const int64_t ih = image_size ? (*image_size)[0] : p.in_height;
             const int64_t iw = image_size ? (*image_size)[1] : p.in_width;
             if (p.photo && p.photo->random_resized_crop && ih > 0 && iw > 0) {
               const data::Box b =
                   data::random_resized_crop_box(ih, iw, seed, epoch, index, p.photo->scale, p.photo->ratio);
               d["box"] = nb::make_tuple(b.top, b.left, b.height, b.width);
             }
             return d;
           },
           "seed"_a, "epoch"_a, "index"_a, "image_size"_a = nb::none(),
           "The parameters sample `index` gets: crop offsets into the padded image, flip, the erased box, and\n"
           "RandomResizedCrop's box on an image of image_size (height, width) (default: the rows').")
      .def("run_files",
           [](const SamplePlan& p, const std::vector<std::string>& paths, const std::vector<int64_t>& indices,
              uint64_t seed, int64_t epoch, int threads) {
             EMBER_CHECK(p.photo.has_value(), ValueError,
                         "SamplePlan.run_files: the plan has no photo step to bring pictures to one size");
             EMBER_CHECK(paths.size() == indices.size(), ValueError, "SamplePlan.run_files: ", paths.size(),
                         " paths but ", indices.size(), " indices");
             const auto& t = p.transform;
             EMBER_CHECK(!p.uint8_out, ValueError, "SamplePlan.run_files: the output must be float32");
             const int64_t count = int64_t(indices.size());
             Tensor out = empty({count, t.channels(), t.height(), t.width()}, TensorOptions{DType::Float32});
             {
               nb::gil_scoped_release unlocked;
               data::transform_files(t, *p.photo, paths.data(), indices.data(), count, seed, epoch,
                                     threads > 0 ? threads : get_num_threads(), out.data_ptr<float>());
             }
             return out;
           },
           "paths"_a, "indices"_a, "seed"_a, "epoch"_a, "threads"_a = 0,
           "The pictures `paths` (sample indices `indices`) decoded and transformed, as a (B, 3, H, W) tensor,\n"
           "on `threads` threads (0: ember.get_num_threads() of the calling thread; OpenMP's count is per\n"
           "thread, so a call from another Python thread passes the main thread's).")
      .def("run",
           [](const SamplePlan& p, nb::handle images, const std::vector<int64_t>& indices, uint64_t seed,
              int64_t epoch, bool channels_last) {
             // images: a C-contiguous uint8 NumPy array, checked by the Python side (_plan.py).
             nb::dict ai = nb::cast<nb::dict>(images.attr("__array_interface__"));
             nb::tuple shape = nb::cast<nb::tuple>(ai["shape"]);
             const uintptr_t address = nb::cast<uintptr_t>(nb::cast<nb::tuple>(ai["data"])[0]);
             const auto& t = p.transform;
             data::ImageBatch batch{reinterpret_cast<const uint8_t*>(address), nb::cast<int64_t>(shape[0]),
                                    t.channels(), p.in_height, p.in_width, channels_last};
             const int64_t count = int64_t(indices.size());
             Tensor out = empty({count, t.channels(), t.height(), t.width()},
                                TensorOptions{p.uint8_out ? DType::UInt8 : DType::Float32});
             {
               nb::gil_scoped_release unlocked;
               data::transform_rows(t, batch, indices.data(), count, seed, epoch, get_num_threads(),
                                    p.uint8_out ? nullptr : out.data_ptr<float>(),
                                    p.uint8_out ? out.data_ptr<uint8_t>() : nullptr, p.photo ? &*p.photo : nullptr);
             }
             return out;
           },
           "images"_a, "indices"_a, "seed"_a, "epoch"_a, "channels_last"_a,
           "The transformed rows `indices` of images, as a (B, C, H, W) tensor.");
}

}  // namespace ember::python
