// ember eval (test accuracy, per-class accuracy, confusion matrix of a run or checkpoint) and
// ember predict (top-k classes of one test-set sample).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "checkpoint_choice.h"
#include "ember/train/image_check.h"
#include "ember/train/run_data.h"
#include "ember/train/device_choice.h"
#include "ember/autograd/node.h"
#include "ember/data/photo_transforms.h"
#include "ember/ember.h"
#include "ember/nn/models.h"
#include "ember/io/atomic_file.h"
#include "ember/io/report.h"
#include "ember/io/user_file.h"
#include "ember/nn/spec.h"
#include "ember/train/fit.h"
#include "ember/train/init_from.h"
#include "ember/train/resume.h"
#include "ember/train/weights_info.h"
#include "ember/train/precision_choice.h"

namespace ember::cli {
namespace fs = std::filesystem;
namespace {

struct EvalOpts {
  std::string path, model, data, data_dir, device = "auto", precision = "fp32";
  std::string confusion_csv;  // eval: write the whole confusion matrix here
  int64_t batch_size = 256, limit_test = 0, index = -1, top_k = 5;
  std::vector<std::string> images;  // predict: image files instead of --index
  std::string checkpoint;           // --checkpoint best|last ("": best)
  int64_t max_pixels = data::kMaxImagePixels;  // --max-image-pixels
  bool json = false;
  bool invert = false;              // predict: 255 - v before normalising (dark-on-light pictures)
  std::string weights;              // predict --weights FILE: a bare weights file (torchvision's .pth)
  std::string classes_file;         // predict --classes FILE: the output names, one per line
  int64_t image_size = 0;           // predict --image-size: the crop of a torchvision model (0: 224)
};

struct Loaded {
  std::shared_ptr<nn::Module> model;
  std::string model_name;  // as shown: the zoo name or the spec's file name
  // What the model takes and gives, from what the checkpoint stores (no dataset file is read).
  train::StoredInput input;
  std::string data;        // the run's dataset name ("image-folder" for a folder run)
  std::string data_label;  // as shown: "fashion-mnist", "image-folder:/path/to/folder"
  data::Dataset test;      // eval and predict --index only (size 0 otherwise)
  std::optional<train::ImageLook> look;  // the training images' look, when known (predict's check)
  std::vector<std::string> classes;  // names of the model's outputs
  Device device;
  std::string precision = "fp32";  // --precision, as chosen for the device (precision_choice.h)
  train::CheckpointManifest manifest;
  train::ChosenCheckpoint chosen;  // which of a run's checkpoints (--checkpoint)
  // Bare weights of a torchvision architecture (a .pth from torchvision, or any file that says
  // nothing of its training data): images go through torchvision's evaluation transforms (resize
  // the shorter side to crop * 256 / 224, centre crop, ImageNet mean and std) instead of a dataset's.
  bool photo = false;
};

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
    throw UsageError(fmt::format("--classes {} has {} names, but the model gives {} classes", file, names.size(),
                                 expected),
                     "give a file of one class name per line, in the order of the model's outputs");
  return names;
}

// What --json output says about where the numbers come from.
nlohmann::json provenance(const Loaded& l, const EvalOpts& o) {
  nlohmann::json j = {{"model", l.model_name}, {"checkpoint", o.path}, {"device", l.device.str()},
                      {"precision", l.precision}};
  if (!l.chosen.which.empty()) j["checkpoint_choice"] = l.chosen.which;
  return j;
}

// need_test: eval and predict --index read the run's test set; predict on image files reads nothing
// but the checkpoint (a weights file alone is enough, wherever the training data went).
Loaded load(const EvalOpts& o, bool need_test) {
  const train::ChosenCheckpoint chosen = chosen_checkpoint(o.path, o.checkpoint);
  train::Checkpoint ck = train::load_checkpoint(chosen.path);
  // A weights file copied out of its run describes itself (__metadata__, train/weights_info.h).
  const train::WeightsInfo info = train::weights_info_from_metadata(ck.metadata, ck.weights_path.string());
  // A run trained from a spec file keeps a copy of it: the recorded name is resolved in the run.
  const std::optional<fs::path> run_dir = train::run_dir_of(chosen.path);
  const std::string recorded = !ck.manifest.model.empty() ? ck.manifest.model : info.model;
  std::string model = !o.model.empty() ? o.model : train::run_model(recorded, run_dir.value_or(fs::path()));
  std::string data = !o.data.empty()                ? o.data
                     : !ck.manifest.dataset.empty() ? ck.manifest.dataset
                     : !info.dataset.empty()        ? info.dataset
                                                    : "fashion-mnist";
  if (model.empty())
    throw UsageError(fmt::format("'{}' names no model: it has no manifest and no __metadata__ \"model\"", o.path),
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
  Loaded l;
  l.chosen = chosen;
  l.manifest = ck.manifest;
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
    l.device = train::choose_device(o.device, false, /*has_require_gpu_flag=*/false).device;
    l.precision = train::choose_precision(o.precision, l.device).name;
    Generator gen(0);
    l.model = models::create(model, classes, 3, crop, &gen);
    try {
      const train::WeightLoadReport rep = train::load_weights(*l.model, ck.tensors, ck.weights_path.string());
      for (const auto& note : rep.notes) fmt::print(stderr, "ember: note: {}\n", note);
    } catch (const FormatError& e) {
      throw FormatError(fmt::format("{} (model '{}')", e.what(), model), "pass the --model the weights were trained with");
    }
    l.model->to(l.device);
    l.model->eval();
    return l;
  }
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
      throw UsageError(fmt::format("the test set of {} is {} of {}x{}x{}, but '{}' takes {}x{}x{} inputs and gives {}",
                                   l.test.name, plural(l.test.num_classes(), "class", "classes"), l.test.channels(),
                                   l.test.height(), l.test.width(), ck.weights_path.string(), channels, size,
                                   l.input.input_shape[2], plural(int64_t(l.input.classes.size()), "class", "classes")),
                       "pass the --data the model was trained on");
    l.data_label = l.test.name;
    l.classes = l.test.classes;
  } else if (!l.look && data != train::kImageFolder) {
    // A known dataset's test set, when it is installed, is cheap to read and shows what the model
    // saw; without it the image is classified unchecked.
    try {
      const data::Dataset t = train::load_run_test_data(data, dir, config_json, 2000, l.input, o.max_pixels);
      l.look = train::look_of(t.images.slice(0, 0, std::min<int64_t>(t.size(), 2000)));
    } catch (const Error&) {
    }
  }
  l.device = train::choose_device(o.device, false, /*has_require_gpu_flag=*/false).device;
  l.precision = train::choose_precision(o.precision, l.device).name;
  Generator gen(0);
  const int64_t num_classes = int64_t(l.input.classes.size());
  l.model = spec_from_metadata
                ? nn::model_from_spec(info.model_spec, ck.weights_path.string() + " (__metadata__ model_spec)",
                                      num_classes, channels, size, &gen)
                : models::create(model, num_classes, channels, size, &gen);
  // Strict: every tensor by name, float16/bfloat16/float64 cast to the model's dtype.
  train::WeightLoadReport rep;
  try {
    rep = train::load_weights(*l.model, ck.tensors, ck.weights_path.string());
  } catch (const FormatError& e) {  // the loader's hint is about --init-from; here only --model helps
    throw FormatError(fmt::format("{} (model '{}')", e.what(), model), "pass the --model the weights were trained with");
  }
  for (const auto& note : rep.notes) fmt::print(stderr, "ember: note: {}\n", note);
  l.model->to(l.device);
  l.model->eval();
  return l;
}

