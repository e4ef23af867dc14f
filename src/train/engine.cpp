// The training engine (fit.h): the epoch loop around TrainStep, with the data position counted in
// optimizer steps of E = micro-batch x accumulate samples, device-side running sums read once per
// log interval, out-of-memory halving, validation-based selection and the callbacks.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <ctime>

#include "ember/core/generator.h"
#include "ember/core/memory.h"
#include "ember/ops.h"
#include "ember/train/fit.h"
#include "ember/train/validation.h"
#include "ember/train/weights_info.h"

namespace ember::train {
namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
double scalar(const CheckpointManifest& m, const std::string& key, double fallback) {
  auto it = m.optimizer_scalars.find("fit." + key);
  return it == m.optimizer_scalars.end() ? fallback : it->second;
}
}  // namespace

int64_t optimizer_steps_per_epoch(int64_t samples, int64_t batch_size, int64_t accumulate) {
  EMBER_CHECK(batch_size >= 1 && accumulate >= 1, ValueError, "optimizer_steps_per_epoch: batch size ", batch_size,
              " and accumulate ", accumulate, " must be at least 1");
  return ceil_div(samples, batch_size * accumulate);
}

// Everything one run() keeps: position, running sums, the loader, the callbacks in order.
struct Fitter::Run {
  Fitter& f;
  const FitOptions& o;
  FitContext ctx;
  FitResult res;
  std::vector<std::shared_ptr<Callback>> callbacks;
  std::vector<Tensor> weights;           // probed for inf/NaN at each read
  std::unique_ptr<data::DataLoader> loader;
  int64_t N = 0, E = 0;                  // training samples; samples per optimizer step
  DeviceMetrics interval;                // since the last read, on the device
  double ep_loss_sum = 0, ep_correct = 0, data_time = 0;  // the epoch before `interval`, on the host
  int64_t ep_seen = 0;
  Clock::time_point epoch_start, interval_start;
  int64_t interval_first_step = 0, last_read_step = -1;
  bool epoch_done = false;               // between an epoch's evaluation and the next epoch
  bool resumed_mid_epoch = false;
  double whole_epoch_seconds = 0;
  int64_t whole_epochs = 0;
  double best_test = 0, last_metric = 0;
  bool oom_happened = false;
  int64_t interval_skipped = 0, epoch_skipped = 0;  // steps the loss scaler skipped (inf/NaN gradients)

  explicit Run(Fitter& fitter) : f(fitter), o(fitter.o_), ctx{fitter.o_, fitter.model_, fitter.opt_} {}

  template <class Fn>
  void each(Fn fn) {
    for (auto& cb : callbacks) fn(*cb);
  }

  // ---- start -------------------------------------------------------------------------------------
  void start(const Checkpoint* resume) {
    N = f.train_.size();
    ctx.micro_batch = o.batch_size;
    ctx.accumulate = o.accumulate;
    E = o.batch_size * o.accumulate;
    ctx.selects_on_val = f.val_ != nullptr;
    res.selected_on = f.val_ ? "val" : "test";
    res.val_size = f.val_ ? f.val_->size() : 0;
    weights = f.model_.parameters();
    if (!o.run_dir.empty()) std::filesystem::create_directories(o.run_dir);
    if (resume) restore(resume->manifest);
    else manual_seed(o.seed + 1);  // dropout masks; model init used its own Generator(seed)
    ctx.steps_per_epoch = optimizer_steps_per_epoch(N, ctx.micro_batch, ctx.accumulate);
    ctx.save_checkpoint = [this](const std::string& tag) { save(tag); };
    make_callbacks();
    each([&](Callback& c) { c.on_train_begin(ctx); });
  }

