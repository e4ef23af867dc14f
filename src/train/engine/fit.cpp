// The training engine (fit.h): the epoch loop around TrainStep, with the data position counted in
// optimizer steps of E = micro-batch x accumulate samples, device-side running sums read once per
// log interval, out-of-memory halving, validation-based selection and the callbacks; and what a
// checkpoint holds of a run (training_state, restored with messages naming the part that does not fit).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include "ember/core/generator.h"
#include "ember/core/memory.h"
#include "ember/io/run_dir.h"
#include "ember/ops.h"
#include "ember/train/fit.h"
#include "ember/train/run_files.h"
#include "ember/train/gpu_monitor.h"
#include "ember/train/validation.h"
#include "ember/train/weights_info.h"
#include "train/engine/data_parallel.h"

namespace ember::train {
namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int world_of(const FitOptions& o) { return o.process_group ? o.process_group->size() : 1; }
// Rank r's dropout stream: rank 0 keeps a single process's seed.
uint64_t rank_seed(uint64_t seed, int rank) { return seed + 1 + uint64_t(rank) * 0x9E3779B97F4A7C15ull; }
// The tensors of a checkpoint under `prefix` ("model/"), without it.
StateDict sub_dict(const Checkpoint& ck, const std::string& prefix) {
  StateDict d;
  for (const auto& [name, t] : ck.tensors)
    if (name.starts_with(prefix)) d.insert(name.substr(prefix.size()), t);
  return d;
}
}  // namespace

// ---- what a checkpoint holds of a run: the model, optimizer and schedule state as named tensors ----
NamedTensors training_state(nn::Module& model, optim::Optimizer& opt, optim::LRScheduler* sched) {
  NamedTensors out;
  for (const auto& [k, t] : model.state_dict()) out.emplace_back("model/" + k, t);
  for (const auto& [k, t] : opt.state_dict()) out.emplace_back("optim/" + k, t);
  if (sched)
    for (const auto& [k, t] : sched->state_dict()) out.emplace_back("sched/" + k, t);
  return out;
}

void restore_model_state(const Checkpoint& ck, nn::Module& model) {
  try {
    model.load_state_dict(sub_dict(ck, "model/"));
  } catch (const Error& e) {
    throw FormatError(fmt::format("checkpoint '{}' does not fit model '{}': {}", ck.weights_path.string(),
                                  ck.manifest.model, e.what()),
                      "resume with the --model, --optimizer and --schedule the run was started with");
  }
}

void restore_training_state(const Checkpoint& ck, nn::Module& model, optim::Optimizer& opt, optim::LRScheduler* sched) {
  const char* hint = "resume with the --model, --optimizer and --schedule the run was started with";
  const std::string file = ck.weights_path.string();
  restore_model_state(ck, model);
  // A tensor missing from a checkpoint whose config matches the run means the file was damaged.
  const char* damaged = "the checkpoint is damaged or was edited; resume from another checkpoint of the run (best.json) "
                        "or start a new run";
  try {
    opt.load_state_dict(sub_dict(ck, "optim/"));
  } catch (const Error& e) {
    throw FormatError(fmt::format("checkpoint '{}': the optimizer state (tensors 'optim/...') does not fit: {}", file,
                                  e.what()),
                      ck.manifest.config_json.empty() ? hint : damaged);
  }
  try {
    if (sched) sched->load_state_dict(sub_dict(ck, "sched/"));
  } catch (const Error& e) {
    throw FormatError(fmt::format("checkpoint '{}': the learning-rate schedule state (tensors 'sched/...') does not "
                                  "fit: {}", file, e.what()),
                      ck.manifest.config_json.empty() ? hint : damaged);
  }
}

void check_checkpoint_world(const CheckpointManifest& m, int world, const std::string& hint) {
  const int64_t saved = m.fit.world_size;
  if (saved != world)
    throw ValueError(fmt::format("the checkpoint was written by a run of {} rank{}, this one has {}: each rank's share "
                                 "of the data, the position in the epoch and the ranks' dropout streams depend on "
                                 "the number of ranks", saved, saved == 1 ? "" : "s", world),
                     !hint.empty() ? hint
                     : saved == 1  ? "resume it as one process (without --nproc-per-node, mpirun or torchrun)"
                                   : fmt::format("resume with the same number of ranks (--nproc-per-node {})", saved));
}

int64_t optimizer_steps_per_epoch(int64_t samples, int64_t batch_size, int64_t accumulate) {
  EMBER_CHECK(batch_size >= 1 && accumulate >= 1, ValueError, "optimizer_steps_per_epoch: batch size ", batch_size,
              " and accumulate ", accumulate, " must be at least 1");
  return ceil_div(samples, batch_size * accumulate);
}

