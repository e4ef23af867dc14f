// The doctor's verdict: diagnose(), a pure function from EnvFacts to PASS/WARN/FAIL checks, calls
// the parts (one file per subject: verdict_host, _nvidia, _os, _libraries, _devices, _nvml, _python)
// in the order the report prints them, then says where training will run and what to do first. No
// I/O here, so each rule is tested over tables of versions (tests/unit/test_doctor*.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <sstream>

#include "ember/env/doctor.h"
#include "env/verdict_libraries.h"
#include "env/verdict_nvml.h"
#include "env/verdict_os.h"
#include "env/verdict_parts.h"
#include "env/verdict_python.h"

namespace ember::env {

std::string Version::str() const {
  return patch ? fmt::format("{}.{}.{}", major, minor, patch) : fmt::format("{}.{}", major, minor);
}

const char* level_name(Level l) {
  switch (l) {
    case Level::Pass: return "PASS";
    case Level::Warn: return "WARN";
    case Level::Fail: return "FAIL";
  }
  return "?";
}

std::optional<int> visible_device_count(const std::string& value, int physical_gpus) {
  int count = 0;
  std::stringstream ss(value);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    tok.erase(0, tok.find_first_not_of(" \t"));
    tok.erase(tok.find_last_not_of(" \t") + 1);
    if (tok.starts_with("GPU-") || tok.starts_with("MIG-")) return std::nullopt;
    int idx = -1;
    auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), idx);
    // The runtime stops at the first entry it cannot use: everything after it is hidden too.
    if (tok.empty() || ec != std::errc() || p != tok.data() + tok.size() || idx < 0) break;
    if (physical_gpus >= 0 && idx >= physical_gpus) break;
    ++count;
  }
  return count;
}

bool arch_supported(int cc_major, int cc_minor, const std::vector<int>& sass, const std::vector<int>& ptx) {
  const int cc = cc_major * 10 + cc_minor;
  // SASS is binary-compatible within a major version, for an equal or newer minor.
  for (int a : sass)
    if (a / 10 == cc_major && a % 10 <= cc_minor) return true;
  for (int a : ptx)
    if (a <= cc) return true;  // the driver JIT-compiles PTX for newer GPUs
  return false;
}

Verdict diagnose(const EnvFacts& f) {
  Verdict v;
  v.cpu_usable = detail::judge_host(f, v.checks);
  bool gpu_possible = f.built_with_cuda;
  if (!detail::judge_driver(f, v.checks)) gpu_possible = false;
  // ---- the OS layer: kernel module against libcuda, nouveau, device files, a container ----
  if (!detail::judge_os(f, v.checks)) gpu_possible = false;
  if (!detail::judge_cuda_libraries(f, v.checks)) gpu_possible = false;
  // ---- provenance: NCCL, and the same library found with different versions ----
  if (!detail::no_nvidia_gpu(f) && (f.built_with_cuda || !f.library_copies.empty()))
    detail::judge_libraries(f, v.checks);
  bool any_gpu_ok = false;
  if (!detail::judge_devices(f, v.checks, any_gpu_ok)) gpu_possible = false;
  // ---- NVML: what stops training on a GPU the driver shows (verdict_nvml.cpp) ----
  detail::judge_nvml(f, v.checks);
  // ---- the Python frameworks (issue 28): judged, but ember's own verdict stands on its checks ----
  detail::judge_pythons(f, v.checks);

  auto add = [&](Level l, std::string name, std::string msg, std::string fix = {}) {
    v.checks.push_back({l, std::move(name), std::move(msg), std::move(fix)});
  };
  const bool no_gpu = detail::no_nvidia_gpu(f);
  v.gpu_usable = gpu_possible && any_gpu_ok;
  v.training_device = v.gpu_usable ? "cuda:0" : "cpu";
  if (v.gpu_usable)
    add(Level::Pass, "verdict", "training will use the GPU (cuda:0)");
  else if (v.cpu_usable && no_gpu)
    add(Level::Pass, "verdict", "training will use the CPU (this machine has no NVIDIA GPU)");
  else if (v.cpu_usable)
    add(f.built_with_cuda ? Level::Warn : Level::Pass, "verdict", "training will use the CPU",
        f.built_with_cuda ? "fix the FAIL lines above to train on the GPU" : "");
  else
    add(Level::Fail, "verdict", "no device can train", "fix the FAIL lines above");
  v.summary = v.checks.back().message;
  // The first thing to do: the first FAIL's fix. A WARN's only where training does not reach a GPU
  // this machine has or may have: on a working GPU (the H200 of docs/gpu.md, whose first line named two
  // libcudnn copies) or on a machine without one, WARN lines are advice, not a first step.
  const bool warn_first = !v.gpu_usable && !no_gpu;
  for (Level want : {Level::Fail, Level::Warn}) {
    if (want == Level::Warn && !warn_first) break;
    auto it = std::find_if(v.checks.begin(), v.checks.end() - 1,
                           [&](const Check& c) { return c.level == want && !c.fix.empty(); });
    if (it != v.checks.end() - 1) {
      v.first_fix = it->fix;
      v.first_fix_check = it->name;
      break;
    }
  }
  return v;
}

}  // namespace ember::env
