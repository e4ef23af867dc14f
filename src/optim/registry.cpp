// The optimizer and schedule registries (include/ember/optim/registry.h): the built-in entries
// with the recipes `ember train` has always used (SGD with Nesterov momentum, 0.9 unless --momentum
// says otherwise; step decay by 0.1 every third of the run), lookups with the choices in the
// message, and registration.
#include "ember/optim/registry.h"

#include <algorithm>

#include "ember/core/error.h"

namespace ember::optim {
namespace {

std::vector<OptimizerEntry>& optimizer_list() {
  static std::vector<OptimizerEntry> list = {
      // Nesterov needs momentum > 0: momentum 0 is plain SGD.
      {"sgd", "SGD with Nesterov momentum (--momentum, 0.9 by default)",
       [](std::vector<ParamGroupSpec> params, const OptimizerSettings& s) -> std::unique_ptr<Optimizer> {
         return std::make_unique<SGD>(std::move(params), SGDOptions{.lr = s.lr, .momentum = s.momentum,
                                                                    .weight_decay = s.weight_decay,
                                                                    .nesterov = s.momentum > 0});
       },
       true},
      {"adam", "Adam, weight decay added to the gradient",
       [](std::vector<ParamGroupSpec> params, const OptimizerSettings& s) -> std::unique_ptr<Optimizer> {
         return std::make_unique<Adam>(std::move(params), AdamOptions{.lr = s.lr, .weight_decay = s.weight_decay});
       }},
      {"adamw", "Adam with decoupled weight decay",
       [](std::vector<ParamGroupSpec> params, const OptimizerSettings& s) -> std::unique_ptr<Optimizer> {
         return std::make_unique<AdamW>(std::move(params), AdamOptions{.lr = s.lr, .weight_decay = s.weight_decay});
       }},
      // PyTorch's defaults besides lr and weight decay (pytorch/examples' MNIST trains with Adadelta at lr 1).
      {"adadelta", "Adadelta (rho 0.9, eps 1e-6; PyTorch's lr is 1.0)",
       [](std::vector<ParamGroupSpec> params, const OptimizerSettings& s) -> std::unique_ptr<Optimizer> {
         return std::make_unique<Adadelta>(std::move(params),
                                           AdadeltaOptions{.lr = s.lr, .weight_decay = s.weight_decay});
       }},
      {"adagrad", "Adagrad (eps 1e-10, no lr decay)",
       [](std::vector<ParamGroupSpec> params, const OptimizerSettings& s) -> std::unique_ptr<Optimizer> {
         return std::make_unique<Adagrad>(std::move(params), AdagradOptions{.lr = s.lr, .weight_decay = s.weight_decay});
       }},
      {"rmsprop", "RMSprop (alpha 0.99, eps 1e-8, no momentum)",
       [](std::vector<ParamGroupSpec> params, const OptimizerSettings& s) -> std::unique_ptr<Optimizer> {
         return std::make_unique<RMSprop>(std::move(params), RMSpropOptions{.lr = s.lr, .weight_decay = s.weight_decay});
       }},
  };
  return list;
}

std::vector<ScheduleEntry>& schedule_list() {
  static std::vector<ScheduleEntry> list = {
      {"none", "constant learning rate", false,
       [](Optimizer&, const ScheduleSettings&) -> std::unique_ptr<LRScheduler> { return nullptr; }},
      {"step", "x0.1 after each third of the epochs", false,
       [](Optimizer& opt, const ScheduleSettings& s) -> std::unique_ptr<LRScheduler> {
         return std::make_unique<StepLR>(opt, std::max<int64_t>(1, s.epochs / 3), 0.1);
       }},
      {"cosine", "cosine decay to 0 over the epochs", false,
       [](Optimizer& opt, const ScheduleSettings& s) -> std::unique_ptr<LRScheduler> {
         return std::make_unique<CosineAnnealingLR>(opt, s.epochs);
       }},
      {"onecycle", "warm up to --lr over 30% of the steps, then anneal (per step)", true,
       [](Optimizer& opt, const ScheduleSettings& s) -> std::unique_ptr<LRScheduler> {
         const int64_t steps = std::max<int64_t>(1, s.steps_per_epoch * s.epochs);
         if (opt.param_groups().size() == 1) return std::make_unique<OneCycleLR>(opt, s.lr, steps);
         // Groups built with their own lr (--lr-backbone) each peak at it.
         std::vector<double> peaks;
         for (const auto& g : opt.param_groups()) peaks.push_back(g.lr);
         return std::make_unique<OneCycleLR>(opt, peaks, steps);
       }},
  };
  return list;
}

template <class Entry>
std::vector<std::string> names_of(const std::vector<Entry>& list) {
  std::vector<std::string> out;
  for (const auto& e : list) out.push_back(e.name);
  return out;
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s;
}

template <class Entry>
const Entry& find_in(const std::vector<Entry>& list, const std::string& name, const char* what) {
  for (const auto& e : list)
    if (e.name == name) return e;
  throw ValueError(std::string("unknown ") + what + " '" + name + "'", "choose " + joined(names_of(list)));
}

template <class Entry>
void add_to(std::vector<Entry>& list, Entry entry, const char* what) {
  if (entry.name.empty()) throw ValueError(std::string("register_") + what + ": the name is empty");
  if (!entry.make) throw ValueError(std::string("register_") + what + " '" + entry.name + "': no factory (make)");
  if (std::any_of(list.begin(), list.end(), [&](const Entry& e) { return e.name == entry.name; }))
    throw ValueError(std::string("register_") + what + ": '" + entry.name + "' is already registered");
  list.push_back(std::move(entry));
}

}  // namespace

std::unique_ptr<LRScheduler> make_schedule(const ScheduleEntry& entry, Optimizer& opt, const ScheduleSettings& s) {
  ScheduleSettings plan = s;
  if (s.planned_epochs > 0) plan.epochs = s.planned_epochs;
  std::unique_ptr<LRScheduler> sched = entry.make(opt, plan);
  if (!sched || s.epochs <= plan.epochs) return sched;
  const int64_t planned_steps = entry.per_step ? std::max<int64_t>(1, plan.epochs * s.steps_per_epoch) : plan.epochs;
  return std::make_unique<HoldAfterPlan>(opt, std::move(sched), planned_steps);
}

const std::vector<OptimizerEntry>& optimizers() { return optimizer_list(); }
const std::vector<ScheduleEntry>& schedules() { return schedule_list(); }
std::vector<std::string> optimizer_names() { return names_of(optimizer_list()); }
std::vector<std::string> schedule_names() { return names_of(schedule_list()); }
const OptimizerEntry& find_optimizer(const std::string& name) { return find_in(optimizer_list(), name, "optimizer"); }
const ScheduleEntry& find_schedule(const std::string& name) { return find_in(schedule_list(), name, "schedule"); }
void register_optimizer(OptimizerEntry entry) { add_to(optimizer_list(), std::move(entry), "optimizer"); }
void register_schedule(ScheduleEntry entry) { add_to(schedule_list(), std::move(entry), "schedule"); }

}  // namespace ember::optim