// The parts of one run() (Fitter::Run below), each a small typed record.
namespace {

// This rank's share of the training set. Data-parallel: W ranks; rank r reads every W-th sample of
// an epoch's order from r on, so it holds `local` samples (`first` on rank 0, the most) and a step
// takes W x E samples in all.
struct Shard {
  int64_t samples = 0;       // N: training samples (every rank's)
  int64_t step_samples = 0;  // E: micro-batch x accumulate, per rank
  int world = 1, rank = 0;   // W, and this rank
  int64_t local = 0, first = 0;
};

// The epoch's running sums already read from the device (the unread interval is DeviceMetrics).
struct EpochTotals {
  double loss_sum = 0;
  int64_t correct = 0, seen = 0;  // correctly classified samples, samples
  double data_seconds = 0;        // waiting on the loader
  int64_t skipped = 0;            // optimizer steps the loss scaler skipped (inf/NaN gradients)
};

// Where the loop stands between device->host reads.
struct LoopCounters {
  int64_t interval_first_step = 0;  // the unread interval holds the steps after this one
  int64_t last_read_step = -1;      // the step of the last read
  int64_t finite_through = 0;       // the last step a probe found finite
  int64_t interval_skipped = 0;     // steps the loss scaler skipped in the unread interval
  bool epoch_done = false;          // between an epoch's evaluation and the next epoch
  bool resumed_mid_epoch = false;
  bool oom_happened = false;        // the micro-batch was halved (evaluation then uses it too)
  double lr_used = NAN;             // the learning rate of the last optimizer step
};

// Clocks of the run: the epoch, the interval, the last finiteness probe, and whole epochs (the ETA).
struct Timing {
  Clock::time_point epoch_start, interval_start, last_probe = Clock::now();
  double whole_epoch_seconds = 0;
  int64_t whole_epochs = 0;
};

// Model selection beside FitContext's best_metric / best_epoch.
struct Selection {
  double best_test = 0;    // the test accuracy of the best epoch
  double last_metric = 0;  // the selection metric of the last completed epoch
};

// The data-parallel side of a run (none with one process).
struct WorldSync {
  detail::DataParallel* dp = nullptr;  // the Fitter's, with a process group of W > 1
  double comm_at_start = 0, comm_at_interval = 0, comm_at_epoch = 0;  // dp->comm_seconds() then
  std::vector<FitState::Rng> rank_rng;  // every rank's dropout stream at the last read
};

// What rank 0 writes: metrics and checkpoints into run_dir, watched for removal.
struct RunDirOutput {
  bool writes = false;  // rank 0 with a run_dir
  std::optional<io::DirWatch> watch;  // run_dir as it was at the start
};

}  // namespace

// Everything one run() keeps: the position (ctx), the result so far, the loader, the callbacks in
// order, and the typed parts above.
struct Fitter::Run {
  Fitter& f;
  const FitOptions& o;
  FitContext ctx;
  FitResult res;
  std::vector<std::shared_ptr<Callback>> callbacks;
  std::vector<Tensor> weights;  // probed for inf/NaN at each read
  std::unique_ptr<data::DataLoader> loader;
  DeviceMetrics interval;       // the unread interval's sums, on the device
  Shard shard;
  EpochTotals epoch;
  LoopCounters counters;
  Timing timing;
  Selection selection;
  WorldSync world;
  RunDirOutput out;

  explicit Run(Fitter& fitter)
      : f(fitter), o(fitter.options_), ctx{fitter.options_, fitter.model_, fitter.optimizer_} {}

  template <class Fn>
  void each(Fn fn) {
    for (auto& cb : callbacks) fn(*cb);
  }

  // ---- start -------------------------------------------------------------------------------------
  void start(const Checkpoint* resume) {
    Shard& sh = shard;
    sh.samples = f.train_.size();
    if (o.process_group && o.process_group->size() > 1) {
      sh.world = o.process_group->size(), sh.rank = o.process_group->rank();
      if (!f.dp_) {
        f.dp_ = std::make_unique<detail::DataParallel>(*o.process_group, f.model_, o.overlap_grad_reduce,
                                                       o.first_bucket_bytes, o.bucket_bytes);
        f.dp_->attach(f.step_);
      }
      world.dp = f.dp_.get();
      // Every rank starts from rank 0's parameters and buffers (after its own resume: the same).
      world.dp->broadcast_state();
      world.comm_at_start = world.dp->comm_seconds();
      world.rank_rng.assign(size_t(sh.world), FitState::Rng{});
    }
    sh.local = sh.samples > sh.rank ? (sh.samples - sh.rank + sh.world - 1) / sh.world : 0;
    sh.first = (sh.samples + sh.world - 1) / sh.world;
    out.writes = sh.rank == 0 && !o.run_dir.empty();
    res.world_size = sh.world;
    ctx.micro_batch = o.batch_size;
    ctx.accumulate = o.accumulate;
    sh.step_samples = o.batch_size * o.accumulate;
    ctx.selects_on_val = f.val_ != nullptr;
    res.selected_on = f.val_ ? "val" : "test";
    res.val_size = f.val_ ? f.val_->size() : 0;
    weights = f.model_.parameters();
    if (out.writes) std::filesystem::create_directories(o.run_dir), out.watch.emplace(o.run_dir);
    if (resume) restore(resume->manifest);
    else manual_seed(rank_seed(o.seed, sh.rank));  // dropout masks; model init used its own Generator(seed)
    ctx.steps_per_epoch = steps_in_epoch();
    if (sh.rank == 0) ctx.save_checkpoint = [this](const std::string& tag) { save(tag); };  // rank 0 alone writes
    make_callbacks();
    each([&](Callback& c) { c.on_train_begin(ctx); });
  }

