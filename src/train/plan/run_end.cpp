// A planned run taken to its end (run_end.h): the steps `ember train` and ember.fit both took
// themselves before (and took differently: the report's wall time, the run-directory check during
// the final evaluation), now one call.
#include "ember/train/run_end.h"

#include <fmt/format.h>

#include <chrono>
#include <optional>

#include "ember/io/run_dir.h"
#include "ember/train/caller_model.h"
#include "ember/train/inference.h"
#include "ember/train/predict.h"
#include "ember/train/run_files.h"
#include "ember/train/run_report.h"

namespace ember::train {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The command that evaluates the run, for a stopped final evaluation; a caller's model (run_plan.h:
// PlanInputs::model) is rebuilt by nothing but its class: where its weights are.
std::string eval_call(const fs::path& run_dir, FrontEnd front_end, const std::string& model) {
  if (is_caller_model(model))
    return fmt::format("the training is complete; the selected weights are in the checkpoint {} names, by {}'s "
                       "state_dict() names", best_manifest(run_dir).string(), caller_model_class(model));
  return front_end == FrontEnd::Python ? fmt::format("ember.load(\"{}\")", run_dir.string())
                                       : fmt::format("ember eval {}", run_dir.string());
}

// How the training ended, its message and hint in the caller's words; Finished until evaluated.
void judge_training(const RunPlan& plan, RunOutcome& out) {
  const FitResult& r = out.fit;
  out.signal = r.signal;
  switch (r.status) {
    case FitStatus::Completed:
    case FitStatus::EarlyStopped:
      out.ending = RunEnding::Finished;
      out.message = r.message;  // EarlyStopped: why
      return;
    case FitStatus::Interrupted:
      out.ending = RunEnding::Interrupted;
      out.hint = plan.front_end == FrontEnd::Python || is_caller_model(plan.settings.model)
                     ? resume_call(plan.run_dir.string(), plan.front_end, plan.settings.model)
                     : plan.world->resume_command(plan.run_dir);
      return;
    case FitStatus::RunDirLost:
      out.ending = RunEnding::RunDirLost;
      out.message = r.message;
      out.hint = fmt::format("if the directory was moved rather than deleted, {} continues from its last checkpoint; "
                             "otherwise start the run again",
                             resume_call("NEW_PATH", plan.front_end, plan.settings.model));
      return;
    case FitStatus::NonFiniteLoss:
    case FitStatus::OutOfMemory:
      out.ending = RunEnding::Failed;
      out.message = r.message;
      out.hint = fs::exists(out.latest) ? fmt::format("the last finite checkpoint was kept: {}", out.latest.string())
                                        : "no checkpoint was written: the run stopped before the end of its first "
                                          "epoch (checkpoints are written at each epoch's end)";
      return;
  }
}

// The model the user gets from eval, predict, export and ember.load: the selected epoch's weights
// (checkpoints/best.json), put into the plan's model. Returns that epoch.
int64_t load_selected_model(const RunPlan& plan, const FitResult& r) {
  const fs::path best = best_manifest(plan.run_dir);
  if (!fs::exists(best)) return r.epoch;  // no epoch ended with a checkpoint: the model as it is
  const Checkpoint ck = load_checkpoint(best);
  restore_model_state(ck, *plan.model);
  return ck.manifest.fit.best_epoch.value_or(ck.manifest.epoch);
}

}  // namespace

RunOutcome run_to_end(const RunPlan& plan, const RunControls& controls) {
  RunOutcome out;
  out.leader = plan.world->leader();
  out.latest = latest_manifest(plan.run_dir);
  const std::unique_ptr<Fitter> fitter = plan.make_fitter(controls);  // a state that does not fit fails here
  // ---- the run directory: created and owned only now that the start is known to work (rank 0) ----
  std::optional<io::DirWatch> watch;
  if (out.leader) {
    plan.claim_run_dir();
    watch.emplace(plan.run_dir);  // the engine watches it too, while it trains
  }
  const auto t0 = Clock::now();
  out.fit = fitter->run();
  plan.world->finish();
  judge_training(plan, out);
  out.wall_seconds = since(t0);
  if (!out.leader) return out;  // rank 0 alone evaluates and writes
  auto report = [&](const EvalResult* ev) {
    RunReportInput in = plan.report_input(out.fit, out.wall_seconds);
    in.final_eval_epoch = out.evaluated_epoch;
    write_run_report(in, ev, plan.train.classes);
  };
  if (out.ending == RunEnding::RunDirLost) return out;  // nothing can be written there any more: no report
  if (out.ending != RunEnding::Finished) {
    report(nullptr);
    return out;
  }
  // ---- the final evaluation: the selected model, as `ember eval` runs it ----
  out.evaluated_epoch = load_selected_model(plan, out.fit);
  out.selected_on = out.fit.selected_on == "val" ? "validation" : "test";
  if (!out.fit.epochs.empty() && out.fit.epochs.back().epoch == out.fit.epoch && out.evaluated_epoch != out.fit.epoch)
    out.last_epoch_test_acc = out.fit.epochs.back().test_acc;
  EvalResult ev;
  try {
    ev = evaluate_inference(*plan.model, InferenceOptions{}.precision, plan.test,
                            plan.final_eval_options(out.fit, controls.stop_signal));
  } catch (const CallerRaised& e) {  // the caller's model raised (fit_types.h): the training stays complete
    out.ending = RunEnding::EvaluationStopped;
    out.message = fmt::format("the model raised {} in the final evaluation: {}", e.error_type(), e.what());
    out.hint = eval_call(plan.run_dir, plan.front_end, plan.settings.model);
    report(nullptr);
    return out;
  }
  out.wall_seconds = since(t0);
  if (const std::string what = watch->change(); !what.empty()) {
    out.ending = RunEnding::RunDirLost;
    out.message = fmt::format("the run directory {} {} during the final evaluation: the run's files went with it",
                              plan.run_dir.string(), what);
    out.hint = fmt::format("if the directory was moved rather than deleted, {} evaluates the run",
                           eval_call("NEW_PATH", plan.front_end, plan.settings.model));
    return out;
  }
  if (ev.interrupted) {
    out.ending = RunEnding::EvaluationStopped;
    out.signal = ev.interrupted;
    out.hint = eval_call(plan.run_dir, plan.front_end, plan.settings.model);
    report(nullptr);
    return out;
  }
  out.test = ev;
  report(&ev);
  return out;
}

}  // namespace ember::train
