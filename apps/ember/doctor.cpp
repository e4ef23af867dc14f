// ember doctor: probe the machine, print PASS/WARN/FAIL lines with a fix each, the verdict and the
// first thing to do (or JSON, docs/doctor.md), and exit by the verdict: 0 when training can run
// (on the GPU, or on the CPU), 1 when it cannot (with --require-gpu: when the GPU is not usable),
// 2 on a usage error.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "cli.h"
#include "ember/env/doctor.h"
#include "ember/env/gpu_smoke.h"

namespace ember::cli {

void register_doctor(CLI::App& root, Runner& run) {
  auto* sub = root.add_subcommand("doctor", "Check the build, CPU, OS, NVIDIA driver, CUDA, cuDNN, cuBLAS, NCCL and GPUs");
  auto json = std::make_shared<bool>(false);
  auto require_gpu = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "Print the findings as JSON (schema in docs/doctor.md)");
  sub->add_flag("--require-gpu", *require_gpu, "Exit 1 unless training would use the GPU");
  auto pythons = std::make_shared<std::vector<std::string>>();
  auto no_python = std::make_shared<bool>(false);
  auto python_timeout = std::make_shared<int>(60);
  auto* python_opt = sub->add_option("--python", *pythons,
                                     "Audit the frameworks of this Python interpreter only (repeatable); by "
                                     "default: $VIRTUAL_ENV, $CONDA_PREFIX and python3 on PATH");
  sub->add_flag("--no-python", *no_python, "Do not audit Python interpreters")->excludes(python_opt);
  sub->add_option("--python-timeout", *python_timeout, "Seconds each interpreter may take to answer (default 60)")
      ->check(CLI::Range(1, 3600));
  auto smoke = std::make_shared<bool>(false);
  sub->add_flag("--smoke", *smoke,
                "Only run the GPU smoke test on cuda:0 (context, a checked 64 MiB copy and its bandwidth, an ember "
                "kernel, a cuBLAS GEMM, a cuDNN convolution, each against the CPU); SKIP without a usable GPU");
  auto tables = std::make_shared<bool>(false);
  sub->add_flag("--tables", *tables,
                "Only print the compatibility tables the fixes come from (drivers, GPUs, PyTorch, TensorFlow, JAX), "
                "each row with its source and the date it was checked");
  sub->footer("Exit code 0 when training can run on some device (the CPU counts; with --require-gpu only the GPU), "
              "1 otherwise, 2 on a usage error.");
  sub->callback([&run, json, require_gpu, pythons, no_python, python_timeout, smoke, tables] {
    run = [json, require_gpu, pythons, no_python, python_timeout, smoke, tables] {
      if (*tables) {
        fmt::print("{}", env::compat_tables_markdown());
        return kExitOk;
      }
      if (*smoke) {  // exit 0 when it passed, or was skipped without --require-gpu
        const env::GpuSmokeResult r = env::gpu_smoke_test(0);
        fmt::print("{}", *json ? env::smoke_json(r) + "\n" : env::format_smoke(r));
        return r.passed() || (!r.skipped.empty() && !*require_gpu) ? kExitOk : kExitFailed;
      }
      const env::DoctorReport report =
          env::run_doctor({.audit_python = !*no_python,
                           .pythons = *pythons,
                           .running_python = "",
                           .python_timeout_ms = *python_timeout * 1000});
      if (*json)
        fmt::print("{}\n", env::to_json(report.facts, report.verdict));
      else
        fmt::print("{}", env::format_report(report.facts, report.verdict));
      const bool usable = *require_gpu ? report.verdict.gpu_usable : report.verdict.can_train();
      return usable ? kExitOk : kExitFailed;
    };
  });
}

}  // namespace ember::cli
