// The launch environment: torchrun's and Open MPI's variables, defaults, and the errors for values
// that cannot be right (a rank outside the world, two launchers that disagree).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include <ember/dist/env.h>
#include <ember/dist/error.h>

#include "support/errors.h"

using namespace ember;
using ember::test::expect_error;

namespace {
dist::WorldInfo world(const std::map<std::string, std::string>& env) {
  return dist::world_from_env([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}
}  // namespace

TEST(DistEnv, NoVariablesIsOneProcess) {
  const auto w = world({});
  EXPECT_EQ(w.rank, 0);
  EXPECT_EQ(w.world_size, 1);
  EXPECT_FALSE(w.distributed());
  EXPECT_EQ(w.source, "none");
}

TEST(DistEnv, Torchrun) {
  const auto w = world({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
                        {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "1234"}});
  EXPECT_EQ(w.rank, 3);
  EXPECT_EQ(w.world_size, 8);
  EXPECT_EQ(w.local_rank, 1);
  EXPECT_EQ(w.local_world_size, 2);
  EXPECT_EQ(w.master_addr, "node0");
  EXPECT_EQ(w.master_port, 1234);
  EXPECT_EQ(w.source, "torchrun");
}

TEST(DistEnv, MpirunOnOneMachineDefaultsToLoopback) {
  const auto w = world({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(w.rank, 1);
  EXPECT_EQ(w.world_size, 2);
  EXPECT_EQ(w.local_rank, 1);
  EXPECT_EQ(w.source, "mpirun");
  EXPECT_EQ(w.master_addr, "127.0.0.1");
  EXPECT_EQ(w.master_port, dist::kDefaultMasterPort);
}

TEST(DistEnv, MpichAndIntelMpiPmiVariables) {
  const auto w = world({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "4"}});
  EXPECT_EQ(w.rank, 2);
  EXPECT_EQ(w.world_size, 4);
  EXPECT_EQ(w.local_rank, 0);
  EXPECT_EQ(w.source, "mpirun");
  expect_error<dist::DistError>([] { world({{"PMI_RANK", "1"}}); }, "PMI_SIZE");
  expect_error<dist::DistError>([] { world({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"PMI_RANK", "1"}, {"PMI_SIZE", "2"}}); },
                                "PMI_RANK=1");
}

TEST(DistEnv, TorchrunAgentStoreTakesMasterPortSoEmberUsesTheNext) {
  const auto w = world({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "29500"},
                        {"TORCHELASTIC_USE_AGENT_STORE", "True"}});
  EXPECT_EQ(w.master_port, 29501);
  EXPECT_EQ(world({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "29500"},
                   {"TORCHELASTIC_USE_AGENT_STORE", "False"}}).master_port, 29500);
}

TEST(DistEnv, InconsistentValuesAreRefused) {
  expect_error<dist::DistError>([] { world({{"RANK", "2"}, {"WORLD_SIZE", "2"}}); }, "rank 2 is out of range");
  expect_error<dist::DistError>([] { world({{"RANK", "0"}}); }, "WORLD_SIZE");
  expect_error<dist::DistError>([] { world({{"RANK", "x"}, {"WORLD_SIZE", "2"}}); }, "RANK='x'");
  expect_error<dist::DistError>([] { world({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}); }, "RANK='-1'");
  expect_error<dist::DistError>(
      [] { world({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}}); },
      "RANK=0 but OMPI_COMM_WORLD_RANK=1");
  expect_error<dist::DistError>(
      [] { world({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}}); },
      "local rank 2");
  expect_error<dist::DistError>([] { world({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "4"}}); },
                                "LOCAL_WORLD_SIZE=4 is larger than WORLD_SIZE=2");
  expect_error<dist::DistError>([] { world({{"LOCAL_RANK", "0"}}); }, "RANK and WORLD_SIZE are not");
  expect_error<dist::DistError>([] { world({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}); },
                                "MASTER_PORT=70000");
}

TEST(DistEnv, WithoutLocalVariablesAllRanksAreLocal) {
  const auto w = world({{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  EXPECT_EQ(w.local_rank, 1);
  EXPECT_EQ(w.local_world_size, 2);
  EXPECT_EQ(w.master_addr, "127.0.0.1");
}

TEST(DistEnv, SeveralMachinesNeedMasterAddr) {
  const std::string msg = expect_error<dist::DistError>(
      [] { world({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"}}); },
      "MASTER_ADDR is not set");
  EXPECT_EQ(world({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"},
                   {"MASTER_ADDR", "10.0.0.1"}})
                .master_addr,
            "10.0.0.1");
}