  void restore(const CheckpointManifest& m) {
    ctx.epoch = m.epoch;
    ctx.step = m.step;
    ctx.best_metric = m.best_metric;
    selection.last_metric = m.last_metric;
    const FitState& fs = m.fit;
    ctx.best_epoch = fs.best_epoch.value_or(m.epoch);
    selection.best_test = fs.best_test_acc.value_or(m.best_metric);
    check_checkpoint_world(m, shard.world);
    if (shard.rank == 0) {
      default_generator().set_state(m.rng_seed, m.rng_offset);
    } else {
      const FitState::Rng g =
          size_t(shard.rank - 1) < fs.rank_rng.size() ? fs.rank_rng[size_t(shard.rank - 1)] : FitState::Rng{};
      default_generator().set_state(g.seed, g.offset);
    }
    // An out-of-memory halving carries over when the effective batch is the run's.
    const int64_t micro = fs.micro_batch > 0 ? fs.micro_batch : o.batch_size;
    const int64_t acc = fs.accumulate > 0 ? fs.accumulate : o.accumulate;
    if (micro * acc == shard.step_samples) ctx.micro_batch = micro, ctx.accumulate = acc;
    if (fs.val_size && *fs.val_size != res.val_size)
      throw ValueError(fmt::format("the checkpoint's run selected on {} validation samples (val_split {:g}), this one "
                                   "would on {}", *fs.val_size, fs.val_split, res.val_size),
                       "resume with the --val-split (and the data) the run was started with");
    // Data position: micro-batches of the checkpoint's micro-batch size (rank 0's, whose shard is
    // the largest).
    if (m.batch_in_epoch >= ceil_div(shard.first, micro)) {
      ctx.step_in_epoch = steps_in_epoch();
    } else {
      const int64_t samples = m.batch_in_epoch * micro;
      if (samples % shard.step_samples != 0)
        throw ValueError(fmt::format("the checkpoint stopped {} samples into epoch {}, not at a step of {} samples "
                                     "(batch {} x accumulate {})", samples, m.epoch + 1, shard.step_samples,
                                     o.batch_size, o.accumulate),
                         "resume with the --batch-size and --accumulate the run was started with");
      ctx.step_in_epoch = samples / shard.step_samples;
    }
    counters.resumed_mid_epoch = ctx.step_in_epoch > 0;
    const FitState::EpochSums sums = fs.epoch.value_or(FitState::EpochSums{});
    epoch = EpochTotals{sums.loss_sum, sums.correct, sums.seen, sums.data_time, sums.skipped};
    ctx.epoch_seconds = sums.train_time;
    ctx.resumed_at_batch = m.batch_in_epoch;
    f.step_.loss_scaler().load_state(fs.loss_scaler);
  }

  void make_callbacks() {
    callbacks.push_back(std::make_shared<NanGuard>());
    auto metrics = std::make_shared<MetricsLogger>();
    std::vector<std::shared_ptr<MetricsSink>> sinks;
    if (out.writes) {
      sinks.push_back(std::make_shared<JsonlSink>(o.run_dir / kMetricsFile));
      sinks.push_back(std::make_shared<TensorBoardSink>(o.run_dir));  // events.out.tfevents.*
    }
    sinks.insert(sinks.end(), f.sinks_.begin(), f.sinks_.end());
    for (auto& s : sinks) metrics->add_sink(s);
    callbacks.push_back(metrics);
    auto progress = shard.rank == 0 ? std::make_shared<ProgressCallback>(o.progress, o.progress_out) : nullptr;
    if (progress) callbacks.push_back(progress);
    // The GPU watch: CUDA runs only (a CPU run starts no thread), rank 0, and only where NVML loads.
    if (shard.rank == 0 && watches_gpu(o)) {
      GpuMonitor::Options mo;
      mo.period_seconds = o.gpu_sample_seconds;
      if (std::shared_ptr<GpuMonitor> m = GpuMonitor::for_cuda_device(o.device.index, mo))
        callbacks.push_back(std::make_shared<GpuMonitorCallback>(std::move(m), sinks, progress));
    }
    if (f.on_epoch) callbacks.push_back(std::make_shared<EpochFunction>(f.on_epoch));
    if (f.on_oom) callbacks.push_back(std::make_shared<OomFunction>(f.on_oom));
    if (out.writes) callbacks.push_back(std::make_shared<CheckpointCallback>(checkpoints_dir(o.run_dir)));
    if (o.early_stop_patience > 0) callbacks.push_back(std::make_shared<EarlyStopping>(o.early_stop_patience));
    for (auto& c : f.user_callbacks_) callbacks.push_back(c);
  }

