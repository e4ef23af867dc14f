// `ember train` as one rank of a data-parallel job (train_dist.h): the local launcher behind
// --nproc-per-node (and behind --resume of a run of several ranks), joining the group, rank 0's run
// directory for everyone, the start-up check that every rank runs the same settings, data and
// ember, the banner's world lines and the command that resumes the run.
#include "train_dist.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "cli.h"
#include "ember/cuda.h"
#include "ember/dist/launch.h"
#include "ember/ember.h"
#include "ember/io/user_file.h"
#include "ember/train/checkpoint.h"
#include "ember/train/resume.h"

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

int usable_cores() {
  cpu_set_t set;
  return ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

bool wants_cuda(const std::string& spec) {
  return spec.rfind("cuda", 0) == 0 || (spec == "auto" && cuda::device_count() > 0);
}

std::chrono::milliseconds group_timeout() {
  if (const char* t = std::getenv("EMBER_DIST_TIMEOUT_MS"); t && std::atoll(t) > 0)
    return std::chrono::milliseconds(std::atoll(t));
  return std::chrono::seconds(300);
}

// FNV-1a over the pixels and labels, 8 bytes at a time (~50 ms for Fashion-MNIST's 47 MB).
uint64_t checksum(const data::Dataset& ds, uint64_t h = 1469598103934665603ull) {
  auto mix = [&](const Tensor& t) {
    if (!t.defined()) return;
    const Tensor c = t.contiguous();
    const auto* p = static_cast<const unsigned char*>(c.raw_data());
    const size_t n = c.nbytes();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      h = (h ^ w) * 1099511628211ull;
    }
    for (; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  mix(ds.images);
  mix(ds.labels);
  if (ds.is_photos())  // a photo set: its files, in order (their bytes are read per sample)
    for (int64_t i = 0; i < ds.photos->size(); ++i)
      for (unsigned char ch : ds.photos->name(i)) h = (h ^ ch) * 1099511628211ull;
  return h;
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
  if (wants_cuda(c.device)) {
    if (c.device.find(':') != std::string::npos)
      throw UsageError(fmt::format("--device {} conflicts with --nproc-per-node {}: each rank gets one GPU",
                                   c.device, c.nproc_per_node),
                       "use --device cuda (rank i trains on the i-th visible GPU; CUDA_VISIBLE_DEVICES picks them)");
    lo.gpus = cuda::device_count();
    lo.visible_devices = dist::visible_devices_from_env();
  } else if (!threads_given) {
    // The cores split between the ranks: OMP_NUM_THREADS for the libraries, --threads for ember.
    const int each = std::max(1, usable_cores() / c.nproc_per_node);
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

void adopt_checkpoint_world_size(train::TrainSettings& c, const std::string& resume) {
  if (dist::world_from_env().distributed()) return;
  double world = 1;
  try {
    const train::ResumePoint rp = train::find_resume_point(resume);
    const train::CheckpointManifest m =
        train::manifest_from_json(io::read_user_text(rp.manifest, io::kManifestFile), rp.manifest.string());
    const auto it = m.optimizer_scalars.find("fit.world_size");
    if (it != m.optimizer_scalars.end()) world = it->second;
  } catch (const Error&) {
    return;  // reported by the resume itself, with its own message
  }
  if (!(world >= 2 && world <= 4096)) return;
  c.nproc_per_node = int(world);
  fmt::print("resume     the checkpoint was written by {} ranks: starting {} ranks on this machine again\n"
             "           (as --nproc-per-node {})\n", c.nproc_per_node, c.nproc_per_node, c.nproc_per_node);
  std::fflush(stdout);
}

std::string resume_command(const TrainWorld& tw, const fs::path& run_dir) {
  const std::string plain = "ember train --resume " + run_dir.string();
  if (!tw.distributed()) return plain;
  const char* by = std::getenv("EMBER_LAUNCHED_BY");
  if (by && *by) return fmt::format("{} (it starts the {} ranks again)", plain, tw.size());
  if (tw.world.source == "mpirun") return fmt::format("mpirun -np {} {}", tw.size(), plain);
  return fmt::format("{} (it starts {} ranks on this machine), or {} ranks of it under your launcher", plain,
                     tw.size(), tw.size());
}

TrainWorld training_world(const train::TrainSettings&) {
  TrainWorld tw;
  tw.world = dist::world_from_env();
  if (tw.distributed() && !tw.leader()) {
    std::fflush(stdout);
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) ::dup2(null, STDOUT_FILENO), ::close(null);
  }
  return tw;
}

Device rank_device(const TrainWorld& tw, Device chosen, const std::string& spec) {
  if (!tw.distributed() || !chosen.is_cuda()) return chosen;
  const int n = cuda::device_count();
  if (n <= 1 || spec.find(':') != std::string::npos) return chosen;  // one GPU each (the launcher's), or asked for
  if (tw.world.local_rank >= n)
    throw DeviceError(fmt::format("rank {} is local rank {} on this machine, which has {} GPU{}", tw.world.rank,
                                  tw.world.local_rank, n, n == 1 ? "" : "s"),
                      "start at most one rank per GPU on each machine");
  return Device::cuda(tw.world.local_rank);
}

void join_world(TrainWorld& tw, Device device, int threads) {
  if (!tw.distributed()) return;
  dist::InitOptions io;
  io.device = device;
  io.world = tw.world;
  io.timeout = group_timeout();
  tw.pg = dist::init_process_group(io);
  const std::string mine =
      device.is_cpu() ? fmt::format("cpu, {} thread{}", threads, threads == 1 ? "" : "s") : device.str();
  tw.pg->store().set(fmt::format("ember/train/device/{}", tw.world.rank), mine);
  if (tw.leader()) {
    for (int r = 0; r < tw.size(); ++r) {
      const std::string where = tw.pg->describe_rank(r);  // "rank 1 (host vm, pid 12)"
      const std::string dev = tw.pg->store().get(fmt::format("ember/train/device/{}", r));
      tw.rank_devices.push_back(fmt::format("{}: {}{}", where.substr(0, where.find(' ', 5)), dev,
                                            where.find('(') == std::string::npos ? "" : " " + where.substr(where.find('('))));
    }
  }
}

fs::path shared_run_dir(TrainWorld& tw, const fs::path& mine) {
  if (!tw.distributed()) return mine;
  const std::string key = fmt::format("ember/train/run_dir/{}", tw.pg->store().next_sequence("run_dir"));
  if (tw.leader()) {
    tw.pg->store().set(key, fs::absolute(mine).string());
    return mine;
  }
  return fs::path(tw.pg->store().get(key));
}

void check_same_run(TrainWorld& tw, const train::TrainSettings& c, const data::Dataset& train,
                    const data::Dataset& test) {
  if (!tw.distributed()) return;
  try {
    dist::check_same(*tw.pg, "ember version", version());
    dist::check_same(*tw.pg, "settings", train::settings_fingerprint(c));
    dist::check_same(*tw.pg, "dataset",
                     fmt::format("{} train + {} test samples of {}x{}x{}, checksum {:016x}", train.size(), test.size(),
                                 train.channels(), train.height(), train.width(), checksum(test, checksum(train))));
  } catch (const dist::ConfigMismatchError&) {
    // Every rank refuses; rank 0 (whose store the others read the values from) leaves last.
    finish_world(tw, std::chrono::seconds(10));
    throw;
  }
}

std::string world_banner(const TrainWorld& tw, int64_t batch_size, int64_t accumulate) {
  if (!tw.distributed()) return "";
  const char* launched_by = std::getenv("EMBER_LAUNCHED_BY");
  const std::string by = launched_by && *launched_by ? launched_by : tw.world.source;
  // Banner lines stay within 80 columns.
  std::string s = fmt::format("world      {} ranks ({}, started by {})\n           global batch {} x {}{} = {} per step\n",
                              tw.size(), tw.pg->backend(), by,
                              tw.size(), batch_size, accumulate > 1 ? fmt::format(" x {}", accumulate) : "",
                              tw.size() * batch_size * accumulate);
  for (const std::string& d : tw.rank_devices) s += fmt::format("           {}\n", d);
  return s;
}

nlohmann::json world_json(const TrainWorld& tw) {
  nlohmann::json j = {{"world_size", tw.size()}, {"backend", tw.pg ? tw.pg->backend() : "none"},
                      {"launcher", tw.world.source}};
  j["ranks"] = tw.rank_devices;
  return j;
}

void apply_ddp_environment(train::FitOptions& fo) {
  if (const char* v = std::getenv("EMBER_DDP_OVERLAP")) fo.overlap_grad_reduce = std::string(v) != "0";
  if (const char* v = std::getenv("EMBER_DDP_BUCKET_KB"); v && *v) {
    long long first = 0, rest = 0;
    char tail = 0;
    if (std::sscanf(v, "%lld,%lld%c", &first, &rest, &tail) != 2 || first <= 0 || rest <= 0)
      throw UsageError(fmt::format("EMBER_DDP_BUCKET_KB must be two positive sizes in KiB, FIRST,REST (got '{}')", v),
                       "e.g. EMBER_DDP_BUCKET_KB=1024,25600 (PyTorch's defaults)");
    fo.first_bucket_bytes = size_t(first) << 10, fo.bucket_bytes = size_t(rest) << 10;
  }
}

void finish_world(TrainWorld& tw, std::chrono::seconds limit) {
  if (!tw.distributed() || !tw.pg) return;
  try {
    auto& store = tw.pg->store();
    store.set(fmt::format("ember/train/done/{}", tw.world.rank), "1");
    if (!tw.leader()) return;
    std::vector<std::string> keys;
    for (int r = 0; r < tw.size(); ++r) keys.push_back(fmt::format("ember/train/done/{}", r));
    store.wait(keys, limit);
  } catch (const dist::DistError& e) {
    warn(fmt::format("not every rank said it finished: {}", e.what()));
  }
}

}  // namespace ember::cli
