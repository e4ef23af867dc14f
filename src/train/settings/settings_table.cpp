// The table of `ember train`'s settings (include/ember/train/settings.h): one row per setting, and
// what is derived from a row alone — its flag names, the check of a value as typed, its value as
// JSON and as text, config.json and the report's config table.
#include <fmt/format.h>

#include "ember/data/photo_cache.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ember/data/dataset.h"
#include "ember/nn/models.h"
#include "ember/nn/spec.h"
#include "ember/optim/registry.h"
#include "ember/train/caller_model.h"
#include "ember/train/data_path.h"
#include "ember/train/settings.h"

namespace ember::train {
namespace {

std::string join_or(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i == 0 ? "" : i + 1 == v.size() ? " or " : ", ") + v[i];
  return s;
}

std::string lower(std::string s) {
  for (auto& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// --device: auto, cpu, cuda or cuda:N; what other tools call the GPU ("gpu", "gpu:1", TensorFlow's
// "/GPU:0") is named as cuda.
std::string check_device(const std::string& v) {
  if (v == "auto" || v == "cpu" || v == "cuda") return "";
  if (v.starts_with("cuda:") && v.size() > 5 && v.find_first_not_of("0123456789", 5) == std::string::npos) return "";
  std::string l = lower(v);
  if (l.starts_with("/")) l = l.substr(1);
  std::string guess;
  if (l == "gpu" || l == "nvidia") guess = "cuda";
  else if (l.starts_with("gpu:") && l.size() > 4 && l.find_first_not_of("0123456789", 4) == std::string::npos)
    guess = "cuda:" + l.substr(4);
  else guess = closest_name(v, {"auto", "cpu", "cuda"});
  return fmt::format("invalid device '{}'{}: use auto, cpu, cuda or cuda:N (a GPU is cuda, as in PyTorch)", v,
                     guess.empty() ? "" : " (did you mean " + guess + "?)");
}

std::string check_model(const std::string& v) {
  const auto names = models::names();
  if (nn::is_spec_file(v) || std::find(names.begin(), names.end(), v) != names.end()) return "";
  // A model its caller built ("python:Net", caller_model.h): a run's record of it. Whether the run
  // has that model at hand is the plan's to check (plan_run), with the call that does.
  if (is_caller_model(v)) return "";
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  const std::string guess = closest_name(v, names);
  return "unknown model '" + v + "'" + (guess.empty() ? "" : " (did you mean " + guess + "?)") + ": choose one of " +
         known + ", or a model spec file (*.toml)";
}

std::string check_data(const std::string& v) {
  const auto names = data::known_dataset_names();
  std::error_code ec;
  const std::string path = expand_user(v);  // `~/photos` from a config file or Python, unexpanded
  if (std::find(names.begin(), names.end(), v) != names.end() || v == "image-folder" ||
      (!v.empty() && std::filesystem::is_directory(path, ec)) || (!v.empty() && data::is_photo_cache(path)))
    return "";
  // `--data ~/phtos`: a path, not a dataset name; say which folder is missing and what is near it.
  if (looks_like_path(v)) return data_path_problem(v);
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  const std::string guess = closest_name(v, names);
  return fmt::format("unknown dataset '{}'{}: choose one of {}, a folder of your own images (PATH/<class>/*.png, "
                     "or PATH/train/<class>/ and PATH/test/<class>/), or a photo cache file (`ember data cache`)",
                     v, guess.empty() ? "" : " (did you mean " + guess + "?)", known);
}

// A run name is one folder under runs/: "." would be runs/ itself and "../x" a folder outside it.
// "" is no name (the run is named from its model, data and time; `ember train` refuses --name '').
std::string check_run_name(const std::string& v) {
  if (v == "." || v == "..")
    return "'" + v + "' is not a run name: the run directory is runs/<name>, one folder of its own";
  if (v.find('/') != std::string::npos)
    return "a run name cannot contain '/' (got '" + v + "'): the run directory is runs/<name>, one folder; pass "
           "--run-dir PATH for a run directory elsewhere";
  return "";
}

std::string registry_help(const char* what, const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string s = what;
  for (size_t i = 0; i < entries.size(); ++i)
    s += fmt::format("{}{} ({})", i == 0 ? ": " : i + 1 == entries.size() ? " or " : ", ", entries[i].first,
                     entries[i].second);
  return s;
}
std::string optimizer_help() {
  std::vector<std::pair<std::string, std::string>> e;
  for (const auto& o : optim::optimizers()) e.emplace_back(o.name, o.help);
  return registry_help("Optimizer", e);
}
std::string schedule_help() {
  std::vector<std::pair<std::string, std::string>> e;
  for (const auto& o : optim::schedules()) e.emplace_back(o.name, o.help);
  return registry_help("Learning-rate schedule", e);
}

// The rows. Each says, for one setting: key, flag names, field, help, what --resume does with it,
// and its rule. Defaults are the field initialisers of TrainSettings.
std::vector<Setting> make_table() {
  using R = ResumeRule;
  std::vector<Setting> t;
  auto row = [&](std::string key, std::string flags, SettingField f, std::string help, R resume) -> Setting& {
    Setting s;
    s.key = std::move(key), s.flags = std::move(flags), s.field = f, s.help = std::move(help), s.resume = resume;
    t.push_back(std::move(s));
    return t.back();
  };
  // ---- what is trained, on what ----
  {
    Setting& s = row("model", "--model", &TrainSettings::model, "", R::Identity);
    s.check = check_model;
    s.value_word = "ZOO NAME or FILE.toml";
    std::string zoo;
    for (const auto& n : models::names()) zoo += (zoo.empty() ? "" : ", ") + n;
    s.help = "Zoo model (" + zoo + "), or a model spec file (*.toml) (default: bncnn48_fc128; resnet_small for an "
             "image folder; with --init-from, the model its weights record)";
    s.show_default = false;
  }
  {
    Setting& s = row("data", "--data,--dataset", &TrainSettings::data,
                     "Dataset name, or a folder of your own images (PATH/<class>/*.png|jpg, or PATH/train/<class>/ and "
                     "PATH/test/<class>/, optionally PATH/val/<class>/)",
                     R::Identity);
    s.check = check_data;
    s.value_word = "NAME or FOLDER";
  }
  {
    Setting& s = row("image_size", "--image-size", &TrainSettings::image_size,
                     "Image folders: resize (centre crop) to SxS (default: the median size of 32 sampled images, at most "
                     "64)",
                     R::Identity);
    s.rule = between(1, 4096), s.section = "image_folder", s.show_default = false;
  }
  {
    Setting& s = row("augment", "--augment", &TrainSettings::augment,
                     "Image folders: standard (RandomResizedCrop + horizontal flip, torchvision's ImageNet recipe), "
                     "light (crops of at least 35%), trivial (standard + TrivialAugmentWide), none (resize + centre "
                     "crop), each decoding the photos per sample "
                     "at --image-size (default: the model's, 224 for torchvision's); auto: standard for torchvision's "
                     "models, the pre-resized images of today for ember's small ones",
                     R::Identity);
    s.choices = [] { return std::vector<std::string>{"auto", "standard", "light", "trivial", "none"}; };
    s.section = "image_folder";
  }
  {
    Setting& s = row("color_jitter", "--color-jitter", &TrainSettings::color_jitter,
                     "Photos: torchvision's ColorJitter on the training samples, B or B,C,S or B,C,S,H (brightness, "
                     "contrast, saturation, hue), e.g. 0.4 (default: none)",
                     R::Identity);
    s.check = [](const std::string& v) -> std::string {
      if (v.empty()) return "";
      try {
        (void)data::parse_color_jitter(v);
        return "";
      } catch (const Error& e) {
        return std::string(e.what()) + "; " + e.hint();
      }
    };
    s.section = "image_folder", s.value_word = "B[,C,S[,H]]", s.show_default = false;
  }
  {
    Setting& s = row("channels", "--channels", &TrainSettings::channels,
                     "Image folders: 1 (grey) or 3 (RGB) (default: as most sampled images)", R::Identity);
    s.choices = [] { return std::vector<std::string>{"1", "3"}; };
    s.section = "image_folder", s.show_default = false;
  }
  {
    Setting& s = row("test_fraction", "--test-fraction", &TrainSettings::test_fraction,
                     "Image folders without train/ and test/: share of each class held out for testing (seeded by "
                     "--seed)",
                     R::Identity);
    s.rule = between(0.01, 0.99), s.section = "image_folder";
  }
  {
    Setting& s = row("data_dir", "--data-dir", &TrainSettings::data_dir,
                     "Dataset directory (default: $EMBER_DATA_DIR/<data>, /usr/share/datasets/<data>)", R::Extend);
    s.show_default = false, s.per_rank = true;  // the data itself is compared (its checksum)
  }
  // Second names (--max-epochs, --bs, --wd, --patience, ...) are the ones PyTorch, Keras, Lightning
  // and Hugging Face users type first, where they mean the same.
  row("epochs", "--epochs,--max-epochs", &TrainSettings::epochs, "Epochs", R::Extend).rule = at_least(1);
  row("batch_size", "-b,--batch-size,--bs", &TrainSettings::batch_size,
      "Mini-batch size: samples per forward/backward (a smaller last batch is kept)", R::Identity)
      .rule = at_least(1);
  {
    Setting& s = row("accumulate", "--accumulate", &TrainSettings::accumulate,
                     "Micro-batches per optimizer step: the effective batch is --batch-size x N", R::Identity);
    s.rule = at_least(1), s.absent = "1";
  }
  {
    Setting& s = row("lr", "--lr,--learning-rate", &TrainSettings::lr,
                     "Learning rate (peak lr for onecycle) (default: the model's recipe: 0.006 for ember's models; "
                     "torchvision's reference recipe for its architectures, scaled to the batch: resnet18 0.1 at "
                     "batch 256)",
                     R::Identity);
    s.rule = above(0), s.show_default = false;
  }
  {
    Setting& s = row("optimizer", "--optimizer", &TrainSettings::optimizer,
                     optimizer_help() + " (default: the model's recipe: adamw for ember's models, sgd for "
                                        "torchvision's ResNets, AlexNet and MobileNetV2)",
                     R::Identity);
    s.choices = optim::optimizer_names, s.show_default = false;
  }
  {
    Setting& s = row("schedule", "--schedule", &TrainSettings::schedule, schedule_help(), R::Identity);
    s.choices = optim::schedule_names;
  }
  {
    Setting& s = row("weight_decay", "--weight-decay,--wd", &TrainSettings::weight_decay,
                     "Weight decay (default: the model's recipe: 0.01 for ember's models, torchvision's for its "
                     "architectures)",
                     R::Identity);
    s.rule = at_least(0), s.show_default = false;
  }
  {
    // Runs from before --momentum trained SGD with 0.9.
    Setting& s = row("momentum", "--momentum", &TrainSettings::momentum,
                     "SGD's momentum (Nesterov; 0: plain SGD); adam and adamw have none (their betas are 0.9, 0.999)",
                     R::Identity);
    s.rule = at_least_below(0, 1), s.absent = "0.9";
  }
  row("seed", "--seed", &TrainSettings::seed, "Seed for initialisation, shuffling, dropout, augmentation and the "
      "validation split", R::Identity).rule = at_least(0);
  // Runs from before these settings existed trained without them.
  {
    Setting& s = row("hflip", "--hflip", &TrainSettings::hflip,
                     "Augmentation: probability of flipping a training image left-right", R::Identity);
    s.rule = between(0, 1), s.absent = "0.0";
  }
  {
    Setting& s = row("label_smoothing", "--label-smoothing", &TrainSettings::label_smoothing,
                     "Cross-entropy label smoothing for training (0: off)", R::Identity);
    s.rule = between(0, 1), s.absent = "0.0";
  }
  {
    Setting& s = row("crop_padding", "--crop-padding", &TrainSettings::crop_padding,
                     "Augmentation: random crop of the image size from the image zero-padded by N pixels (0: off)",
                     R::Identity);
    s.rule = at_least(0), s.absent = "0";
  }
  {
    Setting& s = row("val_split", "--val-split", &TrainSettings::val_split,
                     "Share of the training set held out (seeded) to choose the best epoch and to stop early; the "
                     "test set is only reported (0: choose on the test set; an image folder's val/ is used instead)",
                     R::Identity);
    s.rule = at_least_below(0, 1), s.absent = "0.0";
  }
  {
    Setting& s = row("early_stop_patience", "--early-stop,--patience", &TrainSettings::early_stop_patience,
                     "Stop after N epochs without a better validation accuracy (0: off)", R::Extend);
    s.rule = at_least(0);
  }
  {
    Setting& s = row("precision", "--precision", &TrainSettings::precision,
                     "Arithmetic of the forward pass: fp32, bf16 (autocast: convolutions and matrix products in "
                     "bfloat16, weights and gradients kept in float32; needs AMX-BF16 or AVX512-BF16, or a GPU of sm_80+), "
                     "fp16 (GPUs of sm_70+, with dynamic loss scaling), or auto (bf16 where the device does it fast, "
                     "else fp32)",
                     R::Extend);
    s.choices = [] { return std::vector<std::string>{"auto", "fp32", "bf16", "fp16"}; };
    s.absent = "\"fp32\"";
  }
  {
    Setting& s = row("limit_train", "--limit-train", &TrainSettings::limit_train,
                     "Use a seeded, stratified subset of N training samples (each class in proportion)", R::Identity);
    s.rule = at_least(0), s.absent = "0", s.show_default = false;
  }
  {
    Setting& s = row("limit_test", "--limit-test", &TrainSettings::limit_test,
                     "Use a seeded, stratified subset of N test samples", R::Identity);
    s.rule = at_least(0), s.absent = "0", s.show_default = false;
  }
  // ---- where the weights start (a new run only; recorded, not read back on resume) ----
  {
    Setting& s = row("init_from", "--init-from,--weights", &TrainSettings::init_from,
                     "Start a new run from these weights: a PyTorch .pth/.pt (torch.save(model.state_dict()), read "
                     "without running its code; torchvision's pretrained weights so saved), a .safetensors file "
                     "(ember's, or PyTorch's save_file(model.state_dict())) or a run directory; keys are matched by "
                     "name, float16/bfloat16/float64 are cast",
                     R::Invocation);
    s.show_default = false;
  }
  row("init_from_partial", "--init-from-partial", &TrainSettings::init_from_partial,
      "With --init-from: allow weights the file lacks and a head of another shape (fine-tuning to new classes); "
      "those keep their fresh initialisation",
      R::Invocation);
  // ---- fine-tuning (the run's own: recorded, and kept by a resume) ----
  {
    Setting& s = row("freeze_backbone", "--freeze-backbone", &TrainSettings::freeze_backbone,
                     "Train the classifier (the model's last layer) only: the rest keeps its weights, computes no "
                     "gradients and its batch norms stay in evaluation mode",
                     R::Identity);
    s.absent = "false";
  }
  {
    Setting& s = row("unfreeze_after", "--unfreeze-after", &TrainSettings::unfreeze_after,
                     "With --freeze-backbone: train the whole model from epoch N+1 on (0: never)", R::Identity);
    s.rule = at_least(0), s.absent = "0", s.value_word = "N";
  }
  {
    Setting& s = row("lr_backbone", "--lr-backbone", &TrainSettings::lr_backbone,
                     "Learning rate of every layer but the classifier (0: --lr); scaled by the schedule as --lr is",
                     R::Identity);
    s.rule = at_least(0), s.absent = "0.0", s.show_default = false;
  }
  // ---- how this invocation runs ----
  {
    Setting& s = row("workers", "--workers,--num-workers", &TrainSettings::workers,
                     "Data-loading threads (0: in-line; default: 1, for photos the cores the compute threads leave, "
                     "at least 1)",
                     R::Invocation);
    s.rule = thread_count_rule("0 loads the batches in-line"), s.show_default = false, s.per_rank = true;
  }
  {
    Setting& s = row("threads", "--threads", &TrainSettings::threads,
                     "CPU compute threads (default: all cores; with --nproc-per-node, the cores split between the "
                     "ranks)",
                     R::Extend);
    s.rule = thread_count_rule("0 uses all of them"), s.show_default = false, s.per_rank = true;
  }
  {
    Setting& s = row("device", "--device", &TrainSettings::device, "auto, cpu, cuda or cuda:N", R::Invocation);
    s.check = check_device, s.per_rank = true, s.value_word = "DEVICE";
  }
  row("device_resident", "--device-resident", &TrainSettings::device_resident,
      "Upload the whole dataset to the device once (no per-step copies; needs the memory for it)", R::Invocation)
      .per_rank = true;
  row("require_gpu", "--require-gpu", &TrainSettings::require_gpu, "Fail instead of falling back to the CPU",
      R::Invocation).per_rank = true;
  {
    Setting& s = row("nproc_per_node", "--nproc-per-node", &TrainSettings::nproc_per_node,
                     "Data-parallel: start N ranks on this machine (one per visible GPU, or the CPU cores split "
                     "between them); --batch-size is per rank. mpirun -np N and torchrun's RANK/WORLD_SIZE/"
                     "MASTER_ADDR/MASTER_PORT work too (docs/distributed.md)",
                     R::Invocation);
    s.rule = between(1, kMaxThreads), s.recorded = false, s.show_default = false, s.per_rank = true;
  }
  row("deterministic", "--deterministic", &TrainSettings::deterministic,
      "Bitwise-reproducible runs (fixed thread count and data order)", R::Invocation);
  {
    Setting& s = row("log_placement", "--log-placement", &TrainSettings::log_placement,
                     "Print where each parameter and buffer lives", R::Invocation);
    s.recorded = false, s.per_rank = true;
  }
  {
    // Rank 0 names the run and owns its directory; the others are told where it is.
    Setting& s = row("name", "--name", &TrainSettings::name, "Run name: the run directory is runs/<name>", R::Extend);
    s.check = check_run_name, s.value_word = "NAME";
    // The same refusal for `--name ""`, a config file's `name = ""` and ember.fit(name=""): the run
    // directory would be runs/ itself. (The default "" means none was given: a name is made.)
    s.refuse_empty = "the run name is empty: pass a name (the run directory is runs/<name>), or leave it out to "
                     "have one made from the model, data and time";
    s.show_default = false, s.per_rank = true;
  }
  {
    Setting& s = row("run_dir", "--run-dir,--output-dir", &TrainSettings::run_dir, "Run directory (overrides --name)",
                     R::Invocation);
    s.show_default = false, s.per_rank = true;
  }
  {
    Setting& s = row("log_every", "--log-every", &TrainSettings::log_every,
                     "Steps per metrics.jsonl step record (default: about 200 records per run, at most 50 steps apart)",
                     R::Invocation);
    s.rule = at_least(0), s.recorded = false, s.show_default = false;
  }
  {
    // A pixel budget, not part of what is trained: each invocation's own (a resume may raise it).
    Setting& s = row("max_image_pixels", "--max-image-pixels", &TrainSettings::max_image_pixels,
                     "Image folders: refuse an image of more pixels than N before decoding it, warn above N/2 "
                     "(0: no limit)",
                     R::Invocation);
    s.rule = at_least(0), s.recorded = false;
  }
  {
    Setting& s = row("verbose", "--verbose", &TrainSettings::verbose,
                     "What the run prints, as Keras's fit(verbose=): 1 (auto) the banner, a line per epoch and a "
                     "progress bar (not on a terminal: a progress line every 20 s); 2 the banner and a line per "
                     "epoch; 0 only warnings, errors and the result",
                     R::Invocation);
    s.choices = [] { return std::vector<std::string>{"auto", "0", "1", "2"}; };
    s.recorded = false, s.per_rank = true;
  }
  {
    Setting& s = row("stop_after_steps", "--stop-after-steps", &TrainSettings::stop_after_steps,
                     "Testing: act as if interrupted after N steps", R::Invocation);
    s.rule = at_least(0), s.recorded = false, s.hidden = true;
  }
  // Integer rows: the bounds of the field's type, named when a value is beyond them.
  for (Setting& s : t)
    std::visit(
        [&](auto m) {
          using T = std::remove_reference_t<decltype(std::declval<TrainSettings&>().*m)>;
          if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
            s.rule.type_min = static_cast<long double>(std::numeric_limits<T>::min());
            s.rule.type_max = static_cast<long double>(std::numeric_limits<T>::max());
          }
        },
        s.field);
  return t;
}

std::string normal(const std::string& name) {
  std::string out = name.substr(std::min(name.size(), name.find_first_not_of('-')));
  for (auto& ch : out)
    if (ch == '_') ch = '-';
  return out;
}

}  // namespace

std::string Setting::flag() const { return "--" + long_names().front(); }

std::string Setting::spelled(FrontEnd front_end) const { return front_end == FrontEnd::Python ? key + "=" : flag(); }

std::vector<std::string> Setting::long_names() const {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= flags.size()) {
    const size_t comma = std::min(flags.find(',', at), flags.size());
    const std::string name = flags.substr(at, comma - at);
    if (name.starts_with("--")) out.push_back(name.substr(2));
    at = comma + 1;
  }
  return out;
}

