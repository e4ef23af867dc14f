// ember eval (test accuracy, per-class accuracy, confusion matrix of a run or checkpoint) and
// ember predict (top-k classes of image files or of one test-set sample). The model is opened,
// fed and run by the library (ember/train/inference.h, predict.h), as ember.load's Model is: this
// file parses and prints.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "ember/data/loader.h"
#include "ember/ember.h"
#include "ember/io/atomic_file.h"
#include "ember/io/report.h"
#include "ember/train/inference.h"
#include "ember/train/predict.h"

namespace ember::cli {
namespace fs = std::filesystem;
namespace {

struct EvalOpts {
  // --device and --precision default as every reader of a trained model does (train::InferenceOptions).
  std::string path, model, data, data_dir, device = train::InferenceOptions{}.device,
                                           precision = train::InferenceOptions{}.precision;
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

using Loaded = train::InferenceModel;

// need_test: eval and predict --index read the run's test set (train::open_for_inference).
Loaded load(const EvalOpts& o, bool need_test) {
  train::InferenceOptions io;
  io.path = o.path, io.checkpoint = o.checkpoint, io.model = o.model, io.data = o.data, io.data_dir = o.data_dir;
  io.device = o.device, io.precision = o.precision, io.limit_test = o.limit_test, io.max_pixels = o.max_pixels;
  io.classes_file = o.classes_file, io.image_size = o.image_size;
  Loaded l = train::open_for_inference(io, need_test);
  for (const auto& note : l.notes) fmt::print(stderr, "ember: note: {}\n", note);
  return l;
}

// What --json output says about where the numbers come from.
nlohmann::json provenance(const Loaded& l, const EvalOpts& o) {
  nlohmann::json j = {{"model", l.model_name}, {"checkpoint", o.path}, {"device", l.device.str()},
                      {"precision", l.precision}};
  if (!l.chosen.which.empty()) j["checkpoint_choice"] = l.chosen.which;
  return j;
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
  // The library's evaluation of an opened model (ember/train/predict.h): under --precision's
  // autocast, batch norms folded into their convolutions.
  train::EvalOptions eo;
  eo.batch_size = o.batch_size, eo.device = l.device;
  train::EvalResult r = train::evaluate_inference(*l.model, l.precision, l.test, eo);
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
  // The library's forward (ember/train/predict.h): the probabilities ember.load's Model gives.
  auto probs = train::class_probabilities(l, x).to_vector<float>();
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
  } else {
    // `ember predict shirt.png` (the run forgotten), `ember predict model.onnx x.png`: said before
    // anything else, in the library's words.
    train::refuse_non_model_path(o.path, train::FrontEnd::Cli);
  }
  if ((o.index >= 0) == !o.images.empty())
    throw UsageError(o.images.empty() ? "predict needs something to classify: image files or --index N (a test-set "
                                        "sample)"
                                      : "predict takes image files or --index N (a test-set sample), not both",
                     "e.g. `ember predict runs/<name> shirt.png` or `ember predict runs/<name> --index 0`");
  Loaded l = load(o, /*need_test=*/o.index >= 0);
  if (!o.json && !l.chosen.summary.empty()) fmt::print("checkpoint: {}\n", l.chosen.summary), std::fflush(stdout);
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
  // Image files (a folder's, sorted), made the model's input as the run's test images were
  // (ember/train/predict.h).
  const train::PredictFiles files = train::predict_files(o.images);
  for (const std::string& note : files.notes) fmt::print(stderr, "ember: note: {}\n", note);
  for (const std::string& file : files.images) {
    const train::ImageInput in = train::image_input(l, file, {.max_pixels = o.max_pixels, .invert = o.invert});
    for (const std::string& w : in.warnings) warn(w);
    top_k(l, o, in.x, -1, in.description, file, predictions);
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
  pr->add_option("images", p->images,
                 "Image files (PNG, JPEG, ...) or folders of them to classify (resized to the dataset's size)");
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
