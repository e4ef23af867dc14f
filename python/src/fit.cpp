// ember.fit: `ember train`'s run from Python. The settings are the CLI's (the same table, checks and
// sentences: ember/train/settings.h), the run is the library's plan taken to its end by the
// library (ember/train/run_plan.h, run_end.h), so a seed gives the CLI's weights bit for bit. The GIL is released while the plan loads data and the
// engine trains; it is taken back only for the callbacks. Ctrl-C (SIGINT) stops at the next step
// boundary with a checkpoint, as in the CLI, then raises KeyboardInterrupt; an exception raised by
// a callback stops the run the same way and is raised again once the checkpoint is written, as is
// one raised by the forward of a module defined in Python (model=net, py_module.h). What it
// prints (verbose=, as Keras's fit) is the library's rule (ember/train/progress.h: progress_rule),
// written through Python's sys.stdout so notebooks and redirected streams see it.
#include <fmt/format.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <optional>
#include <string>

#include "bindings.h"
#include "py_module.h"
#include "ember/train/callbacks.h"
#include "ember/train/fit_types.h"
#include "ember/train/fit.h"
#include "ember/train/progress.h"
#include "ember/train/run_end.h"
#include "ember/train/run_plan.h"
#include "ember/train/settings.h"
#include "ember/train/wording.h"

namespace ember::python {
namespace {

// Set by SIGINT while a fit runs (the engine's stop_signal), or by a callback that raised.
std::atomic<int> g_stop{0};
constexpr int kCallbackRaised = -1;

// One fit at a time in a process: the stop flag and the SIGINT handler are the process's.
std::atomic<bool> g_fitting{false};
class OneFitAtATime {
 public:
  OneFitAtATime() {
    if (g_fitting.exchange(true))
      throw Error("ember.fit is already running in this process (on another thread)",
                  "run fits one after another, or in separate processes");
  }
  ~OneFitAtATime() { g_fitting = false; }
};

extern "C" void on_sigint(int sig) {
  int none = 0;
  g_stop.compare_exchange_strong(none, sig);  // the first reason wins
}

// Python's SIGINT handler only runs between bytecodes, never while C++ trains: for the fit, the
// handler is ember's (as in the CLI), and Python's is put back after it. Only the main thread
// receives signals in Python, so a fit started on another thread keeps Python's.
class SigintGuard {
 public:
  SigintGuard() {
    nb::object threading = nb::module_::import_("threading");
    active_ = threading.attr("current_thread")().is(threading.attr("main_thread")());
    if (!active_) return;
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &previous_);
  }
  ~SigintGuard() {
    if (active_) sigaction(SIGINT, &previous_, nullptr);
  }

 private:
  bool active_ = false;
  struct sigaction previous_ {};
};

// Text to Python's sys.stdout (a notebook's cell, a redirected stream), flushed; the GIL is taken.
void write_stdout(const std::string& text) {
  nb::gil_scoped_acquire gil;
  try {
    nb::object out = nb::module_::import_("sys").attr("stdout");
    if (out.is_none()) return;
    out.attr("write")(text);
    out.attr("flush")();
  } catch (nb::python_error& e) {
    e.discard_as_unraisable("ember progress");
  }
}

bool stdout_is_terminal() {
  try {
    nb::object out = nb::module_::import_("sys").attr("stdout");
    return !out.is_none() && nb::cast<bool>(out.attr("isatty")());
  } catch (...) {
    return false;
  }
}

// The banner of ember.fit: what `ember train` says first, in a few lines.
std::string fit_banner(const train::RunPlan& p) {
  const train::TrainSettings& c = p.settings;
  std::string b = fmt::format("ember.fit: {} on {} ({} train, {} validation, {} test), {} of {}\n", c.model, c.data,
                              train::thousands(p.train.size()), train::thousands(p.val.size()),
                              train::thousands(p.test.size()), train::plural(c.epochs, "epoch"),
                              train::plural(p.steps_per_epoch, "step"));
  b += fmt::format("  device {} ({}), precision {}\n", p.device.device.str(), p.device.why, p.precision_summary());
  b += fmt::format("  {} lr {:g}, batch {}, {} parameters; run dir {}{}\n", c.optimizer, c.lr, c.batch_size,
                   train::thousands(p.model->num_parameters()), p.run_dir.string(),
                   p.checkpoint ? fmt::format(" (resuming at epoch {})", p.checkpoint->manifest.epoch + 1) : "");
  return b;
}

// One line per epoch, as Keras's verbose=2 gives: the epoch, its losses and accuracies, its time.
std::string epoch_line(const train::EpochStats& s, int64_t epochs) {
  auto pair = [](const char* what, double loss, double acc) {
    if (std::isnan(loss) && std::isnan(acc)) return std::string();
    return fmt::format(" - {} loss {:.4f} acc {:.2f}%", what, loss, 100 * acc);
  };
  return fmt::format("epoch {}/{}{}{}{} - {:.1f} s{}\n", s.epoch, epochs, pair("train", s.train_loss, s.train_acc),
                     pair("val", s.val_loss, s.val_acc), pair("test", s.test_loss, s.test_acc), s.seconds,
                     s.improved ? " (best so far)" : "");
}

// PEP 678's note on an exception raised again (Python 3.11+; older interpreters go without it).
void add_note(const nb::python_error& e, const std::string& note) {
  nb::handle value = e.value();
  if (!nb::hasattr(value, "add_note")) return;
  try {
    value.attr("add_note")(note);
  } catch (nb::python_error& ignored) {
    ignored.discard_as_unraisable("ember.fit's note");
  }
}

nb::object number(double v) { return std::isnan(v) ? nb::none() : nb::cast(v); }

nb::dict epoch_logs(const train::EpochStats& s) {
  nb::dict d;
  d["epoch"] = s.epoch;
  d["train_loss"] = number(s.train_loss);
  d["train_acc"] = number(s.train_acc);
  d["val_loss"] = number(s.val_loss);
  d["val_acc"] = number(s.val_acc);
  d["test_loss"] = number(s.test_loss);
  d["test_acc"] = number(s.test_acc);
  d["lr"] = s.lr;
  d["samples_per_s"] = s.samples_per_s;
  d["data_wait"] = s.data_wait;
  d["seconds"] = s.seconds;
  d["improved"] = s.improved;
  return d;
}

// The Python callbacks, called with the GIL taken; the first exception is kept and stops the run.
struct PythonCallbacks {
  nb::object on_epoch_end, on_step;
  nb::list history;
  std::optional<nb::python_error> raised;