bool Setting::is_bool() const { return std::holds_alternative<bool TrainSettings::*>(field); }
bool Setting::is_text() const { return std::holds_alternative<std::string TrainSettings::*>(field); }
bool Setting::is_whole() const { return !is_bool() && !is_text() && !std::holds_alternative<double TrainSettings::*>(field); }

const std::vector<Setting>& train_settings() {
  static const std::vector<Setting> table = make_table();
  return table;
}

const Setting* find_setting(const std::string& name) {
  const std::string n = normal(name);
  for (const Setting& s : train_settings()) {
    if (normal(s.key) == n) return &s;
    for (const auto& l : s.long_names())
      if (l == n) return &s;
  }
  return nullptr;
}

const Setting& setting(const std::string& key) {
  for (const Setting& s : train_settings())
    if (s.key == key) return s;
  throw InternalError("train::setting: no setting '" + key + "' in the table");
}

std::string canonical_setting_text(const Setting& s, const std::string& text) {
  if (!s.is_text() && !s.choices) return text;
  const std::string l = lower(text);
  if (s.choices)
    for (const std::string& c : s.choices())
      if (lower(c) == l) return c;
  if (s.key == "model" && !nn::is_spec_file(text))
    for (const std::string& n : models::names())
      if (lower(n) == l) return n;
  if (s.key == "device" && (l == "auto" || l == "cpu" || l == "cuda" || l.starts_with("cuda:"))) return l;
  return text;
}

