// The data-parallel job of a training run (ember/train/run_world.h). Moved from apps/ember's
// train_dist.cpp: the CLI keeps only the launcher that starts its own ranks (--nproc-per-node).
#include "ember/train/run_world.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "ember/cuda.h"
#include "ember/dist/error.h"
#include "ember/io/user_file.h"
#include "ember/train/checkpoint.h"
#include "ember/train/resume.h"
#include "ember/train/wording.h"

namespace ember::train {
namespace fs = std::filesystem;
namespace {

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

DataParallelWorld::DataParallelWorld() : DataParallelWorld(dist::world_from_env()) {}
DataParallelWorld::DataParallelWorld(dist::WorldInfo world) : world_(std::move(world)) {}
DataParallelWorld::~DataParallelWorld() = default;

Device DataParallelWorld::rank_device(Device chosen, const std::string& spec) {
  if (!distributed() || !chosen.is_cuda()) return chosen;
  const int n = cuda::device_count();
  if (n <= 1 || spec.find(':') != std::string::npos) return chosen;  // one GPU each (the launcher's), or asked for
  if (world_.local_rank >= n)
    throw DeviceError(fmt::format("rank {} is local rank {} on this machine, which has {} GPU{}", world_.rank,
                                  world_.local_rank, n, n == 1 ? "" : "s"),
                      "start at most one rank per GPU on each machine");
  return Device::cuda(world_.local_rank);
}

void DataParallelWorld::join(Device device, int threads) {
  if (!distributed()) return;
  dist::InitOptions io;
  io.device = device;
  io.world = world_;
  io.timeout = group_timeout();
  pg_ = dist::init_process_group(io);
  const std::string mine =
      device.is_cpu() ? fmt::format("cpu, {} thread{}", threads, threads == 1 ? "" : "s") : device.str();
  pg_->store().set(fmt::format("ember/train/device/{}", world_.rank), mine);
  if (leader()) {
    for (int r = 0; r < size(); ++r) {
      const std::string where = pg_->describe_rank(r);  // "rank 1 (host vm, pid 12)"
      const std::string dev = pg_->store().get(fmt::format("ember/train/device/{}", r));
      rank_devices_.push_back(fmt::format("{}: {}{}", where.substr(0, where.find(' ', 5)), dev,
                                          where.find('(') == std::string::npos ? "" : " " + where.substr(where.find('('))));
    }
  }
}

fs::path DataParallelWorld::shared_run_dir(const fs::path& mine) {
  if (!distributed()) return mine;
  const std::string key = fmt::format("ember/train/run_dir/{}", pg_->store().next_sequence("run_dir"));
  if (leader()) {
    pg_->store().set(key, fs::absolute(mine).string());
    return mine;
  }
  return fs::path(pg_->store().get(key));
}

void DataParallelWorld::check_same_run(const TrainSettings& c, const data::Dataset& train, const data::Dataset& test) {
  if (!distributed()) return;
  try {
    dist::check_same(*pg_, "ember version", version());
    dist::check_same(*pg_, "settings", settings_fingerprint(c));
    dist::check_same(*pg_, "dataset",
                     fmt::format("{} train + {} test samples of {}x{}x{}, checksum {:016x}", train.size(), test.size(),
                                 train.channels(), train.height(), train.width(), checksum(test, checksum(train))));
  } catch (const dist::ConfigMismatchError&) {
    // Every rank refuses; rank 0 (whose store the others read the values from) leaves last.
    finish(std::chrono::seconds(10));
    throw;
  }
}

std::string DataParallelWorld::config_json() const {
  if (!distributed()) return "";
  nlohmann::json j = {{"world_size", size()}, {"backend", pg_ ? pg_->backend() : "none"}, {"launcher", world_.source}};
  j["ranks"] = rank_devices_;
  return j.dump();
}

void DataParallelWorld::configure(FitOptions& fo) {
  fo.process_group = pg_.get();
  if (const char* v = std::getenv("EMBER_DDP_OVERLAP")) fo.overlap_grad_reduce = std::string(v) != "0";
  if (const char* v = std::getenv("EMBER_DDP_BUCKET_KB"); v && *v) {
    long long first = 0, rest = 0;
    char tail = 0;
    if (std::sscanf(v, "%lld,%lld%c", &first, &rest, &tail) != 2 || first <= 0 || rest <= 0)
      throw SettingError(fmt::format("EMBER_DDP_BUCKET_KB must be two positive sizes in KiB, FIRST,REST (got '{}')", v),
                         "e.g. EMBER_DDP_BUCKET_KB=1024,25600 (PyTorch's defaults)");
    fo.first_bucket_bytes = size_t(first) << 10, fo.bucket_bytes = size_t(rest) << 10;
  }
}

std::string DataParallelWorld::banner(int64_t batch_size, int64_t accumulate) const {
  if (!distributed()) return "";
  const char* launched_by = std::getenv("EMBER_LAUNCHED_BY");
  const std::string by = launched_by && *launched_by ? launched_by : world_.source;
  // Banner lines stay within 80 columns.
  std::string s = fmt::format("world      {} ranks ({}, started by {})\n           global batch {} x {}{} = {} per step\n",
                              size(), pg_ ? pg_->backend() : "none", by, size(), batch_size,
                              accumulate > 1 ? fmt::format(" x {}", accumulate) : "", size() * batch_size * accumulate);
  for (const std::string& d : rank_devices_) s += fmt::format("           {}\n", d);
  return s;
}

std::string DataParallelWorld::resume_command(const fs::path& run_dir) const {
  const std::string plain = "ember train --resume " + run_dir.string();
  if (!distributed()) return plain;
  const char* by = std::getenv("EMBER_LAUNCHED_BY");
  if (by && *by) return fmt::format("{} (it starts the {} ranks again)", plain, size());
  if (world_.source == "mpirun") return fmt::format("mpirun -np {} {}", size(), plain);
  return fmt::format("{} (it starts {} ranks on this machine), or {} ranks of it under your launcher", plain, size(),
                     size());
}

void DataParallelWorld::finish(std::chrono::seconds limit) {
  if (!distributed() || !pg_) return;
  try {
    auto& store = pg_->store();
    store.set(fmt::format("ember/train/done/{}", world_.rank), "1");
    if (!leader()) return;
    std::vector<std::string> keys;
    for (int r = 0; r < size(); ++r) keys.push_back(fmt::format("ember/train/done/{}", r));
    store.wait(keys, limit);
  } catch (const dist::DistError& e) {
    warn(fmt::format("not every rank said it finished: {}", e.what()));
  }
}

int checkpoint_world_size(const std::string& resume) {
  try {
    const ResumePoint rp = find_resume_point(resume);
    const CheckpointManifest m = manifest_from_json(io::read_user_text(rp.manifest, io::kManifestFile),
                                                    rp.manifest.string());
    return m.fit.world_size >= 2 && m.fit.world_size <= 4096 ? int(m.fit.world_size) : 1;
  } catch (const Error&) {
    return 1;  // reported by the resume itself, with its own message
  }
}

int local_ranks_to_resume(const std::string& resume, bool nproc_given) {
  if (resume.empty() || nproc_given || dist::world_from_env().distributed()) return 0;
  const int w = checkpoint_world_size(resume);
  return w > 1 ? w : 0;
}

int threads_per_local_rank(int nproc_per_node) {
  cpu_set_t set;
  const int cores = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  return std::max(1, cores / std::max(1, nproc_per_node));
}

}  // namespace ember::train
