// A model the caller built itself and handed to the run (ember.fit(model=net): a module defined in
// Python; a C++ program's own nn::Module) instead of one the library builds from a zoo name or a
// spec file. A run records such a model as "<origin>:<class>" ("python:Net"): the name says where
// it came from, and that no command can rebuild it from the run's files — eval, predict, export,
// `ember train --resume` and `--init-from`'s model refuse it with the call that works instead.
#pragma once

#include <string>

#include "ember/train/wording.h"

namespace ember::train {

// "python:Net" for origin "python" and class "Net". The origin is "python" or "c++", the class name
// an identifier (letters, digits, '_', not starting with a digit): ValueError otherwise, so the name
// is safe in a run directory's name and a message, and a mistyped zoo name is never taken for one.
std::string caller_model_name(const std::string& origin, const std::string& class_name);
// Whether `model` (a --model value, config.json's "model", a manifest's) names a caller's model.
bool is_caller_model(const std::string& model);
// "Net" for "python:Net"; "" when `model` is not a caller's model.
std::string caller_model_class(const std::string& model);
// The call that builds the run again with the class: `ember.fit(model=Net(), resume="runs/x")` for a
// Python model; for another origin, the program that trained it.
std::string caller_model_resume_call(const std::string& model, const std::string& run_dir);

// The refusal of a command that would have to rebuild a caller's model from a run's files:
// SettingError (a usage error, exit 2) naming the class, what cannot be done (`what`: "`ember eval`",
// "ember.load", "`ember train --resume`") and the call that works. `source` is the run directory or
// weights file the model came from.
[[noreturn]] void refuse_caller_model(const std::string& model, const std::string& source, const std::string& what);

}  // namespace ember::train