std::string check_setting_text(const Setting& s, const std::string& typed) {
  const std::string flag = s.flag();
  const std::string text = canonical_setting_text(s, typed);
  if (s.is_bool()) {
    if (text == "true" || text == "false") return "";
    return fmt::format("{} must be true or false (got '{}')", flag, text);
  }
  if (!s.is_text()) {
    std::string err = number_error(flag, text, s.rule, s.is_whole());
    if (!err.empty()) return err;
  }
  if (s.choices) {
    const std::vector<std::string> allowed = s.choices();
    if (std::find(allowed.begin(), allowed.end(), text) == allowed.end()) {
      std::string err = fmt::format("{} must be {} (got '{}')", flag, join_or(allowed), text);
      const std::string guess = closest_name(text, allowed);
      if (!guess.empty()) err += fmt::format("; did you mean {}?", guess);
      return err;
    }
  }
  if (s.check) {
    const std::string err = s.check(text);
    if (!err.empty()) return flag + ": " + err;
  }
  return "";
}

std::string check_given_setting_text(const Setting& s, const std::string& text) {
  if (text.empty() && !s.refuse_empty.empty()) return s.flag() + ": " + s.refuse_empty;
  return check_setting_text(s, text);
}

std::string setting_json(const Setting& s, const TrainSettings& v) {
  return std::visit([&](auto m) { return nlohmann::json(v.*m).dump(); }, s.field);
}

