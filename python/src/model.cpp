// ember.load: a trained run (or a checkpoint, or a weights file) as a model to predict with and
// export, opened as `ember eval` and `ember predict` open it (train::open_for_inference,
// ember/train/inference.h). The Python side (python/ember/_model.py) turns images and arrays into
// inputs and logits into classes.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "ember/autograd/node.h"
#include "ember/data/dataset.h"
#include "ember/data/loader.h"
#include "ember/data/photo_transforms.h"
#include "ember/io/atomic_file.h"
#include "ember/io/onnx.h"
#include "ember/io/safetensors.h"
#include "ember/ops.h"
#include "ember/train/device_choice.h"
#include "ember/train/export.h"
#include "ember/train/inference.h"
#include "ember/train/resume.h"
#include "ember/train/run_data.h"

namespace ember::python {
namespace {

struct Model {
  train::InferenceModel opened;
  std::string model_override;  // ember.load(model=...), for export
};

std::unique_ptr<Model> load(const std::string& path, const std::string& checkpoint, const std::string& device,
                            const std::string& model, const std::string& classes_file) {
  nb::gil_scoped_release unlocked;
  train::InferenceOptions o;
  o.path = path, o.checkpoint = checkpoint, o.device = device, o.model = model, o.classes_file = classes_file;
  auto m = std::make_unique<Model>();
  m->opened = train::open_for_inference(o, /*need_test=*/false);
  m->model_override = model;
  return m;
}

// The logits of a batch of model inputs (N, C, H, W), normalised as in training, on the CPU.
Tensor forward(Model& m, const Tensor& x) {
  nb::gil_scoped_release unlocked;
  autograd::NoGradGuard no_grad;
  return m.opened.model->forward(x.to(m.opened.device, DType::Float32)).cpu();
}

// An image file as `ember predict FILE` reads it: decoded (EXIF upright), resized to the model's
// input (a photo run: resized and centre-cropped as torchvision's evaluation transforms; an image
// folder run: centre-cropped to the aspect ratio), normalised with the training mean and std.
Tensor image_input(Model& m, const std::string& file, int64_t max_pixels) {
  nb::gil_scoped_release unlocked;
  const train::StoredInput& in = m.opened.input;
  const std::vector<int64_t>& shape = in.input_shape;  // (C, H, W)
  if (m.opened.photo) {
    const data::Image picture = data::read_rgb_image(file, max_pixels);
    const data::Image cropped = data::eval_resize_crop(picture, shape[1]);
    Tensor x = empty({1, 3, shape[1], shape[1]});
    data::to_planes(cropped, in.mean, in.std, x.data_ptr<float>());
    return x;
  }
  data::ImageFolderOptions io;
  io.channels = shape[0], io.height = shape[1], io.width = shape[2];
  io.max_pixels = max_pixels;
  if (m.opened.data == train::kImageFolder) io.resize = data::ResizeMode::CenterCrop;
  const Tensor image = data::load_image(file, io).unsqueeze(0).contiguous();
  const data::Dataset one =
      data::dataset_from_tensors(image, zeros({1}, {.dtype = DType::Int64}), int64_t(in.classes.size()), in.classes,
                                 in.mean, in.std);
  data::LoaderOptions lo;
  lo.batch_size = 1, lo.workers = 0, lo.shuffle = false;
  return data::DataLoader(one, lo).make_batch(0, 0).x;
}

// As `ember export` writes them (train::load_export_source reads the checkpoint again, on the CPU).
void export_to(Model& m, const std::string& path, const std::string& format) {
  nb::gil_scoped_release unlocked;
  const train::ExportSource source = train::load_export_source(m.opened.chosen.path, {m.model_override, ""});
  if (format == "onnx") {
    io::write_file_atomic(path, io::onnx_serialize(train::export_onnx(source)));
  } else if (format == "safetensors") {
    io::write_file_atomic(path, io::st_serialize(train::export_state_dict(source)));
  } else {
    throw ValueError("export: unknown format '" + format + "'", "use onnx or safetensors (or name the file *.onnx / "
                                                                  "*.safetensors)");
  }
}

}  // namespace

void register_model(nb::module_& m) {
  nb::class_<Model>(m, "_Model", "A trained model (ember.load); python/ember/_model.py wraps it.")
      .def_prop_ro("model_name", [](const Model& x) { return x.opened.model_name; })
      .def_prop_ro("dataset", [](const Model& x) { return x.opened.data; })
      .def_prop_ro("classes", [](const Model& x) { return x.opened.classes; })
      .def_prop_ro("input_shape", [](const Model& x) { return x.opened.input.input_shape; })
      .def_prop_ro("mean", [](const Model& x) { return x.opened.input.mean; })
      .def_prop_ro("std", [](const Model& x) { return x.opened.input.std; })
      .def_prop_ro("epoch", [](const Model& x) { return x.opened.manifest.epoch; })
      .def_prop_ro("step", [](const Model& x) { return x.opened.manifest.step; })
      .def_prop_ro("checkpoint", [](const Model& x) { return x.opened.chosen.path.string(); })
      .def_prop_ro("checkpoint_summary", [](const Model& x) { return x.opened.chosen.summary; })
      .def_prop_ro("notes", [](const Model& x) { return x.opened.notes; })
      .def_prop_ro("device", [](const Model& x) { return x.opened.device; })
      .def_prop_ro("photo", [](const Model& x) { return x.opened.photo; })
      .def("forward", &forward, nb::arg("x"))
      .def("image_input", &image_input, nb::arg("file"), nb::arg("max_pixels"))
      .def("export", &export_to, nb::arg("path"), nb::arg("format"))
      .def("named_tensors", [](const Model& x) {
        std::vector<std::pair<std::string, Tensor>> out = x.opened.model->named_parameters();
        for (auto& b : x.opened.model->named_buffers()) out.push_back(std::move(b));
        return out;
      });
  m.def("_load", &load, nb::arg("path"), nb::arg("checkpoint"), nb::arg("device"), nb::arg("model"),
        nb::arg("classes_file"));
}

}  // namespace ember::python