  // ---- data ----------------------------------------------------------------------------------------
  void open_loader() {
    loader.reset();  // its prefetched batches go first
    data::LoaderOptions lo;
    lo.batch_size = ctx.micro_batch;
    lo.shuffle = true;
    lo.workers = o.workers;
    lo.seed = o.seed;
    lo.transforms = o.transforms;
    lo.device = o.device;
    lo.device_resident = o.device_resident;
    lo.shard_rank = shard.rank, lo.shard_count = shard.world;
    loader = std::make_unique<data::DataLoader>(f.train_, lo);
    loader->begin_epoch(ctx.epoch, start_micro_batch());
  }
  // The loader's position at the current step: micro-batches of the epoch already consumed.
  int64_t start_micro_batch() const {
    return std::min(ceil_div(shard.local, ctx.micro_batch), ctx.step_in_epoch * ctx.accumulate);
  }
  // Optimizer steps of an epoch: ceil(N / (W x E)), the same on every rank.
  int64_t steps_in_epoch() const {
    return optimizer_steps_per_epoch(shard.samples, ctx.micro_batch * shard.world, ctx.accumulate);
  }
  data::Batch next_batch() {
    const auto t0 = Clock::now();
    std::optional<data::Batch> b = loader->next();
    epoch.data_seconds += since(t0);
    EMBER_ASSERT(b.has_value(), "the loader ended inside step ", ctx.step_in_epoch + 1, " of ", ctx.steps_per_epoch);
    return std::move(*b);
  }

