// `ember train`'s own launcher of data-parallel ranks (train_dist.h): --nproc-per-node (and --resume
// of a run of several ranks) starts this command line again as each rank. The job itself — joining
// the group, rank 0's run directory, the same-run check, the banner's lines — is the library's
// (ember/train/run_world.h).
#include "train_dist.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "cli.h"
#include "ember/cuda.h"
#include "ember/dist/launch.h"
#include "ember/train/device_choice.h"

namespace ember::cli {
namespace fs = std::filesystem;
namespace {

// This process's command line as it was started (argv[0] replaced by the executable's path).
std::vector<std::string> own_command_line() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), {});
  std::vector<std::string> args;
  size_t at = 0;
  while (at < all.size()) {
    const size_t end = all.find('\0', at);
    args.push_back(all.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  if (!args.empty()) args[0] = fs::read_symlink("/proc/self/exe").string();
  return args;
}

// The arguments without --nproc-per-node N (or --nproc-per-node=N): the ranks train themselves.
std::vector<std::string> without_nproc_flag(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--nproc-per-node") {
      ++i;
      continue;
    }
    if (args[i].rfind("--nproc-per-node=", 0) == 0) continue;
    out.push_back(args[i]);
  }
  return out;
}

}  // namespace

std::optional<int> launch_local_ranks(const train::TrainSettings& c, bool threads_given) {
  if (c.nproc_per_node <= 1) return std::nullopt;
  const dist::WorldInfo here = dist::world_from_env();
  if (here.distributed()) {
    warn(fmt::format("--nproc-per-node {} ignored: this process is already rank {} of {} ({})", c.nproc_per_node,
                     here.rank, here.world_size, here.source));
    return std::nullopt;
  }
  dist::LaunchOptions lo;
  lo.nproc_per_node = c.nproc_per_node;
  lo.argv = without_nproc_flag(own_command_line());
  // The ranks' device, by the rule each rank will apply (device_choice.h; it warns of a fallback there).
  if (train::decide_device(c.device, c.require_gpu).device.is_cuda()) {
    if (c.device.find(':') != std::string::npos)
      throw UsageError(fmt::format("--device {} conflicts with --nproc-per-node {}: each rank gets one GPU",
                                   c.device, c.nproc_per_node),
                       "use --device cuda (rank i trains on the i-th visible GPU; CUDA_VISIBLE_DEVICES picks them)");
    lo.gpus = cuda::device_count();
    lo.visible_devices = dist::visible_devices_from_env();
  } else if (!threads_given) {
    // The cores split between the ranks: OMP_NUM_THREADS for the libraries, --threads for ember.
    const int each = train::threads_per_local_rank(c.nproc_per_node);
    lo.argv.push_back("--threads");
    lo.argv.push_back(std::to_string(each));
  }
  // A signal to the launcher reaches every rank, which agree on a step to stop at and checkpoint:
  // give them time for it before SIGKILL.
  lo.kill_grace = std::chrono::seconds(30);
  lo.extra_env.push_back("EMBER_LAUNCHED_BY=ember train --nproc-per-node");
  const dist::LaunchResult r = dist::launch_local(lo);
  // A failed rank is an error; a signal to the launcher (passed on: the ranks checkpointed) is not.
  if (r.exit_code != 0 && !r.message.empty())
    fmt::print(stderr, "ember: {}{}\n", r.failed_rank >= 0 ? "error: " : "", r.message);
  return r.exit_code;
}

void silence_other_ranks(const train::DataParallelWorld& world) {
  if (world.distributed() && !world.leader()) {
    std::fflush(stdout);
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) ::dup2(null, STDOUT_FILENO), ::close(null);
  }
}

}  // namespace ember::cli
