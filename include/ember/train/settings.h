// The settings of a training run, each declared once (src/train/settings_table.cpp): its config
// key, flag names, type (the TrainSettings field it sets), allowed values, default (the field's
// initialiser), help, what a resume does with it, and the value runs from before it existed had.
// From that one table come `ember train`'s flags (apps/ember/train_flags.cpp), the `--config`
// keys (TOML, settings_file.cpp), config.json, the report's config table and the checks of a
// resumed manifest, all with the same messages: "--epochs must be at least 1 (got 0)".
//
// Adding a setting: a field in TrainSettings, a row in the table; the engine reads it from there.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ember/core/error.h"
#include "ember/data/decode.h"
#include "ember/train/wording.h"

namespace ember::train {

// A setting's value is refused: out of range, of the wrong type, an unknown key in a config file.
// The message names where the value came from (flag, config file and line, manifest) and what is
// allowed; the CLI exits 2 on it, as for a bad flag.
class SettingError : public ValueError {
 public:
  using ValueError::ValueError;
};

// ---- numbers ------------------------------------------------------------------------------------
// The bounds of a numeric setting. Values are checked as written (digits only for whole numbers,
// finite for reals, inside the bounds, inside what the field's type holds).
struct NumberRule {
  long double min = -std::numeric_limits<long double>::infinity();
  long double max = std::numeric_limits<long double>::infinity();
  bool min_exclusive = false;  // "greater than min" rather than "at least min"
  std::string max_why;         // why the upper bound exists, said when it is exceeded
  // What the field's type can hold; named only when a value is beyond it.
  long double type_min = -std::numeric_limits<long double>::infinity();
  long double type_max = std::numeric_limits<long double>::infinity();
  bool max_exclusive = false;  // "less than max" rather than "at most max"
};
inline NumberRule any_number() { return {}; }
inline NumberRule at_least(long double min) {
  NumberRule r;
  r.min = min;
  return r;
}
inline NumberRule above(long double min) {
  NumberRule r = at_least(min);
  r.min_exclusive = true;
  return r;
}
inline NumberRule between(long double lo, long double hi, std::string why = {}) {
  NumberRule r;
  r.min = lo, r.max = hi, r.max_why = std::move(why);
  return r;
}
// [lo, hi): "at least 0 and less than 1".
inline NumberRule at_least_below(long double lo, long double hi) {
  NumberRule r = between(lo, hi);
  r.max_exclusive = true;
  return r;
}

// "" when `text` is a valid value for `flag`, else the sentence saying why:
// "--epochs must be at least 1 (got 0)", "--lr must be a finite number, greater than 0 (got 'nan')".
// whole: the setting is an integer.
std::string number_error(const std::string& flag, const std::string& text, const NumberRule& rule, bool whole);
// The word --help shows after the type: "POSITIVE", "NONNEGATIVE", "in [0, 1]".
std::string number_rule_word(const NumberRule& rule, bool whole);

// The largest --threads / --workers ember accepts (settings_rules.cpp says why 1024). zero_means:
// what 0 does, said with the bound ("0 uses all of them" for --threads, "0 loads in-line" for
// --workers).
inline constexpr int kMaxThreads = 1024;
NumberRule thread_count_rule(const std::string& zero_means = "0 uses all of them");

// The closest of `candidates` to `typed` (edit distance, transpositions count as one; dashes,
// '_' vs '-' and case ignored), or "" when none is close enough to be the intended one.
std::string closest_name(const std::string& typed, const std::vector<std::string>& candidates);

// ---- the settings -------------------------------------------------------------------------------
// Defaults are the recipe of `ember train` with no flags (issue 12): bncnn48_fc128, AdamW lr 6e-3 with
// a one-cycle schedule, 12 epochs of batch 64, horizontal flips p 0.5, label smoothing 0.1, precision
// auto (bf16 where measured faster than fp32: AMX-BF16, AMD's AVX512-BF16, a GPU of sm_80+; see
// bf16_support in ember/autocast.h). The flips suit Fashion-MNIST, CIFAR-10 and most photos; for
// digits (--data mnist) pass --hflip 0. docs/benchmarks.md, "The
// default recipe", has its measured accuracy and wall time. The recipe before it (91.4% in 27 s):
// --model lenet5 --epochs 15 --batch-size 128 --lr 3e-3 --hflip 0 --precision fp32.
// A new run adapts some defaults to what it trains (ember/train/run_defaults.h, issue 48): an image
// folder's model is resnet_small, and torchvision's architectures take their reference recipes'
// optimizer, lr (scaled to the batch) and weight decay; a value given is never changed.
struct TrainSettings {
  // The run's identity: fixed when it starts, adopted from the checkpoint on --resume.
  std::string model = "bncnn48_fc128";
  std::string data = "fashion-mnist";
  std::string optimizer = "adamw";
  std::string schedule = "onecycle";
  double lr = 6e-3;
  double weight_decay = 0.01;
  double momentum = 0.9;  // SGD's (Nesterov); the other optimizers have none
  int64_t batch_size = 64;
  int64_t accumulate = 1;
  uint64_t seed = 0;
  double label_smoothing = 0.1;  // seeds 0/1/2: 91.58 / 91.40 / 91.28% vs 91.35 / 91.03 / 91.35% at 0
  double hflip = 0.5;
  int64_t crop_padding = 0;
  double val_split = 0.1;
  int64_t limit_train = 0, limit_test = 0;
  int64_t image_size = 0, channels = 0;  // image folders; 0: from the data
  double test_fraction = 0.2;
  // Image folders: auto (the photo pipeline with "standard" for torchvision's models, today's
  // pre-resized tensors for ember's small ones), standard, light or none (data/photo_set.h).
  std::string augment = "auto";
  std::string color_jitter;        // photos: "B[,C,S[,H]]", torchvision's ColorJitter; "": none
  bool freeze_backbone = false;    // fine-tuning (ember/train/transfer.h)
  int64_t unfreeze_after = 0;      // epochs; 0: never
  double lr_backbone = 0;          // 0: lr
  // How the run continues: a resume may change these.
  int64_t epochs = 12;
  std::string data_dir;
  int threads = 0;
  std::string name;
  int64_t early_stop_patience = 0;
  std::string precision = "auto";  // auto, fp32, bf16, fp16 (ember/train/precision_choice.h)
  // This invocation's only.
  std::string init_from;           // --init-from FILE: a new run's starting weights (ember/train/init_from.h)
  bool init_from_partial = false;
  int workers = 1;
  std::string device = "auto";
  bool require_gpu = false, deterministic = false, device_resident = false, log_placement = false;
  std::string run_dir;
  int64_t log_every = 50;
  int64_t stop_after_steps = 0;
  int nproc_per_node = 1;          // --nproc-per-node N: start N local ranks (data-parallel)
  int64_t max_image_pixels = data::kMaxImagePixels;  // image folders: Pillow's refusal limit; 0: none
  std::string verbose = "auto";    // what the run prints, as Keras's fit(verbose=) (ember/train/progress.h)
};

enum class ResumeRule {
  Identity,    // the run's own: the checkpoint's value wins; another value given is ignored, with a warning
  Extend,      // may change: a value given wins, else the checkpoint's
  Invocation,  // this invocation's: the checkpoint's value is not read
};

using SettingField = std::variant<std::string TrainSettings::*, bool TrainSettings::*, int TrainSettings::*,
                                  int64_t TrainSettings::*, uint64_t TrainSettings::*, double TrainSettings::*>;

struct Setting {
  std::string key;    // the config key: "batch_size"
  std::string flags;  // CLI11 names: "-b,--batch-size" (the first long name is the one messages use)
  SettingField field;
  std::string help;
  ResumeRule resume = ResumeRule::Invocation;
  // Identity rows: the value (JSON) that runs from before the setting existed had; "" = required.
  std::string absent;
  bool recorded = true;  // written to config.json (at the top level, or under `section`)
  // Recorded under config[section] by the code that owns that object ("image_folder"): read back
  // from there, never written by settings_to_json.
  std::string section;
  NumberRule rule;  // numeric settings (type bounds filled in by the table)
  // Text and number settings with a fixed list of values (optimizer names from the registry).
  std::function<std::vector<std::string>()> choices;
  // Text settings with another rule (a zoo model or spec file; a dataset or folder): "" or why not.
  std::function<std::string(const std::string& value)> check;
  std::string value_word;  // --help's word for check/choices ("NAME or FILE.toml"); "" = derived
  // Text settings whose default "" means "not given": a value given empty (a flag, a config file, a
  // keyword argument) is refused with this sentence; "" = an empty value is a value.
  std::string refuse_empty;
  bool show_default = true;
  bool hidden = false;     // left out of --help (testing aids)
  // May differ between the ranks of a data-parallel run (a path, a thread count, the device);
  // every other setting must be the same on every rank (settings_fingerprint).
  bool per_rank = false;

