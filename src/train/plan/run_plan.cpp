// A training run planned from its settings (run_plan.h): the decisions `ember train` used to make
// itself, in the order it made them, so every caller gets the same run from the same settings.
// Nothing is written before claim_run_dir; a resume's run, checkpoint and settings and a new run's
// data and model are checked first.
#include "ember/train/run_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <nlohmann/json.hpp>

#include "ember/autograd/node.h"
#include "ember/core/settings.h"
#include "ember/core/threads.h"
#include "ember/data/loader.h"
#include "ember/io/atomic_file.h"
#include "ember/nn/models.h"
#include "ember/nn/spec.h"
#include "ember/ops.h"
#include "ember/optim/registry.h"
#include "ember/train/caller_model.h"
#include "ember/train/dataset.h"
#include "ember/train/loss_watch.h"
#include "ember/train/run_defaults.h"
#include "ember/train/run_init.h"
#include "ember/train/run_files.h"
#include "ember/train/schedule_plan.h"
#include "ember/train/transfer.h"
#include "ember/train/validation.h"
#include "ember/train/wording.h"

namespace ember::train {
namespace fs = std::filesystem;
namespace {

RunWorld& one_process() {
  static RunWorld world;
  return world;
}

// A batch larger than the training set (--limit-train 100 with the default batch of 128) trains
// on one smaller batch per epoch, as PyTorch's DataLoader does with drop_last=False.
void warn_batch_larger_than_set(int64_t batch_size, int64_t samples) {
  if (batch_size > samples)
    warn(fmt::format("--batch-size {} is larger than the training set ({}): each epoch is one batch of {}",
                     batch_size, plural(samples, "sample"), samples));
}

// Why a run has no validation set, in the words of where that came from (--val-split 0 only when
// the flag said so).
std::string no_validation_why(const TrainSettings& c, const PlanInputs& in, bool resumed, int64_t train_size) {
  const Setting& s = setting("val_split");
  if (c.val_split > 0) return fmt::format("{} is too few to hold one out", plural(train_size, "training sample"));
  if (in.given_directly(s)) return "--val-split 0";
  if (in.given(s)) return "val_split = 0 in " + in.config_file;
  if (resumed) return "the run was started without one";
  return "val_split 0";
}

// Flags that only image folders read, given for a named dataset: said, not silently dropped.
void warn_folder_flags_ignored(const TrainSettings& c, const PlanInputs& in) {
  if (c.data == kImageFolder) return;
  for (const char* key : {"image_size", "channels", "test_fraction", "augment"}) {
    const Setting& s = setting(key);
    if (in.given(s))
      warn(fmt::format("{} is for image folders; {} is used as it is stored (its own size, channels and test split), "
                       "so {} is ignored", s.flag(), c.data, s.flag()));
  }
}

// --momentum given to an optimizer that has none.
void warn_momentum_ignored(const TrainSettings& c, const PlanInputs& in) {
  if (in.given(setting("momentum")) && !optim::find_optimizer(c.optimizer).uses_momentum)
    warn(fmt::format("--momentum is SGD's; --optimizer {} has none (its betas are 0.9, 0.999), so it is ignored "
                     "(pass --optimizer sgd to use it)", c.optimizer));
}

// A new run's directory (run_dir.h: new_run_dir): --run-dir, else runs/<--name>, else
// runs/<model>-<data>-<time>, numbered when two runs start in the same second.
fs::path name_run_dir(TrainSettings& c, const ModelSource& model_src, FrontEnd front_end) {
  std::string generated;
  if (c.name.empty() && c.run_dir.empty()) {
    std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::localtime(&t));
    generated = fmt::format("{}-{}-{}", model_src.label(), data_label(c.data, c.data_dir), buf);
  }
  return new_run_dir(c.name, c.run_dir, generated, front_end);
}

// The epochs the run in a checkpoint was started (or last extended) to train: its config's "epochs".
int64_t recorded_epochs(const Checkpoint& ck) {
  const RunSettings recorded(ck.manifest.config_json, ck.weights_path.string(), false);
  return recorded.contains("epochs") ? recorded.get<int64_t>("epochs") : 0;
}

// A resume that has nothing to train is refused before anything is written (the run, its report
// and its checkpoints stay as they are): the run finished its epochs, or --epochs ends before the
// checkpoint. The hint says how to extend it in the caller's words.
void refuse_nothing_to_train(const RunPlan& p, const PlanInputs& in) {
  const int64_t done = p.checkpoint->manifest.epoch, target = p.settings.epochs;
  if (done < target) return;
  const int64_t planned = recorded_epochs(*p.checkpoint);
  const std::string flag = setting("epochs").spelled(p.front_end);
  const std::string more = p.front_end == FrontEnd::Python ? fmt::format("{}{}", flag, done + 1)
                                                           : fmt::format("{} {}", flag, done + 1);
  const std::string extend =
      is_caller_model(p.settings.model)
          ? fmt::format("pass {} (or more) to extend it: {}", more,
                        resume_call(p.run_dir.string(), p.front_end, p.settings.model))
          : fmt::format("pass {} (or more) to extend it; `ember eval {}` evaluates it as it is", more,
                        p.run_dir.string());
  if (!in.given(setting("epochs")) || target == planned)
    throw SettingError(fmt::format("the run in '{}' already finished its {}: nothing was trained or written",
                                   p.run_dir.string(), plural(done, "epoch")),
                       extend);
  throw SettingError(fmt::format("the run in '{}' has trained {} already, and {} {} ends there: nothing was trained "
                                 "or written", p.run_dir.string(), plural(done, "epoch"), flag, target),
                     planned > done ? fmt::format("leave {} out to continue to its {}, or {}", flag, planned, extend)
                                    : extend);
}

// A checkpoint resumes only with the number of ranks that wrote it (check_checkpoint_world, fit.h),
// said before anything is loaded, in the caller's words.
void check_resume_world(const RunPlan& p) {
  const int64_t saved = p.checkpoint->manifest.fit.world_size;
  std::string hint;
  if (saved == 1) hint = "resume it as one process (without --nproc-per-node, mpirun or torchrun)";
  else if (p.front_end == FrontEnd::Python)
    hint = fmt::format("ember.fit trains in this process: resume the run with `ember train --resume {}`, which "
                       "starts its {} ranks again", p.run_dir.string(), saved);
  else
    hint = fmt::format("resume with the same number of ranks: `ember train --resume {}` starts {} again (or pass "
                       "--nproc-per-node {})", p.run_dir.string(), saved, saved);
  check_checkpoint_world(p.checkpoint->manifest, p.world->size(), hint);
}

// The image folder's pipeline: the photo pipeline for torchvision's architectures (or any model
// with --augment), decoded per sample at the model's size and augmented as torchvision's
// references do; a resumed run keeps the pipeline it was trained with (runs from before it: tensors).
// A photo cache file takes the pipeline its folder would (issue 48: the same data, the same defaults).
FolderFlags folder_flags(const TrainSettings& c, const ModelSource& model_src, const Checkpoint* ck) {
  FolderFlags folder;
  folder.image_size = c.image_size;
  folder.channels = c.channels;
  folder.test_fraction = c.test_fraction;
  folder.max_pixels = c.max_image_pixels;
  if (c.data != kImageFolder) return folder;
  const int64_t design = model_src.is_spec() ? 0 : models::design_size(model_src.name);
  folder.photos = c.augment != "auto" || design == 224;
  if (ck) {
    const nlohmann::json cfg = nlohmann::json::parse(ck->manifest.config_json, nullptr, false);
    const nlohmann::json f = cfg.is_object() ? cfg.value("image_folder", nlohmann::json()) : nlohmann::json();
    folder.photos = f.is_object() && f.value("photos", false);
  }
  if (folder.photos) {
    folder.augment = data::parse_augment(c.augment == "auto" ? "standard" : c.augment);
    if (!c.color_jitter.empty()) folder.jitter = data::parse_color_jitter(c.color_jitter);
    folder.photo_size = design > 0 ? design : 224;  // without --image-size: the model's, said as the default
  }
  return folder;
}

// The data of the run and its validation set: an image folder's val/, else a seeded share of the
// training set (--val-split), else none (the test set chooses the best epoch, as before --val-split).
void load_data(RunPlan& p, const PlanInputs& in) {
  TrainSettings& c = p.settings;
  if (c.data == kImageFolder && c.data_dir.empty())
    throw SettingError("--data image-folder needs the folder", "pass --data path/to/images (or --data-dir PATH)");
  const fs::path data_dir = c.data_dir.empty() ? data::default_data_dir(c.data) : fs::path(c.data_dir);
  c.data_dir = data_dir.string();
  p.data_dir = c.data_dir;
  const FolderFlags folder = folder_flags(c, p.model_source, p.checkpoint ? &*p.checkpoint : nullptr);
  // --workers not given: photos are decoded per sample, so they get the cores the compute threads leave.
  if (folder.photos && !in.given(setting("workers")))
    c.workers = data::default_loader_workers(true, p.device.device.is_cuda(), c.threads, usable_cores());
  RunData rd = load_run_data(c.data, data_dir, folder, c.seed, c.limit_train, c.limit_test);
  p.loaded_train = rd.train.size();
  p.data_details = rd.details;
  if (rd.val.size()) {
    p.train = std::move(rd.train);
    p.val = std::move(rd.val);
    p.val_from_folder = true;
  } else {
    data::DatasetSplit split = validation_split(rd.train, c.val_split, c.seed);
    rd.train = data::Dataset{};  // split.kept holds the training samples (a copy when some were held out)
    p.train = std::move(split.kept);
    p.val = std::move(split.held_out);
  }
  p.test = std::move(rd.test);
  if (rd.config_json != "null") p.image_folder_json = rd.config_json;  // eval, predict and resume read the same images
  p.world->check_same_run(c, p.train, p.test);  // every rank: the same settings, data and ember
  warn_batch_larger_than_set(c.batch_size * p.world->size(), p.train.size());
  if (p.val.size() == 0) p.no_validation_why = no_validation_why(c, in, p.checkpoint.has_value(), p.loaded_train);
  if (const std::string w = few_validation_warning(p.val.size(), p.val_from_folder, c.val_split); !w.empty()) warn(w);
  if (p.val.size() == 0 && c.early_stop_patience > 0)
    warn(fmt::format("--early-stop {} without a validation set ({}) stops on the test set: its accuracy then picks "
                     "the epoch and is no longer an unbiased estimate; keep a --val-split above 0 (default 0.1)",
                     c.early_stop_patience, p.no_validation_why));
  const int64_t side = std::min(p.train.height(), p.train.width());
  if (c.crop_padding >= side)
    throw SettingError(fmt::format("--crop-padding {} is not smaller than the images ({}x{}): the crops would be "
                                   "mostly padding", c.crop_padding, p.train.height(), p.train.width()),
                       fmt::format("use a padding below {} (2 to 4 is usual for 28x28 or 32x32 images)", side));
}

// A caller's model (PlanInputs::model) tried on one zero image of the data's shape, in evaluation
// mode without autograd, before anything is trained or written: it must give (1, classes) logits.
// An op refusing the shapes inside its forward (CallerRaised::shape_mismatch) is the model not
// taking the data's input: said with the input it was given, in the caller's words.
void check_caller_model_fits(const RunPlan& p) {
  const data::Dataset& d = p.train;
  const std::string cls = caller_model_class(p.settings.model);
  const std::string input = fmt::format("{}'s images as a float32 (N, C, H, W) batch, (N, {}, {}, {}), for {}",
                                        p.settings.data == kImageFolder ? "the image folder" : p.settings.data,
                                        d.channels(), d.height(), d.width(), plural(d.num_classes(), "class", "classes"));
  const std::string data_word = setting("data").spelled(p.front_end);
  const std::string hint = fmt::format(
      "make {} take {}-channel {}x{} images ({} features when flattened) and give {} logits per image, or pass a {} "
      "that fits it", cls, d.channels(), d.height(), d.width(), d.channels() * d.height() * d.width(), d.num_classes(),
      data_word);
  Tensor out;
  const bool was_training = p.model->is_training();
  p.model->eval();
  try {
    autograd::NoGradGuard no_grad;
    out = (*p.model)(zeros({1, d.channels(), d.height(), d.width()}));
  } catch (const CallerRaised& e) {
    p.model->train(was_training);
    if (!e.shape_mismatch()) throw;  // the caller's own error, raised again by the caller as it was
    throw ShapeError(fmt::format("{} does not take {}: its forward raised {}: {}", cls, input, e.error_type(), e.what()),
                     hint);
  }
  p.model->train(was_training);
  if (out.dim() != 2 || out.size(0) != 1 || out.size(1) != d.num_classes())
    throw ShapeError(fmt::format("{} gives {} for one image, not (1, {}): the logits of {}", cls,
                                 shape_str(out.sizes()), d.num_classes(), input),
                     hint);
}

// The model (the caller's, its spec or zoo name), --init-from and fine-tuning, on the run's device.
void build_run_model(RunPlan& p, const PlanInputs& in) {
  TrainSettings& c = p.settings;
  const data::Dataset& train_ds = p.train;
  Generator init_gen(c.seed);
  if (in.model) {
    p.model = in.model;
    check_caller_model_fits(p);
  } else {
    try {
      p.model = build_model(p.model_source, train_ds.num_classes(), train_ds.channels(), train_ds.height(), &init_gen);
    } catch (const ValueError& e) {
      if (c.data != kImageFolder || p.model_source.is_spec()) throw;
      // The folder chose the size (or --image-size did): say which, and how to change it.
      throw SettingError(e.what(), fmt::format("the image folder's images are used at {}x{} ({}); pass --image-size N "
                                               "for a size the model takes",
                                               train_ds.height(), train_ds.width(),
                                               c.image_size > 0 ? "--image-size" : "chosen from the folder"));
    }
  }
  if (!p.model_source.is_spec() && !in.model)
    if (std::string w = models::input_size_warning(p.model_source.name, train_ds.channels(), train_ds.height(),
                                                   train_ds.num_classes());
        !w.empty())
      warn(w);
  p.init_lines = init_model_from(*p.model, c, p.checkpoint.has_value(),
                                 {train_ds.num_classes(), train_ds.channels(), train_ds.height(), c.data == kImageFolder});
  c.model = p.model_source.name;  // a spec is recorded by its copy's name in the run directory
  // Fine-tuning: a frozen backbone (until --unfreeze-after), the backbone's own lr (--lr-backbone).
  // Before the summary, so its "Trainable params" counts what the fine-tune line says trains.
  p.transfer_lines =
      fine_tune_setup(*p.model, c, p.world->size() > 1, p.checkpoint ? p.checkpoint->manifest.epoch : 0);
  p.model_summary = p.model->summary({1, train_ds.channels(), train_ds.height(), train_ds.width()});
  p.model->to(p.device.device);
}

// Optimizer and schedule, both from their registries (ember/optim/registry.h).
void build_optimizer(RunPlan& p, const PlanInputs& in) {
  TrainSettings& c = p.settings;
  std::vector<optim::ParamGroupSpec> groups{{.params = p.model->parameters()}};
  if (c.lr_backbone > 0) groups = backbone_and_head_groups(*p.model, c.lr_backbone);
  p.optimizer = optim::find_optimizer(c.optimizer).make(std::move(groups),
                                                        {.lr = c.lr, .weight_decay = c.weight_decay, .momentum = c.momentum});
  // Optimizer steps: each takes --accumulate micro-batches of --batch-size.
  p.steps_per_epoch = optimizer_steps_per_epoch(p.train.size(), c.batch_size * p.world->size(), c.accumulate);
  if (!in.given(setting("log_every"))) c.log_every = default_log_every(p.steps_per_epoch * c.epochs);
  // The default recipe's flips suit clothes, objects and photos; a flipped digit is another shape
  // (a mirrored 2, 3, 7), so a new MNIST run without --hflip does not flip.
  p.digits_unflipped = !p.checkpoint && c.data == "mnist" && c.hflip > 0 && !in.given(setting("hflip"));
  if (p.digits_unflipped) c.hflip = 0;
  const optim::ScheduleEntry& schedule = optim::find_schedule(c.schedule);
  // A resumed run keeps the schedule it was planned with; --epochs beyond it keep its last lr.
  p.schedule_epochs = planned_schedule_epochs(p.checkpoint ? &p.checkpoint->manifest.config_json : nullptr, c.epochs);
  p.scheduler = optim::make_schedule(schedule, *p.optimizer, {.lr = c.lr, .epochs = c.epochs,
                                                              .steps_per_epoch = p.steps_per_epoch,
                                                              .planned_epochs = p.schedule_epochs});
  p.per_step_schedule = schedule.per_step;
  p.schedule_lines = schedule_extension_lines(c.schedule, p.scheduler.get(), p.per_step_schedule, p.schedule_epochs,
                                              c.epochs, p.steps_per_epoch, p.run_dir.string());
}

// config.json: the settings, the image folder's description, the world, the schedule's plan.
std::string run_config_json(const RunPlan& p) {
  nlohmann::json cfg = nlohmann::json::parse(settings_to_json(p.settings));
  // A resume with a smaller --epochs stops there this time; the run keeps its length for the next
  // resume (it is never shortened for good).
  if (p.checkpoint) cfg["epochs"] = std::max(p.settings.epochs, recorded_epochs(*p.checkpoint));
  if (!p.image_folder_json.empty()) cfg["image_folder"] = nlohmann::json::parse(p.image_folder_json);
  if (const std::string w = p.world->config_json(); !w.empty()) cfg["distributed"] = nlohmann::json::parse(w);
  cfg["schedule_epochs"] = p.schedule_epochs;  // the schedule's plan, kept by every resume
  return cfg.dump();
}

FitOptions fit_options(RunPlan& p) {
  const TrainSettings& c = p.settings;
  FitOptions fo;
  fo.epochs = c.epochs;
  fo.transforms.hflip_p = c.hflip;
  fo.transforms.crop_padding = c.crop_padding;
  fo.label_smoothing = c.label_smoothing;
  fo.batch_size = c.batch_size;
  fo.accumulate = c.accumulate;
  // The split is made by the plan (the schedule's length depends on it), so the Fitter gets the set itself.
  fo.val = p.val.size() ? &p.val : nullptr;
  fo.early_stop_patience = c.early_stop_patience;
  fo.device_resident = c.device_resident;
  fo.device = p.device.device;
  fo.seed = c.seed;
  fo.workers = c.workers;
  fo.log_every = c.log_every;
  fo.run_dir = p.run_dir;
  fo.model_name = c.model;
  fo.dataset_name = c.data;
  fo.config_json = p.config_json;
  fo.stop_after_steps = c.stop_after_steps;
  p.world->configure(fo);
  return fo;
}

// The caller's model (PlanInputs::model) checked, and counted as a given `model` setting in a new
// run: the defaults that follow the model (an image folder's, --init-from's) leave it alone.
PlanInputs with_caller_model(const PlanInputs& caller, const RunPlan& p) {
  PlanInputs in = caller;
  if (!in.model) return in;
  if (!is_caller_model(in.model_name))
    throw ValueError(fmt::format("PlanInputs::model_name '{}' does not name a caller's model", in.model_name),
                     "name it with train::caller_model_name(origin, class), e.g. \"python:Net\"");
  if (p.world->size() > 1)
    throw SettingError(fmt::format("a model {} ({}) trains in one process; this run has {} ranks",
                                   in.model_name.starts_with("python:") ? "defined in Python" : "its caller built",
                                   in.model_name, p.world->size()),
                       "run it without --nproc-per-node, mpirun or torchrun (data-parallel runs rebuild their model "
                       "on every rank from a zoo name or spec file)");
  if (!in.resume.empty()) return in;  // a resume adopts the run's recorded model (check_resumed_model)
  const Setting& model = setting("model");
  in.given = [given = caller.given, &model](const Setting& s) { return &s == &model || given(s); };
  in.given_directly = [given = caller.given_directly, &model](const Setting& s) { return &s == &model || given(s); };
  return in;
}

// A resume's model: a run of a caller's model continues only with that model at hand, and a run of
// a zoo model or spec file only without one (the run's identity is its recorded model).
void check_resumed_model(const RunPlan& p, const PlanInputs& in, const fs::path& run_dir) {
  const std::string recorded = p.checkpoint->manifest.model;
  if (is_caller_model(recorded) && !in.model)
    refuse_caller_model(recorded, run_dir.string(),
                        p.front_end == FrontEnd::Python ? "ember.fit without model=" : "`ember train --resume`");
  if (!in.model) return;
  if (!is_caller_model(recorded))
    throw SettingError(fmt::format("the run in '{}' trained {}, a model ember builds from its {}: it resumes without "
                                   "a model object", run_dir.string(), recorded,
                                   nn::is_spec_file(recorded) ? "spec file" : "zoo name"),
                       fmt::format("{} continues it; a model of your own starts a new run", resume_call(
                                   run_dir.string(), p.front_end)));
  if (caller_model_class(recorded) != caller_model_class(in.model_name))
    warn(fmt::format("the run in '{}' was trained with {}, this resume gives {}: its checkpoint is loaded by the names "
                     "and shapes of the model's state_dict()", run_dir.string(), caller_model_class(recorded),
                     caller_model_class(in.model_name)));
}

// "python:Net" named as the model (`--model`, a --config file, --init-from's weights) with no model
// object given: nothing here can build it.
[[noreturn]] void refuse_unbuilt_caller_model(const TrainSettings& c, const PlanInputs& in) {
  const bool python = c.model.starts_with("python:");
  const std::string cls = caller_model_class(c.model);
  const std::string from = !in.given(setting("model")) && !c.init_from.empty()
                               ? fmt::format(" (what {} {}'s weights record)",
                                             setting("init_from").spelled(in.front_end), c.init_from)
                               : "";
  throw SettingError(
      fmt::format("model {}{} was defined {}: {} builds zoo models and spec files, not a class", c.model, from,
                  python ? "in Python" : "by the program that trained it",
                  in.front_end == FrontEnd::Python ? "ember.fit(model=\"...\")" : "`ember train`"),
      python ? fmt::format("hand the module itself to ember.fit: ember.fit(model={}(), ...); or pass {} with a zoo name "
                           "or spec file", cls, setting("model").spelled(in.front_end))
             : fmt::format("pass {} with a zoo name or spec file", setting("model").spelled(in.front_end)));
}

}  // namespace

