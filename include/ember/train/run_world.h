// The data-parallel job a training run belongs to (docs/distributed.md), as the library runs it
// for every caller: this process's place (torchrun's or mpirun's variables, or `ember train
// --nproc-per-node`'s), its device (rank i on the i-th visible GPU), the process group (gloo for
// the CPU, nccl for CUDA), rank 0's run directory for every rank, the start-up check that every
// rank runs the same settings, data and ember, the banner's lines, config.json's "distributed"
// object and the command that resumes the run. One process is a world of size 1, where every
// call is a no-op.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ember/dist/env.h"
#include "ember/dist/process_group.h"
#include "ember/train/run_plan.h"

namespace ember::train {

class DataParallelWorld : public RunWorld {
 public:
  DataParallelWorld();                             // from the environment (dist::world_from_env)
  explicit DataParallelWorld(dist::WorldInfo world);
  ~DataParallelWorld() override;

  bool distributed() const { return world_.world_size > 1; }
  bool leader() const override { return world_.rank == 0; }
  int size() const override { return world_.world_size; }
  int rank() const override { return world_.rank; }
  const dist::WorldInfo& info() const { return world_; }
  dist::ProcessGroup* process_group() const { return pg_.get(); }

  // A job that sees several GPUs gives rank i cuda:LOCAL_RANK; DeviceError past the last GPU.
  Device rank_device(Device chosen, const std::string& spec) override;
  // Meets the other ranks (timeout EMBER_DIST_TIMEOUT_MS, default 300 s) and posts this rank's
  // device for rank 0's banner.
  void join(Device device, int threads) override;
  std::filesystem::path shared_run_dir(const std::filesystem::path& mine) override;
  // Refuses (ConfigMismatchError on every rank, naming the difference) ranks whose settings
  // (settings_fingerprint), data (sizes and a checksum of the pixels, labels and photo names) or
  // ember version differ from rank 0's.
  void check_same_run(const TrainSettings& s, const data::Dataset& train, const data::Dataset& test) override;
  std::string config_json() const override;
  // The process group, and the measuring aids of docs/distributed.md: EMBER_DDP_OVERLAP=0
  // all-reduces after backward instead of during it; EMBER_DDP_BUCKET_KB=FIRST,REST sets the bucket
  // sizes (PyTorch's first bucket and bucket_cap_mb; default 1024,25600). A malformed value is a
  // SettingError naming the variable.
  void configure(FitOptions& fit) override;

  // The banner's "world" lines ("" for one process).
  std::string banner(int64_t batch_size, int64_t accumulate) const;
  // The command that continues the run after a stop: `ember train --resume RUN` (which starts the
  // ranks again on one machine), with the launcher's form when mpirun or torchrun started them.
  std::string resume_command(const std::filesystem::path& run_dir) const override;
  // The end of a rank's run: the others say they are done and rank 0 waits for them (bounded), so
  // the store it serves outlives every rank's last collective. Failures are warnings.
  void finish() override { finish(std::chrono::seconds(60)); }
  void finish(std::chrono::seconds limit);

 private:
  dist::WorldInfo world_;
  std::shared_ptr<dist::ProcessGroup> pg_;
  std::vector<std::string> rank_devices_;  // rank 0 only: "rank 1: cpu, 1 thread (host vm, pid 12)"
};

// The number of ranks that wrote the checkpoint `resume` names (its fit_state.world_size): a run of
// several ranks resumes with as many again. 1 for a checkpoint of one process and for one that
// cannot be read (the resume itself then reports it).
int checkpoint_world_size(const std::string& resume);

// `ember train --resume RUN` in a process that is not a rank of a job (no torchrun / mpirun
// variables) and without --nproc-per-node (`nproc_given`): the local ranks to start again for a
// checkpoint of several ranks (its world size); 0 when the resume runs in this process. ember.fit,
// which trains in its own process, is refused such a run by plan_run, with this command as the hint.
int local_ranks_to_resume(const std::string& resume, bool nproc_given);

// The threads each of `nproc_per_node` local CPU ranks gets when --threads is not given: the
// usable cores split between them (at least 1).
int threads_per_local_rank(int nproc_per_node);

}  // namespace ember::train