// Above io::kFullConfusionMaxClasses: the most-confused pairs and the classes of lowest accuracy.
void print_confusion_summary(const std::vector<std::string>& names, const std::vector<std::vector<int64_t>>& m) {
  auto name = [&](size_t i) { return truncate_to_width(i < names.size() ? names[i] : std::to_string(i), 28); };
  fmt::print("\n{} classes: the {} most-confused pairs and the {} lowest per-class accuracies\n", m.size(),
             io::kConfusionSummaryRows, io::kConfusionSummaryRows);
  fmt::print("\nmost-confused pairs (true -> predicted: samples, share of the true class)\n");
  for (const io::ConfusedPair& p : io::most_confused_pairs(m, io::kConfusionSummaryRows))
    fmt::print("  {} -> {}: {} ({:.1f}%)\n", name(p.true_class), name(p.predicted), p.count, 100 * p.share);
  fmt::print("\nlowest per-class accuracy (correct of samples)\n");
  for (const io::ClassAccuracy& c : io::worst_classes(m, io::kConfusionSummaryRows))
    fmt::print("  {} {:6.2f}% ({} of {})\n", pad_right(name(c.cls), 28), 100 * c.accuracy(), c.correct, c.total);
}

int run_eval(const EvalOpts& o) {
  Loaded l = load(o, /*need_test=*/true);
  // bf16 / fp16: the forward passes run under autocast (the weights, whatever precision trained them,
  // stay f32).
  autocast ac(l.device.type, train::PrecisionChoice{l.precision, ""}.dtype(), l.precision != "fp32");
  train::EvalResult r = train::evaluate(*l.model, l.test, o.batch_size, l.device);
  const auto& names = l.test.classes;
  if (o.json) {
    nlohmann::json j = provenance(l, o);
    j.update({{"accuracy", r.accuracy}, {"loss", r.loss}, {"samples", r.samples},
              {"per_class_accuracy", r.per_class_accuracy}, {"confusion", r.confusion}, {"classes", names},
              {"epoch", l.manifest.epoch}, {"step", l.manifest.step}});
    fmt::print("{}\n", j.dump(2));
    return kExitOk;
  }
  fmt::print("checkpoint: epoch {}, step {} ({} on {})\n", l.manifest.epoch, l.manifest.step, l.model_name,
             l.test.name);
  if (!l.chosen.summary.empty()) fmt::print("            {}\n", l.chosen.summary);
  fmt::print("test accuracy: {:.2f}% ({}), loss {:.4f}\n", 100 * r.accuracy, plural(r.samples, "sample"), r.loss);
  if (!o.confusion_csv.empty()) {
    const std::string csv = io::confusion_csv(names, r.confusion);
    io::write_file_atomic(o.confusion_csv, std::span(reinterpret_cast<const uint8_t*>(csv.data()), csv.size()));
  }
  const std::string csv_note =
      o.confusion_csv.empty() ? "" : fmt::format("the whole confusion matrix is in {}", o.confusion_csv);
  if (r.confusion.size() > io::kFullConfusionMaxClasses) {
    print_confusion_summary(names, r.confusion);
    fmt::print("\n{}\n", !csv_note.empty() ? csv_note
                                            : "the whole matrix: --confusion-csv FILE (or --json for every number)");
    return kExitOk;
  }
  // Names padded by their display width (CJK and accented names align), the column as wide as the
  // longest, up to 24.
  const size_t digits = std::to_string(std::max<size_t>(r.confusion.size(), 1) - 1).size();
  int name_w = 0;
  for (const auto& n : names) name_w = std::max(name_w, std::min(display_width(n), 24));
  fmt::print("\nper-class accuracy\n");
  for (size_t i = 0; i < r.per_class_accuracy.size(); ++i)
    fmt::print("  {:>{}} {} {:6.2f}%\n", i, digits, pad_right(truncate_to_width(i < names.size() ? names[i] : "", 24), name_w),
               100 * r.per_class_accuracy[i]);
  const size_t cell = std::max<size_t>(5, std::to_string(r.samples).size());
  fmt::print("\nconfusion matrix (rows: true class, columns: predicted)\n  {:>{}} ", "", digits);
  for (size_t j = 0; j < r.confusion.size(); ++j) fmt::print(" {:>{}}", j, cell);
  fmt::print("\n");
  for (size_t i = 0; i < r.confusion.size(); ++i) {
    fmt::print("  {:>{}} ", i, digits);
    for (int64_t v : r.confusion[i]) fmt::print(" {:>{}}", v, cell);
    fmt::print("\n");
  }
  if (!csv_note.empty()) fmt::print("\n{}\n", csv_note);
  return kExitOk;
}

