// The one way a trained model is opened for inference (ember/train/inference.h): eval, predict and
// ember.load. Moved from apps/ember/eval.cpp, rules unchanged.
#include "ember/train/inference.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/data/decode.h"
#include "ember/data/photo_transforms.h"
#include "ember/io/file_kind.h"
#include "ember/io/user_file.h"
#include "ember/nn/models.h"
#include "ember/nn/spec.h"
#include "ember/ops.h"
#include "ember/train/caller_model.h"
#include "ember/train/device_choice.h"
#include "ember/train/init_from.h"
#include "ember/train/open_weights.h"
#include "ember/train/precision_choice.h"
#include "ember/train/resume.h"
#include "ember/train/run_data.h"
#include "ember/train/settings.h"
#include "ember/train/wording.h"

namespace ember::train {
namespace fs = std::filesystem;
namespace {

// The model's head (its last weight matrix, the classifier torchvision names fc / classifier.N)
// and the class count a file gives it: the row count of the file's tensor of that name (an
// optional "module." prefix, as DataParallel saves, is allowed); 0 when the file lacks it.
int64_t head_classes(const std::string& model, const train::NamedTensors& tensors) {
  Generator gen(0);
  auto probe = models::create(model, 10, 3, models::design_size(model), &gen);
  std::string head;
  for (const auto& [name, p] : probe->named_parameters())
    if (p.dim() == 2) head = name;
  for (const auto& [name, t] : tensors)
    if ((name == head || name == "module." + head) && t.dim() == 2) return t.size(0);
  return 0;
}

// --classes FILE: one name per line (torchvision's imagenet_classes.txt), blank lines skipped.
std::vector<std::string> read_class_names(const std::string& file, int64_t expected) {
  const std::string text = io::read_user_text(file, io::kClassNamesFile);
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) names.push_back(line);
    start = end + 1;
  }
  if (int64_t(names.size()) != expected)
    throw SettingError(fmt::format("--classes {} has {} names, but the model gives {} classes", file, names.size(),
                                   expected),
                       "give a file of one class name per line, in the order of the model's outputs");
  return names;
}

// The device (the library's default when the caller gives none) and the precision that goes with it.
void choose_device_and_precision(const InferenceOptions& o, InferenceModel& l) {
  const DeviceChoice device =
      choose_device(o.device.empty() ? InferenceOptions{}.device : o.device, false, /*has_require_gpu_flag=*/false);
  l.device = device.device;
  l.precision = choose_precision(o.precision, device).name;
}

// The first bytes of a regular file (fewer when it is shorter; none when it cannot be read).
std::vector<uint8_t> file_head(const std::string& path, size_t n) {
  std::vector<uint8_t> head(n);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(head.data()), std::streamsize(head.size()));
  head.resize(size_t(std::max<std::streamsize>(in.gcount(), 0)));
  return head;
}

}  // namespace

void refuse_non_model_path(const std::string& path, FrontEnd front_end) {
  if (io::path_type(path) != io::PathType::regular) return;
  const bool cli = front_end == FrontEnd::Cli;
  const std::vector<uint8_t> head = file_head(path, 4096);
  const fs::path p(path);
  bool image = data::is_image_extension(p.extension().string());
  if (!image) {
    try {
      data::probe_image(head, path);
      image = true;
    } catch (const Error&) {
      // not an image by its content either
    }
  }
  if (image) {
    const std::optional<fs::path> latest = latest_run();
    const std::string run = latest ? latest->string() : "runs/<name>";
    const std::string call = cli ? fmt::format("`ember predict {} {}`", run, path)
                                 : fmt::format("ember.load(\"{}\").predict(\"{}\")", run, path);
    throw SettingError(
        fmt::format("'{}' is an image, not a model: {}", path,
                    cli ? "no run given (predict takes the run first, then the images)"
                        : "no run given (load a run, then predict the image with it)"),
        fmt::format("{}{}", call,
                    latest ? fmt::format(" ({} is the latest run under runs/)", latest->string())
                           : cli ? " (no run under runs/ yet: `ember train` makes one)"
                                 : " (no run under runs/ yet: ember.fit() makes one)"));
  }
  if (io::looks_like_onnx(head))
    throw SettingError(
        fmt::format("'{}' is an ONNX model: ember {} with its own runs, checkpoints and safetensors exports; an ONNX "
                    "file runs in onnxruntime",
                    path, cli ? "predicts" : "loads models"),
        fmt::format("in Python: import onnxruntime as ort; sess = ort.InferenceSession(\"{}\"); logits = "
                    "sess.run([\"logits\"], {{\"input\": x}})[0] with x float32 (N, C, H, W) = pixel / 255 "
                    "(docs/export.md)",
                    path));
}

