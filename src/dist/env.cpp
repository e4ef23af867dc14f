// Parses the launcher's environment into a WorldInfo: torchrun's variables, Open MPI's, or none.
// Every inconsistency is an error that names both values, because a wrong rank silently trains
// on the wrong shard or waits forever for a peer that will never come.
#include "ember/dist/env.h"

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>

#include "ember/dist/error.h"

namespace ember::dist {
namespace {

std::optional<int> read_int(const EnvGetter& get, const char* name, int min_value) {
  const char* v = get(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v, &end, 10);
  if (errno != 0 || *end != '\0' || x < min_value || x > 1000000) {
    throw DistError(detail::cat("environment variable ", name, "='", v, "' is not an integer >= ", min_value),
                    detail::cat("set ", name, " to a whole number (the launcher normally does this)"));
  }
  return static_cast<int>(x);
}

void check_agree(const char* a, std::optional<int> va, const char* b, std::optional<int> vb) {
  if (va && vb && *va != *vb) {
    throw DistError(detail::cat("inconsistent launch environment: ", a, "=", *va, " but ", b, "=", *vb),
                    "launch with one launcher (torchrun-style variables or mpirun), or make them agree");
  }
}

}  // namespace

WorldInfo world_from_env(const EnvGetter& get_in) {
  const EnvGetter get = get_in ? get_in : EnvGetter([](const char* n) -> const char* { return std::getenv(n); });
  const auto rank = read_int(get, "RANK", 0);
  const auto world = read_int(get, "WORLD_SIZE", 1);
  const auto local_rank = read_int(get, "LOCAL_RANK", 0);
  const auto local_world = read_int(get, "LOCAL_WORLD_SIZE", 1);
  // Open MPI's names, else MPICH's and Intel MPI's (PMI_RANK/PMI_SIZE, MPI_LOCALRANKID/MPI_LOCALNRANKS).
  const bool pmi = get("OMPI_COMM_WORLD_RANK") == nullptr && get("OMPI_COMM_WORLD_SIZE") == nullptr &&
                   (get("PMI_RANK") != nullptr || get("PMI_SIZE") != nullptr);
  const char* mpi_rank_name = pmi ? "PMI_RANK" : "OMPI_COMM_WORLD_RANK";
  const char* mpi_world_name = pmi ? "PMI_SIZE" : "OMPI_COMM_WORLD_SIZE";
  const auto mpi_rank = read_int(get, mpi_rank_name, 0);
  const auto mpi_world = read_int(get, mpi_world_name, 1);
  const auto mpi_local_rank = read_int(get, pmi ? "MPI_LOCALRANKID" : "OMPI_COMM_WORLD_LOCAL_RANK", 0);
  const auto mpi_local_world = read_int(get, pmi ? "MPI_LOCALNRANKS" : "OMPI_COMM_WORLD_LOCAL_SIZE", 1);
  const auto port = read_int(get, "MASTER_PORT", 1);

  WorldInfo w;
  if (rank || world) {
    if (!rank || !world) {
      throw DistError(detail::cat("incomplete launch environment: ", rank ? "RANK" : "WORLD_SIZE", " is set but ",
                                  rank ? "WORLD_SIZE" : "RANK", " is not"),
                      "set both RANK and WORLD_SIZE (and MASTER_ADDR/MASTER_PORT), or neither");
    }
    check_agree("RANK", rank, mpi_rank_name, mpi_rank);
    check_agree("WORLD_SIZE", world, mpi_world_name, mpi_world);
    check_agree("LOCAL_RANK", local_rank, "OMPI_COMM_WORLD_LOCAL_RANK", mpi_local_rank);
    check_agree("LOCAL_WORLD_SIZE", local_world, "OMPI_COMM_WORLD_LOCAL_SIZE", mpi_local_world);
    w.rank = *rank;
    w.world_size = *world;
    if (!local_rank && !local_world && !mpi_local_rank && !mpi_local_world) {
      // Nothing says how the ranks spread over machines: assume all on this one (what a plain
      // `RANK=i WORLD_SIZE=n` loop in a shell does); a multi-node job sets MASTER_ADDR anyway.
      w.local_rank = *rank;
      w.local_world_size = *world;
    } else {
      w.local_rank = local_rank.value_or(mpi_local_rank.value_or(0));
      w.local_world_size = local_world.value_or(mpi_local_world.value_or(*world));
    }
    w.source = "torchrun";
  } else if (mpi_rank || mpi_world) {
    if (!mpi_rank || !mpi_world) {
      throw DistError(detail::cat("incomplete MPI environment: only one of ", mpi_rank_name, " and ", mpi_world_name,
                                  " is set"),
                      "start the ranks with mpirun, or set RANK and WORLD_SIZE yourself");
    }
    w.rank = *mpi_rank;
    w.world_size = *mpi_world;
    w.local_rank = mpi_local_rank.value_or(0);
    w.local_world_size = mpi_local_world.value_or(1);
    w.source = "mpirun";
  } else {
    if (local_rank || local_world) {
      throw DistError("LOCAL_RANK/LOCAL_WORLD_SIZE are set but RANK and WORLD_SIZE are not",
                      "set RANK and WORLD_SIZE too (torchrun sets all four)");
    }
    return w;  // one process
  }
  if (w.rank >= w.world_size) {
    throw DistError(detail::cat("rank ", w.rank, " is out of range for a world of ", w.world_size,
                                " (ranks are 0..", w.world_size - 1, ")"),
                    "give every process a distinct rank below WORLD_SIZE");
  }
  if (w.local_rank >= w.local_world_size) {
    throw DistError(detail::cat("local rank ", w.local_rank, " is out of range for ", w.local_world_size,
                                " local ranks (LOCAL_WORLD_SIZE)"),
                    "LOCAL_RANK must be below LOCAL_WORLD_SIZE");
  }
  if (w.local_world_size > w.world_size) {
    throw DistError(detail::cat("LOCAL_WORLD_SIZE=", w.local_world_size, " is larger than WORLD_SIZE=", w.world_size),
                    "the ranks of one machine are part of the world: LOCAL_WORLD_SIZE <= WORLD_SIZE");
  }
  const char* addr = get("MASTER_ADDR");
  if (addr != nullptr && *addr != '\0') {
    w.master_addr = addr;
  } else if (w.local_world_size == w.world_size) {
    w.master_addr = "127.0.0.1";  // every rank is on this machine
  } else {
    throw DistError(detail::cat("MASTER_ADDR is not set, and the ", w.world_size, " ranks span several machines (",
                                w.local_world_size, " on this one)"),
                    "export MASTER_ADDR=<host of rank 0> (and MASTER_PORT) on every rank, e.g. mpirun -x MASTER_ADDR");
  }
  w.master_port = port.value_or(kDefaultMasterPort);
  // torchrun's agent serves its own store (PyTorch's protocol) at MASTER_PORT and tells its workers
  // so (TORCHELASTIC_USE_AGENT_STORE=True); ember's rank 0 then serves on the next port.
  const char* agent_store = get("TORCHELASTIC_USE_AGENT_STORE");
  if (agent_store != nullptr && std::string(agent_store) == "True") ++w.master_port;
  if (w.master_port > 65535) {
    throw DistError(detail::cat("MASTER_PORT=", w.master_port, " is not a TCP port"), "use a port in 1..65535");
  }
  return w;
}

}  // namespace ember::dist