// The top-k classes of one normalised (1, C, H, W) batch; truth < 0 when unknown. Printed as
// text, or appended to `json_out` (predict --json).
void top_k(const Loaded& l, const EvalOpts& o, const Tensor& x, int64_t truth, const std::string& what,
           const std::string& input, nlohmann::json& json_out) {
  Tensor logits;
  {
    autocast ac(l.device.type, train::PrecisionChoice{l.precision, ""}.dtype(), l.precision != "fp32");
    logits = (*l.model)(x.to(l.device));
  }
  auto probs = nn::functional::softmax(logits, 1).to_vector<float>();
  std::vector<int64_t> idx(probs.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = int64_t(i);
  std::sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return probs[size_t(a)] > probs[size_t(b)]; });
  const auto& names = l.classes;
  auto name_of = [&](int64_t c) { return size_t(c) < names.size() ? names[size_t(c)] : std::string(); };
  const int64_t k_shown = std::min<int64_t>(o.top_k, int64_t(idx.size()));
  int name_w = 12;  // the column of the names shown, by display width
  for (int64_t k = 0; k < k_shown; ++k) name_w = std::max(name_w, std::min(24, display_width(name_of(idx[size_t(k)]))));
  if (o.json) {
    nlohmann::json top = nlohmann::json::array();
    for (int64_t k = 0; k < k_shown; ++k) {
      const int64_t c = idx[size_t(k)];
      top.push_back({{"class", c}, {"name", name_of(c)}, {"probability", probs[size_t(c)]}});
    }
    nlohmann::json p = {{"input", input}, {"top_k", top}};
    if (truth >= 0) p["true_class"] = truth;
    json_out.push_back(p);
    return;
  }
  fmt::print("{}{}\n", what, truth >= 0 ? fmt::format(" (true class {} {})", truth, name_of(truth)) : "");
  for (int64_t k = 0; k < k_shown; ++k) {
    int64_t c = idx[size_t(k)];
    fmt::print("  {}. {:>2} {} {:6.2f}%{}\n", k + 1, c, pad_right(truncate_to_width(name_of(c), 24), name_w),
               100 * probs[size_t(c)], c == truth ? "  <- true" : "");
  }
}