  std::string flag() const;                     // "--batch-size"
  // The setting as `front_end` names it: "--batch-size" (CLI) or "batch_size=" (Python).
  std::string spelled(FrontEnd front_end) const;
  std::vector<std::string> long_names() const;  // {"batch-size"}; {"epochs", "max-epochs"}
  bool is_bool() const;
  bool is_text() const;
  bool is_whole() const;  // an integer field
};

// Every setting of `ember train`, in the order --help, config.json and the report list them.
const std::vector<Setting>& train_settings();
// The row of `name`: a key ("batch_size"), or a flag's long name with or without dashes
// ("batch-size", "--learning-rate"); '_' and '-' are the same. nullptr when there is none.
const Setting* find_setting(const std::string& name);
// The row of `key`; InternalError when there is none (a typo in ember's own code).
const Setting& setting(const std::string& key);

// The flag's check of a value as typed on the command line: "" when valid, else the sentence
// ("--optimizer must be sgd, adam or adamw (got 'rmsprop')"). The value is checked as
// canonical_setting_text gives it.
std::string check_setting_text(const Setting& s, const std::string& text);
// The same for a value the caller gave (a flag, a config file, a keyword argument), which also
// refuses an empty one where empty means "not given" (Setting::refuse_empty: `--name ""`).
std::string check_given_setting_text(const Setting& s, const std::string& text);
// A name typed in another case, as PyTorch and Keras users write them (`--model ResNet18`,
// `--optimizer SGD`, `--device CUDA`), as ember spells it; any other text as it is. Every way a
// value arrives (a flag, a --config line, a Python keyword) goes through it before it is used.
std::string canonical_setting_text(const Setting& s, const std::string& text);

// The field's value as JSON text ("128", "\"lenet5\"", "true") and as a flag would spell it.
std::string setting_json(const Setting& s, const TrainSettings& v);
std::string setting_text(const Setting& s, const TrainSettings& v);
// What --help shows as the default.
std::string default_text(const Setting& s);

// config.json's settings: every recorded row without a section, as a JSON object.
std::string settings_to_json(const TrainSettings& v);

// What the ranks of a data-parallel run must agree on: every row that is not per_rank, as a JSON
// object (compact, keys in table order). The ranks compare it at the start (dist::check_same), so
// one started with another --lr or --epochs is refused with the difference named instead of
// training something else or hanging in a collective the others never reach.
std::string settings_fingerprint(const TrainSettings& v);

// The report's config table: (key, value) for each recorded setting in `config_json` in table
// order, then its other keys ("image_folder") as they are.
std::vector<std::pair<std::string, std::string>> config_table(const std::string& config_json);

// ---- values from elsewhere ------------------------------------------------------------------------
// Whether this invocation gave the setting a value (a flag or the config file).
using GivenFn = std::function<bool(const Setting&)>;

// A resumed run's settings from the "config" of checkpoint manifest `manifest`. Every value read is
// type-checked and then checked like its flag; a bad one is a SettingError naming the manifest,
// the key, the value and the flag's message. Identity rows take the checkpoint's value (or
// `absent` for runs from before the setting); Extend rows take it unless `given`; Invocation rows
// are not read. Returns the warnings for values given that were ignored. FormatError when the
// manifest has no run config at all (it was not written by `ember train`).
std::vector<std::string> adopt_run_settings(TrainSettings& v, const std::string& config_json,
                                            const std::string& manifest, const GivenFn& given);

// `--config FILE`: a TOML file of settings, at the top level or in a [train] table
// (`epochs = 3`, `batch-size = 128` or `batch_size = 128`, `[train]` then `lr = 0.01`). Each
// value is checked for its type and then like its flag; settings `given` (flags on the command
// line) keep their value. Returns the rows it set. SettingError naming the file and line for an
// unknown key (with "did you mean"), a value of the wrong type (naming the type expected), a value
// out of range, a key set twice, or a file that is not TOML; IOError when it cannot be read.
std::vector<const Setting*> apply_settings_file(TrainSettings& v, const std::filesystem::path& file,
                                                const GivenFn& given);

// Settings given by name with JSON values (a Python keyword argument: `epochs=3`, `batch_size=128`,
// as the JSON object text {"epochs": 3, "batch_size": 128}). Each is checked for its kind and then
// like its flag, with the flag's sentence; SettingError naming the name for an unknown one (with
// "did you mean"), a value of the wrong kind, or a value out of range. Returns the rows it set.
std::vector<const Setting*> apply_settings_values(TrainSettings& v, const std::string& values_json);

}  // namespace ember::train
