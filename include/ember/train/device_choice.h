// Device choice for train/eval/bench: "auto" picks cuda:0 when usable, else the CPU, and says why;
// and the compute threads a run starts with.
#pragma once

#include <string>

#include "ember/core/device.h"

namespace ember::train {

struct DeviceChoice {
  Device device;
  std::string why;  // "no NVIDIA driver found (...)", "requested with --device cpu", ...
};

// Throws SettingError for a malformed spec, DeviceError when a GPU is required or an index that
// does not exist was asked for. A plain `cuda` without a usable GPU falls back to the CPU with a
// warning unless require_gpu; has_require_gpu_flag says whether the subcommand has --require-gpu,
// so the warning suggests it only where it exists (eval and predict do not have it).
DeviceChoice choose_device(const std::string& spec, bool require_gpu, bool has_require_gpu_flag = true);

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
