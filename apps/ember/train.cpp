// ember train: parse flags (and --config), choose the device, load the data, build the model and
// optimizer, print the banner, run the fit loop, and write config.json, metrics, checkpoints and
// report.html into runs/<name>/. SIGINT/SIGTERM finish the step, checkpoint and exit 130/143; a
// second one stops at once.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <ctime>
#include <time.h>
#include <nlohmann/json.hpp>

#include "ember/core/threads.h"
#include "ember/data/photo_cache.h"

#include "cli.h"
#include "data_source.h"
#include "device_select.h"
#include "precision_choice.h"
#include "ember/ember.h"
#include "ember/io/atomic_file.h"
#include "ember/io/report.h"
#include "ember/nn/models.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/registry.h"
#include "ember/train/dataset.h"
#include "ember/train/fit.h"
#include "ember/train/metrics.h"
#include "ember/train/settings.h"
#include "ember/train/transfer.h"
#include "run_report.h"
#include "train_dist.h"
#include "train_flags.h"
#include "train_init_from.h"
#include "train_run_dir.h"
#include "train_schedule.h"

namespace ember::cli {
namespace fs = std::filesystem;
namespace {

std::atomic<int> g_signal{0};
std::atomic<int64_t> g_first_signal_ns{0};
std::atomic<bool> g_announce{true};  // false on ranks other than 0: rank 0 speaks for the run

// What a second signal says, prepared before training (the handler may only read them): the
// run's latest.json, and the line to print when it exists. g_second_ready is set once both are
// complete.
char g_latest_manifest[4096];
char g_second_with_checkpoint[8192];
std::atomic<bool> g_second_ready{false};

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void say(const char* text) {  // write(2) only: safe in a signal handler
  size_t n = 0;
  while (text[n] != '\0') ++n;
  (void)!::write(STDERR_FILENO, text, n);
}

// First signal: say so at once, finish the step (or the evaluation batch) and checkpoint. A second
// one more than a second later (a user pressing Ctrl-C again) says what is kept and stops at once,
// by the signal itself (exit status 130 or 143): checkpoints, config.json and report.html are
// written atomically and a torn metrics.jsonl line is mended by the next run, so the run
// directory stays resumable. Duplicates within that second are ignored, because `timeout` and
// process-group kills deliver the same SIGTERM twice.
extern "C" void on_signal(int sig) {
  const bool announce = g_announce.load();
  if (g_signal.load() == 0) {
    g_first_signal_ns.store(monotonic_ns());
    g_signal.store(sig);
    if (announce)
      say(sig == SIGINT ? "\nember: interrupt (SIGINT): stopping after this step and writing a checkpoint... "
                          "(Ctrl-C again to stop at once)\n"
                        : "\nember: SIGTERM: stopping after this step and writing a checkpoint... (a second "
                          "SIGTERM stops at once)\n");
  } else if (monotonic_ns() - g_first_signal_ns.load() > 1'000'000'000) {
    if (announce) {
      say(sig == SIGINT ? "\nember: second interrupt: stopping now, " : "\nember: second SIGTERM: stopping now, ");
      struct stat st {};
      if (g_second_ready.load() && ::stat(g_latest_manifest, &st) == 0) say(g_second_with_checkpoint);
      else say("without a checkpoint: none was written yet\n");
    }
    signal(sig, SIG_DFL);
    raise(sig);
  }
}

// The second signal's message for this run, once its directory is known.
void prepare_second_signal_message(const fs::path& run_dir) {
  const std::string manifest = (run_dir / "checkpoints" / "latest.json").string();
  const std::string line = fmt::format("the last checkpoint is {} (the steps since it are lost; resume with: "
                                       "ember train --resume {})\n", manifest, run_dir.string());
  if (manifest.size() >= sizeof g_latest_manifest || line.size() >= sizeof g_second_with_checkpoint) return;
  g_second_ready.store(false);
  std::snprintf(g_latest_manifest, sizeof g_latest_manifest, "%s", manifest.c_str());
  std::snprintf(g_second_with_checkpoint, sizeof g_second_with_checkpoint, "%s", line.c_str());
  g_second_ready.store(true);
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// The settings (one table: ember/train/settings.h) and what only this invocation says.
struct TrainConfig : train::TrainSettings {
  std::string resume, config_file;
};

// Which settings this invocation gave: a flag on the command line, or a key of the --config file.
struct Given {
  const TrainFlags& flags;
  std::vector<const train::Setting*> from_file;
  bool operator()(const train::Setting& s) const {
    return flags.given(s) || std::find(from_file.begin(), from_file.end(), &s) != from_file.end();
  }
};

// --config FILE: its settings, where no flag on the command line gave one. A file that cannot be
// read is a usage error naming --config, like a bad flag.
void apply_config_file(TrainConfig& c, Given& given) {
  if (c.config_file.empty()) return;
  try {
    given.from_file = train::apply_settings_file(c, c.config_file, [&](const train::Setting& s) { return given.flags.given(s); });
  } catch (const IOError& e) {
    throw UsageError(fmt::format("--config: {}", e.what()), e.hint());
  }
}

// On --resume, the run's identity (model, data, optimizer, recipe, seed, subset, validation split)
// comes from the checkpoint; flags may change only how it runs (epochs to extend it, device,
// threads, paths). Every value is type-checked and checked like its flag before anything is
// written (train::adopt_run_settings: a bad value is a SettingError, exit 2).
void adopt_checkpoint_config(TrainConfig& c, const train::Checkpoint& ck, const fs::path& manifest, const Given& given) {
  for (const std::string& w : train::adopt_run_settings(c, ck.manifest.config_json, manifest.string(), given)) warn(w);
}

// Steps per metrics.jsonl step record when --log-every is not given: about 200 points on the
// report's per-step curves, however short the run, and at most 50 steps apart.
int64_t default_log_every(int64_t total_steps) { return std::clamp<int64_t>(total_steps / 200, 1, 50); }

// 61706 -> "61,706" (built by appending: GCC 12's -Wrestrict misfires on std::string::insert here).

// A batch larger than the training set (--limit-train 100 with the default batch of 128) trains
// on one smaller batch per epoch, as PyTorch's DataLoader does with drop_last=False.
void warn_batch_larger_than_set(int64_t batch_size, int64_t samples) {
  if (batch_size > samples)
    warn(fmt::format("--batch-size {} is larger than the training set ({}): each epoch is one batch of {}",
                     batch_size, plural(samples, "sample"), samples));
}

// Why a run has no validation set, in the words of where that came from (--val-split 0 only when
// the flag said so).
std::string no_validation_why(const TrainConfig& c, const Given& given, bool resumed, int64_t train_size) {
  const train::Setting& s = train::setting("val_split");
  if (c.val_split > 0) return fmt::format("{} is too few to hold one out", plural(train_size, "training sample"));
  if (given.flags.given(s)) return "--val-split 0";
  if (given(s)) return "val_split = 0 in " + c.config_file;
  if (resumed) return "the run was started without one";
  return "val_split 0";
}

// The banner's lines about model selection: which set chooses the best epoch (and stops early).
void print_validation_line(const TrainConfig& c, bool val_folder, int64_t val_size, const std::string& none_why) {
  const std::string samples = fmt::format("{} sample{}", thousands(val_size), val_size == 1 ? "" : "s");
  if (val_folder) fmt::print("validation the folder's val/: {}\n", samples);
  else if (val_size > 0) fmt::print("validation {:g}% of the training set, seeded: {}\n", 100 * c.val_split, samples);
  else fmt::print("{}", wrap_banner(fmt::format("validation none ({}): the best epoch is chosen on the test set\n", none_why)));
  if (val_size > 0) fmt::print("           chooses the best epoch; the test set is only reported\n");
  if (c.early_stop_patience > 0)
    fmt::print("           early stop after {} without a better {} accuracy\n", plural(c.early_stop_patience, "epoch"),
               val_size > 0 ? "validation" : "test");
}

// The per-epoch table. With a validation set it has train, val and test columns under a group
// line (78 columns); without, the test set's columns only. "-" for a value not measured.
struct EpochTable {
  bool validating = false;
  bool header = false;
  void print(const train::EpochStats& s) {
    // Losses in 6 columns whatever their size (a diverging run's 12.3456 would widen the row past 80).
    auto loss = [](double v) {
      if (std::isnan(v)) return std::string("-");
      const double a = std::abs(v);
      if (a < 10) return fmt::format("{:.4f}", v);
      if (a < 100) return fmt::format("{:.3f}", v);
      if (a < 1000) return fmt::format("{:.2f}", v);
      if (a < 10000) return fmt::format("{:.1f}", v);
      return fmt::format("{:.0e}", v);  // "2e+05", "inf"
    };
    auto acc = [](double v) { return std::isnan(v) ? std::string("-") : fmt::format("{:.2f}%", 100 * v); };
    if (!validating) {
      if (!header)
        fmt::print("{:>5}  {:>10}  {:>9}  {:>9}  {:>8}  {:>9}  {:>9}  {:>7}\n", "epoch", "train loss", "train acc",
                   "test loss", "test acc", "samples/s", "data wait", "seconds");
      fmt::print("{:>5}  {:>10}  {:>9}  {:>9}  {:>8}  {:>9.0f}  {:>8.1f}%  {:>7.1f}\n", s.epoch, loss(s.train_loss),
                 acc(s.train_acc), loss(s.test_loss), acc(s.test_acc), s.samples_per_s, 100 * s.data_wait, s.seconds);
    } else {
      if (!header) {
        std::string groups = fmt::format("{:>5}  {:^14}  {:^14}  {:^14}", "", "train", "val", "test");
        fmt::print("{}\n", groups.substr(0, groups.find_last_not_of(' ') + 1));
        fmt::print("{:>5}  {:>6} {:>7}  {:>6} {:>7}  {:>6} {:>7}  {:>9}  {:>5}  {:>5}\n", "epoch", "loss", "acc", "loss",
                   "acc", "loss", "acc", "samples/s", "wait", "s");
      }
      fmt::print("{:>5}  {:>6} {:>7}  {:>6} {:>7}  {:>6} {:>7}  {:>9.0f}  {:>4.1f}%  {:>5.1f}\n", s.epoch,
                 loss(s.train_loss), acc(s.train_acc), loss(s.val_loss), acc(s.val_acc), loss(s.test_loss),
                 acc(s.test_acc), s.samples_per_s, 100 * s.data_wait, s.seconds);
    }
    header = true;
    std::fflush(stdout);
  }
};

// A rank other than 0: trains, writes nothing, and exits as rank 0 will (its failure message too).
int finish_rank(TrainWorld& tw, train::Fitter& fitter) {
  const train::FitResult r = fitter.run();
  finish_world(tw);
  if (r.status == train::FitStatus::NonFiniteLoss || r.status == train::FitStatus::OutOfMemory)
    throw Error(fmt::format("rank {}: {}", tw.world.rank, r.message), "rank 0 kept the last good checkpoint");
  if (r.status == train::FitStatus::Interrupted) return r.signal == SIGTERM ? kExitSigterm : kExitSigint;
  return kExitOk;
}

// Flags that only image folders read, given for a named dataset: said, not silently dropped.
void warn_folder_flags_ignored(const TrainConfig& c, const Given& given) {
  if (c.data == kImageFolder) return;
  for (const char* key : {"image_size", "channels", "test_fraction", "augment"}) {
    const train::Setting& s = train::setting(key);
    if (given(s))
      warn(fmt::format("{} is for image folders; {} is used as it is stored (its own size, channels and test split), "
                       "so {} is ignored", s.flag(), c.data, s.flag()));
  }
}

// --momentum given to an optimizer that has none.
void warn_momentum_ignored(const TrainConfig& c, const Given& given) {
  if (given(train::setting("momentum")) && !optim::find_optimizer(c.optimizer).uses_momentum)
    warn(fmt::format("--momentum is SGD's; --optimizer {} has none (its betas are 0.9, 0.999), so it is ignored "
                     "(pass --optimizer sgd to use it)", c.optimizer));
}

int run_train(TrainConfig c, const TrainFlags& flags) {
  flags.apply_shorthands(c);  // --fp16, --bf16, --amp
  if (flags.given(train::setting("name")) && c.name.empty())
    throw UsageError("--name: the run name is empty", "pass a name (the run directory is runs/<name>), or leave --name "
                                                      "out to have one made from the model, data and time");
  Given given{flags, {}};
  apply_config_file(c, given);
  if (!c.resume.empty() && !given(train::setting("nproc_per_node"))) adopt_checkpoint_world_size(c, c.resume);
  if (auto code = launch_local_ranks(c, given(train::setting("threads")))) return *code;  // --nproc-per-node
  install_signal_handlers();
  TrainWorld tw = training_world(c);  // one rank of a data-parallel job, or a single process
  g_announce = tw.leader();
  // Nothing is written until the start is known to work: a resume's run, checkpoint, settings and
  // state are checked, and a new run's data and model are loaded, before the run directory is
  // created or touched (train_run_dir.h).
  // ---- resume: own the run, read its checkpoint and settings ----
  std::optional<train::Checkpoint> ck;
  std::unique_ptr<io::RunDirLock> lock;
  fs::path run_dir;
  if (!c.resume.empty()) {
    train::ResumePoint rp = resume_point(c.resume, c.run_dir, c.name);
    if (tw.leader()) lock = lock_run_dir(rp.run_dir);  // rank 0 owns the run; the others read it
    ck = train::load_checkpoint(rp.manifest);
    adopt_checkpoint_config(c, *ck, rp.manifest, given);
    run_dir = rp.run_dir;
  }
  normalise_data_arg(c.data, c.data_dir);  // `--data path/to/images`
  if (!ck) warn_folder_flags_ignored(c, given), warn_momentum_ignored(c, given);  // a resume warns of its own
  const ModelSource model_src = model_source(c.model, run_dir);
  // ---- settings that do not need data ----
  set_compute_threads(c.threads, c.workers);  // ResourceError when the process cannot start them
  c.threads = get_num_threads();
  set_deterministic(c.deterministic);  // backends pick reproducible algorithms (ember/core/settings.h)
  if (ck && ck->manifest.threads && ck->manifest.threads != c.threads)
    warn(fmt::format("the checkpoint was trained with {} threads, this run uses {}: the result will not be bitwise "
                     "identical to an uninterrupted run (pass --threads {})",
                     ck->manifest.threads, c.threads, ck->manifest.threads));
  DeviceChoice dev = choose_device(c.device, c.require_gpu);
  dev.device = rank_device(tw, dev.device, c.device);
  join_world(tw, dev.device, c.threads);
  const PrecisionChoice precision = choose_precision(c.precision, dev.device);
  if (run_dir.empty() && tw.leader()) {
    if (c.name.empty() && !c.run_dir.empty()) {
      // The run is named after its folder (--run-dir . or .. names the folder it resolves to).
      std::error_code ec;
      fs::path folder = fs::weakly_canonical(fs::absolute(c.run_dir), ec);
      if (ec) folder = fs::absolute(c.run_dir).lexically_normal();
      c.name = folder.filename().string();
      if (c.name.empty()) c.name = folder.parent_path().filename().string();
      if (c.name.empty() || !train::check_setting_text(train::setting("name"), c.name).empty()) c.name = "run";
    }
    if (c.name.empty()) {
      std::time_t t = std::time(nullptr);
      char buf[32];
      std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::localtime(&t));
      c.name = fmt::format("{}-{}-{}", model_src.label(), data_label(c.data, c.data_dir), buf);
    }
    run_dir = c.run_dir.empty() ? fs::path("runs") / c.name : fs::path(c.run_dir);
    refuse_existing_run(run_dir);
  }
  if (!ck) run_dir = shared_run_dir(tw, run_dir);  // rank 0's
  c.run_dir = run_dir.string();

  // ---- data ----
  if (c.data == kImageFolder && c.data_dir.empty())
    throw UsageError("--data image-folder needs the folder", "pass --data path/to/images (or --data-dir PATH)");
  fs::path data_dir = c.data_dir.empty() ? data::default_data_dir(c.data) : fs::path(c.data_dir);
  c.data_dir = data_dir.string();
  FolderFlags folder{c.image_size, c.channels, c.test_fraction, c.max_image_pixels};
  if (c.data == kImageFolder) {
    // The photo pipeline for torchvision's architectures (or any model with --augment): decoded per
    // sample at the model's size, augmented as torchvision's references do.
    const int64_t design = model_src.is_spec() ? 0 : models::design_size(model_src.name);
    folder.photos = c.augment != "auto" || design == 224 || data::is_photo_cache(data_dir);
    if (ck) {  // a resumed run keeps the pipeline it was trained with (runs from before it: tensors)
      const nlohmann::json cfg = nlohmann::json::parse(ck->manifest.config_json, nullptr, false);
      const nlohmann::json f = cfg.is_object() ? cfg.value("image_folder", nlohmann::json()) : nlohmann::json();
      folder.photos = f.is_object() && f.value("photos", false);
    }
    if (folder.photos) {
      folder.augment = data::parse_augment(c.augment == "auto" ? "standard" : c.augment);
      if (!c.color_jitter.empty()) folder.jitter = data::parse_color_jitter(c.color_jitter);
      if (!given(train::setting("workers")))
        c.workers = data::default_loader_workers(true, dev.device.is_cuda(), c.threads, usable_cores());
      if (folder.image_size == 0) folder.image_size = design > 0 ? design : 224;
    }
  }
  RunData rd = load_run_data(c.data, data_dir, folder, c.seed, c.limit_train, c.limit_test);
  // The set that chooses the best epoch and stops early: an image folder's val/, else a seeded
  // share of the training set (--val-split), else none (the test set, as before --val-split).
  data::DatasetSplit split = rd.val.size() ? data::DatasetSplit{rd.train, {}} : train::validation_split(rd.train, c.val_split, c.seed);
  const data::Dataset& train_ds = split.kept;
  const data::Dataset& test_ds = rd.test;
  const data::Dataset& val_ds = rd.val.size() ? rd.val : split.held_out;
  const int64_t loaded_train = rd.train.size();
  rd.train = data::Dataset{};  // split.kept holds the training samples (a copy when some were held out)
  check_same_run(tw, c, train_ds, test_ds);  // every rank: the same settings, data and ember
  warn_batch_larger_than_set(c.batch_size * tw.size(), train_ds.size());
  const std::string no_val_why = no_validation_why(c, given, ck.has_value(), loaded_train);
  if (val_ds.size() == 0 && c.early_stop_patience > 0)
    warn(fmt::format("--early-stop {} without a validation set ({}) stops on the test set: its accuracy then picks "
                     "the epoch and is no longer an unbiased estimate; keep a --val-split above 0 (default 0.1)",
                     c.early_stop_patience, no_val_why));
  const int64_t side = std::min(train_ds.height(), train_ds.width());
  if (c.crop_padding >= side)
    throw UsageError(fmt::format("--crop-padding {} is not smaller than the images ({}x{}): the crops would be "
                                 "mostly padding", c.crop_padding, train_ds.height(), train_ds.width()),
                     fmt::format("use a padding below {} (2 to 4 is usual for 28x28 or 32x32 images)", side));

  // ---- model, optimizer, schedule (both from their registries: ember/optim/registry.h) ----
  Generator init_gen(c.seed);
  std::shared_ptr<nn::Module> model;
  try {
    model = build_model(model_src, train_ds.num_classes(), train_ds.channels(), train_ds.height(), &init_gen);
  } catch (const ValueError& e) {
    if (c.data != kImageFolder || model_src.is_spec()) throw;
    // The folder chose the size (or --image-size did): say which, and how to change it.
    throw UsageError(e.what(), fmt::format("the image folder's images are used at {}x{} ({}); pass --image-size N "
                                           "for a size the model takes",
                                           train_ds.height(), train_ds.width(),
                                           c.image_size > 0 ? "--image-size" : "chosen from the folder"));
  }
  if (!model_src.is_spec())
    if (std::string w = models::input_size_warning(model_src.name, train_ds.channels(), train_ds.height(),
                                                   train_ds.num_classes());
        !w.empty())
      warn(w);
  const std::string init_lines =
      init_model_from(*model, c, ck.has_value(),
                      {train_ds.num_classes(), train_ds.channels(), train_ds.height(), c.data == kImageFolder});
  c.model = model_src.name;  // a spec is recorded by its copy's name in the run directory
  std::string summary = model->summary({1, train_ds.channels(), train_ds.height(), train_ds.width()});
  model->to(dev.device);
  // Fine-tuning: a frozen backbone (until --unfreeze-after), the backbone's own lr (--lr-backbone).
  const std::string transfer_lines = fine_tune_setup(*model, c, tw.distributed(), ck ? ck->manifest.epoch : 0);
  std::vector<optim::ParamGroupSpec> groups{{.params = model->parameters()}};
  if (c.lr_backbone > 0) groups = train::backbone_and_head_groups(*model, c.lr_backbone);
  std::unique_ptr<optim::Optimizer> opt =
      optim::find_optimizer(c.optimizer).make(std::move(groups),
                                              {.lr = c.lr, .weight_decay = c.weight_decay, .momentum = c.momentum});
  // Optimizer steps: each takes --accumulate micro-batches of --batch-size.
  const int64_t steps_per_epoch =
      train::optimizer_steps_per_epoch(train_ds.size(), c.batch_size * tw.size(), c.accumulate);
  if (!given(train::setting("log_every"))) c.log_every = default_log_every(steps_per_epoch * c.epochs);
  // The default recipe's flips suit clothes, objects and photos; a flipped digit is another shape
  // (a mirrored 2, 3, 7), so a new MNIST run without --hflip does not flip.
  const bool digits_unflipped = !ck && c.data == "mnist" && c.hflip > 0 && !given(train::setting("hflip"));
  if (digits_unflipped) c.hflip = 0;
  const optim::ScheduleEntry& schedule = optim::find_schedule(c.schedule);
  // A resumed run keeps the schedule it was planned with; --epochs beyond it keep its last lr.
  const int64_t schedule_epochs = planned_schedule_epochs(ck ? &ck->manifest.config_json : nullptr, c.epochs);
  std::unique_ptr<optim::LRScheduler> sched =
      optim::make_schedule(schedule, *opt, {.lr = c.lr, .epochs = c.epochs, .steps_per_epoch = steps_per_epoch,
                                            .planned_epochs = schedule_epochs});
  const bool per_step = schedule.per_step;

  // ---- banner ----
  fmt::print("ember {}\n", version());
  fmt::print("{}", wrap_banner(fmt::format("device     {} — {}\n", dev.device.str(), dev.why)));
  fmt::print("threads    {}{}\n", c.threads, c.deterministic ? " (deterministic: fixed thread count and data order)" : "");
  fmt::print("{}", wrap_banner(world_banner(tw, c.batch_size, c.accumulate)));
  fmt::print("{}", wrap_banner(precision_banner(precision)));
  // Banner lines stay within 80 columns (the terminal of issue 15): long ones go on two lines.
  fmt::print("data       {}: {} train, {} test, {}x{}x{}, {}\n           from {}\n", c.data, loaded_train,
             test_ds.size(), train_ds.channels(), train_ds.height(), train_ds.width(),
             plural(train_ds.num_classes(), "class", "classes"), data_dir.string());
  // An image folder's layout, size, val/ and classes: one line each, wrapped at 80 columns.
  for (size_t a = 0, b; !rd.details.empty() && a < rd.details.size(); a = b + 1) {
    b = std::min(rd.details.find('\n', a), rd.details.size());
    fmt::print("{}", wrap_banner("           " + rd.details.substr(a, b - a) + "\n"));
  }
  print_validation_line(c, rd.val.size() > 0, val_ds.size(), no_val_why);
  fmt::print("model      {}: {} parameters\n{}", c.model, thousands(model->num_parameters()), summary);
  if (!summary.empty() && summary.back() != '\n') fmt::print("\n");
  fmt::print("{}", init_lines);
  fmt::print("{}", transfer_lines);
  const std::string momentum =
      optim::find_optimizer(c.optimizer).uses_momentum ? fmt::format(", momentum {:g}", c.momentum) : "";
  const std::string lr_backbone = c.lr_backbone > 0 ? fmt::format(" (backbone {:g})", c.lr_backbone) : "";
  fmt::print("optimizer  {} lr {:g}{}{}, weight decay {:g}, label smoothing {:g}\n", c.optimizer, c.lr, lr_backbone,
             momentum, c.weight_decay, c.label_smoothing);
  const std::string batch = c.accumulate > 1 ? fmt::format("batch {} x {} accumulated = {}", c.batch_size, c.accumulate,
                                                           c.batch_size * c.accumulate)
                                            : fmt::format("batch {}", c.batch_size);
  const std::string per_rank = tw.distributed() ? fmt::format(" per rank x {} ranks", tw.size()) : "";
  fmt::print("schedule   {}; {} x {} ({}), seed {}\n", c.schedule, plural(c.epochs, "epoch"),
             plural(steps_per_epoch, "step"), batch + per_rank, c.seed);
  fmt::print("{}", schedule_extension_lines(c.schedule, sched.get(), per_step, schedule_epochs, c.epochs,
                                            steps_per_epoch, run_dir.string()));
  std::string augment;
  if (c.hflip > 0) augment += fmt::format(", horizontal flip p {:g}", c.hflip);
  if (c.crop_padding > 0) augment += fmt::format(", random crop (padding {})", c.crop_padding);
  if (train_ds.is_photos())
    fmt::print("loader     {} decoding each photo per sample, ImageNet mean/std\n           training:   {}\n"
               "           evaluation: {}\n",
               plural(c.workers, "worker thread"), train_ds.recipe.describe(), test_ds.recipe.describe());
  else
    fmt::print("loader     {}, uint8 data held once ({:.1f} MB),\n           batches normalised on the fly{}\n",
               plural(c.workers, "worker thread"), double(train_ds.nbytes() + val_ds.nbytes() + test_ds.nbytes()) / 1e6,
               augment.empty() ? ", no augmentation" : augment);
  if (digits_unflipped && !train_ds.is_photos()) fmt::print("           (no flips for digits: the default --hflip is for other images; --hflip P to flip)\n");
  if (c.device_resident) fmt::print("           the whole dataset uploaded to {} once (--device-resident)\n", dev.device.str());
  fmt::print("run dir    {}{}\n", run_dir.string(), ck ? fmt::format(" (resuming at epoch {}, step {})", ck->manifest.epoch + 1, ck->manifest.step) : "");
  if (c.log_placement) {
    for (const auto& [name, p] : model->named_parameters()) fmt::print("placement  {} -> {}\n", name, p.device().str());
    for (const auto& [name, b] : model->named_buffers()) fmt::print("placement  {} (buffer) -> {}\n", name, b.device().str());
    fmt::print("placement  batches, labels, loss, gradients and optimizer state -> {}\n", dev.device.str());
    // Per step only the batch crosses from the host: float32 images and int64 labels.
    const int64_t per_step = c.batch_size * (train_ds.channels() * train_ds.height() * train_ds.width() * 4 + 8);
    if (dev.device.is_cpu())
      fmt::print("placement  host->device per step: 0 bytes (everything stays on the cpu)\n");
    else
      fmt::print("placement  host->device per step: {} bytes (batch {} x {}x{}x{} float32 + {} int64 labels)\n",
                 thousands(per_step), c.batch_size, train_ds.channels(), train_ds.height(), train_ds.width(),
                 c.batch_size);
  }
  std::fflush(stdout);

  // ---- fit ----
  nlohmann::json cfg = nlohmann::json::parse(train::settings_to_json(c));
  if (!rd.config.is_null()) cfg["image_folder"] = rd.config;  // eval, predict and resume read the same images
  if (tw.distributed()) cfg["distributed"] = world_json(tw);
  cfg["schedule_epochs"] = schedule_epochs;  // the schedule's plan, kept by every resume
  train::FitOptions fo;
  fo.epochs = c.epochs;
  fo.transforms.hflip_p = c.hflip;
  fo.transforms.crop_padding = c.crop_padding;
  fo.label_smoothing = c.label_smoothing;
  fo.batch_size = c.batch_size;
  fo.accumulate = c.accumulate;
  // The split is made above (the schedule's length depends on it), so the Fitter gets the set itself.
  fo.val = val_ds.size() ? &val_ds : nullptr;
  fo.early_stop_patience = c.early_stop_patience;
  fo.device_resident = c.device_resident;
  fo.device = dev.device;
  fo.seed = c.seed;
  fo.threads = c.threads;
  fo.workers = c.workers;
  fo.log_every = c.log_every;
  fo.interactive = isatty(STDOUT_FILENO);
  fo.run_dir = run_dir;
  fo.model_name = c.model;
  fo.dataset_name = c.data;
  fo.config_json = cfg.dump();
  fo.stop_after_steps = c.stop_after_steps;
  fo.stop_signal = &g_signal;
  fo.process_group = tw.pg.get();
  apply_ddp_environment(fo);  // EMBER_DDP_OVERLAP, EMBER_DDP_BUCKET_KB (measuring aids)
  train::Fitter fitter(*model, *opt, sched.get(), per_step, train_ds, test_ds, fo);
  if (c.freeze_backbone && c.unfreeze_after > 0)
    fitter.add_callback(std::make_shared<train::UnfreezeAfter>(
        c.unfreeze_after, [](int64_t epoch, int64_t trainable) {
          fmt::print("unfreeze   epoch {}: the whole model trains now ({} parameters)\n", epoch, thousands(trainable));
          std::fflush(stdout);
        }));
  apply_precision(precision, dev.device, fitter.step());  // autocast; fp16: dynamic loss scaling
  if (ck) fitter.resume_from(*ck);  // a checkpoint whose state does not fit fails here, before any write

  if (!tw.leader()) return finish_rank(tw, fitter);  // rank 0 alone writes the run directory
  // ---- the run directory: created and owned only now that the start is known to work ----
  std::optional<io::NewRunDir> created;
  if (!ck) {
    created.emplace(run_dir);
    try {
      lock = lock_run_dir(run_dir);
      refuse_existing_run(run_dir);  // again, now that we own it: another run may have finished there
    } catch (...) {
      created->keep();  // another process uses this directory (it may have made it first): never remove it
      throw;
    }
  }
  keep_spec_copy(model_src, run_dir);
  const std::string cfg_text = cfg.dump(2) + "\n";
  io::write_file_atomic(run_dir / "config.json", std::span(reinterpret_cast<const uint8_t*>(cfg_text.data()), cfg_text.size()));
  if (created) created->keep();
  prepare_second_signal_message(run_dir);
  const io::DirWatch run_dir_watch(run_dir);  // the engine watches it too, while it trains

  fitter.on_epoch = [&, table = EpochTable{val_ds.size() > 0}](const train::EpochStats& st) mutable { table.print(st); };
  fitter.on_oom = [](const train::OomEvent& e) {
    warn(fmt::format("out of memory at micro-batch {}: continuing with micro-batches of {} x accumulate {} (the same "
                     "{} samples per optimizer step)", e.micro_batch, e.new_micro_batch, e.new_accumulate,
                     e.new_micro_batch * e.new_accumulate));
  };
  const auto t0 = std::chrono::steady_clock::now();
  train::FitResult r = fitter.run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  finish_world(tw);
  if (tw.distributed() && r.step > 0)
    fmt::print("world      rank 0 waited {:.1f} s on gradient all-reduces ({:.2f} ms per step)\n", r.comm_seconds,
               1000 * r.comm_seconds / double(r.step));

  const std::string data_shown = c.data == kImageFolder ? "image folder " + data_label(c.data, c.data_dir) : c.data;
  RunReportInput rep{c.model, data_shown, dev.device.str() + " — " + dev.why, c.threads, cfg, run_dir, wall, summary,
                     model->num_parameters(), precision_summary(c.precision, precision), r.best_epoch,
                     r.selected_on, r.best_metric, r.best_test_acc};
  if (r.status == train::FitStatus::RunDirLost)  // nothing can be written there any more: no report
    throw Error(r.message, "if the directory was moved rather than deleted, `ember train --resume NEW_PATH` "
                           "continues from its last checkpoint; otherwise start the run again");
  const fs::path latest = run_dir / "checkpoints" / "latest.json";
  if (r.status == train::FitStatus::NonFiniteLoss || r.status == train::FitStatus::OutOfMemory) {
    write_run_report(rep, nullptr, train_ds.classes);
    throw Error(r.message, fs::exists(latest)
                               ? fmt::format("the last finite checkpoint was kept: {}", latest.string())
                               : "no checkpoint was written: the run stopped before the end of its first epoch "
                                 "(checkpoints are written at each epoch's end)");
  }
  if (r.status == train::FitStatus::Interrupted) {
    write_run_report(rep, nullptr, train_ds.classes);
    const char* what = r.signal == SIGTERM ? "terminated (SIGTERM)" : r.signal == SIGINT ? "interrupted (SIGINT)"
                                                                                         : "stopped (--stop-after-steps)";
    fmt::print("\n{} at epoch {}, step {}; checkpoint written to {}\n", what, r.epoch + 1, r.step, latest.string());
    fmt::print("resume with: {}\n", resume_command(tw, run_dir));
    return r.signal == SIGTERM ? kExitSigterm : kExitSigint;
  }
  if (r.status == train::FitStatus::EarlyStopped) fmt::print("{}\n", r.message);
  // After an out-of-memory halving, the final evaluation uses the micro-batch that fitted.
  train::EvalOptions eo;
  eo.batch_size = r.oom_events.empty() ? 256 : r.micro_batch;
  eo.device = dev.device, eo.workers = c.workers;
  eo.stop_signal = &g_signal;  // the training is done: a signal skips the final evaluation
  const train::EvalResult ev = train::evaluate(*model, test_ds, eo);
  if (const std::string what = run_dir_watch.change(); !what.empty())
    throw Error(fmt::format("the run directory {} {} during the final evaluation: the run's files went with it",
                            run_dir.string(), what),
                "if the directory was moved rather than deleted, `ember eval NEW_PATH` evaluates the run");
  if (ev.interrupted) {
    write_run_report(rep, nullptr, train_ds.classes);
    fmt::print("\n{} during the final evaluation: the training is complete ({}); evaluate it with: ember eval {}\n",
               ev.interrupted == SIGTERM ? "terminated (SIGTERM)" : "interrupted (SIGINT)", latest.string(),
               run_dir.string());
    return ev.interrupted == SIGTERM ? kExitSigterm : kExitSigint;
  }
  write_run_report(rep, &ev, train_ds.classes);
  fmt::print("{}", loss_scaling_summary(r));
  fmt::print("test accuracy: {:.2f}% ({}; best {:.2f}%), wall time {:.1f} s\n", 100 * ev.accuracy, plural(ev.samples, "sample"),
             100 * r.best_test_acc, wall);
  fmt::print("{}\n", wrap_text(fmt::format("run saved in {} (report.html, metrics.jsonl, checkpoints/)",
                                           run_dir.string()), kHelpColumns, "  "));
  return kExitOk;
}

}  // namespace

void register_train(CLI::App& root, Runner& run) {
  auto c = std::make_shared<TrainConfig>();
  auto* t = root.add_subcommand("train", "Train a model (default: " + train::TrainSettings{}.model +
                                             " on Fashion-MNIST on the best device)");
  // A flag given twice takes its last value.
  t->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  t->add_option("--config", c->config_file,
                "Read settings from a TOML file (`epochs = 3`, `batch-size = 128`, `model = \"lenet5\"`, at the top "
                "level or in a [train] table); flags on the command line override it");
  // One option per setting of the table (ember/train/settings.h): names, help, default, check.
  auto flags = std::make_shared<TrainFlags>(*t, *c);
  t->add_option("--resume", c->resume,
                "Continue a run in its own directory: the run directory, or its checkpoints/latest.json, best.json or "
                "a step-N.safetensors one of them names");
  t->footer("Exit codes: 0 done, 1 the run failed, 2 usage error, 130 interrupted (SIGINT), 143 terminated (SIGTERM).");
  t->callback([&run, c, flags] { run = [c, flags] { return run_train(*c, *flags); }; });
}

}  // namespace ember::cli
