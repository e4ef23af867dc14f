// The data-parallel side of `ember train` (docs/distributed.md): --nproc-per-node starts the local
// ranks; a rank (started by it, by mpirun or by a torchrun-style launcher) joins the process group,
// learns rank 0's run directory, is refused when its settings, data or ember build differ from
// rank 0's, and prints nothing on stdout unless it is rank 0.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "ember/core/device.h"
#include "ember/data/dataset.h"
#include "ember/dist/env.h"
#include "ember/dist/process_group.h"
#include "ember/train/fit_types.h"
#include "ember/train/settings.h"

namespace ember::cli {

struct TrainWorld {
  dist::WorldInfo world;                   // from the environment; a single process when world_size is 1
  std::shared_ptr<dist::ProcessGroup> pg;  // joined after the device is known; null for one process
  std::vector<std::string> rank_devices;   // rank 0 only: "cpu, 1 thread (host vm, pid 12)" per rank

  bool distributed() const { return world.world_size > 1; }
  bool leader() const { return world.rank == 0; }
  int size() const { return world.world_size; }
};

// --nproc-per-node N > 1 in a process that is not yet a rank: runs N ranks of this same command
// line (without the flag; with --threads cores/N on CPUs unless given) and returns the job's exit
// code, having printed which rank failed. nullopt: this process trains itself.
std::optional<int> launch_local_ranks(const train::TrainSettings& c, bool threads_given);

// `ember train --resume RUN` without --nproc-per-node, in a process that is not a rank: a run
// whose checkpoint was written by W > 1 ranks resumes with W local ranks again (sets
// c.nproc_per_node, says so); a checkpoint of one process, or one that cannot be read, changes
// nothing (the resume itself reports a bad checkpoint). Under mpirun or torchrun the launcher
// decides; the engine refuses another world size with the reason.
void adopt_checkpoint_world_size(train::TrainSettings& c, const std::string& resume);

// The command that continues this run after a stop, for the "resume with:" line: `ember train
// --resume RUN` (which starts the ranks again on one machine), with the launcher's form when
// mpirun or a torchrun-style launcher started the ranks.
std::string resume_command(const TrainWorld& tw, const std::filesystem::path& run_dir);

// This process's place in the job (torchrun's or mpirun's variables; one process without them).
// Ranks other than 0 send stdout to /dev/null: rank 0 prints the banner, table and summary.
TrainWorld training_world(const train::TrainSettings& c);

// The device of this rank: a job that sees several GPUs gives rank i cuda:LOCAL_RANK.
Device rank_device(const TrainWorld& tw, Device chosen, const std::string& spec);

// Meets the other ranks (gloo for the CPU, nccl for CUDA; timeout EMBER_DIST_TIMEOUT_MS, default
// 300 s) and posts this rank's device for rank 0's banner.
void join_world(TrainWorld& tw, Device device, int threads);

// Rank 0's run directory, for every rank (rank 0 passes its own).
std::filesystem::path shared_run_dir(TrainWorld& tw, const std::filesystem::path& mine);

// Refuses (ConfigMismatchError on every rank, naming the difference) ranks whose settings
// (train::settings_fingerprint), data (sizes and a checksum of the pixels and labels) or ember
// version differ from rank 0's.
void check_same_run(TrainWorld& tw, const train::TrainSettings& c, const data::Dataset& train,
                    const data::Dataset& test);

// The banner's lines and config.json's "distributed" object.
std::string world_banner(const TrainWorld& tw, int64_t batch_size, int64_t accumulate);
nlohmann::json world_json(const TrainWorld& tw);

// Measuring aids for docs/distributed.md: EMBER_DDP_OVERLAP=0 all-reduces after backward instead of
// during it; EMBER_DDP_BUCKET_KB=FIRST,REST sets the bucket sizes (PyTorch's first bucket and
// bucket_cap_mb; default 1024,25600). A malformed value is a UsageError naming the variable.
void apply_ddp_environment(train::FitOptions& fo);

// The end of a rank's run: the others say they are done and rank 0 waits for them (bounded), so
// the store it serves outlives every rank's last collective.
void finish_world(TrainWorld& tw, std::chrono::seconds limit = std::chrono::seconds(60));

}  // namespace ember::cli
