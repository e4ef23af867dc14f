// The fit loop (see fit.h): batches from the DataLoader, cross-entropy, optimizer
// step, per-epoch evaluation, metrics.jsonl, latest/best checkpoints, stop on request or NaN.
#include "ember/train/fit.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "ember/train/metrics.h"
#include "ember/train/weights_info.h"

namespace ember::train {
namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

StateDict sub_dict(const Checkpoint& ck, const std::string& prefix) {
  StateDict d;
  for (const auto& [name, t] : ck.tensors)
    if (name.starts_with(prefix)) d.insert(name.substr(prefix.size()), t);
  return d;
}
int64_t count_correct(const Tensor& logits, const Tensor& y) {
  auto pred = argmax(logits.detach(), 1).to_vector<int64_t>();
  auto truth = y.to_vector<int64_t>();
  int64_t c = 0;
  for (size_t i = 0; i < pred.size(); ++i) c += pred[i] == truth[i];
  return c;
}
}  // namespace

NamedTensors training_state(nn::Module& model, optim::Optimizer& opt, optim::LRScheduler* sched) {
  NamedTensors out;
  for (const auto& [k, t] : model.state_dict()) out.emplace_back("model/" + k, t);
  for (const auto& [k, t] : opt.state_dict()) out.emplace_back("optim/" + k, t);
  if (sched)
    for (const auto& [k, t] : sched->state_dict()) out.emplace_back("sched/" + k, t);
  return out;
}

