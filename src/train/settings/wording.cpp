// Numbers and plurals in messages, the caller's words for a resume, and the warning sink
// (ember/train/wording.h).
#include "ember/train/wording.h"

#include "ember/train/caller_model.h"

#include <fmt/format.h>

#include <cstdio>
#include <utility>

namespace ember::train {
namespace {
WarningSink& sink() {
  static WarningSink s;
  return s;
}
}  // namespace

std::string resume_call(const std::string& run_dir, FrontEnd front_end, const std::string& model) {
  if (is_caller_model(model)) return caller_model_resume_call(model, run_dir);  // its class rebuilds it
  return front_end == FrontEnd::Python ? fmt::format("ember.fit(resume=\"{}\")", run_dir)
                                       : fmt::format("ember train --resume {}", run_dir);
}

std::string device_unavailable_hint(FrontEnd front_end) {
  return front_end == FrontEnd::Python
             ? "use device='cpu' (or .to('cpu')) to run on the CPU; ember.cuda.is_available() says whether a GPU is "
               "usable here"
             : "pass --device cpu (or --device auto: the GPU when one is usable, else the CPU)";
}

// Built by appending: GCC 12's -Wrestrict misfires on std::string::insert here.
std::string thousands(int64_t v) {
  const std::string digits = std::to_string(v);
  std::string out;
  const size_t start = digits[0] == '-' ? 1 : 0;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > start && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string plural(int64_t n, const std::string& singular, const std::string& plural_form) {
  return fmt::format("{} {}", n, n == 1 ? singular : plural_form.empty() ? singular + "s" : plural_form);
}

WarningSink set_warning_sink(WarningSink s) { return std::exchange(sink(), std::move(s)); }

void warn(const std::string& message) {
  if (sink()) return sink()(message);
  fmt::print(stderr, "ember: warning: {}\n", message);
  std::fflush(stderr);
}

}  // namespace ember::train