  // ---- the epoch -----------------------------------------------------------------------------------
  void begin_epoch() {
    counters.epoch_done = false;
    ctx.steps_per_epoch = steps_in_epoch();
    ctx.seconds_per_epoch = timing.whole_epochs ? timing.whole_epoch_seconds / double(timing.whole_epochs) : 0.0;
    timing.epoch_start = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(ctx.epoch_seconds));
    timing.interval_start = Clock::now();
    counters.interval_first_step = ctx.step;
    ctx.epoch_samples = epoch.seen;
    if (world.dp) world.comm_at_epoch = world.comm_at_interval = world.dp->comm_seconds();
    f.model_.train();
    if (!loader) open_loader();
    else loader->begin_epoch(ctx.epoch, start_micro_batch());
    each([&](Callback& c) { c.on_epoch_begin(ctx); });
  }

  // One optimizer step over the next E samples; an out-of-memory error halves the micro-batch and
  // redoes the step. False when the run must stop (ctx says why).
  bool optimizer_step() {
    const int64_t E = shard.step_samples, W = shard.world;
    // The step's samples over all ranks weight each micro-batch's loss; this rank runs its share
    // (none, in an epoch's last step, when the others hold all that is left).
    const int64_t samples = std::min(E * W, shard.samples - ctx.step_in_epoch * E * W);
    const int64_t mine = std::clamp<int64_t>(shard.local - ctx.step_in_epoch * E, 0, E);
    if (world.dp) world.dp->broadcast_buffers();  // PyTorch's broadcast_buffers: batch norm statistics are rank 0's
    counters.lr_used = f.optimizer_.lr();  // a per-step schedule moves on after the step: metrics log this one
    for (;;) {
      const DeviceMetrics before = interval;
      const uint64_t rng_seed = default_generator().seed(), rng_offset = default_generator().offset();
      try {
        if (!f.step_.run(ceil_div(mine, ctx.micro_batch), samples, [this] { return next_batch(); }, &interval))
          ++counters.interval_skipped, ++res.skipped_steps;  // the loss scaler found inf/NaN gradients: no update
        return true;
      } catch (const OutOfMemoryError& e) {
        interval = before;
        default_generator().set_state(rng_seed, rng_offset);
        if (!halve_micro_batch(e)) return false;
        open_loader();
      } catch (const CallerRaised& e) {
        // The caller's own code (a model defined in Python) raised: the step is dropped, and the run
        // stops at the last step boundary with its checkpoint (fit_types.h), as a signal would.
        interval = before;
        default_generator().set_state(rng_seed, rng_offset);
        f.optimizer_.zero_grad();  // the dropped step's gradients
        if (counters.last_read_step != ctx.step) read_metrics(false, /*logged=*/false);  // the sums for the checkpoint
        ctx.stop(FitStatus::Interrupted, fmt::format("the model raised {} in step {} (epoch {}): {}", e.error_type(),
                                                     ctx.step + 1, ctx.epoch + 1, e.what()));
        return false;
      }
    }
  }

  bool halve_micro_batch(const OutOfMemoryError& e) {
    const int64_t b = ctx.micro_batch, a = ctx.accumulate, E = shard.step_samples;
    const bool in_update = f.step_.in_update();
    f.optimizer_.zero_grad();  // the failed attempt's gradients
    loader.reset();
    empty_cache();
    // Data-parallel ranks do not halve alone: the others would all-reduce other buckets (and
    // checkpoints record rank 0's micro-batch); the run ends, and the others with it.
    if (!o.recover_oom || b == 1 || in_update || shard.world > 1) {
      ctx.stop(FitStatus::OutOfMemory,
               fmt::format("out of memory {} at epoch {}, step {} of {} (micro-batch {} x accumulate {} = {} samples "
                           "per step): {}", in_update ? "in the optimizer step" : "at micro-batch " + std::to_string(b),
                           ctx.epoch + 1, ctx.step_in_epoch + 1, ctx.steps_per_epoch, b, a, E, e.what()));
      return false;
    }
    int64_t nb = b / 2;
    while (E % nb != 0) --nb;  // a divisor of E: every step keeps exactly E samples
    OomEvent ev{ctx.epoch + 1, ctx.step, b, a, nb, E / nb, e.what()};
    ctx.micro_batch = nb, ctx.accumulate = E / nb;
    counters.oom_happened = true;
    res.oom_events.push_back(ev);
    each([&](Callback& c) { c.on_oom(ctx, ev); });
    return true;
  }

  void after_step() {
    ++ctx.step, ++ctx.step_in_epoch;
    ctx.epoch_samples = epoch.seen + interval.samples() * shard.world;
    ctx.epoch_seconds = since(timing.epoch_start);
    each([&](Callback& c) { c.on_step_end(ctx); });
    int sig = o.stop_signal ? o.stop_signal->load() : 0;
    if (o.log_every > 0 && ctx.step % o.log_every == 0) sig = read_metrics(false);
    else if (world.dp) sig = agreed_signal(sig);
    else if (o.finite_check_seconds > 0 && since(timing.last_probe) >= o.finite_check_seconds) probe_finite();
    if (sig != 0 || (o.stop_after_steps > 0 && ctx.step >= o.stop_after_steps)) {
      // The sums for the checkpoint, the NaN guard.
      if (counters.last_read_step != ctx.step) read_metrics(false, /*logged=*/false);
      ctx.signal = sig;
      ctx.stop(FitStatus::Interrupted, "");
    }
  }

  // Data-parallel: a signal reaches the ranks at different steps, so they agree on one before
  // stopping: every kSignalEvery steps (and at each read) any rank's signal stops them all.
  static constexpr int64_t kSignalEvery = 10;
  int agreed_signal(int sig) {
    if (ctx.step % kSignalEvery != 0 && ctx.step_in_epoch != ctx.steps_per_epoch) return 0;
    int agreed = 0;
    for (const auto& w : world.dp->all_gather({uint64_t(sig)}))
      if (!agreed && w[0] != 0) agreed = int(w[0]);
    return agreed;
  }

  // Between reads, about once a second: are the interval's loss sum and the weights still finite?
  // A read (with its "step" record) follows at once when not, and the NaN guard stops the run
  // there, so a run that diverges stops within about a second of it whatever its log interval.
  // Not in data-parallel runs, whose ranks would probe at different steps.
  void probe_finite() {
    timing.last_probe = Clock::now();
    const DeviceMetrics::Values v = interval.read(weights);
    if (std::isfinite(v.loss_sum) && v.weights_finite) counters.finite_through = ctx.step;
    else read_metrics(false);
  }

  // What became of the run directory since the start ("was removed"); empty while it is there.
  std::string run_dir_change() const { return out.watch ? out.watch->change() : ""; }
  std::string run_dir_lost_message(const std::string& what) const {
    return fmt::format("the run directory {} {} during training (at epoch {}, step {}): its metrics.jsonl, "
                       "config.json, event files and checkpoints went with it, and what the run wrote now would "
                       "land in deleted files; training stopped", o.run_dir.string(), what, ctx.epoch + 1, ctx.step);
  }

  // The one device->host read of an interval: its loss and accuracy sums and the weights' probe.
  // Data-parallel: the ranks' sums are gathered and added in rank order, so every rank sees the
  // same values (and makes the same NaN-guard decision); returns the signal the ranks agree on.
  int read_metrics(bool epoch_end, bool logged = true) {
    DeviceMetrics::Values v = interval.read(weights);
    ++res.host_reads;
    timing.last_probe = Clock::now();
    int sig = o.stop_signal ? o.stop_signal->load() : 0;
    std::string lost = run_dir_change();  // rank 0's (the others have no run directory)
    if (world.dp) {
      const auto all = world.dp->all_gather({detail::double_bits(v.loss_sum), uint64_t(v.correct),
                                             uint64_t(v.samples), v.weights_finite ? 1u : 0u,
                                             default_generator().seed(), default_generator().offset(),
                                             uint64_t(sig), lost.empty() ? 0u : 1u});
      v = DeviceMetrics::Values{};
      sig = 0;
      for (size_t r = 0; r < all.size(); ++r) {
        const auto& w = all[r];
        v.loss_sum += detail::bits_double(w[0]), v.correct += int64_t(w[1]);
        v.samples += int64_t(w[2]);
        v.weights_finite = v.weights_finite && w[3] == 1;
        world.rank_rng[r] = {w[4], w[5]};
        if (!sig && w[6] != 0) sig = int(w[6]);
        if (lost.empty() && w[7] != 0) lost = fmt::format("(rank {}'s) was removed or replaced", r);
      }
    }
    if (!lost.empty()) ctx.stop(FitStatus::RunDirLost, run_dir_lost_message(lost));
    IntervalStats s;
    s.first_step = counters.interval_first_step, s.last_step = ctx.step;
    s.samples = v.samples;
    s.loss = v.samples ? v.loss_sum / double(v.samples) : NAN;
    s.acc = v.samples ? double(v.correct) / double(v.samples) : NAN;
    epoch.loss_sum += v.loss_sum, epoch.correct += v.correct, epoch.seen += v.samples;
    s.epoch_loss = epoch.seen ? epoch.loss_sum / double(epoch.seen) : NAN;
    s.epoch_acc = epoch.seen ? double(epoch.correct) / double(epoch.seen) : NAN;
    s.seconds = since(timing.interval_start);
    s.samples_per_s = double(v.samples) / std::max(s.seconds, 1e-9);
    s.lr = std::isnan(counters.lr_used) ? f.optimizer_.lr() : counters.lr_used;
    s.loss_finite = !v.samples || std::isfinite(v.loss_sum);
    s.weights_finite = v.weights_finite;
    s.finite_through = counters.finite_through;
    s.skipped_steps = counters.interval_skipped;
    s.loss_scale = loss_scale();
    epoch.skipped += counters.interval_skipped, counters.interval_skipped = 0;
    s.epoch_end = epoch_end;
    s.logged = logged;
    if (world.dp)
      s.comm_seconds = world.dp->comm_seconds() - world.comm_at_interval, world.comm_at_interval = world.dp->comm_seconds();
    interval.reset();
    timing.interval_start = Clock::now();
    counters.interval_first_step = ctx.step;
    counters.last_read_step = ctx.step;
    each([&](Callback& c) { c.on_sync(ctx, s); });
    return sig;
  }

  // The scale of a scaled loss now; NAN when the loss is not scaled.
  double loss_scale() { return f.step_.loss_scaler().scaling() ? f.step_.loss_scaler().current_scale() : NAN; }

  EvalResult evaluate_on(const data::Dataset& ds) {
    EvalOptions eo;
    eo.batch_size = o.eval_batch_size > 0  ? o.eval_batch_size
                    : counters.oom_happened ? ctx.micro_batch
                                            : std::max<int64_t>(o.batch_size, 256);
    eo.device = o.device, eo.workers = o.workers, eo.device_resident = o.device_resident;
    eo.confusion = false;
    eo.loss = f.step_.loss();
    if (world.dp) return evaluate_sharded(ds, eo);  // uninterrupted: the ranks agree on signals at reads only
    eo.stop_signal = o.stop_signal;
    for (;;) {
      try {
        return evaluate(f.model_, ds, eo);
      } catch (const OutOfMemoryError&) {
        if (eo.batch_size == 1) throw;
        empty_cache();
        eo.batch_size = std::max<int64_t>(1, eo.batch_size / 2);
      }
    }
  }

  // Data-parallel evaluation: rank r evaluates the r-th contiguous W-th of the set; the loss and
  // correct sums are gathered and added in rank order (the same result on every rank).
  EvalResult evaluate_sharded(const data::Dataset& ds, const EvalOptions& eo) {
    const int64_t n = ds.size(), begin = n * shard.rank / shard.world, end = n * (shard.rank + 1) / shard.world;
    double loss_sum = 0, correct = 0;
    if (end > begin) {
      data::Dataset part = ds;
      if (ds.is_photos()) {
        std::vector<int64_t> rows(size_t(end - begin));
        for (int64_t i = begin; i < end; ++i) rows[size_t(i - begin)] = i;
        part.photos = ds.photos->take(rows);
      } else {
        part.images = ds.images.narrow(0, begin, end - begin);
      }
      part.labels = ds.labels.narrow(0, begin, end - begin);
      const EvalResult r = evaluate(f.model_, part, eo);
      loss_sum = r.loss * double(r.samples), correct = std::round(r.accuracy * double(r.samples));
    }
    EvalResult all;
    for (const auto& w : world.dp->all_gather({detail::double_bits(loss_sum), detail::double_bits(correct)}))
      all.loss += detail::bits_double(w[0]), all.accuracy += detail::bits_double(w[1]);
    all.samples = n;
    all.loss = n ? all.loss / double(n) : NAN;
    all.accuracy = n ? all.accuracy / double(n) : NAN;
    return all;
  }

  void end_epoch(const Clock::time_point wall_start) {
    ctx.epoch_seconds = since(timing.epoch_start);
    read_metrics(true);  // the epoch's last interval, and the weights before any checkpoint
    if (ctx.stopping()) return;
    EpochStats st;
    st.epoch = ctx.epoch + 1;
    st.train_loss = epoch.seen ? epoch.loss_sum / double(epoch.seen) : NAN;
    st.train_acc = epoch.seen ? double(epoch.correct) / double(epoch.seen) : NAN;
    if (world.dp) world.dp->broadcast_buffers();  // every rank evaluates (and rank 0 saves) rank 0's statistics
    EvalResult test, val;
    try {
      test = evaluate_on(f.test_);
      if (test.interrupted) return stop_in_evaluation(test.interrupted);
      if (f.val_) val = evaluate_on(*f.val_);
      if (val.interrupted) return stop_in_evaluation(val.interrupted);
    } catch (const CallerRaised& e) {  // the caller's model raised: stopped as a signal there is (fit_types.h)
      ctx.signal = 0;
      ctx.stop(FitStatus::Interrupted, fmt::format("the model raised {} in epoch {}'s evaluation: {}", e.error_type(),
                                                   ctx.epoch + 1, e.what()));
      return;
    }
    st.test_loss = test.loss, st.test_acc = test.accuracy;
    if (f.val_) st.val_loss = val.loss, st.val_acc = val.accuracy;
    st.seconds = ctx.epoch_seconds;
    st.samples_per_s = double(epoch.seen) / std::max(ctx.epoch_seconds, 1e-9);
    st.data_wait = ctx.epoch_seconds > 0 ? epoch.data_seconds / ctx.epoch_seconds : 0;
    if (world.dp && ctx.epoch_seconds > 0)
      st.comm_wait = (world.dp->comm_seconds() - world.comm_at_epoch) / ctx.epoch_seconds;
    // The epoch's learning rate, before the schedule moves on.
    st.lr = std::isnan(counters.lr_used) ? f.optimizer_.lr() : counters.lr_used;
    // A per-epoch schedule steps once the epoch is evaluated (an interrupted evaluation is redone
    // on resume with the epoch's schedule position) and before its checkpoint.
    if (f.sched_ && !f.sched_per_step_) f.sched_->step();
    st.skipped_steps = epoch.skipped;
    st.loss_scale = loss_scale();
    // Selection: the validation accuracy, or the test accuracy when there is no validation set.
    const double metric = f.val_ ? st.val_acc : st.test_acc;
    selection.last_metric = metric;
    st.improved = metric > ctx.best_metric || ctx.best_epoch == 0;
    if (st.improved) ctx.best_metric = metric, ctx.best_epoch = st.epoch, selection.best_test = st.test_acc;
    if (!counters.resumed_mid_epoch) timing.whole_epoch_seconds += since(wall_start), ++timing.whole_epochs;
    counters.resumed_mid_epoch = false;
    counters.epoch_done = true;
    res.epochs.push_back(st);
    each([&](Callback& c) { c.on_epoch_end(ctx, st); });
    epoch = EpochTotals{};
    ctx.epoch_seconds = 0, ctx.epoch_samples = 0;
    ++ctx.epoch, ctx.step_in_epoch = 0;
  }

  // A signal during the epoch's evaluation: stop there. The checkpoint's position is the end of the
  // epoch's data, so a resumed run evaluates the epoch again (evaluation draws no random numbers).
  void stop_in_evaluation(int sig) {
    ctx.signal = sig;
    ctx.stop(FitStatus::Interrupted, "");
  }

  // ---- checkpoints ---------------------------------------------------------------------------------
  void save(const std::string& tag) {
    // Never re-create a removed run directory holding a lone checkpoint (save_checkpoint makes its
    // parents): the run fails instead, naming the directory.
    if (const std::string what = run_dir_change(); !what.empty())
      throw IOError(run_dir_lost_message(what) + "; no checkpoint was written",
                    "if the directory was moved rather than deleted, `ember train --resume NEW_PATH` continues "
                    "from its last checkpoint");
    CheckpointManifest m;
    m.ember_version = version();
    m.device = o.device.str();
    m.model = o.model_name;
    m.dataset = o.dataset_name;
    m.step = ctx.step;
    // At an epoch's end the position is the next epoch's start (ctx.epoch is bumped after the callbacks).
    m.epoch = counters.epoch_done ? ctx.epoch + 1 : ctx.epoch;
    m.batch_in_epoch = counters.epoch_done ? 0 : start_micro_batch();
    m.seed = o.seed;
    m.rng_seed = default_generator().seed();
    m.rng_offset = default_generator().offset();
    m.threads = get_num_threads();  // the compute threads the run used (a resume warns when they differ)
    m.best_metric = ctx.best_metric;
    m.last_metric = selection.last_metric;
    m.optimizer_scalars["lr"] = f.optimizer_.lr();
    FitState& fs = m.fit;
    fs.micro_batch = ctx.micro_batch, fs.accumulate = ctx.accumulate;
    fs.val_split = f.split_val_ ? o.val_split : 0.0, fs.val_size = res.val_size;
    fs.best_epoch = ctx.best_epoch, fs.best_test_acc = selection.best_test;
    fs.world_size = shard.world;
    // Every rank's dropout stream as of the last read (no draws since: evaluation draws none).
    for (int r = 1; r < shard.world; ++r) fs.rank_rng.push_back(world.rank_rng[size_t(r)]);
    if (!counters.epoch_done)
      fs.epoch = FitState::EpochSums{epoch.loss_sum, epoch.correct, epoch.data_seconds, ctx.epoch_seconds,
                                     epoch.seen, epoch.skipped};
    fs.loss_scaler = f.step_.loss_scaler().state();
    m.config_json = o.config_json;
    // __metadata__: enough for `ember eval FILE` and `ember predict FILE` on the weights alone.
    m.weights_metadata =
        to_metadata(describe_run_weights(o.model_name, o.dataset_name, f.train_, o.run_dir, o.config_json));
    save_checkpoint(checkpoints_dir(o.run_dir), tag, m, training_state(f.model_, f.optimizer_, f.sched_));
  }

  FitResult finish() {
    res.status = ctx.status;
    res.message = ctx.message;
    res.signal = ctx.signal;
    res.step = ctx.step;
    res.epoch = ctx.epoch;
    res.best_metric = ctx.best_metric, res.best_epoch = ctx.best_epoch, res.best_test_acc = selection.best_test;
    res.micro_batch = ctx.micro_batch, res.accumulate = ctx.accumulate;
    if (world.dp) res.comm_seconds = world.dp->comm_seconds() - world.comm_at_start;
    res.loss_scale = loss_scale();
    each([&](Callback& c) { c.on_train_end(ctx, res); });
    return std::move(res);
  }
};

