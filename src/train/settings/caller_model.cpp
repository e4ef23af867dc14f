// The names a run records for a model its caller built (ember/train/caller_model.h) and the one
// refusal every command that would rebuild such a model from a run's files gives.
#include "ember/train/caller_model.h"

#include <fmt/format.h>

#include "ember/core/error.h"
#include "ember/train/settings.h"

namespace ember::train {
namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s)
    if (!(c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return false;
  return true;
}

// The languages a caller's model comes from: a typo of a zoo name ("resnet:small") is not one.
bool is_origin(const std::string& s) { return s == "python" || s == "c++"; }

}  // namespace

std::string caller_model_name(const std::string& origin, const std::string& class_name) {
  EMBER_CHECK(is_origin(origin), ValueError, "a caller's model comes from \"python\" or \"c++\", not '", origin, "'");
  EMBER_CHECK(is_identifier(class_name), ValueError, "a caller's model is named by its class, an identifier (letters, "
              "digits, '_'), not '", class_name, "'");
  return origin + ":" + class_name;
}

bool is_caller_model(const std::string& model) {
  const size_t colon = model.find(':');
  return colon != std::string::npos && is_origin(model.substr(0, colon)) && is_identifier(model.substr(colon + 1));
}

std::string caller_model_class(const std::string& model) {
  return is_caller_model(model) ? model.substr(model.find(':') + 1) : std::string();
}

std::string caller_model_resume_call(const std::string& model, const std::string& run_dir) {
  if (model.starts_with("python:"))
    return fmt::format("ember.fit(model={}(), resume=\"{}\")", caller_model_class(model), run_dir);
  return fmt::format("train::plan_run with resume \"{}\" and the program's own {} (train::PlanInputs::model)", run_dir,
                     caller_model_class(model));
}

void refuse_caller_model(const std::string& model, const std::string& source, const std::string& what) {
  const bool python = model.starts_with("python:");
  const std::string cls = caller_model_class(model);
  throw SettingError(
      fmt::format("'{}' holds a model {} (class {}, recorded as {}): {} cannot rebuild it from the run's files, only "
                  "its class can",
                  source, python ? "defined in Python" : "its program built itself", cls, model, what),
      fmt::format("{}: {} continues the run with the class at hand (epochs= extends a finished run) and evaluates it "
                  "at its end; the weights are in the run's checkpoints/*.safetensors, named by the model's state_dict()",
                  python ? "in Python" : "in the program that trained it", caller_model_resume_call(model, source)));
}

}  // namespace ember::train
