// The backends this build compiled, created by init_process_group (dist/process_group.cpp).
#pragma once

#include <memory>
#include <string>

#include "ember/dist/process_group.h"

namespace ember::dist {

#ifdef EMBER_WITH_GLOO
// Connects a full mesh of TCP pairs among the ranks through the store (keys under `prefix`).
std::shared_ptr<ProcessGroup> make_gloo_group(int rank, int size, std::chrono::milliseconds timeout,
                                              std::shared_ptr<TcpStore> store, const std::string& prefix);
#endif
#ifdef EMBER_WITH_NCCL
// Rank 0's ncclUniqueId travels through the store; `device` is this rank's CUDA device index.
std::shared_ptr<ProcessGroup> make_nccl_group(int rank, int size, std::chrono::milliseconds timeout,
                                              std::shared_ptr<TcpStore> store, const std::string& prefix,
                                              int device);
#endif

}  // namespace ember::dist