int run_predict(const EvalOpts& given) {
  EvalOpts o = given;
  // `ember predict --model resnet18 --weights resnet18.pth photo.jpg`: every positional is an image.
  if (!o.weights.empty()) {
    if (!o.path.empty()) o.images.insert(o.images.begin(), o.path);
    o.path = o.weights;
    if (o.model.empty())
      throw UsageError("--weights needs --model: which architecture the weights are for",
                       "e.g. `ember predict --model resnet18 --weights resnet18.pth photo.jpg` (`ember weights info "
                       "FILE` lists the models a file fits)");
  } else if (o.path.empty()) {
    throw UsageError("predict needs a run directory, a checkpoint or --weights FILE",
                     "e.g. `ember predict runs/<name> shirt.png` or `ember predict --model resnet18 --weights "
                     "resnet18.pth photo.jpg`");
  }
  if ((o.index >= 0) == !o.images.empty())
    throw UsageError(o.images.empty() ? "predict needs something to classify: image files or --index N (a test-set "
                                        "sample)"
                                      : "predict takes image files or --index N (a test-set sample), not both",
                     "e.g. `ember predict runs/<name> shirt.png` or `ember predict runs/<name> --index 0`");
  Loaded l = load(o, /*need_test=*/o.index >= 0);
  if (!o.json && !l.chosen.summary.empty()) fmt::print("checkpoint: {}\n", l.chosen.summary), std::fflush(stdout);
  autograd::NoGradGuard ng;
  nlohmann::json predictions = nlohmann::json::array();
  auto print_json = [&] {
    if (!o.json) return;
    nlohmann::json j = provenance(l, o);
    j["predictions"] = predictions;
    fmt::print("{}\n", j.dump(2));
  };
  data::LoaderOptions lo;
  lo.batch_size = 1;
  lo.shuffle = false;
  lo.workers = 0;
  if (o.index >= 0) {
    if (o.index >= l.test.size())
      throw UsageError(fmt::format("--index {} is outside the test set (0..{})", o.index, l.test.size() - 1));
    data::Batch b = data::DataLoader(l.test, lo).make_batch(0, o.index);
    top_k(l, o, b.x, b.y.to_vector<int64_t>()[0], fmt::format("test sample {} of {}", o.index, l.test.name),
          fmt::format("test:{}", o.index), predictions);
    print_json();
    return kExitOk;
  }
  if (l.photo) {
    // torchvision's evaluation transforms on the decoded RGB picture (data/photo_transforms.h).
    const int64_t crop = l.input.input_shape[1];
    for (const std::string& file : o.images) {
      const data::Image picture = data::read_rgb_image(file, o.max_pixels);
      const data::Image cropped = data::eval_resize_crop(picture, crop);
      Tensor x = empty({1, 3, crop, crop});
      data::to_planes(cropped, l.input.mean, l.input.std, x.data_ptr<float>());
      top_k(l, o, x, -1,
            fmt::format("{} ({}x{}, resized to {} and centre-cropped to {}x{})", file, picture.width, picture.height,
                        data::resize_for_crop(crop), crop, crop),
            file, predictions);
    }
    print_json();
    return kExitOk;
  }
  // Image files: decoded and resized to the dataset's geometry, then normalised by the same
  // loader code as the test set (one-sample dataset with the test set's mean/std).
  data::ImageFolderOptions io;
  io.channels = l.input.input_shape[0], io.height = l.input.input_shape[1], io.width = l.input.input_shape[2];
  io.max_pixels = o.max_pixels;  // the header is checked before decoding
  // An image-folder run was trained on centre crops (aspect ratio kept): predict sees images alike.
  if (l.data == train::kImageFolder) io.resize = data::ResizeMode::CenterCrop;
  for (const std::string& file : o.images) {
    Tensor image = data::load_image(file, io).unsqueeze(0).contiguous();
    if (o.invert) train::invert_u8(image);
    bool colour = false;
    if (io.channels == 1) {
      data::ImageFolderOptions rgb = io;
      rgb.channels = 3;
      colour = train::has_colour(data::load_image(file, rgb).unsqueeze(0));
    }
    if (l.look)
      if (std::string why = train::unlike_training_data(image, *l.look, io.channels, l.data_label, colour, o.invert);
          !why.empty())
        warn(file + " " + why);
    // A one-sample set normalised by the loader with the training set's mean and std.
    const data::Dataset one =
        data::dataset_from_tensors(image, zeros({1}, {.dtype = DType::Int64}), int64_t(l.input.classes.size()),
                                   l.input.classes, l.input.mean, l.input.std);
    data::Batch b = data::DataLoader(one, lo).make_batch(0, 0);
    top_k(l, o, b.x, -1,
          fmt::format("{} ({}x{}x{} as {}{})", file, io.channels, io.height, io.width, l.data_label,
                      o.invert ? ", inverted" : ""),
          file, predictions);
  }
  print_json();
  return kExitOk;
}

