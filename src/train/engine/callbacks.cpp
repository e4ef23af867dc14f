// The built-in callbacks of the training engine (callbacks.h): NaN guard, checkpoints, early
// stopping, metric records and their sinks, the progress bar.
#include "ember/train/callbacks.h"

#include <fmt/format.h>

#include <algorithm>

#include "ember/train/checkpoint.h"
#include "ember/train/run_files.h"

namespace ember::train {

void NanGuard::on_sync(FitContext& ctx, const IntervalStats& s) {
  if (s.loss_finite && s.weights_finite) return;
  const int64_t first = std::max(s.first_step, s.finite_through) + 1;  // the first step that may have broken it
  const std::string steps = first >= s.last_step ? fmt::format("at step {}", s.last_step)
                                                 : fmt::format("between steps {} and {}", first, s.last_step);
  const std::string where = fmt::format("epoch {}, step {} of {}", ctx.epoch + 1, ctx.step_in_epoch, ctx.steps_per_epoch);
  // The weights alone: the interval's losses were computed before the update that broke them.
  const std::string what = !s.loss_finite ? fmt::format("the loss became inf/NaN {} ({}: mean loss {})", steps, where, s.loss)
                                          : fmt::format("the weights became inf/NaN {} ({}), in the optimizer's update: "
                                                        "the loss before it was still finite ({:.4g})", steps, where, s.loss);
  ctx.stop(FitStatus::NonFiniteLoss,
           fmt::format("{}; training stopped there, and nothing non-finite was checkpointed.\n  likely causes: a "
                       "learning rate too high for this model/optimizer (lr = {:g}; try a tenth of it), no warm-up "
                       "with a large batch, or corrupt input data",
                       what, s.lr));
}

void CheckpointCallback::on_epoch_end(FitContext& ctx, const EpochStats& s) {
  if (ctx.status == FitStatus::NonFiniteLoss || ctx.status == FitStatus::RunDirLost || !ctx.save_checkpoint) return;
  ctx.save_checkpoint(kLatestTag);
  if (s.improved) tag_checkpoint(dir_, kLatestTag, kBestTag);
}

void CheckpointCallback::on_train_end(FitContext& ctx, const FitResult& r) {
  if (r.status == FitStatus::Interrupted && ctx.save_checkpoint) ctx.save_checkpoint(kLatestTag);
}

void EarlyStopping::on_epoch_end(FitContext& ctx, const EpochStats& s) {
  const int64_t since_best = s.epoch - ctx.best_epoch;
  if (s.improved || since_best < patience_ || s.epoch >= ctx.options.epochs) return;
  ctx.stop(FitStatus::EarlyStopped,
           fmt::format("early stop after epoch {}: no {} accuracy improvement for {} (best {:.2f}% at epoch {})",
                       s.epoch, ctx.selects_on_val ? "validation" : "test", since_best == 1 ? "1 epoch"
                       : fmt::format("{} epochs", since_best), 100 * ctx.best_metric, ctx.best_epoch));
}

void ScalarSink::write(const MetricRecord& r) {
  for (const auto& [name, v] : r.values) fn_(r.kind + "/" + name, r.step, v, r.time);
}

void MetricsLogger::write(MetricRecord r) {
  if (r.time <= 0) r.time = unix_time();
  for (auto& s : sinks_) s->write(r);
}

void MetricsLogger::on_train_begin(FitContext& ctx) {
  if (ctx.resumed_at_batch >= 0)  // the report marks it
    write({"resume", ctx.epoch + 1, ctx.step, {{"batch_in_epoch", double(ctx.resumed_at_batch)}}});
}

void MetricsLogger::on_sync(FitContext& ctx, const IntervalStats& s) {
  if (ctx.options.log_every <= 0 || s.samples == 0 || !s.logged) return;
  NamedValues v{{"loss", s.loss}, {"acc", s.acc}, {"lr", s.lr}, {"samples_per_s", s.samples_per_s}};
  // Data-parallel: this rank's (rank 0's) wait on the gradient all-reduce, per step, in ms.
  if (ctx.options.process_group && s.last_step > s.first_step)
    v.push_back({"comm_ms_per_step", 1000 * s.comm_seconds / double(s.last_step - s.first_step)});
  if (!std::isnan(s.loss_scale))  // fp16: the dynamic loss scale and the steps it skipped
    v.insert(v.end(), {{"skipped_steps", double(s.skipped_steps)}, {"loss_scale", s.loss_scale}});
  write({"step", ctx.epoch + 1, s.last_step, v});
}

void MetricsLogger::on_oom(FitContext& ctx, const OomEvent& e) {
  write({"oom", e.epoch, e.step,
         {{"micro_batch", double(e.new_micro_batch)}, {"accumulate", double(e.new_accumulate)},
          {"previous_micro_batch", double(e.micro_batch)}, {"previous_accumulate", double(e.accumulate)}}});
  (void)ctx;
}

void MetricsLogger::on_epoch_end(FitContext& ctx, const EpochStats& s) {
  NamedValues v{{"train_loss", s.train_loss}, {"train_acc", s.train_acc}};
  if (ctx.selects_on_val) v.insert(v.end(), {{"val_loss", s.val_loss}, {"val_acc", s.val_acc}});
  v.insert(v.end(), {{"test_loss", s.test_loss}, {"test_acc", s.test_acc}, {"samples_per_s", s.samples_per_s},
                     {"data_wait", s.data_wait}, {"seconds", s.seconds}, {"lr", s.lr}});
  if (ctx.options.process_group) v.push_back({"comm_wait", s.comm_wait});
  if (!std::isnan(s.loss_scale))
    v.insert(v.end(), {{"skipped_steps", double(s.skipped_steps)}, {"loss_scale", s.loss_scale}});
  write({"epoch", s.epoch, ctx.step, v});
}

void ProgressCallback::on_epoch_begin(FitContext& ctx) {
  bar_ = std::make_unique<ProgressBar>(std::max<int64_t>(1, ctx.steps_per_epoch), rule_.redraw, stdout, 0.05, 30, 0,
                                       rule_.plain_every);
  if (out_) bar_->set_writer(out_);
  bar_->set_position({ctx.epoch + 1, ctx.options.epochs, ctx.seconds_per_epoch});
  bar_->set_status(status_);
  values_.clear();
}

void ProgressCallback::set_status(std::string status) {
  status_ = std::move(status);
  if (bar_) bar_->set_status(status_);
}

void ProgressCallback::on_step_end(FitContext& ctx) {
  if (bar_)
    bar_->update(ctx.step_in_epoch, values_, double(ctx.epoch_samples) / std::max(ctx.epoch_seconds, 1e-9),
                 ctx.epoch_seconds);
}

void ProgressCallback::on_sync(FitContext& ctx, const IntervalStats& s) {
  if (s.samples > 0) values_ = {{"loss", s.epoch_loss}, {"acc", s.epoch_acc}};
  if (s.epoch_end) on_step_end(ctx);  // the epoch's final line with its final values
}

void ProgressCallback::finish() {
  if (bar_) bar_->finish();
  bar_.reset();
}

}  // namespace ember::train
