// `ember train --resume RUN --epochs N` and the learning-rate schedule: a resumed run keeps the
// schedule it was planned with (optim::make_schedule, HoldAfterPlan), and the banner says what
// that means for the epochs added or dropped.
#pragma once

#include <cstdint>
#include <string>

#include "ember/optim/lr_scheduler.h"

namespace ember::train {

// The epochs a run's schedule was planned over: a new run's --epochs; a resumed run's
// "schedule_epochs" in its checkpoint's config (runs from before it was recorded: that config's
// "epochs").
int64_t planned_schedule_epochs(const std::string* checkpoint_config_json, int64_t epochs);

// Banner lines (each under 80 columns, indented under "schedule") when `epochs` differs from the
// plan; empty otherwise or without a schedule. `run_dir` names the run in the hint.
std::string schedule_extension_lines(const std::string& schedule, const optim::LRScheduler* sched, bool per_step,
                                     int64_t planned_epochs, int64_t epochs, int64_t steps_per_epoch,
                                     const std::string& run_dir);

}  // namespace ember::train