void common(CLI::App* s, EvalOpts& o) {
  s->add_option("--model", o.model, "Model name (default: from the checkpoint manifest)");
  s->add_option("--data", o.data, "Dataset, or the image folder a run was trained on (default: from the manifest)");
  s->add_option("--data-dir", o.data_dir, "Dataset directory (an image-folder run: its folder, if it moved)");
  s->add_option("--device", o.device, "auto, cpu, cuda or cuda:N")->capture_default_str();
  s->add_option("--precision", o.precision,
                "fp32, bf16 (autocast; needs AMX-BF16 or AVX512-BF16, or a GPU of sm_80+), fp16 (GPUs of sm_70+) or auto "
                "(bf16 where the device does it fast)")
      ->check(CLI::IsMember({"auto", "fp32", "bf16", "fp16"}))->capture_default_str();
  add_number(s, "--limit-test", o.limit_test, "Use a seeded, stratified subset of N test samples", at_least(0));
  s->add_option("--checkpoint", o.checkpoint,
                "Which of a run's checkpoints: best (the epoch validation chose) or last")
      ->check(CLI::IsMember({"best", "last"}))->default_str("best");
  add_number(s, "--max-image-pixels", o.max_pixels,
             "Refuse images of more pixels than N before decoding them, warn above N/2 (0: no limit)", at_least(0))
      ->capture_default_str();
}
}  // namespace

