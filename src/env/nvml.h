// NVML (libnvidia-ml.so.1) opened with dlopen, never linked, so ember starts where no driver is
// installed. Two users: the doctor reads every GPU in full inside a forked child (probe_nvml), and
// the training monitor (train/gpu_monitor.h) samples one GPU in-process from its own thread. Every
// entry point is looked up by name and may be missing on an older driver: a null one reads as
// "not supported" (-1 in NvmlGpu), never as an error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ember/env/doctor.h"

namespace ember::env::detail {

// NVML return codes the callers tell apart (nvml.h, nvmlReturn_t).
inline constexpr int kNvmlSuccess = 0, kNvmlNotSupported = 3, kNvmlInsufficientSize = 7, kNvmlTimeout = 10;
// nvmlEventTypeXidCriticalError (nvml.h): the event NVML delivers for each Xid the driver logs.
inline constexpr unsigned long long kNvmlEventXid = 0x8ull;

// The loaded library and the entry points ember calls. Not copyable (owns the dlopen handle and
// the nvmlInit reference); thread-safe as NVML itself is (its calls are, per the NVML reference).
class Nvml {
 public:
  using Dev = void*;
  Nvml() = default;
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  ~Nvml();

  // dlopen the first of `names` that loads, look up the entry points and call nvmlInit_v2.
  // False when none loads (error empty: no NVML here) or it does not initialise (error says why).
  bool open(const std::vector<std::string>& names);
  bool ready() const { return initialised_; }
  const std::string& path() const { return path_; }    // the file loaded, as the loader resolved it
  const std::string& error() const { return error_; }  // why open() failed ("" when nothing loaded)

  unsigned device_count() const;
  Dev device(unsigned index) const;                      // nullptr when NVML refuses the index
  Dev device_by_uuid(const std::string& uuid) const;     // "GPU-…"; nullptr when unknown

  // Everything the doctor reports of one GPU (doctor.h NvmlGpu), Xids excepted (watch_xids).
  NvmlGpu read_gpu(unsigned index) const;
  // Registers every GPU for Xid critical-error events and collects those delivered within
  // `wait_ms` into gpus[i].xids. NVML delivers only Xids raised after registering: earlier ones are
  // in the kernel log (`NVRM: Xid`), which this does not read.
  void watch_xids(std::vector<NvmlGpu>& gpus, int wait_ms) const;

  // What the training monitor samples, cheaply (a few µs per call on a real driver).
  struct Sample {
    int utilization_gpu = -1;                  // % of the last sample period a kernel ran
    uint64_t memory_used = 0, memory_total = 0;  // bytes
    int power_mw = -1, power_limit_mw = -1;
    int temperature_c = -1;
  };
  bool sample(Dev d, Sample& s) const;

 private:
  void* lib_ = nullptr;
  bool initialised_ = false;
  std::string path_, error_;
  struct Api;
  Api* api_ = nullptr;
};

// What a common Xid means and what it asks of the user ("GPU has fallen off the bus"), after
// NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors). Unknown codes get a generic line.
struct XidMeaning {
  const char* words;
  bool stops_training;  // the GPU (not the program) is at fault until it is reset or replaced
  const char* fix;
};
XidMeaning xid_meaning(unsigned long long xid);

// NvmlGpu <-> the doctor's JSON (docs/doctor.md "nvml.gpus"): the same fields both ways, so the
// child of probe_nvml answers in the format `ember doctor --json` prints.
nlohmann::json nvml_gpu_json(const NvmlGpu& g);
NvmlGpu nvml_gpu_from_json(const nlohmann::json& j);
// The child's half of probe_nvml: {"path", "error", "gpus": [nvml_gpu_json...]}.
std::string nvml_report(const std::vector<std::string>& names, int xid_wait_ms);

}  // namespace ember::env::detail