  void restore(const CheckpointManifest& m) {
    ctx.epoch = m.epoch;
    ctx.step = m.step;
    ctx.best_metric = m.best_metric;
    last_metric = m.last_metric;
    ctx.best_epoch = int64_t(scalar(m, "best_epoch", double(m.epoch)));
    best_test = scalar(m, "best_test_acc", m.best_metric);
    default_generator().set_state(m.rng_seed, m.rng_offset);
    // An out-of-memory halving carries over when the effective batch is the run's.
    const auto micro = int64_t(scalar(m, "micro_batch", double(o.batch_size)));
    const auto acc = int64_t(scalar(m, "accumulate", double(o.accumulate)));
    if (micro >= 1 && acc >= 1 && micro * acc == E) ctx.micro_batch = micro, ctx.accumulate = acc;
    if (m.optimizer_scalars.count("fit.val_size") && int64_t(scalar(m, "val_size", 0)) != res.val_size)
      throw ValueError(fmt::format("the checkpoint's run selected on {} validation samples (val_split {:g}), this one "
                                   "would on {}", int64_t(scalar(m, "val_size", 0)), scalar(m, "val_split", 0),
                                   res.val_size),
                       "resume with the --val-split (and the data) the run was started with");
    // Data position: micro-batches of the checkpoint's micro-batch size.
    if (m.batch_in_epoch >= ceil_div(N, micro)) {
      ctx.step_in_epoch = optimizer_steps_per_epoch(N, ctx.micro_batch, ctx.accumulate);
    } else {
      const int64_t samples = m.batch_in_epoch * micro;
      if (samples % E != 0)
        throw ValueError(fmt::format("the checkpoint stopped {} samples into epoch {}, not at a step of {} samples "
                                     "(batch {} x accumulate {})", samples, m.epoch + 1, E, o.batch_size, o.accumulate),
                         "resume with the --batch-size and --accumulate the run was started with");
      ctx.step_in_epoch = samples / E;
    }
    resumed_mid_epoch = ctx.step_in_epoch > 0;
    ep_loss_sum = scalar(m, "loss_sum", 0), ep_seen = int64_t(scalar(m, "seen", 0));
    ep_correct = scalar(m, "correct", 0), data_time = scalar(m, "data_time", 0);
    ctx.epoch_seconds = scalar(m, "train_time", 0);
    epoch_skipped = int64_t(scalar(m, "skipped_in_epoch", 0));
    ctx.resumed_at_batch = m.batch_in_epoch;
    std::map<std::string, double> scaler_state;  // the loss scaler's "fit.loss_scale*" scalars
    for (const auto& [k, v] : m.optimizer_scalars)
      if (k.rfind("fit.loss_scale", 0) == 0) scaler_state[k.substr(4)] = v;
    f.step_.loss_scaler().load_state(scaler_state);
  }

  void make_callbacks() {
    callbacks.push_back(std::make_shared<NanGuard>());
    auto metrics = std::make_shared<MetricsLogger>();
    if (!o.run_dir.empty()) {
      metrics->add_sink(std::make_shared<JsonlSink>(o.run_dir / "metrics.jsonl"));
      metrics->add_sink(std::make_shared<TensorBoardSink>(o.run_dir));  // events.out.tfevents.*
    }
    for (auto& s : f.sinks_) metrics->add_sink(s);
    callbacks.push_back(metrics);
    callbacks.push_back(std::make_shared<ProgressCallback>(o.interactive));
    if (f.on_epoch) callbacks.push_back(std::make_shared<EpochFunction>(f.on_epoch));
    if (f.on_oom) callbacks.push_back(std::make_shared<OomFunction>(f.on_oom));
    if (!o.run_dir.empty()) callbacks.push_back(std::make_shared<CheckpointCallback>(o.run_dir / "checkpoints"));
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
    loader = std::make_unique<data::DataLoader>(f.train_, lo);
    loader->begin_epoch(ctx.epoch, start_micro_batch());
  }
  // The loader's position at the current step: micro-batches of the epoch already consumed.
  int64_t start_micro_batch() const {
    return std::min(ceil_div(N, ctx.micro_batch), ctx.step_in_epoch * ctx.accumulate);
  }
  data::Batch next_batch() {
    const auto t0 = Clock::now();
    std::optional<data::Batch> b = loader->next();
    data_time += since(t0);
    EMBER_ASSERT(b.has_value(), "the loader ended inside step ", ctx.step_in_epoch + 1, " of ", ctx.steps_per_epoch);
    return std::move(*b);
  }

