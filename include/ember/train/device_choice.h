// The device of a run and its reason, one decision for every caller: `ember train` and ember.fit
// (through the run's plan), its launcher of local ranks, `ember eval`, `predict`, `export` and
// ember.load (through open_for_inference) and `ember bench train`. "auto" picks cuda:0 when usable,
// else the CPU, and says why. Also the compute threads a run starts with.
#pragma once

#include <string>
#include <vector>

#include "ember/core/device.h"

namespace ember::train {

struct DeviceChoice {
  Device device;
  std::string why;  // "no NVIDIA driver found (...)", "requested with --device cpu", ...
  // The CPU runs in place of the GPU asked for (`cuda`, `cuda:0` without a usable one). A precision
  // only a GPU runs falls back with it (precision_choice.h). Not for `auto`, whose answer on a
  // machine without a GPU is the CPU itself: a precision the CPU cannot run is refused there.
  bool fell_back_to_cpu = false;
  std::string warning;  // what choose_device warns of a fallback ("" when none)
};

// The decision alone, without warning: SettingError for a malformed spec, DeviceError when a GPU is
// required or an index that does not exist was asked for. A plain `cuda` without a usable GPU falls
// back to the CPU (with `warning` set) unless require_gpu; has_require_gpu_flag says whether the
// subcommand has --require-gpu, so the warning suggests it only where it exists (eval and predict
// do not have it).
DeviceChoice decide_device(const std::string& spec, bool require_gpu, bool has_require_gpu_flag = true);
// decide_device, and its fallback warned (wording.h's warn).
DeviceChoice choose_device(const std::string& spec, bool require_gpu, bool has_require_gpu_flag = true);

// The devices a benchmark compares: "all" (the CPU and every usable CUDA device), or the one
// device `spec` names, which must be there: timing the CPU in a missing GPU's place would answer
// another question, so a benchmark never falls back (DeviceError).
std::vector<Device> devices_to_compare(const std::string& spec);

// Warns when --threads asks for more threads than this machine has hardware threads (allowed, for
// a bitwise-identical resume of a run trained elsewhere, but slower: 1024 on 2 cores trained at
// 12 samples/s).
void warn_if_oversubscribed(int threads);

// --threads (0: keep the default, all cores) and --workers (data-loading threads; 0: in-line, and
// -1 for a subcommand without the flag): checks that the process can start them all
// (ResourceError naming the flags and the limit otherwise, before OpenMP would fail inside a
// parallel region), then sets the compute thread count, warning when it oversubscribes the cores.
void set_compute_threads(int threads, int workers = -1);

}  // namespace ember::train