int64_t default_log_every(int64_t total_steps) { return std::clamp<int64_t>(total_steps / 200, 1, 50); }

std::unique_ptr<const RunPlan> plan_run(TrainSettings settings, const PlanInputs& caller_inputs) {
  auto plan = std::make_unique<RunPlan>();
  RunPlan& p = *plan;
  p.settings = std::move(settings);
  p.world = caller_inputs.world ? caller_inputs.world : &one_process();
  p.front_end = caller_inputs.front_end;
  TrainSettings& c = p.settings;
  const PlanInputs in = with_caller_model(caller_inputs, p);
  // ---- resume: own the run, read its checkpoint and settings ----
  // On --resume, the run's identity (model, data, optimizer, recipe, seed, subset, validation split)
  // comes from the checkpoint; the settings may change only how it runs (epochs to extend it,
  // device, threads, paths). Every value is checked like its flag before anything is written.
  if (!in.resume.empty()) {
    const ResumePoint rp = resume_point(in.resume, c.run_dir, c.name);
    if (p.world->leader()) p.lock_ = lock_run_dir(rp.run_dir);  // rank 0 owns the run; the others read it
    p.checkpoint = load_checkpoint(rp.manifest);
    check_resumed_model(p, in, rp.run_dir);
    for (const std::string& w : adopt_run_settings(c, p.checkpoint->manifest.config_json, rp.manifest.string(), in.given))
      warn(w);
    p.run_dir = rp.run_dir;
    refuse_nothing_to_train(p, in);
    check_resume_world(p);
  }
  normalise_data_arg(c.data, c.data_dir);  // `--data path/to/images`
  std::vector<std::string> defaults;  // what the run took from its model and data (the banner says)
  if (!p.checkpoint) defaults.push_back(apply_model_default(c, in.given));  // a folder's model, --init-from's
  if (!p.checkpoint) warn_folder_flags_ignored(c, in);  // a resume warns of its own
  if (in.model && !p.checkpoint) c.model = in.model_name;  // a resume keeps the name its run recorded
  if (is_caller_model(c.model) && !in.model) refuse_unbuilt_caller_model(c, in);
  p.model_source = model_source(c.model, p.run_dir);
  // ---- settings that do not need data ----
  set_compute_threads(c.threads, c.workers);  // ResourceError when the process cannot start them
  c.threads = get_num_threads();
  set_deterministic(c.deterministic);  // backends pick reproducible algorithms (ember/core/settings.h)
  if (p.checkpoint && p.checkpoint->manifest.threads && p.checkpoint->manifest.threads != c.threads)
    warn(fmt::format("the checkpoint was trained with {} threads, this run uses {}: the result will not be bitwise "
                     "identical to an uninterrupted run (pass --threads {})",
                     p.checkpoint->manifest.threads, c.threads, p.checkpoint->manifest.threads));
  p.device = choose_device(c.device, c.require_gpu);
  p.device.device = p.world->rank_device(p.device.device, c.device);
  p.world->join(p.device.device, c.threads);
  p.precision = choose_precision(c.precision, p.device);
  if (p.run_dir.empty() && p.world->leader()) p.run_dir = name_run_dir(c, p.model_source, p.front_end);
  if (!p.checkpoint) p.run_dir = p.world->shared_run_dir(p.run_dir);  // rank 0's
  c.run_dir = p.run_dir.string();
  // ---- data, model, optimizer, schedule ----
  // The model's optimizer, lr (scaled to the batch) and weight decay where none was given.
  if (!p.checkpoint) defaults.push_back(apply_recipe_defaults(c, in.given, c.batch_size * c.accumulate * p.world->size()));
  p.defaults_lines = defaults_banner(defaults);
  if (!p.checkpoint) warn_momentum_ignored(c, in);  // against the optimizer the recipe chose
  load_data(p, in);
  build_run_model(p, in);
  build_optimizer(p, in);
  p.config_json = run_config_json(p);
  p.fit = fit_options(p);
  return plan;
}

