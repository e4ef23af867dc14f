// ember doctor: probe the machine, print PASS/WARN/FAIL lines with a fix each (or JSON), and exit
// 0 when training can run on some device (the CPU counts), 1 otherwise.
#include <fmt/format.h>

#include "cli.h"
#include "ember/env/doctor.h"

namespace ember::cli {

void register_doctor(CLI::App& root, Runner& run) {
  auto* sub = root.add_subcommand("doctor", "Check the build, CPU, NVIDIA driver, CUDA, cuDNN, cuBLAS and GPUs");
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "Print the findings as JSON");
  sub->footer("Exit code 0 when training can run on some device (the CPU counts), 1 otherwise.");
  sub->callback([&run, json] {
    run = [json] {
      env::EnvFacts facts = env::probe_environment();
      env::Verdict verdict = env::evaluate(facts);
      if (*json)
        fmt::print("{}\n", env::to_json(facts, verdict));
      else
        fmt::print("{}", env::format_report(facts, verdict));
      return verdict.can_train() ? kExitOk : kExitFailed;
    };
  });
}

}  // namespace ember::cli
