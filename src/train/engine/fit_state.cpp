// What a checkpoint holds of a run (fit.h): the model, optimizer and schedule state as named
// tensors, and restoring them with messages that say which part does not fit.
#include <fmt/format.h>

#include "ember/train/fit.h"

namespace ember::train {
namespace {
StateDict sub_dict(const Checkpoint& ck, const std::string& prefix) {
  StateDict d;
  for (const auto& [name, t] : ck.tensors)
    if (name.starts_with(prefix)) d.insert(name.substr(prefix.size()), t);
  return d;
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

}  // namespace ember::train
