// The optimizers and learning-rate schedules a training run can name, each registered once with
// its factory and help: `ember train --optimizer/--schedule`, their allowed values and --help text,
// config files and resumed manifests all read these lists, so adding one is one entry here.
//
// The built-in entries are listed in src/optim/registry.cpp; register_optimizer/register_schedule
// add more (call them at start-up, before any lookup: the registries are not locked).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizer.h"

namespace ember::optim {

// What a run's recipe says about the optimizer; each entry picks the rest (betas, eps).
struct OptimizerSettings {
  double lr = 1e-3;
  double weight_decay = 0.0;
  double momentum = 0.9;  // read by entries with uses_momentum (SGD: Nesterov momentum; 0 = plain SGD)
};

struct OptimizerEntry {
  std::string name;  // "adamw"
  std::string help;  // one phrase: "Adam with decoupled weight decay"
  // Groups without their own lr / weight decay take the settings' (one group of every parameter
  // for a plain run; the backbone and the head for --lr-backbone).
  std::function<std::unique_ptr<Optimizer>(std::vector<ParamGroupSpec> groups, const OptimizerSettings&)> make;
  bool uses_momentum = false;  // make() reads OptimizerSettings::momentum
};

// The length of a run, for schedules that need it. steps_per_epoch counts optimizer steps.
struct ScheduleSettings {
  double lr = 1e-3;  // the peak lr (onecycle)
  int64_t epochs = 1;
  int64_t steps_per_epoch = 1;
  // The epochs the schedule was planned over when the run started (0: `epochs`). A resumed run
  // keeps its plan: make_schedule() builds it over these and holds its last lr past them.
  int64_t planned_epochs = 0;
};

struct ScheduleEntry {
  std::string name;       // "onecycle"
  std::string help;       // one phrase: "cosine decay to 0 over the run"
  bool per_step = false;  // stepped after every optimizer step (else after every epoch)
  // nullptr for "none" (the lr stays as given).
  std::function<std::unique_ptr<LRScheduler>(Optimizer&, const ScheduleSettings&)> make;
};

// `entry`'s schedule planned over s.planned_epochs (or s.epochs), as it was when the run started;
// when the run is longer (s.epochs > planned_epochs: --resume with more --epochs), wrapped in
// HoldAfterPlan so the extra epochs keep the plan's last lr. nullptr for "none".
std::unique_ptr<LRScheduler> make_schedule(const ScheduleEntry& entry, Optimizer& opt, const ScheduleSettings& s);

// In registration order (built-ins first).
const std::vector<OptimizerEntry>& optimizers();
const std::vector<ScheduleEntry>& schedules();
std::vector<std::string> optimizer_names();
std::vector<std::string> schedule_names();

// The entry called `name`; ValueError naming the choices otherwise.
const OptimizerEntry& find_optimizer(const std::string& name);
const ScheduleEntry& find_schedule(const std::string& name);

// Adds an entry; ValueError when the name is taken or empty, or `make` is empty (a schedule's
// `make` may return nullptr, as "none" does).
void register_optimizer(OptimizerEntry entry);
void register_schedule(ScheduleEntry entry);

}  // namespace ember::optim