  // ---- the epoch -----------------------------------------------------------------------------------
  void begin_epoch() {
    epoch_done = false;
    ctx.steps_per_epoch = optimizer_steps_per_epoch(N, ctx.micro_batch, ctx.accumulate);
    ctx.seconds_per_epoch = whole_epochs ? whole_epoch_seconds / double(whole_epochs) : 0.0;
    epoch_start = Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(ctx.epoch_seconds));
    interval_start = Clock::now();
    interval_first_step = ctx.step;
    ctx.epoch_samples = ep_seen;
    f.model_.train();
    if (!loader) open_loader();
    else loader->begin_epoch(ctx.epoch, start_micro_batch());
    each([&](Callback& c) { c.on_epoch_begin(ctx); });
  }

  // One optimizer step over the next E samples; an out-of-memory error halves the micro-batch and
  // redoes the step. False when the run must stop (ctx says why).
  bool optimizer_step() {
    const int64_t samples = std::min(E, N - ctx.step_in_epoch * E);
    for (;;) {
      const DeviceMetrics before = interval;
      const uint64_t rng_seed = default_generator().seed(), rng_offset = default_generator().offset();
      try {
        if (!f.step_.run(ceil_div(samples, ctx.micro_batch), samples, [this] { return next_batch(); }, &interval))
          ++interval_skipped, ++res.skipped_steps;  // the loss scaler found inf/NaN gradients: no update
        return true;
      } catch (const OutOfMemoryError& e) {
        interval = before;
        default_generator().set_state(rng_seed, rng_offset);
        if (!halve_micro_batch(e)) return false;
        open_loader();
      }
    }
  }

  bool halve_micro_batch(const OutOfMemoryError& e) {
    const int64_t b = ctx.micro_batch, a = ctx.accumulate;
    const bool in_update = f.step_.in_update();
    f.opt_.zero_grad();  // the failed attempt's gradients
    loader.reset();
    empty_cache();
    if (!o.recover_oom || b == 1 || in_update) {
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
    oom_happened = true;
    res.oom_events.push_back(ev);
    each([&](Callback& c) { c.on_oom(ctx, ev); });
    return true;
  }

  void after_step() {
    ++ctx.step, ++ctx.step_in_epoch;
    ctx.epoch_samples = ep_seen + interval.samples();
    ctx.epoch_seconds = since(epoch_start);
    each([&](Callback& c) { c.on_step_end(ctx); });
    if (o.log_every > 0 && ctx.step % o.log_every == 0) read_metrics(false);
    const int sig = o.stop_signal ? o.stop_signal->load() : 0;
    if (sig != 0 || (o.stop_after_steps > 0 && ctx.step >= o.stop_after_steps)) {
      if (last_read_step != ctx.step) read_metrics(false, /*logged=*/false);  // the sums for the checkpoint, the NaN guard
      ctx.signal = sig;
      ctx.stop(FitStatus::Interrupted, "");
    }
  }

  // The one device->host read of an interval: its loss and accuracy sums and the weights' probe.
  void read_metrics(bool epoch_end, bool logged = true) {
    const DeviceMetrics::Values v = interval.read(weights);
    ++res.host_reads;
    IntervalStats s;
    s.first_step = interval_first_step, s.last_step = ctx.step;
    s.samples = v.samples;
    s.loss = v.samples ? v.loss_sum / double(v.samples) : NAN;
    s.acc = v.samples ? v.correct / double(v.samples) : NAN;
    ep_loss_sum += v.loss_sum, ep_correct += v.correct, ep_seen += v.samples;
    s.epoch_loss = ep_seen ? ep_loss_sum / double(ep_seen) : NAN;
    s.epoch_acc = ep_seen ? ep_correct / double(ep_seen) : NAN;
    s.seconds = since(interval_start);
    s.samples_per_s = double(v.samples) / std::max(s.seconds, 1e-9);
    s.lr = f.opt_.lr();
    s.loss_finite = !v.samples || std::isfinite(v.loss_sum);
    s.weights_finite = v.weights_finite;
    s.skipped_steps = interval_skipped;
    s.loss_scale = f.step_.loss_scaler().scaling() ? f.step_.loss_scaler().current_scale() : NAN;
    epoch_skipped += interval_skipped, interval_skipped = 0;
    s.epoch_end = epoch_end;
    s.logged = logged;
    interval.reset();
    interval_start = Clock::now();
    interval_first_step = ctx.step;
    last_read_step = ctx.step;
    each([&](Callback& c) { c.on_sync(ctx, s); });
  }

  EvalResult evaluate_on(const data::Dataset& ds) {
    EvalOptions eo;
    eo.batch_size = o.eval_batch_size > 0 ? o.eval_batch_size
                    : oom_happened        ? ctx.micro_batch
                                          : std::max<int64_t>(o.batch_size, 256);
    eo.device = o.device, eo.workers = o.workers, eo.device_resident = o.device_resident;
    eo.confusion = false;
    eo.loss = f.step_.loss();
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

  void end_epoch(const Clock::time_point wall_start) {
    ctx.epoch_seconds = since(epoch_start);
    read_metrics(true);  // the epoch's last interval, and the weights before any checkpoint
    if (ctx.stopping()) return;
    if (f.sched_ && !f.sched_per_step_) f.sched_->step();
    EpochStats st;
    st.epoch = ctx.epoch + 1;
    st.train_loss = ep_seen ? ep_loss_sum / double(ep_seen) : NAN;
    st.train_acc = ep_seen ? ep_correct / double(ep_seen) : NAN;
    const EvalResult test = evaluate_on(f.test_);
    st.test_loss = test.loss, st.test_acc = test.accuracy;
    if (f.val_) {
      const EvalResult val = evaluate_on(*f.val_);
      st.val_loss = val.loss, st.val_acc = val.accuracy;
    }
    st.seconds = ctx.epoch_seconds;
    st.samples_per_s = double(ep_seen) / std::max(ctx.epoch_seconds, 1e-9);
    st.data_wait = ctx.epoch_seconds > 0 ? data_time / ctx.epoch_seconds : 0;
    st.lr = f.opt_.lr();
    st.skipped_steps = epoch_skipped;
    st.loss_scale = f.step_.loss_scaler().scaling() ? f.step_.loss_scaler().current_scale() : NAN;
    // Selection: the validation accuracy, or the test accuracy when there is no validation set.
    const double metric = f.val_ ? st.val_acc : st.test_acc;
    last_metric = metric;
    st.improved = metric > ctx.best_metric || ctx.best_epoch == 0;
    if (st.improved) ctx.best_metric = metric, ctx.best_epoch = st.epoch, best_test = st.test_acc;
    if (!resumed_mid_epoch) whole_epoch_seconds += since(wall_start), ++whole_epochs;
    resumed_mid_epoch = false;
    epoch_done = true;
    res.epochs.push_back(st);
    each([&](Callback& c) { c.on_epoch_end(ctx, st); });
    ep_loss_sum = ep_correct = data_time = 0, ep_seen = 0, epoch_skipped = 0;
    ctx.epoch_seconds = 0, ctx.epoch_samples = 0;
    ++ctx.epoch, ctx.step_in_epoch = 0;
  }

  // ---- checkpoints ---------------------------------------------------------------------------------
  void save(const std::string& tag) {
    CheckpointManifest m;
    m.ember_version = version();
    m.device = o.device.str();
    m.model = o.model_name;
    m.dataset = o.dataset_name;
    m.step = ctx.step;
    // At an epoch's end the position is the next epoch's start (ctx.epoch is bumped after the callbacks).
    m.epoch = epoch_done ? ctx.epoch + 1 : ctx.epoch;
    m.batch_in_epoch = epoch_done ? 0 : start_micro_batch();
    m.seed = o.seed;
    m.rng_seed = default_generator().seed();
    m.rng_offset = default_generator().offset();
    m.threads = o.threads;
    m.best_metric = ctx.best_metric;
    m.last_metric = last_metric;
    auto& s = m.optimizer_scalars;
    s["lr"] = f.opt_.lr();
    s["fit.micro_batch"] = double(ctx.micro_batch), s["fit.accumulate"] = double(ctx.accumulate);
    s["fit.val_split"] = f.split_val_ ? o.val_split : 0.0, s["fit.val_size"] = double(res.val_size);
    s["fit.best_epoch"] = double(ctx.best_epoch), s["fit.best_test_acc"] = best_test;
    if (!epoch_done) {
      s["fit.loss_sum"] = ep_loss_sum, s["fit.seen"] = double(ep_seen), s["fit.correct"] = ep_correct;
      s["fit.data_time"] = data_time, s["fit.train_time"] = ctx.epoch_seconds;
      if (epoch_skipped) s["fit.skipped_in_epoch"] = double(epoch_skipped);
    }
    for (const auto& [k, v] : f.step_.loss_scaler().state()) s["fit." + k] = v;
    m.config_json = o.config_json;
    // __metadata__: enough for `ember eval FILE` and `ember predict FILE` on the weights alone.
    m.weights_metadata = to_metadata(describe_run_weights(o.model_name, o.dataset_name, f.train_, o.run_dir, o.config_json));
    save_checkpoint(o.run_dir / "checkpoints", tag, m, training_state(f.model_, f.opt_, f.sched_));
  }

  FitResult finish() {
    res.status = ctx.status;
    res.message = ctx.message;
    res.signal = ctx.signal;
    res.step = ctx.step;
    res.epoch = ctx.epoch;
    res.best_metric = ctx.best_metric, res.best_epoch = ctx.best_epoch, res.best_test_acc = best_test;
    res.micro_batch = ctx.micro_batch, res.accumulate = ctx.accumulate;
    res.loss_scale = f.step_.loss_scaler().scaling() ? f.step_.loss_scaler().current_scale() : NAN;
    each([&](Callback& c) { c.on_train_end(ctx, res); });
    return std::move(res);
  }
};

Fitter::Fitter(nn::Module& model, optim::Optimizer& opt, optim::LRScheduler* sched, bool sched_per_step,
               const data::Dataset& train, const data::Dataset& test, FitOptions o)
    : model_(model), opt_(opt), sched_(sched), sched_per_step_(sched_per_step), train_(train), test_(test),
      o_(std::move(o)), step_(model, opt, LossFunction{o_.label_smoothing}) {
  EMBER_CHECK(o_.batch_size >= 1 && o_.accumulate >= 1, ValueError, "fit: batch size ", o_.batch_size,
              " and accumulate ", o_.accumulate, " must be at least 1");
  if (o_.val) {
    val_ = o_.val;
  } else if (o_.val_split > 0) {
    TrainValSplit s = split_validation(train, o_.val_split, o_.seed);
    train_ = std::move(s.train);
    split_val_ = std::move(s.val);
    val_ = &*split_val_;
  }
}
Fitter::~Fitter() = default;

void Fitter::resume_from(const Checkpoint& ck) {
  restore_training_state(ck, model_, opt_, sched_);
  resume_ = &ck;
}

// The loop, stage by stage: each optimizer step (batch, micro-batches of forward, loss and backward,
// gradient hooks, unscale and check, update) is TrainStep::run; then the scheduler, then callbacks.
FitResult Fitter::run(const Checkpoint* resume_arg) {
  if (resume_arg && resume_arg != resume_) resume_from(*resume_arg);
  Run r(*this);
  r.start(resume_);
  while (r.ctx.epoch < o_.epochs && !r.ctx.stopping()) {
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
