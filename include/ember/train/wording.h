// The words a run's plan uses in its messages and banner lines, shared by the library and the CLI
// so both say the same thing ("61,706", "3 epochs"), and where its warnings go: a run's plan warns
// (a setting ignored, a device fallen back to the CPU) through one process-wide sink that the
// caller chooses — the CLI prints "ember: warning: ..." on stderr, Python turns them into
// warnings.warn.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace ember::train {

// Who called the library, so that a hint names what that caller types: flags for `ember train`,
// keyword arguments for ember.fit ("--name" / "name=").
enum class FrontEnd { Cli, Python };

// The call that continues the run in `run_dir`: `ember train --resume runs/x` or
// `ember.fit(resume="runs/x")`; for a run of a model its caller built (`model` "python:Net",
// caller_model.h), the call with its class, whatever the front end: `ember.fit(model=Net(), resume=...)`.
std::string resume_call(const std::string& run_dir, FrontEnd front_end, const std::string& model = "");

// What to do when the device asked for is not available here (no GPU, no CUDA build): the CLI's
// flag, or Python's device='cpu' and ember.cuda.is_available().
std::string device_unavailable_hint(FrontEnd front_end);

// 61706 -> "61,706".
std::string thousands(int64_t v);
// "1 epoch", "3 epochs", plural(2, "class", "classes") -> "2 classes".
std::string plural(int64_t n, const std::string& singular, const std::string& plural_form = {});

// Where warn() sends a message; the default prints "ember: warning: MESSAGE" on stderr.
using WarningSink = std::function<void(const std::string&)>;
// Replaces the sink (an empty one restores the default) and returns the one it replaces. Not
// thread-safe against a concurrent warn(): set it before a run starts.
WarningSink set_warning_sink(WarningSink sink);
void warn(const std::string& message);

}  // namespace ember::train
