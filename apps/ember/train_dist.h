// `ember train`'s launcher of data-parallel ranks (docs/distributed.md): --nproc-per-node starts
// the local ranks, each this same command line. What a rank does in the job (started by it, by
// mpirun or by a torchrun-style launcher) is the library's: ember/train/run_world.h.
#pragma once

#include <optional>

#include "ember/train/run_world.h"
#include "ember/train/settings.h"

namespace ember::cli {

// --nproc-per-node N > 1 in a process that is not yet a rank: runs N ranks of this same command
// line (without the flag; with --threads train::threads_per_local_rank(N) on CPUs unless given)
// and returns the job's exit code, having printed which rank failed. nullopt: this process trains
// itself.
std::optional<int> launch_local_ranks(const train::TrainSettings& c, bool threads_given);

// Ranks other than 0 send stdout to /dev/null: rank 0 prints the banner, table and summary.
void silence_other_ranks(const train::DataParallelWorld& world);

}  // namespace ember::cli