void register_eval(CLI::App& root, Runner& run) {
  auto o = std::make_shared<EvalOpts>();
  auto* e = root.add_subcommand("eval", "Test accuracy, per-class accuracy and confusion matrix of a run");
  e->add_option("path", o->path, "Run directory (runs/<name>) or checkpoint (.json or .safetensors)")->required();
  common(e, *o);
  add_number(e, "-b,--batch-size", o->batch_size, "Evaluation batch size", at_least(1))->capture_default_str();
  e->add_flag("--json", o->json, "Print JSON");
  e->add_option("--confusion-csv", o->confusion_csv,
                "Also write the whole confusion matrix as CSV to this file (above 50 classes the output shows "
                "the most-confused pairs and the worst classes only)");
  e->callback([&run, o] { run = [o] { return run_eval(*o); }; });

  auto p = std::make_shared<EvalOpts>();
  auto* pr = root.add_subcommand("predict", "Top-k classes of a test-set sample (--index) or of image files");
  pr->add_option("path", p->path,
                 "Run directory (runs/<name>) or checkpoint (.json, .safetensors or PyTorch .pth); with --weights, "
                 "the first image");
  pr->add_option("images", p->images, "PNG/JPEG files to classify (resized to the dataset's size)");
  pr->add_option("--weights", p->weights,
                 "A weights file alone (torchvision's .pth, or safetensors) for --model: `ember predict --model "
                 "resnet18 --weights resnet18.pth photo.jpg`; torchvision's models get torchvision's evaluation "
                 "transforms (resize, centre crop, ImageNet mean/std)");
  pr->add_option("--classes", p->classes_file,
                 "With bare torchvision weights: a file of the output names, one per line (e.g. ImageNet's 1000)");
  add_number(pr, "--image-size", p->image_size,
             "With bare torchvision weights: the centre crop's side (default 224; the resize is side * 256 / 224)",
             at_least(1));
  add_number(pr, "--index", p->index, "Test-set sample index", at_least(0));
  add_number(pr, "--top-k", p->top_k, "How many classes to show", at_least(1))->capture_default_str();
  pr->add_flag("--invert", p->invert,
               "Invert image files (255 - v) before classifying: for dark-on-light pictures given to a model trained "
               "on light-on-dark data (Fashion-MNIST, MNIST)");
  pr->add_flag("--json", p->json, "Print JSON (model, checkpoint, device, precision and the top-k of each input)");
  common(pr, *p);
  pr->callback([&run, p] { run = [p] { return run_predict(*p); }; });
}

}  // namespace ember::cli
