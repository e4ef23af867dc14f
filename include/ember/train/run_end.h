// A planned run (run_plan.h) taken to its end, the same for every caller — `ember train`, ember.fit,
// a C++ program: the Fitter made (a resume whose state does not fit fails before anything is
// written), rank 0's run directory claimed, the training, the data-parallel world finished, the
// final evaluation of the model the user gets (the selected epoch's, as `ember eval` and
// ember.load open it) while the run directory is watched, report.html, and how the run ended with
// the message and hint in the caller's words. The caller prints (the CLI: and exits) or raises
// (Python).
#pragma once

#include <cmath>
#include <filesystem>
#include <optional>
#include <string>

#include "ember/train/evaluate.h"
#include "ember/train/fit_types.h"
#include "ember/train/run_plan.h"

namespace ember::train {

enum class RunEnding {
  Finished,           // trained to its end (or stopped early) and evaluated: RunOutcome::test is set
  Interrupted,        // a signal (or --stop-after-steps, or the caller's model raising: CallerRaised in
                      // fit_types.h, whose message is in RunOutcome::fit) stopped the training; checkpointed at a step
  EvaluationStopped,  // the training is complete; a signal (or the caller's model raising) stopped its final evaluation
  Failed,             // inf/NaN or out of memory: the last good checkpoint (if any) is kept
  RunDirLost,         // the run directory was removed or replaced: nothing more was written there
};

struct RunOutcome {
  RunEnding ending = RunEnding::Finished;
  FitResult fit;
  bool leader = true;  // rank 0: claimed, evaluated and wrote the run directory (the others wrote nothing)
  // The final evaluation of the test set (Finished only) with the weights of `evaluated_epoch`: the
  // selected (best) epoch's, whose checkpoint eval, predict, export and ember.load open, evaluated
  // as `ember eval` runs it (batch norms folded). `last_epoch_test_acc` is the last epoch's test
  // accuracy when that epoch is another one (NAN otherwise), for a second, clearly labelled number.
  std::optional<EvalResult> test;
  int64_t evaluated_epoch = 0;
  double last_epoch_test_acc = NAN;
  std::string selected_on;     // "validation" or "test": what chose the evaluated epoch
  double wall_seconds = 0;     // training and final evaluation, as report.html says
  std::filesystem::path latest;  // run_dir/checkpoints/latest.json (what a resume continues)
  int signal = 0;              // Interrupted / EvaluationStopped: the signal (0: --stop-after-steps, a model that raised)
  // Failed, RunDirLost: what happened and what to do, in the caller's words (run_plan.h: FrontEnd);
  // Interrupted: the call that resumes the run; EvaluationStopped: the call that evaluates it (and,
  // when the caller's model raised there, `message` says what it raised).
  std::string message, hint;
};

// Runs `plan` to its end with the caller's `controls` (see the top of this file). Exceptions from
// planning's last checks (a checkpoint's state that does not fit, a run directory taken meanwhile)
// and from writing are thrown before or instead of an outcome.
RunOutcome run_to_end(const RunPlan& plan, const RunControls& controls);

}  // namespace ember::train
