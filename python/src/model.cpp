// ember.load_run: a trained run (or a checkpoint, or a weights file) as a model to predict with and
// export, opened, fed and run as `ember eval` and `ember predict` do (train::open_for_inference,
// ember/train/inference.h; image_input, class_probabilities, ember/train/predict.h). The Python side
// (python/ember/_model.py) converts its arguments (paths, PIL images, arrays) and calls these.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "ember/io/atomic_file.h"
#include "ember/io/onnx.h"
#include "ember/io/safetensors.h"
#include "ember/train/export.h"
#include "ember/train/inference.h"
#include "ember/train/predict.h"

namespace ember::python {
namespace {

struct Model {
  train::InferenceModel opened;
  std::string model_override;  // ember.load_run(model=...), for export
};

std::unique_ptr<Model> load(const std::string& path, const std::string& checkpoint, const std::string& device,
                            const std::string& model, const std::string& classes_file) {
  nb::gil_scoped_release unlocked;
  train::InferenceOptions o;
  o.path = path, o.checkpoint = checkpoint, o.device = device, o.model = model, o.classes_file = classes_file;
  o.front_end = train::FrontEnd::Python;
  WarningsToPython warnings;  // a device fallen back to the CPU: a UserWarning, as ember.fit's
  auto m = std::make_unique<Model>();
  m->opened = train::open_for_inference(o, /*need_test=*/false);
  m->model_override = model;
  return m;
}

// The logits / class probabilities of model inputs (N, C, H, W), on the CPU: the library's forward
// (train::inference_logits: no autograd, the model's precision, batch norms folded), as `ember
// predict` runs it, so both give the same bits.
Tensor logits(Model& m, const Tensor& x) {
  nb::gil_scoped_release unlocked;
  return train::inference_logits(m.opened, x);
}
Tensor probabilities(Model& m, const Tensor& x) {
  nb::gil_scoped_release unlocked;
  return train::class_probabilities(m.opened, x);
}

// An image file as `ember predict FILE` reads it (train::image_input): the model's input, and what
// the check of the picture against the training data had to say.
std::pair<Tensor, std::vector<std::string>> image_input(Model& m, const std::string& file, int64_t max_pixels) {
  nb::gil_scoped_release unlocked;
  train::ImageInputOptions o;
  if (max_pixels >= 0) o.max_pixels = max_pixels;  // < 0: the library's budget
  train::ImageInput in = train::image_input(m.opened, file, o);
  return {std::move(in.x), std::move(in.warnings)};
}

// uint8 pixels (N, C, H, W) at the model's size, normalised as the test set is (train::pixels_input).
Tensor pixels_input(Model& m, const Tensor& pixels) {
  nb::gil_scoped_release unlocked;
  return train::pixels_input(m.opened, pixels);
}

// As `ember export` writes them (train::load_export_source reads the checkpoint again, on the CPU).
// The format from `format` or the file's extension, by `ember export`'s rule (train::export_format).
void export_to(Model& m, const std::string& path, const std::string& format) {
  nb::gil_scoped_release unlocked;
  const train::ExportFormat f = train::export_format(format, path, train::FrontEnd::Python);
  const train::ExportSource source = train::load_export_source(m.opened.chosen.path, {m.model_override, "", ""});
  if (f == train::ExportFormat::Onnx) io::write_file_atomic(path, io::onnx_serialize(train::export_onnx(source)));
  else if (f == train::ExportFormat::Torch) io::write_file_atomic(path, train::export_torch(source));
  else io::write_file_atomic(path, io::st_serialize(train::export_state_dict(source)));
}

}  // namespace

void register_model(nb::module_& m) {
  nb::class_<Model>(m, "_Model", "A trained model (ember.load_run); python/ember/_model.py wraps it.")
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
      .def_prop_ro("precision", [](const Model& x) { return x.opened.precision; })
      .def("logits", &logits, nb::arg("x"))
      .def("probabilities", &probabilities, nb::arg("x"))
      .def("image_input", &image_input, nb::arg("file"), nb::arg("max_pixels") = -1)
      .def("pixels_input", &pixels_input, nb::arg("pixels"))
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
