// ember train: parse flags (and --config), choose the device, load the data, build the model and
// optimizer, print the banner, run the fit loop, and write config.json, metrics, checkpoints and
// report.html into runs/<name>/. SIGINT/SIGTERM finish the step, checkpoint and exit 130/143.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <ctime>
#include <time.h>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "data_source.h"
#include "device_select.h"
#include "ember/ember.h"
#include "ember/io/atomic_file.h"
#include "ember/io/report.h"
#include "ember/nn/models.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/train/fit.h"
#include "ember/train/metrics.h"
#include "run_report.h"
#include "train_run_dir.h"

namespace ember::cli {
namespace fs = std::filesystem;
namespace {

std::atomic<int> g_signal{0};
std::atomic<int64_t> g_first_signal_ns{0};

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// First signal: finish the step and checkpoint. A second one more than a second later (a user
// pressing Ctrl-C again) kills at once; duplicates within that second are ignored, because
// `timeout` and process-group kills deliver the same SIGTERM twice.
extern "C" void on_signal(int sig) {
  if (g_signal.load() == 0) {
    g_first_signal_ns.store(monotonic_ns());
    g_signal.store(sig);
  } else if (monotonic_ns() - g_first_signal_ns.load() > 1'000'000'000) {
    signal(sig, SIG_DFL);
    raise(sig);
  }
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

struct TrainConfig {
  // The default recipe: LeNet-5, AdamW with a one-cycle schedule, 15 epochs of batch 128, label
  // smoothing 0.1 (docs/benchmarks.md has the measured accuracy and time, and the variants tried).
  // mnistnet is ~10x slower per sample.
  std::string model = "lenet5", data = "fashion-mnist", data_dir, optimizer = "adamw", schedule = "onecycle";
  int64_t epochs = 15, batch_size = 128, limit_train = 0, limit_test = 0, log_every = 50, stop_after_steps = 0;
  double lr = 3e-3, weight_decay = 0.01;
  double label_smoothing = 0.1;  // training loss; seeds 0/1/2: 91.58 / 91.40 / 91.28% vs 91.35 / 91.03 / 91.35% at 0
  double hflip = 0.0;         // augmentation: probability of a horizontal flip per sample
  int64_t crop_padding = 0;   // augmentation: random crop from the image zero-padded by this many pixels
  FolderFlags folder;         // --data PATH (an image folder): size, channels, test share of a one-level folder
  uint64_t seed = 0;
  int workers = 1, threads = 0;
  std::string device = "auto", name, run_dir, resume;
  bool require_gpu = false, log_placement = false, deterministic = false;
};

nlohmann::json to_json(const TrainConfig& c) {
  return {{"model", c.model}, {"data", c.data}, {"data_dir", c.data_dir}, {"epochs", c.epochs},
          {"batch_size", c.batch_size}, {"lr", c.lr}, {"optimizer", c.optimizer}, {"schedule", c.schedule},
          {"weight_decay", c.weight_decay}, {"seed", c.seed}, {"workers", c.workers}, {"threads", c.threads},
          {"device", c.device}, {"require_gpu", c.require_gpu}, {"deterministic", c.deterministic},
          {"limit_train", c.limit_train}, {"limit_test", c.limit_test}, {"name", c.name}, {"run_dir", c.run_dir},
          {"hflip", c.hflip}, {"crop_padding", c.crop_padding}, {"label_smoothing", c.label_smoothing}};
}

// On --resume, the run's identity (model, data, optimizer, recipe, seed, subset) comes from the
// checkpoint; flags may change only how it runs (epochs to extend it, device, threads, paths).
// Every value is type-checked and validated like its flag (RunConfig) before anything is written.
void adopt_checkpoint_config(TrainConfig& c, const train::Checkpoint& ck, const fs::path& manifest, CLI::App& app) {
  RunConfig r(ck.manifest.config_json, manifest.string(), app);
  r.adopt("model", c.model, "--model");
  r.adopt("data", c.data, "--data");
  r.adopt("optimizer", c.optimizer, "--optimizer");
  r.adopt("schedule", c.schedule, "--schedule");
  r.adopt("lr", c.lr, "--lr");
  r.adopt("weight_decay", c.weight_decay, "--weight-decay");
  r.adopt("batch_size", c.batch_size, "--batch-size");
  r.adopt("seed", c.seed, "--seed");
  r.adopt("limit_train", c.limit_train, "--limit-train", std::optional<int64_t>(0));
  r.adopt("limit_test", c.limit_test, "--limit-test", std::optional<int64_t>(0));
  r.adopt("hflip", c.hflip, "--hflip", std::optional<double>(0.0));
  r.adopt("crop_padding", c.crop_padding, "--crop-padding", std::optional<int64_t>(0));
  // Runs from before the flag existed trained without label smoothing.
  r.adopt("label_smoothing", c.label_smoothing, "--label-smoothing", std::optional<double>(0.0));
  // An image-folder run: the same images as the run saw (size, channels, test share).
  const nlohmann::json j = nlohmann::json::parse(ck.manifest.config_json, nullptr, false);
  if (j.is_object() && j.contains("image_folder") && j["image_folder"].is_object()) {
    const train::RunSettings f(j["image_folder"].dump(), manifest.string(), false);
    auto num = [&](const char* k, auto fallback) { return f.contains(k) ? f.get<decltype(fallback)>(k) : fallback; };
    c.folder = {num("image_size", int64_t(0)), num("channels", int64_t(0)), num("test_fraction", 0.2)};
  }
  r.adopt_unless_flag("epochs", c.epochs, "--epochs");
  r.adopt_unless_flag("data_dir", c.data_dir, "--data-dir");
  r.adopt_unless_flag("threads", c.threads, "--threads");
  r.adopt_unless_flag("name", c.name, "--name");  // the report keeps the run's name
}

// Steps per metrics.jsonl step record when --log-every is not given: about 200 points on the
// report's per-step curves, however short the run, and at most 50 steps apart.
int64_t default_log_every(int64_t total_steps) { return std::clamp<int64_t>(total_steps / 200, 1, 50); }

// 61706 -> "61,706" (built by appending: GCC 12's -Wrestrict misfires on std::string::insert here).
std::string thousands(int64_t v) {
  const std::string digits = std::to_string(v);
  std::string out;
  const size_t start = digits[0] == '-' ? 1 : 0;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > start && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// A batch larger than the training set (--limit-train 100 with the default batch of 128) trains
// on one smaller batch per epoch, as PyTorch's DataLoader does with drop_last=False.
void warn_batch_larger_than_set(int64_t batch_size, int64_t samples) {
  if (batch_size > samples)
    warn(fmt::format("--batch-size {} is larger than the training set ({}): each epoch is one batch of {}",
                     batch_size, plural(samples, "sample"), samples));
}

int run_train(TrainConfig c, CLI::App& app) {
  install_signal_handlers();
  // Nothing is written until the start is known to work: a resume's run, checkpoint, settings and
  // state are checked, and a new run's data and model are loaded, before the run directory is
  // created or touched (train_run_dir.h).
  // ---- resume: own the run, read its checkpoint and settings ----
  std::optional<train::Checkpoint> ck;
  std::unique_ptr<io::RunDirLock> lock;
  fs::path run_dir;
  if (!c.resume.empty()) {
    train::ResumePoint rp = resume_point(c.resume, c.run_dir, c.name);
    lock = lock_run_dir(rp.run_dir);
    ck = train::load_checkpoint(rp.manifest);
    adopt_checkpoint_config(c, *ck, rp.manifest, app);
    run_dir = rp.run_dir;
  }
  normalise_data_arg(c.data, c.data_dir);  // `--data path/to/images`
  const ModelSource model_src = model_source(c.model, run_dir);
  // ---- settings that do not need data ----
  if (c.threads > 0) set_num_threads(c.threads), warn_if_oversubscribed(c.threads);
  c.threads = get_num_threads();
  set_deterministic(c.deterministic);  // backends pick reproducible algorithms (ember/core/settings.h)
  if (ck && ck->manifest.threads && ck->manifest.threads != c.threads)
    warn(fmt::format("the checkpoint was trained with {} threads, this run uses {}: the result will not be bitwise "
                     "identical to an uninterrupted run (pass --threads {})",
                     ck->manifest.threads, c.threads, ck->manifest.threads));
  DeviceChoice dev = choose_device(c.device, c.require_gpu);
  if (run_dir.empty()) {
    if (c.name.empty() && !c.run_dir.empty()) {
      c.name = fs::path(c.run_dir).lexically_normal().filename().string();  // the run is named after its folder
      if (c.name.empty()) c.name = fs::path(c.run_dir).lexically_normal().parent_path().filename().string();
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
  c.run_dir = run_dir.string();

  // ---- data ----
  if (c.data == kImageFolder && c.data_dir.empty())
    throw UsageError("--data image-folder needs the folder", "pass --data path/to/images (or --data-dir PATH)");
  fs::path data_dir = c.data_dir.empty() ? data::default_data_dir(c.data) : fs::path(c.data_dir);
  c.data_dir = data_dir.string();
  RunData rd = load_run_data(c.data, data_dir, c.folder, c.seed, c.limit_train, c.limit_test);
  const data::Dataset& train_ds = rd.train;
  const data::Dataset& test_ds = rd.test;
  warn_batch_larger_than_set(c.batch_size, train_ds.size());
  const int64_t side = std::min(train_ds.height(), train_ds.width());
  if (c.crop_padding >= side)
    throw UsageError(fmt::format("--crop-padding {} is not smaller than the images ({}x{}): the crops would be "
                                 "mostly padding", c.crop_padding, train_ds.height(), train_ds.width()),
                     fmt::format("use a padding below {} (2 to 4 is usual for 28x28 or 32x32 images)", side));

  // ---- model, optimizer, schedule ----
  Generator init_gen(c.seed);
  auto model = build_model(model_src, train_ds.num_classes(), train_ds.channels(), train_ds.height(), &init_gen);
  c.model = model_src.name;  // a spec is recorded by its copy's name in the run directory
  std::string summary = model->summary({1, train_ds.channels(), train_ds.height(), train_ds.width()});
  model->to(dev.device);
  std::unique_ptr<optim::Optimizer> opt;
  if (c.optimizer == "sgd")
    opt = std::make_unique<optim::SGD>(model->parameters(),
                                       optim::SGDOptions{.lr = c.lr, .momentum = 0.9, .weight_decay = c.weight_decay, .nesterov = true});
  else if (c.optimizer == "adam")
    opt = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions{.lr = c.lr, .weight_decay = c.weight_decay});
  else
    opt = std::make_unique<optim::AdamW>(model->parameters(), optim::AdamOptions{.lr = c.lr, .weight_decay = c.weight_decay});
  const int64_t steps_per_epoch = (train_ds.size() + c.batch_size - 1) / c.batch_size;
  if (!app.count("--log-every")) c.log_every = default_log_every(steps_per_epoch * c.epochs);
  std::unique_ptr<optim::LRScheduler> sched;
  bool per_step = false;
  if (c.schedule == "step") sched = std::make_unique<optim::StepLR>(*opt, std::max<int64_t>(1, c.epochs / 3), 0.1);
  else if (c.schedule == "cosine") sched = std::make_unique<optim::CosineAnnealingLR>(*opt, c.epochs);
  else if (c.schedule == "onecycle") {
    sched = std::make_unique<optim::OneCycleLR>(*opt, c.lr, steps_per_epoch * c.epochs);
    per_step = true;
  }

  // ---- banner ----
  fmt::print("ember {}\n", version());
  fmt::print("device     {} — {}\n", dev.device.str(), dev.why);
  fmt::print("threads    {}{}\n", c.threads, c.deterministic ? " (deterministic: fixed thread count and data order)" : "");
  // Banner lines stay within 80 columns (the terminal of issue 15): long ones go on two lines.
  fmt::print("data       {}: {} train, {} test, {}x{}x{}, {}\n           from {}\n", c.data, train_ds.size(),
             test_ds.size(), train_ds.channels(), train_ds.height(), train_ds.width(),
             plural(train_ds.num_classes(), "class", "classes"), data_dir.string());
  if (!rd.details.empty()) fmt::print("           {}\n", rd.details);
  fmt::print("model      {}: {} parameters\n{}", c.model, thousands(model->num_parameters()), summary);
  if (!summary.empty() && summary.back() != '\n') fmt::print("\n");
  fmt::print("optimizer  {} lr {:g}, weight decay {:g}, label smoothing {:g}\n", c.optimizer, c.lr, c.weight_decay,
             c.label_smoothing);
  fmt::print("schedule   {}; {} x {} (batch {}), seed {}\n", c.schedule, plural(c.epochs, "epoch"),
             plural(steps_per_epoch, "step"), c.batch_size, c.seed);
  std::string augment;
  if (c.hflip > 0) augment += fmt::format(", horizontal flip p {:g}", c.hflip);
  if (c.crop_padding > 0) augment += fmt::format(", random crop (padding {})", c.crop_padding);
  fmt::print("loader     {}, uint8 data held once ({:.1f} MB),\n           batches normalised on the fly{}\n",
             plural(c.workers, "worker thread"), double(train_ds.nbytes() + test_ds.nbytes()) / 1e6,
             augment.empty() ? ", no augmentation" : augment);
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
  nlohmann::json cfg = to_json(c);
  if (!rd.config.is_null()) cfg["image_folder"] = rd.config;  // eval, predict and resume read the same images
  train::FitOptions fo;
  fo.epochs = c.epochs;
  fo.transforms.hflip_p = c.hflip;
  fo.transforms.crop_padding = c.crop_padding;
  fo.label_smoothing = c.label_smoothing;
  fo.batch_size = c.batch_size;
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
  if (rd.val.size()) fo.val = &rd.val;  // val/ when the folder has one: selection uses it, test/ is reported
  train::Fitter fitter(*model, *opt, sched.get(), per_step, train_ds, test_ds, fo);
  if (ck) fitter.resume_from(*ck);  // a checkpoint whose state does not fit fails here, before any write

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

  bool header = false;
  fitter.on_epoch = [&](const train::EpochStats& s) {
    if (!header) {
      fmt::print("{:>5}  {:>10}  {:>9}  {:>9}  {:>8}  {:>9}  {:>9}  {:>7}\n", "epoch", "train loss", "train acc",
                 rd.val.size() ? "val loss" : "test loss", rd.val.size() ? "val acc" : "test acc", "samples/s",
                 "data wait", "seconds");
      header = true;
    }
    const bool val = !std::isnan(s.val_acc);
    fmt::print("{:>5}  {:>10.4f}  {:>8.2f}%  {:>9.4f}  {:>7.2f}%  {:>9.0f}  {:>8.1f}%  {:>7.1f}\n", s.epoch, s.train_loss,
               100 * s.train_acc, val ? s.val_loss : s.test_loss, 100 * (val ? s.val_acc : s.test_acc), s.samples_per_s,
               100 * s.data_wait, s.seconds);
    std::fflush(stdout);
  };
  fitter.on_oom = [](const train::OomEvent& e) {
    warn(fmt::format("out of memory at micro-batch {}: continuing with micro-batches of {} x accumulate {} (the same "
                     "{} samples per optimizer step)", e.micro_batch, e.new_micro_batch, e.new_accumulate,
                     e.new_micro_batch * e.new_accumulate));
  };
  const auto t0 = std::chrono::steady_clock::now();
  train::FitResult r = fitter.run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const std::string data_shown = c.data == kImageFolder ? "image folder " + data_label(c.data, c.data_dir) : c.data;
  RunReportInput rep{c.model, data_shown, dev.device.str() + " — " + dev.why, c.threads, cfg, run_dir, wall, summary,
                     model->num_parameters()};
  if (r.status == train::FitStatus::NonFiniteLoss || r.status == train::FitStatus::OutOfMemory) {
    write_run_report(rep, nullptr, train_ds.classes);
    throw Error(r.message, fs::exists(run_dir / "checkpoints" / "latest.json")
                               ? fmt::format("the last good checkpoint is {}/checkpoints/latest.json", run_dir.string())
                               : "no checkpoint was written before the failure");
  }
  if (r.status == train::FitStatus::Interrupted) {
    write_run_report(rep, nullptr, train_ds.classes);
    const char* what = r.signal == SIGTERM ? "terminated (SIGTERM)" : r.signal == SIGINT ? "interrupted (SIGINT)"
                                                                                         : "stopped (--stop-after-steps)";
    fmt::print("\n{} at epoch {}, step {}; checkpoint written to {}\n", what, r.epoch + 1, r.step,
               (run_dir / "checkpoints" / "latest.json").string());
    fmt::print("resume with: ember train --resume {}\n", run_dir.string());
    return r.signal == SIGTERM ? kExitSigterm : kExitSigint;
  }
  if (r.status == train::FitStatus::EarlyStopped) fmt::print("{}\n", r.message);
  // After an out-of-memory halving, the final evaluation uses the micro-batch that fitted.
  const int64_t eval_batch = r.oom_events.empty() ? 256 : r.micro_batch;
  train::EvalResult ev = train::evaluate(*model, test_ds, eval_batch, dev.device, c.workers);
  write_run_report(rep, &ev, train_ds.classes);
  fmt::print("test accuracy: {:.2f}% ({}; best {:.2f}%), wall time {:.1f} s\n", 100 * ev.accuracy, plural(ev.samples, "sample"),
             100 * r.best_test_acc, wall);
  fmt::print("run saved in {} (report.html, metrics.jsonl, checkpoints/)\n", run_dir.string());
  return kExitOk;
}

}  // namespace

void register_train(CLI::App& root, Runner& run) {
  auto c = std::make_shared<TrainConfig>();
  auto* t = root.add_subcommand("train", "Train a model (default: lenet5 on Fashion-MNIST on the best device)");
  // Options take the last value given, so flags typed after --config's values override them.
  t->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  auto config_file = std::make_shared<std::string>();
  t->add_option("--config", *config_file,
                "Read flags from a TOML/INI file (`epochs = 3`, `batch-size = 128`, `model = \"lenet5\"`); flags override it");
  auto names = models::names();
  // A zoo name, or a model spec file (*.toml, see include/ember/nn/spec.h).
  auto zoo_or_spec = CLI::Validator(
      [names](std::string& v) -> std::string {
        if (nn::is_spec_file(v) || std::find(names.begin(), names.end(), v) != names.end()) return "";
        std::string known;
        for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
        return "unknown model '" + v + "': choose one of " + known + ", or a model spec file (*.toml)";
      },
      "ZOO NAME or FILE.toml");
  std::string zoo;
  for (const auto& n : names) zoo += (zoo.empty() ? "" : ", ") + n;
  t->add_option("--model", c->model, "Zoo model (" + zoo + "), or a model spec file (*.toml)")
      ->check(zoo_or_spec)->capture_default_str();
    t->add_option("--data", c->data, "Dataset name, or a folder of your own images (PATH/<class>/*.png|jpg, or "
                "PATH/train/<class>/ and PATH/test/<class>/, optionally PATH/val/<class>/)")
      ->check(CLI::Validator([](std::string& v) { return check_data_arg(v); }, "NAME or FOLDER"))
      ->capture_default_str();
  add_number(t, "--image-size", c->folder.image_size,
             "Image folders: resize (centre crop) to SxS (default: the first image's size, at most 64)",
             between(1, 4096));
  t->add_option("--channels", c->folder.channels, "Image folders: 1 (grey) or 3 (RGB) (default: as the first image)")
      ->check(CLI::IsMember({1, 3}));
  add_number(t, "--test-fraction", c->folder.test_fraction,
             "Image folders without train/ and test/: share of each class held out for testing (seeded by --seed)",
             between(0.01, 0.99))->capture_default_str();
  t->add_option("--data-dir", c->data_dir, "Dataset directory (default: $EMBER_DATA_DIR/<data>, /usr/share/datasets/<data>)");
  // Second names are the ones PyTorch and Keras users type first.
  add_number(t, "--epochs,--max-epochs", c->epochs, "Epochs", at_least(1))->capture_default_str();
  add_number(t, "-b,--batch-size", c->batch_size, "Mini-batch size (a smaller last batch is kept)", at_least(1))
      ->capture_default_str();
  add_number(t, "--lr,--learning-rate", c->lr, "Learning rate (peak lr for onecycle)", above(0))->capture_default_str();
  t->add_option("--optimizer", c->optimizer, "sgd (momentum 0.9, Nesterov), adam or adamw")
      ->check(CLI::IsMember({"sgd", "adam", "adamw"}))->capture_default_str();
  t->add_option("--schedule", c->schedule, "Learning-rate schedule")
      ->check(CLI::IsMember({"none", "step", "cosine", "onecycle"}))->capture_default_str();
  add_number(t, "--weight-decay", c->weight_decay, "Weight decay", at_least(0))->capture_default_str();
  add_number(t, "--seed", c->seed, "Seed for initialisation, shuffling, dropout and augmentation", at_least(0))
      ->capture_default_str();
  add_number(t, "--hflip", c->hflip, "Augmentation: probability of flipping a training image left-right", between(0, 1))
      ->capture_default_str();
  add_number(t, "--label-smoothing", c->label_smoothing, "Cross-entropy label smoothing for training (0: off)",
             between(0, 1))->capture_default_str();
  add_number(t, "--crop-padding", c->crop_padding,
             "Augmentation: random crop of the image size from the image zero-padded by N pixels (0: off)", at_least(0))
      ->capture_default_str();
  add_number(t, "--workers,--num-workers", c->workers, "Data-loading threads (0: in-line)", thread_count_rule());
  add_number(t, "--threads", c->threads, "CPU compute threads (default: all cores)", thread_count_rule());
  t->add_option("--device", c->device, "auto, cpu, cuda or cuda:N")->capture_default_str();
  t->add_flag("--require-gpu", c->require_gpu, "Fail instead of falling back to the CPU");
  t->add_flag("--log-placement", c->log_placement, "Print where each parameter and buffer lives");
  t->add_option("--name", c->name, "Run name: the run directory is runs/<name>");
  t->add_option("--run-dir", c->run_dir, "Run directory (overrides --name)");
  t->add_option("--resume", c->resume,
                "Continue a run in its own directory: the run directory, or its checkpoints/latest.json, best.json or "
                "a step-N.safetensors one of them names");
  t->add_flag("--deterministic", c->deterministic, "Bitwise-reproducible runs (fixed thread count and data order)");
  add_number(t, "--limit-train", c->limit_train, "Use only the first N training samples", at_least(0));
  add_number(t, "--limit-test", c->limit_test, "Use only the first N test samples", at_least(0));
  add_number(t, "--log-every", c->log_every, "Steps per metrics.jsonl step record (default: about 200 records per run, at most 50 steps apart)", at_least(0));
  add_number(t, "--stop-after-steps", c->stop_after_steps, "Testing: act as if interrupted after N steps", at_least(0))
      ->group("");
  t->footer("Exit codes: 0 done, 1 the run failed, 2 usage error, 130 interrupted (SIGINT), 143 terminated (SIGTERM).");
  t->callback([&run, c, t] { run = [c, t] { return run_train(*c, *t); }; });
}

}  // namespace ember::cli