  void call(const nb::object& fn, const nb::dict& logs) {
    if (raised || !fn || fn.is_none()) return;
    try {
      fn(logs);
    } catch (nb::python_error& e) {
      raised.emplace(std::move(e));
      int none = 0;
      g_stop.compare_exchange_strong(none, kCallbackRaised);
    }
  }
};

class StepCallback : public train::Callback {
 public:
  explicit StepCallback(PythonCallbacks& py) : py_(py) {}
  void on_step_end(train::FitContext& ctx) override {
    nb::gil_scoped_acquire gil;
    nb::dict logs;
    logs["step"] = ctx.step;
    logs["epoch"] = ctx.epoch + 1;
    logs["step_in_epoch"] = ctx.step_in_epoch;
    logs["steps_per_epoch"] = ctx.steps_per_epoch;
    py_.call(py_.on_step, logs);
  }

 private:
  PythonCallbacks& py_;
};

std::string status_name(train::FitStatus s) {
  switch (s) {
    case train::FitStatus::Completed: return "completed";
    case train::FitStatus::Interrupted: return "interrupted";
    case train::FitStatus::NonFiniteLoss: return "non_finite_loss";
    case train::FitStatus::EarlyStopped: return "early_stopped";
    case train::FitStatus::OutOfMemory: return "out_of_memory";
    case train::FitStatus::RunDirLost: return "run_dir_lost";
  }
  return "unknown";
}

nb::dict fit(const std::string& values_json, const std::string& resume, const std::string& config_file,
             nb::object on_epoch_end, nb::object on_step, nb::object model) {
  // ---- the settings: keyword arguments, then the config file's (the keywords win) ----
  train::TrainSettings settings;
  const std::vector<const train::Setting*> by_keyword = train::apply_settings_values(settings, values_json);
  auto in = [](const std::vector<const train::Setting*>& rows, const train::Setting& s) {
    return std::find(rows.begin(), rows.end(), &s) != rows.end();
  };
  std::vector<const train::Setting*> from_file;
  if (!config_file.empty())
    from_file = train::apply_settings_file(settings, config_file, [&](const train::Setting& s) { return in(by_keyword, s); });
  if (settings.nproc_per_node > 1)
    throw train::SettingError("nproc_per_node: ember.fit trains in this process",
                              "for a data-parallel run use `ember train --nproc-per-node N`");
  train::PlanInputs inputs;
  inputs.given = [&](const train::Setting& s) { return in(by_keyword, s) || in(from_file, s); };
  inputs.given_directly = [&](const train::Setting& s) { return in(by_keyword, s); };
  inputs.config_file = config_file;
  inputs.resume = resume;
  inputs.front_end = train::FrontEnd::Python;
  // A module defined in Python (ember.nn.Module or its duck type), trained in place (py_module.h).
  std::shared_ptr<PythonModule> module;
  if (!model.is_none()) {
    module = std::make_shared<PythonModule>(model);
    inputs.model = module;
    inputs.model_name = module->run_name();
  }

  OneFitAtATime only_fit;
  PythonCallbacks py{on_epoch_end, on_step, nb::list(), std::nullopt};
  WarningsToPython warnings;
  g_stop = 0;
  SigintGuard sigint;
  const bool terminal = stdout_is_terminal();
  std::unique_ptr<const train::RunPlan> plan;
  train::RunOutcome end;
  std::optional<nb::python_error> model_raised;  // what the module raised where the run could not go on
  {
    nb::gil_scoped_release unlocked;
    try {
      plan = train::plan_run(settings, inputs);
      const train::ProgressRule shown = train::progress_rule(train::parse_verbosity(plan->settings.verbose), terminal);
      if (shown.banner) write_stdout(fit_banner(*plan));
      // The run to its end as `ember train` runs it (ember/train/run_end.h); Python adds its callbacks.
      train::RunControls controls;
      controls.stop_signal = &g_stop;
      controls.terminal = terminal;
      controls.progress_out = write_stdout;
      if (!on_step.is_none()) controls.callbacks.push_back(std::make_shared<StepCallback>(py));
      controls.on_epoch = [&py, &shown, epochs = plan->settings.epochs](const train::EpochStats& st) {
        if (shown.epoch_lines) write_stdout(epoch_line(st, epochs));
        nb::gil_scoped_acquire gil;
        nb::dict logs = epoch_logs(st);
        py.history.append(logs);
        py.call(py.on_epoch_end, logs);
      };
      end = train::run_to_end(*plan, controls);
    } catch (const train::CallerRaised&) {  // the module's forward raised while planning: its own exception
      std::optional<nb::python_error> e = module ? module->take_raised() : std::nullopt;
      if (!e) throw;
      model_raised.emplace(std::move(*e));
    }
  }
  if (model_raised) throw std::move(*model_raised);
  const train::FitResult& r = end.fit;
  if (py.raised) throw std::move(*py.raised);  // after its checkpoint: the run resumes from there
  if (module) {
    if (std::optional<nb::python_error> e = module->take_raised()) {  // after its checkpoint, too
      add_note(*e, end.ending == train::RunEnding::EvaluationStopped
                       ? fmt::format("ember.fit: the training is complete ({}); the final evaluation stopped", end.latest.string())
                       : fmt::format("ember.fit: the run stopped after step {} with its checkpoint ({}); resume it with {}",
                                     r.step, end.latest.string(), end.hint));
      throw std::move(*e);
    }
    module->sync_mode();  // the mode the run left it in (training, as after a PyTorch loop)
  }
  auto keyboard_interrupt = [](const std::string& msg) {
    PyErr_SetString(PyExc_KeyboardInterrupt, msg.c_str());
    throw nb::python_error();
  };
  switch (end.ending) {
    case train::RunEnding::RunDirLost:
    case train::RunEnding::Failed:
      throw Error(end.message, end.hint);
    case train::RunEnding::Interrupted:
      if (r.signal == SIGINT)
        keyboard_interrupt(fmt::format("interrupted (SIGINT) at epoch {}, step {}; checkpoint written to {}; resume "
                                       "with {}", r.epoch + 1, r.step, end.latest.string(), end.hint));
      break;  // stop_after_steps: a result with status "interrupted"
    case train::RunEnding::EvaluationStopped:
      if (end.signal == SIGINT)
        keyboard_interrupt(fmt::format("interrupted (SIGINT) during the final evaluation: the training is complete "
                                       "({}); evaluate it with {}", end.latest.string(), end.hint));
      break;
    case train::RunEnding::Finished:
      break;
  }
  nb::dict d;
  d["status"] = status_name(r.status);
  d["message"] = r.message;
  d["run_dir"] = plan->run_dir.string();
  d["history"] = py.history;
  d["epoch"] = r.epoch;
  d["step"] = r.step;
  d["best_epoch"] = r.best_epoch;
  d["best_test_acc"] = number(r.best_test_acc);
  d["selected_on"] = r.selected_on;
  d["test_accuracy"] = end.test ? number(end.test->accuracy) : nb::none();
  d["test_loss"] = end.test ? number(end.test->loss) : nb::none();
  d["evaluated_epoch"] = end.evaluated_epoch;
  d["last_epoch_test_acc"] = number(end.last_epoch_test_acc);
  d["wall_seconds"] = end.wall_seconds;
  d["device"] = plan->device.device.str();
  d["device_why"] = plan->device.why;
  d["precision"] = plan->precision_summary();
  d["config_json"] = plan->config_json;
  return d;
}

}  // namespace

void register_fit(nb::module_& m) {
  m.def("_fit", &fit, nb::arg("values_json"), nb::arg("resume"), nb::arg("config_file"), nb::arg("on_epoch_end").none(),
        nb::arg("on_step").none(), nb::arg("model").none() = nb::none(), "ember.fit's C++ side (python/ember/__init__.py).");
}

}  // namespace ember::python