void restore_training_state(const Checkpoint& ck, nn::Module& model, optim::Optimizer& opt, optim::LRScheduler* sched) {
  const char* hint = "resume with the --model, --optimizer and --schedule the run was started with";
  const std::string file = ck.weights_path.string();
  try {
    model.load_state_dict(sub_dict(ck, "model/"));
  } catch (const Error& e) {
    throw FormatError(fmt::format("checkpoint '{}' does not fit model '{}': {}", file, ck.manifest.model, e.what()), hint);
  }
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

EvalResult evaluate(nn::Module& model, const data::Dataset& test, int64_t batch_size, Device device, int workers) {
  const bool was_training = model.is_training();
  model.eval();
  autograd::NoGradGuard no_grad;
  EvalResult r;
  r.confusion.assign(size_t(test.num_classes()), std::vector<int64_t>(size_t(test.num_classes()), 0));
  data::LoaderOptions lo;
  lo.batch_size = batch_size;
  lo.shuffle = false;
  lo.workers = workers;
  lo.device = device;
  data::DataLoader loader(test, lo);
  loader.begin_epoch(0);
  double loss_sum = 0;
  int64_t correct = 0;
  while (auto batch = loader.next()) {
    Tensor logits = model(batch->x);
    Tensor loss = nn::functional::cross_entropy(logits, batch->y, {.reduction = nn::functional::Reduction::Sum});
    loss_sum += loss.item<double>();
    auto pred = argmax(logits, 1).to_vector<int64_t>();
    auto truth = batch->y.to_vector<int64_t>();
    for (size_t i = 0; i < pred.size(); ++i) {
      r.confusion[size_t(truth[i])][size_t(pred[i])]++;
      correct += pred[i] == truth[i];
    }
  }
  r.samples = test.size();
  r.loss = r.samples ? loss_sum / double(r.samples) : NAN;
  r.accuracy = r.samples ? double(correct) / double(r.samples) : NAN;
  for (const auto& row : r.confusion) {
    int64_t total = 0;
    for (int64_t v : row) total += v;
    r.per_class_accuracy.push_back(total ? double(row[r.per_class_accuracy.size()]) / double(total) : NAN);
  }
  model.train(was_training);
  return r;
}

Fitter::Fitter(nn::Module& model, optim::Optimizer& opt, optim::LRScheduler* sched, bool sched_per_step,
               const data::Dataset& train, const data::Dataset& test, FitOptions o)
    : model_(model), opt_(opt), sched_(sched), sched_per_step_(sched_per_step), train_(train), test_(test), o_(std::move(o)) {}

void Fitter::save(const std::string& tag, int64_t epoch, int64_t step, int64_t batch_in_epoch, double best, double last,
                  const NamedValues& partial) {
  CheckpointManifest m;
  m.ember_version = version();
  m.device = o_.device.str();
  m.model = o_.model_name;
  m.dataset = o_.dataset_name;
  m.epoch = epoch;
  m.step = step;
  m.batch_in_epoch = batch_in_epoch;
  m.seed = o_.seed;
  m.rng_seed = default_generator().seed();
  m.rng_offset = default_generator().offset();
  m.threads = o_.threads;
  m.best_metric = best;
  m.last_metric = last;
  m.optimizer_scalars["lr"] = opt_.lr();
  for (const auto& [k, v] : partial) m.optimizer_scalars["fit." + k] = v;
  m.config_json = o_.config_json;
  m.weights_metadata = to_metadata(describe_run_weights(o_.model_name, o_.dataset_name, train_, o_.run_dir, o_.config_json));
  save_checkpoint(o_.run_dir / "checkpoints", tag, m, training_state(model_, opt_, sched_));
}

void Fitter::resume_from(const Checkpoint& ck) {
  restore_training_state(ck, model_, opt_, sched_);
  resume_ = &ck;
}

FitResult Fitter::run(const Checkpoint* resume_arg) {
  if (resume_arg && resume_arg != resume_) resume_from(*resume_arg);
  const Checkpoint* resume = resume_;
  FitResult res;
  const int64_t bs = o_.batch_size;
  data::LoaderOptions lo;
  lo.batch_size = bs;
  lo.shuffle = true;
  lo.workers = o_.workers;
  lo.seed = o_.seed;
  lo.transforms = o_.transforms;
  lo.device = o_.device;
  data::DataLoader loader(train_, lo);
  const int64_t nb = loader.steps_per_epoch();
  int64_t start_epoch = 0, start_batch = 0, step = 0;
  double best = 0, last = 0;
  // Running sums of the current epoch (restored from a mid-epoch checkpoint).
  double loss_sum = 0, seen = 0, correct = 0, data_time = 0, train_time = 0;
  if (resume) {
    const auto& m = resume->manifest;
    start_epoch = m.epoch, start_batch = m.batch_in_epoch, step = m.step;
    best = m.best_metric, last = m.last_metric;
    default_generator().set_state(m.rng_seed, m.rng_offset);
    auto get = [&](const char* k) {
      auto it = m.optimizer_scalars.find(std::string("fit.") + k);
      return it == m.optimizer_scalars.end() ? 0.0 : it->second;
    };
    loss_sum = get("loss_sum"), seen = get("seen"), correct = get("correct");
    data_time = get("data_time"), train_time = get("train_time");
  } else {
    manual_seed(o_.seed + 1);  // dropout masks; model init used its own Generator(seed)
  }
  MetricsWriter metrics(o_.run_dir / "metrics.jsonl", /*tensorboard=*/true);  // + events.out.tfevents.*
  if (resume) metrics.write({"resume", start_epoch + 1, step, {{"batch_in_epoch", double(start_batch)}}});  // the report marks it
  res.best_test_acc = best;
  // Wall time of whole epochs (training and evaluation) in this invocation: the run's ETA.
  double whole_epoch_seconds = 0;
  int64_t whole_epochs = 0;

  for (int64_t e = start_epoch; e < o_.epochs; ++e) {
    const int64_t first = e == start_epoch ? start_batch : 0;
    const auto wall_start = Clock::now();
    loader.begin_epoch(e, first);
    model_.train();
    ProgressBar bar(nb, o_.interactive);
    bar.set_position({e + 1, o_.epochs, whole_epochs ? whole_epoch_seconds / double(whole_epochs) : 0.0});
    const auto epoch_start = Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(train_time));
    double iv_loss = 0, iv_correct = 0, iv_seen = 0;
    auto iv_start = Clock::now();
    for (int64_t b = first; b < nb; ++b) {
      auto t0 = Clock::now();
      std::optional<data::Batch> batch = loader.next();
      EMBER_ASSERT(batch.has_value(), "the loader ended before step ", b, " of ", nb);
      const Tensor& x = batch->x;
      const Tensor& y = batch->y;
      data_time += since(t0);
      Tensor logits = model_(x);
      Tensor loss = nn::functional::cross_entropy(logits, y, {.label_smoothing = o_.label_smoothing});
      const double lv = loss.item<double>();
      if (!std::isfinite(lv)) {
        bar.finish();
        res.status = FitStatus::NonFiniteLoss;
        res.step = step, res.epoch = e;
        res.message = fmt::format(
            "the loss became {} at epoch {}, step {} of {} (global step {}); training stopped and the last good "
            "checkpoint was kept.\n  likely causes: a learning rate too high for this model/optimizer (lr = {:g}; try "
            "a tenth of it), no warm-up with a large batch, or corrupt input data",
            lv, e + 1, b + 1, nb, step + 1, opt_.lr());
        return res;
      }
      opt_.zero_grad();
      loss.backward();
      opt_.step();
      if (sched_ && sched_per_step_) sched_->step();
      ++step;
      const double bsz = double(y.numel());
      const double c = double(count_correct(logits, y));
      loss_sum += lv * bsz, seen += bsz, correct += c;
      iv_loss += lv * bsz, iv_seen += bsz, iv_correct += c;
      train_time = since(epoch_start);
      bar.update(b + 1, {{"loss", loss_sum / seen}, {"acc", correct / seen}}, seen / std::max(train_time, 1e-9),
                 train_time);
      if (o_.log_every > 0 && step % o_.log_every == 0) {
        double dt = since(iv_start);
        metrics.write({"step", e + 1, step, {{"loss", iv_loss / iv_seen}, {"acc", iv_correct / iv_seen},
                                             {"lr", opt_.lr()}, {"samples_per_s", iv_seen / std::max(dt, 1e-9)}}});
        iv_loss = iv_correct = iv_seen = 0;
        iv_start = Clock::now();
      }
      const int sig = o_.stop_signal ? o_.stop_signal->load() : 0;
      if (sig != 0 || (o_.stop_after_steps > 0 && step >= o_.stop_after_steps)) {
        bar.finish();
        save("latest", e, step, b + 1, best, last,
             {{"loss_sum", loss_sum}, {"seen", seen}, {"correct", correct}, {"data_time", data_time}, {"train_time", train_time}});
        res.status = FitStatus::Interrupted;
        res.signal = sig;
        res.step = step, res.epoch = e;
        return res;
      }
    }
    bar.finish();
    if (o_.log_every > 0 && iv_seen > 0)  // the epoch's last, shorter interval: curves reach the epoch's end
      metrics.write({"step", e + 1, step, {{"loss", iv_loss / iv_seen}, {"acc", iv_correct / iv_seen},
                                           {"lr", opt_.lr()}, {"samples_per_s", iv_seen / std::max(since(iv_start), 1e-9)}}});
    if (sched_ && !sched_per_step_) sched_->step();
    EvalResult ev = evaluate(model_, test_, std::max<int64_t>(bs, 256), o_.device, o_.workers);
    if (first == 0) whole_epoch_seconds += since(wall_start), ++whole_epochs;
    EpochStats st;
    st.epoch = e + 1;
    st.train_loss = seen ? loss_sum / seen : NAN;
    st.train_acc = seen ? correct / seen : NAN;
    st.test_loss = ev.loss, st.test_acc = ev.accuracy;
    st.seconds = train_time;
    st.samples_per_s = seen / std::max(train_time, 1e-9);
    st.data_wait = train_time > 0 ? data_time / train_time : 0;
    st.lr = opt_.lr();
    metrics.write({"epoch", e + 1, step, {{"train_loss", st.train_loss}, {"train_acc", st.train_acc},
                                          {"test_loss", st.test_loss}, {"test_acc", st.test_acc},
                                          {"samples_per_s", st.samples_per_s}, {"data_wait", st.data_wait},
                                          {"seconds", st.seconds}, {"lr", st.lr}}});
    res.epochs.push_back(st);
    if (on_epoch) on_epoch(st);
    last = ev.accuracy;
    const bool improved = ev.accuracy > best || e == 0;
    if (improved) best = ev.accuracy;
    save("latest", e + 1, step, 0, best, last, {});
    if (improved) tag_checkpoint(o_.run_dir / "checkpoints", "latest", "best");
    loss_sum = seen = correct = data_time = train_time = 0;
    res.best_test_acc = best;
  }
  res.step = step;
  res.epoch = o_.epochs;
  return res;
}

}  // namespace ember::train