std::string setting_text(const Setting& s, const TrainSettings& v) {
  return std::visit(
      [&](auto m) -> std::string {
        using T = std::remove_cvref_t<decltype(v.*m)>;
        if constexpr (std::is_same_v<T, std::string>) return v.*m;
        else if constexpr (std::is_same_v<T, bool>) return v.*m ? "true" : "false";
        else return fmt::format("{}", v.*m);
      },
      s.field);
}

std::string default_text(const Setting& s) { return setting_text(s, TrainSettings{}); }

std::string settings_to_json(const TrainSettings& v) {
  nlohmann::json j = nlohmann::json::object();
  for (const Setting& s : train_settings())
    if (s.recorded && s.section.empty()) j[s.key] = nlohmann::json::parse(setting_json(s, v));
  return j.dump();
}

std::string settings_fingerprint(const TrainSettings& v) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const Setting& s : train_settings())
    if (!s.per_rank) j[s.key] = nlohmann::ordered_json::parse(setting_json(s, v));
  return j.dump();
}

std::vector<std::pair<std::string, std::string>> config_table(const std::string& config_json) {
  const nlohmann::json j = nlohmann::json::parse(config_json, nullptr, false);
  std::vector<std::pair<std::string, std::string>> out;
  if (!j.is_object()) return out;
  auto text = [](const nlohmann::json& x) { return x.is_string() ? x.get<std::string>() : x.dump(); };
  std::vector<std::string> shown;
  for (const Setting& s : train_settings())
    if (s.section.empty() && j.contains(s.key)) out.emplace_back(s.key, text(j[s.key])), shown.push_back(s.key);
  for (const auto& [k, x] : j.items())
    if (std::find(shown.begin(), shown.end(), k) == shown.end()) out.emplace_back(k, text(x));
  return out;
}

}  // namespace ember::train
