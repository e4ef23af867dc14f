// ember doctor: probe the machine, print PASS/WARN/FAIL lines with a fix each, the verdict and the
// first thing to do (or JSON, docs/doctor.md), and exit by the verdict: 0 when training can run
// (on the GPU, or on the CPU), 1 when it cannot (with --require-gpu: when the GPU is not usable),
// 2 on a usage error.
#include <fmt/format.h>

#include "cli.h"
#include "ember/env/doctor.h"

namespace ember::cli {

void register_doctor(CLI::App& root, Runner& run) {
  auto* sub = root.add_subcommand("doctor", "Check the build, CPU, NVIDIA driver, CUDA, cuDNN, cuBLAS and GPUs");
  auto json = std::make_shared<bool>(false);
  auto require_gpu = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "Print the findings as JSON (schema in docs/doctor.md)");
  sub->add_flag("--require-gpu", *require_gpu, "Exit 1 unless training would use the GPU");
  sub->footer("Exit code 0 when training can run on some device (the CPU counts; with --require-gpu only the GPU), "
              "1 otherwise, 2 on a usage error.");
  sub->callback([&run, json, require_gpu] {
    run = [json, require_gpu] {
      env::EnvFacts facts = env::probe_environment();
      env::Verdict verdict = env::evaluate(facts);
      if (*json)
        fmt::print("{}\n", env::to_json(facts, verdict));
      else
        fmt::print("{}", env::format_report(facts, verdict));
      const bool usable = *require_gpu ? verdict.gpu_usable : verdict.can_train();
      return usable ? kExitOk : kExitFailed;
    };
  });
}

}  // namespace ember::cli
