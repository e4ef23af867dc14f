// The local launcher behind `ember train --nproc-per-node N`: starts N copies of a command on this
// machine with torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT), one GPU each through CUDA_VISIBLE_DEVICES or, on CPUs, the cores split
// between them (OMP_NUM_THREADS). It waits for all of them; when one fails, the others are stopped
// (SIGTERM, then SIGKILL after a grace period) and the result names the rank that failed first.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace ember::dist {

struct LaunchOptions {
  int nproc_per_node = 1;
  std::vector<std::string> argv;    // the command; argv[0] is looked up on PATH
  std::string master_addr = "127.0.0.1";
  int master_port = 0;              // 0: a free port on this machine
  // GPUs: rank i sees only the i-th visible device. visible_devices lists the devices the launcher
  // may hand out (the parent's CUDA_VISIBLE_DEVICES split at commas; empty: 0..gpus-1). gpus == 0
  // means a CPU job.
  int gpus = 0;
  std::vector<std::string> visible_devices;
  // CPUs: each rank gets max(1, cores / nproc_per_node) threads (cores 0: the cores this process
  // may run on). Ignored when OMP_NUM_THREADS is in `extra_env`.
  int cores = 0;
  std::vector<std::string> extra_env;  // "NAME=value" added to every rank's environment
  // How long ranks get to exit after SIGTERM once one failed, before SIGKILL.
  std::chrono::milliseconds kill_grace{std::chrono::seconds(5)};
};

struct LaunchResult {
  int exit_code = 0;     // 0 when every rank exited 0; else the first failed rank's code (128+signal)
  int failed_rank = -1;  // the first rank that failed, -1 when none
  std::string message;   // "rank 1 (pid 1234) was killed by signal 9 (Killed)"; empty on success
};

// Runs the job and returns when every rank is gone. Throws DistError for bad options (N < 1, more
// GPU ranks than visible devices, an empty command) or when a rank cannot be started.
LaunchResult launch_local(const LaunchOptions& options);

// The parent's CUDA_VISIBLE_DEVICES split at commas (empty when unset).
std::vector<std::string> visible_devices_from_env();

}  // namespace ember::dist