std::unique_ptr<Fitter> RunPlan::make_fitter(const RunControls& controls) const {
  FitOptions fo = fit;
  fo.stop_signal = controls.stop_signal;
  fo.progress = progress_rule(parse_verbosity(settings.verbose), controls.terminal);
  fo.progress_out = controls.progress_out;
  auto fitter = std::make_unique<Fitter>(*model, *optimizer, scheduler.get(), per_step_schedule, train, test, fo);
  fitter->on_epoch = controls.on_epoch;
  fitter->on_oom = controls.on_oom;
  fitter->add_callback(std::make_shared<LossWatch>(train.num_classes(), settings.lr, settings.model));  // names --lr
  if (settings.freeze_backbone && settings.unfreeze_after > 0)
    fitter->add_callback(std::make_shared<UnfreezeAfter>(
        settings.unfreeze_after, controls.on_unfreeze ? controls.on_unfreeze : [](int64_t, int64_t) {}));
  for (const auto& c : controls.callbacks) fitter->add_callback(c);
  apply_precision(precision, device.device, fitter->step());  // autocast; fp16: dynamic loss scaling
  if (checkpoint) fitter->resume_from(*checkpoint);  // a checkpoint whose state does not fit fails here
  return fitter;
}

void RunPlan::claim_run_dir() const {
  std::optional<io::NewRunDir> created;
  if (!checkpoint) {
    created.emplace(run_dir);
    try {
      lock_ = lock_run_dir(run_dir);
      refuse_existing_run(run_dir, front_end);  // again, now that we own it: another run may have finished there
    } catch (...) {
      created->keep();  // another process uses this directory (it may have made it first): never remove it
      throw;
    }
  }
  keep_spec_copy(model_source, run_dir);
  const std::string cfg_text = nlohmann::json::parse(config_json).dump(2) + "\n";
  io::write_file_atomic(run_dir / kConfigFile,
                        std::span(reinterpret_cast<const uint8_t*>(cfg_text.data()), cfg_text.size()));
  if (created) created->keep();
}