Fitter::Fitter(nn::Module& model, optim::Optimizer& optimizer, optim::LRScheduler* sched, bool sched_per_step,
               const data::Dataset& train, const data::Dataset& test, FitOptions options)
    : model_(model), optimizer_(optimizer), sched_(sched), sched_per_step_(sched_per_step), train_(train), test_(test),
      options_(std::move(options)), step_(model, optimizer, LossFunction{options_.label_smoothing}) {
  EMBER_CHECK(options_.batch_size >= 1 && options_.accumulate >= 1, ValueError, "fit: batch size ",
              options_.batch_size, " and accumulate ", options_.accumulate, " must be at least 1");
  if (options_.val) {
    val_ = options_.val;
  } else if (options_.val_split > 0) {
    // The run's validation split (validation.h): the same samples `ember train --val-split` holds out.
    data::DatasetSplit s = validation_split(train, options_.val_split, options_.seed);
    if (s.held_out.size() > 0) {  // too few samples to hold one out: selection on the test set
      train_ = std::move(s.kept);
      split_val_ = std::move(s.held_out);
      val_ = &*split_val_;
    }
  }
}
Fitter::~Fitter() = default;

void Fitter::resume_from(const Checkpoint& ck) {
  check_checkpoint_world(ck.manifest, world_of(options_));  // before anything is restored or written
  restore_training_state(ck, model_, optimizer_, sched_);
  resume_ = &ck;
}

// The loop, stage by stage: each optimizer step (batch, micro-batches of forward, loss and backward,
// gradient hooks, unscale and check, update) is TrainStep::run; then the scheduler, then callbacks.
FitResult Fitter::run(const Checkpoint* resume_arg) {
  if (resume_arg && resume_arg != resume_) resume_from(*resume_arg);
  Run r(*this);
  r.start(resume_);
  while (r.ctx.epoch < options_.epochs && !r.ctx.stopping()) {
    const auto wall_start = Clock::now();
    r.begin_epoch();
    while (r.ctx.step_in_epoch < r.ctx.steps_per_epoch && !r.ctx.stopping()) {
      if (!r.optimizer_step()) break;                      // out of memory at micro-batch 1
      if (sched_ && sched_per_step_) sched_->step();       // scheduler: per optimizer step
      r.after_step();                                      // callbacks, the interval read, stop requests
    }
    if (r.ctx.stopping()) break;
    r.end_epoch(wall_start);                               // last read, evaluation, selection, callbacks
  }
  return r.finish();
}

}  // namespace ember::train
