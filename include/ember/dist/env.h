// Where this process sits in a data-parallel job, read from the launcher's environment: torchrun's variables
// (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; not Slurm's SLURM_PROCID, ...)
// or Open MPI's (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE, as set by `mpirun`), else MPICH's and
// Intel MPI's (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS).
#pragma once

#include <functional>
#include <string>

namespace ember::dist {

struct WorldInfo {
  int rank = 0;              // 0 .. world_size-1
  int world_size = 1;
  int local_rank = 0;        // index among the ranks of this machine (selects the GPU)
  int local_world_size = 1;  // ranks on this machine
  std::string master_addr;   // host of rank 0's TCP store
  int master_port = 0;
  std::string source = "none";  // "torchrun", "mpirun" or "none" (a single process)

  bool distributed() const { return world_size > 1; }
};

// The default MASTER_PORT (torchrun's).
inline constexpr int kDefaultMasterPort = 29500;

// Reads the world from `get` (getenv by default). torchrun's variables win when both sets are
// present and must agree with Open MPI's. Without LOCAL_RANK/LOCAL_WORLD_SIZE (nor MPI's) every
// rank is taken to be on this machine (local rank = rank). MASTER_ADDR defaults to 127.0.0.1 only
// when every rank is on this machine (LOCAL_WORLD_SIZE == WORLD_SIZE), MASTER_PORT to 29500. Under
// torchrun's agent store (TORCHELASTIC_USE_AGENT_STORE=True, which holds MASTER_PORT) the port is MASTER_PORT+1. Throws DistError
// naming the variable, its value and the fix for a non-integer, negative or inconsistent value
// (RANK >= WORLD_SIZE, LOCAL_RANK >= LOCAL_WORLD_SIZE, torchrun and MPI disagreeing, a multi-node
// job without MASTER_ADDR).
using EnvGetter = std::function<const char*(const char*)>;
WorldInfo world_from_env(const EnvGetter& get = {});

}  // namespace ember::dist