EvalOptions RunPlan::final_eval_options(const FitResult& r, const std::atomic<int>* stop_signal) const {
  EvalOptions eo;
  eo.batch_size = r.oom_events.empty() ? 256 : r.micro_batch;
  eo.device = device.device, eo.workers = settings.workers;
  eo.stop_signal = stop_signal;  // the training is done: a signal skips the final evaluation
  return eo;
}

std::string RunWorld::resume_command(const fs::path& run_dir) const {
  return resume_call(run_dir.string(), FrontEnd::Cli);
}

std::string RunPlan::precision_summary() const { return train::precision_summary(settings.precision, precision); }

RunReportInput RunPlan::report_input(const FitResult& r, double wall_seconds) const {
  const TrainSettings& c = settings;
  RunReportInput in;
  in.model = c.model;
  in.dataset = c.data == kImageFolder ? "image folder " + data_label(c.data, c.data_dir) : c.data;
  in.device = device.device.str() + " — " + device.why;
  in.threads = c.threads;
  in.config = nlohmann::json::parse(config_json);
  in.run_dir = run_dir;
  in.wall_seconds = wall_seconds;
  in.model_summary = model_summary;
  in.num_parameters = model->num_parameters();
  in.precision = precision_summary();
  in.best_epoch = r.best_epoch, in.selected_on = r.selected_on;
  in.best_metric = r.best_metric, in.best_test_acc = r.best_test_acc;
  return in;
}

}  // namespace ember::train
