// The doctor's NVIDIA probes (driver, CUDA runtime, cuDNN, cuBLAS), split out of probe.cpp so the
// tests can point them at fake libraries. A vendor library is probed in a forked child (isolated):
// a broken install that aborts, crashes or hangs inside dlopen or a version call becomes a fact
// (`*_error`) the verdict turns into a FAIL line, never the end of `ember doctor`.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ember/env/doctor.h"

namespace ember::env::detail {

// What dlopen is asked for each library, in order: sonames (the usual search) or absolute paths.
struct NvidiaSearch {
  std::vector<std::string> cuda, cudart, cudnn, cublas;
  static NvidiaSearch defaults();  // the sonames, then $CUDA_HOME/lib64 and /usr/local/cuda/lib{64,}
};

// Runs `fn` in a forked child and returns what it returned. `ok` is false when the child did not
// finish normally; `failure` then says how ("killed by SIGABRT", "timed out after 20 s") and
// quotes the last line it wrote to stderr.
struct Isolated {
  bool ok = false;
  std::string payload, failure;
};
Isolated run_isolated(const std::function<std::string()>& fn, int timeout_ms);

// A CUresult in words with its fix: {"CUDA_ERROR_STUB_LIBRARY (34): libcuda.so.1 is the CUDA
// toolkit's stub ...", "run on a machine ... / start the container with --gpus all"}.
struct DriverErrorText {
  std::string message, fix;
};
// `cuda`: the CUDA ember was built with (the driver it needs for errors 35 and 36, from the
// compatibility tables); empty for a build without CUDA.
DriverErrorText cuda_driver_error_text(int code, const char* name, const char* description,
                                       const std::optional<Version>& cuda = std::nullopt);

// The kernel side under `root` ("" = this machine; tests give a fake tree): the driver version and
// GPU count from <root>/proc/driver/nvidia, whether the module is loaded, and WSL.
void probe_kernel_module(EnvFacts& f, const std::string& root);

// The driver: libcuda, cuInit, its devices. `isolated`: in a child process (doctor); in-process
// otherwise (a run's report, which may already use CUDA and must not fork a CUDA process).
void probe_driver(EnvFacts& f, const std::vector<std::string>& names, bool isolated);
// cuDNN: the parts of a cuDNN 9 install beside libcudnn.so.9 are checked before calling into it.
void probe_cudnn(EnvFacts& f, const std::vector<std::string>& names);
void probe_cublas(EnvFacts& f, const std::vector<std::string>& names);
// NVML (libnvidia-ml.so.1), in a child process: each GPU's memory, processes, MIG instances, ECC,
// retired pages / remapped rows, persistence, clocks, power, temperature, utilisation, and the Xid
// errors raised while it watches for xid_wait_ms (nvml.h).
inline constexpr int kXidWatchMs = 200;
void probe_nvml(EnvFacts& f, const std::vector<std::string>& names, int xid_wait_ms = kXidWatchMs);
void probe_cudart(EnvFacts& f, const std::vector<std::string>& names);

}  // namespace ember::env::detail
