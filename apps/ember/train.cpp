// ember train: parse flags (and --config), have the library plan the run (train::plan_run: device,
// precision, data, model, optimizer, run directory; ember/train/run_plan.h), print the banner from
// the plan, run the fit loop, and write the report (the plan claims runs/<name>/ and writes its
// config.json, the engine its metrics and checkpoints). SIGINT/SIGTERM finish the step, checkpoint
// and exit 130/143; a second one stops at once.
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

#include "ember/data/photo_cache.h"

#include "cli.h"
#include "ember/train/run_data.h"
#include "ember/train/device_choice.h"
#include "ember/train/precision_choice.h"
#include "ember/train/run_plan.h"
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
#include "ember/train/run_end.h"
#include "ember/train/run_files.h"
#include "ember/train/run_world.h"
#include "train_dist.h"
#include "train_flags.h"

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
  const std::string manifest = train::latest_manifest(run_dir).string();
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

// The exit status of a stop by `signal` (0: --stop-after-steps, which exits as SIGINT does).
int stopped_exit(int signal) { return signal == SIGTERM ? kExitSigterm : kExitSigint; }
const char* stopped_by(int signal) {
  return signal == SIGTERM ? "terminated (SIGTERM)" : signal == SIGINT ? "interrupted (SIGINT)" : "stopped (--stop-after-steps)";
}

// The headline: the final evaluation of the model eval, predict, export and ember.load give (the
// selected epoch's), labelled as such, with the last epoch's when that is another one.
std::string headline(const train::RunOutcome& end) {
  const train::EvalResult& ev = *end.test;
  std::string which = fmt::format("epoch {}, chosen on {}", end.evaluated_epoch, end.selected_on);
  if (!std::isnan(end.last_epoch_test_acc))
    which += fmt::format("; the last epoch, {}, had {:.2f}%", end.fit.epoch, 100 * end.last_epoch_test_acc);
  return fmt::format("test accuracy: {:.2f}% ({}; {}), wall time {:.1f} s\n", 100 * ev.accuracy,
                     plural(ev.samples, "sample"), which, end.wall_seconds);
}