InferenceModel open_for_inference(const InferenceOptions& o, bool need_test) {
  refuse_non_model_path(o.path, o.front_end);
  OpenedWeights opened = open_weights(o.path, o.checkpoint);
  const train::ChosenCheckpoint& chosen = opened.chosen;
  train::Checkpoint& ck = opened.checkpoint;
  const train::WeightsInfo& info = opened.info;
  // A run trained from a spec file keeps a copy of it: the recorded name is resolved in the run.
  const std::optional<fs::path>& run_dir = opened.run_dir;
  const std::string recorded = !ck.manifest.model.empty() ? ck.manifest.model : info.model;
  // A model its caller built (ember.fit(model=net)): its class is not here to build it again.
  if (o.model.empty() && train::is_caller_model(recorded))
    train::refuse_caller_model(recorded, o.path,
                               o.front_end == FrontEnd::Python ? "ember.load" : "`ember eval`, `predict` or `export`");
  std::string model = !o.model.empty() ? o.model : train::run_model(recorded, run_dir.value_or(fs::path()));
  std::string data = !o.data.empty()                ? o.data
                     : !ck.manifest.dataset.empty() ? ck.manifest.dataset
                     : !info.dataset.empty()        ? info.dataset
                                                    : "fashion-mnist";
  if (model.empty())
    throw SettingError(fmt::format("'{}' names no model: it has no manifest and no __metadata__ \"model\"", o.path),
                     "pass --model NAME (the zoo name or the spec file the weights were trained with)");
  // The spec travels inside the file: used when the named spec is not at hand.
  const bool spec_from_metadata = o.model.empty() && nn::is_spec_file(model) && !info.model_spec.empty() &&
                                  io::path_type(model) != io::PathType::regular;
  const std::string config_json = !ck.manifest.config_json.empty() ? ck.manifest.config_json : info.config_json;
  nlohmann::json cfg = config_json.empty() ? nlohmann::json::object() : nlohmann::json::parse(config_json);
  const train::RunSettings settings(config_json, o.path, false);
  std::string dir = o.data_dir;
  train::normalise_data_arg(data, dir);  // `--data PATH`: an image folder
  if (dir.empty() && settings.contains("data_dir")) dir = settings.get<std::string>("data_dir");
  if (data != train::kImageFolder && (dir.empty() || !fs::exists(dir))) dir = data::default_data_dir(data).string();
  InferenceModel l;
  l.chosen = chosen;
  l.manifest = ck.manifest;
  l.recorded_model = recorded;
  l.config_json = config_json;
  l.weights = ck.weights_path;
  // Weights that say nothing of how they were trained, for an architecture of torchvision's: the
  // images get torchvision's evaluation transforms and the class count comes from the head.
  const bool bare = ck.manifest.weights_sha256.empty() && info.model.empty() && info.input_shape.empty() &&
                    config_json.empty() && o.data.empty();
  if (bare && !nn::is_spec_file(model) && models::design_size(model) == 224) {
    const int64_t classes = head_classes(model, ck.tensors);
    if (classes <= 0)
      throw FormatError(fmt::format("'{}' has no classifier weights for {} (its last layer)", ck.weights_path.string(),
                                    model),
                        "pass the --model the weights were trained with (`ember weights info FILE` lists the models "
                        "they fit)");
    const int64_t crop = o.image_size > 0 ? o.image_size : 224;
    l.photo = true;
    l.input.dataset = "";
    l.input.input_shape = {3, crop, crop};
    l.input.mean = data::kImageNetMean, l.input.std = data::kImageNetStd;
    l.input.classes.clear();
    if (!o.classes_file.empty()) {
      l.input.classes = read_class_names(o.classes_file, classes);
    } else {
      for (int64_t c = 0; c < classes; ++c) l.input.classes.push_back(fmt::format("class {}", c));
    }
    l.classes = l.input.classes;
    l.model_name = model;
    l.data = "";
    l.data_label = fmt::format("torchvision's evaluation transforms (resize {}, centre crop {}, ImageNet mean/std)",
                               data::resize_for_crop(crop), crop);
    choose_device_and_precision(o, l);
    Generator gen(0);
    l.model = models::create(model, classes, 3, crop, &gen);
    try {
      const train::WeightLoadReport rep = train::load_weights(*l.model, ck.tensors, ck.weights_path.string());
      for (const auto& note : rep.notes) l.notes.push_back(note);
    } catch (const FormatError& e) {
      throw FormatError(fmt::format("{} (model '{}')", e.what(), model), "pass the --model the weights were trained with");
    }
    l.model->to(l.device);
    l.model->eval();
    return l;
  }
  if (o.data.empty() && ck.manifest.dataset.empty() && info.dataset.empty())
    l.notes.push_back(fmt::format("'{}' does not say which data it was trained on: fashion-mnist's input is assumed "
                                  "(pass --data NAME otherwise)", ck.weights_path.string()));
  if (ck.manifest.weights_sha256.empty()) {  // a bare file: where it came from, if it says
    auto number = [&](const char* key) {
      auto it = ck.metadata.find(key);
      return it == ck.metadata.end() ? int64_t(0) : int64_t(std::strtoll(it->second.c_str(), nullptr, 10));
    };
    l.manifest.epoch = number("epoch"), l.manifest.step = number("step");
  }
  l.model_name = model;
  l.data = data;
  l.input = train::stored_input(info, config_json, data, ck.weights_path.string());
  l.data_label = data != train::kImageFolder ? data : dir.empty() ? std::string("an image folder") : "image-folder:" + dir;
  l.classes = l.input.classes;
  const int64_t channels = l.input.input_shape[0], size = l.input.input_shape[1];
  const nlohmann::json folder = cfg.is_object() ? cfg.value("image_folder", nlohmann::json()) : nlohmann::json();
  // A photo run (data/photo_set.h): its images took torchvision's evaluation transforms.
  l.photo = folder.is_object() && folder.value("photos", false);
  if (folder.is_object() && folder.contains("look") && folder["look"].is_object()) {
    const nlohmann::json& lk = folder["look"];
    if (lk.value("mean", nlohmann::json()).is_number() && lk.value("border", nlohmann::json()).is_number())
      l.look = train::ImageLook{lk["mean"].get<double>(), lk["border"].get<double>()};
  }
  if (need_test) {
    l.test = train::load_run_test_data(data, dir, config_json, o.limit_test, l.input, o.max_pixels);
    if (l.test.channels() != channels || l.test.height() != size || l.test.width() != l.input.input_shape[2] ||
        l.test.num_classes() != int64_t(l.input.classes.size()))
      throw SettingError(fmt::format("the test set of {} is {} of {}x{}x{}, but '{}' takes {}x{}x{} inputs and gives {}",
                                   l.test.name, plural(l.test.num_classes(), "class", "classes"), l.test.channels(),
                                   l.test.height(), l.test.width(), ck.weights_path.string(), channels, size,
                                   l.input.input_shape[2], plural(int64_t(l.input.classes.size()), "class", "classes")),
                       "pass the --data the model was trained on");
    l.data_label = l.test.name;
    l.classes = l.test.classes;
  } else if (o.read_look && !l.look && data != train::kImageFolder) {
    // A known dataset's test set, when it is installed, is cheap to read and shows what the model
    // saw; without it the image is classified unchecked.
    try {
      const data::Dataset t = train::load_run_test_data(data, dir, config_json, 2000, l.input, o.max_pixels);
      l.look = train::look_of(t.images.slice(0, 0, std::min<int64_t>(t.size(), 2000)));
    } catch (const Error&) {
    }
  }
  choose_device_and_precision(o, l);
  Generator gen(0);
  const int64_t num_classes = int64_t(l.input.classes.size());
  l.model = spec_from_metadata
                ? nn::model_from_spec(info.model_spec, ck.weights_path.string() + " (__metadata__ model_spec)",
                                      num_classes, channels, size, &gen)
                : models::create(model, num_classes, channels, size, &gen);
  if (spec_from_metadata) l.model_spec = info.model_spec;
  else if (nn::is_spec_file(model)) l.model_spec = io::read_user_text(model, io::kModelSpecFile);
  // Strict: every tensor by name, float16/bfloat16/float64 cast to the model's dtype.
  train::WeightLoadReport rep;
  try {
    rep = train::load_weights(*l.model, ck.tensors, ck.weights_path.string());
  } catch (const FormatError& e) {  // the loader's hint is about --init-from; here only --model helps
    throw FormatError(fmt::format("{} (model '{}')", e.what(), model), "pass the --model the weights were trained with");
  }
  for (const auto& note : rep.notes) l.notes.push_back(note);
  l.model->to(l.device);
  l.model->eval();
  return l;
}


}  // namespace ember::train
