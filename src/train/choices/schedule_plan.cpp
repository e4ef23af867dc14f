// What a resumed run's schedule does when --epochs changes (ember/train/schedule_plan.h). The decision, as
// in Keras (a decay schedule is a function of the step and holds its final value past its end)
// and unlike rebuilding a PyTorch scheduler over the new length (which jumps): the schedule keeps
// the plan the run started with; epochs beyond it keep its last learning rate.
#include "ember/train/schedule_plan.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace ember::train {

int64_t planned_schedule_epochs(const std::string* checkpoint_config_json, int64_t epochs) {
  if (!checkpoint_config_json) return epochs;
  const nlohmann::json j = nlohmann::json::parse(*checkpoint_config_json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return epochs;
  for (const char* key : {"schedule_epochs", "epochs"})
    if (j.contains(key) && j[key].is_number_integer() && j[key].get<int64_t>() >= 1) return j[key].get<int64_t>();
  return epochs;
}

std::string schedule_extension_lines(const std::string& schedule, const optim::LRScheduler* sched, bool per_step,
                                     int64_t planned_epochs, int64_t epochs, int64_t steps_per_epoch,
                                     const std::string& run_dir) {
  if (!sched || epochs == planned_epochs || sched->base_lrs().empty()) return "";
  const int64_t planned_steps = per_step ? planned_epochs * steps_per_epoch : planned_epochs;
  const double last_lr = sched->lr_at(planned_steps - 1, sched->base_lrs()[0]);
  const std::string plan = fmt::format("{} was planned for {} epoch{}", schedule, planned_epochs,
                                       planned_epochs == 1 ? "" : "s");
  if (epochs < planned_epochs)
    return fmt::format("           {}: this run ends after {}, before\n"
                       "           the schedule does (it is not shortened)\n",
                       plan, epochs);
  const std::string added = epochs == planned_epochs + 1 ? fmt::format("epoch {} keeps", epochs)
                                                         : fmt::format("epochs {}-{} keep", planned_epochs + 1, epochs);
  return fmt::format("           {}: {} its last\n"
                     "           learning rate, {:.3g} (a schedule is not stretched or restarted\n"
                     "           on --resume; for a new one, train a new run from these weights:\n"
                     "           ember train --init-from {} ...)\n",
                     plan, added, last_lr, run_dir);
}

}  // namespace ember::train