int run_train(TrainConfig c, const TrainFlags& flags) {
  flags.apply_shorthands(c);  // --fp16, --bf16, --amp
  Given given{flags, {}};
  apply_config_file(c, given);
  // `--resume` of a run of W ranks, in a process that is not a rank: W local ranks again.
  if (const int w = train::local_ranks_to_resume(c.resume, given(train::setting("nproc_per_node"))); w > 1) {
    c.nproc_per_node = w;
    fmt::print("resume     the checkpoint was written by {} ranks: starting {} ranks on this machine again\n"
               "           (as --nproc-per-node {})\n", w, w, w);
    std::fflush(stdout);
  }
  if (auto code = launch_local_ranks(c, given(train::setting("threads")))) return *code;  // --nproc-per-node
  install_signal_handlers();
  train::DataParallelWorld world;  // one rank of a data-parallel job, or a single process
  silence_other_ranks(world);
  g_announce = world.leader();
  // The run's plan (ember/train/run_plan.h): every decision below is the library's. Nothing is
  // written until the start is known to work: a resume's run, checkpoint, settings and state are
  // checked, and a new run's data and model are loaded, before the run directory is created.
  train::PlanInputs in;
  in.given = [&given](const train::Setting& s) { return given(s); };
  in.given_directly = [&flags](const train::Setting& s) { return flags.given(s); };
  in.config_file = c.config_file;
  in.resume = c.resume;
  in.world = &world;
  const std::unique_ptr<const train::RunPlan> plan = train::plan_run(c, in);
  static_cast<train::TrainSettings&>(c) = plan->settings;
  const train::DeviceChoice& dev = plan->device;
  const train::PrecisionChoice& precision = plan->precision;
  const std::optional<train::Checkpoint>& ck = plan->checkpoint;
  const fs::path& run_dir = plan->run_dir;
  const fs::path data_dir = plan->data_dir;
  const data::Dataset& train_ds = plan->train;
  const data::Dataset& val_ds = plan->val;
  const data::Dataset& test_ds = plan->test;
  nn::Module* model = plan->model.get();
  const std::string& summary = plan->model_summary;
  const int64_t steps_per_epoch = plan->steps_per_epoch;

  // What this run prints (ember/train/progress.h: progress_rule, --verbose as Keras's verbose=).
  const bool terminal = isatty(STDOUT_FILENO);
  const train::ProgressRule shown = train::progress_rule(train::parse_verbosity(c.verbose), terminal);

  // ---- banner ----
  if (shown.banner) {
    fmt::print("ember {}\n", version());
    fmt::print("{}", wrap_banner(fmt::format("device     {} — {}\n", dev.device.str(), dev.why)));
    fmt::print("threads    {}{}\n", c.threads, c.deterministic ? " (deterministic: fixed thread count and data order)" : "");
    fmt::print("{}", wrap_banner(world.banner(c.batch_size, c.accumulate)));
    fmt::print("{}", wrap_banner(train::precision_banner(precision)));
    // Banner lines stay within 80 columns (the terminal of issue 15): long ones go on two lines.
    fmt::print("data       {}: {} train, {} test, {}x{}x{}, {}\n           from {}\n", c.data, plan->loaded_train,
               test_ds.size(), train_ds.channels(), train_ds.height(), train_ds.width(),
               plural(train_ds.num_classes(), "class", "classes"), data_dir.string());
    // An image folder's layout, size, val/ and classes: one line each, wrapped at 80 columns.
    const std::string& details = plan->data_details;
    for (size_t a = 0, b; !details.empty() && a < details.size(); a = b + 1) {
      b = std::min(details.find('\n', a), details.size());
      fmt::print("{}", wrap_banner("           " + details.substr(a, b - a) + "\n"));
    }
    print_validation_line(c, plan->val_from_folder, val_ds.size(), plan->no_validation_why);
    fmt::print("model      {}: {} parameters\n{}", c.model, thousands(model->num_parameters()), summary);
    if (!summary.empty() && summary.back() != '\n') fmt::print("\n");
    fmt::print("{}", plan->init_lines);
    fmt::print("{}", plan->transfer_lines);
    const std::string momentum =
        optim::find_optimizer(c.optimizer).uses_momentum ? fmt::format(", momentum {:g}", c.momentum) : "";
    const std::string lr_backbone = c.lr_backbone > 0 ? fmt::format(" (backbone {:g})", c.lr_backbone) : "";
    fmt::print("optimizer  {} lr {:g}{}{}, weight decay {:g}, label smoothing {:g}\n", c.optimizer, c.lr, lr_backbone,
               momentum, c.weight_decay, c.label_smoothing);
    fmt::print("{}", wrap_banner(plan->defaults_lines));  // a folder's model, the model's recipe
    const std::string batch = c.accumulate > 1 ? fmt::format("batch {} x {} accumulated = {}", c.batch_size, c.accumulate,
                                                             c.batch_size * c.accumulate)
                                              : fmt::format("batch {}", c.batch_size);
    const std::string per_rank = world.distributed() ? fmt::format(" per rank x {} ranks", world.size()) : "";
    fmt::print("schedule   {}; {} x {} ({}), seed {}\n", c.schedule, plural(c.epochs, "epoch"),
               plural(steps_per_epoch, "step"), batch + per_rank, c.seed);
    fmt::print("{}", plan->schedule_lines);
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
    if (plan->digits_unflipped && !train_ds.is_photos()) fmt::print("           (no flips for digits: the default --hflip is for other images; --hflip P to flip)\n");
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
  }
  std::fflush(stdout);

  // ---- the run, to its end (ember/train/run_end.h): every step below the printing is the library's ----
  prepare_second_signal_message(run_dir);
  train::RunControls controls;
  controls.stop_signal = &g_signal;
  controls.terminal = terminal;
  if (shown.epoch_lines)
    controls.on_epoch = [table = EpochTable{val_ds.size() > 0}](const train::EpochStats& st) mutable { table.print(st); };
  controls.on_oom = [](const train::OomEvent& e) {
    warn(fmt::format("out of memory at micro-batch {}: continuing with micro-batches of {} x accumulate {} (the same "
                     "{} samples per optimizer step)", e.micro_batch, e.new_micro_batch, e.new_accumulate,
                     e.new_micro_batch * e.new_accumulate));
  };
  controls.on_unfreeze = [](int64_t epoch, int64_t trainable) {
    fmt::print("unfreeze   epoch {}: the whole model trains now ({} parameters)\n", epoch, thousands(trainable));
    std::fflush(stdout);
  };
  const train::RunOutcome end = train::run_to_end(*plan, controls);
  const train::FitResult& r = end.fit;
  if (!end.leader) {  // a rank other than 0 wrote nothing; it exits as rank 0 will (its failure message too)
    if (end.ending == train::RunEnding::Failed)
      throw Error(fmt::format("rank {}: {}", world.rank(), end.message), "rank 0 kept the last good checkpoint");
    if (end.ending == train::RunEnding::Interrupted) return stopped_exit(end.signal);
    return kExitOk;
  }
  if (world.distributed() && r.step > 0)
    fmt::print("world      rank 0 waited {:.1f} s on gradient all-reduces ({:.2f} ms per step)\n", r.comm_seconds,
               1000 * r.comm_seconds / double(r.step));
  switch (end.ending) {
    case train::RunEnding::RunDirLost:
    case train::RunEnding::Failed:
      throw Error(end.message, end.hint);
    case train::RunEnding::Interrupted:
      fmt::print("\n{} at epoch {}, step {}; checkpoint written to {}\n", stopped_by(end.signal), r.epoch + 1, r.step,
                 end.latest.string());
      fmt::print("resume with: {}\n", end.hint);
      return stopped_exit(end.signal);
    case train::RunEnding::EvaluationStopped:
      fmt::print("\n{} during the final evaluation: the training is complete ({}); evaluate it with: {}\n",
                 stopped_by(end.signal), end.latest.string(), end.hint);
      return stopped_exit(end.signal);
    case train::RunEnding::Finished:
      break;
  }
  if (r.status == train::FitStatus::EarlyStopped) fmt::print("{}\n", r.message);
  fmt::print("{}", train::loss_scaling_summary(r));
  fmt::print("{}", headline(end));
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
  t->footer(exit_codes_footer("done"));
  t->callback([&run, c, flags] { run = [c, flags] { return run_train(*c, *flags); }; });
}

}  // namespace ember::cli
