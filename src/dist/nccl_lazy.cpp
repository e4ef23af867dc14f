// NCCL, loaded on first use instead of linked, like cuBLAS and cuDNN (cuda/lazy_library.h): a CUDA
// build of ember then starts, and trains on one GPU, where libnccl is not installed; only
// init_process_group with the nccl backend needs it, and then says what was tried and how to get
// it. These forwarders are compiled with hidden visibility (cmake/ember_dist.cmake), so a program
// that links NCCL itself keeps calling its own.
#include <nccl.h>

#include "cuda/lazy_library.h"

namespace ember::dist {
namespace {
#define EMBER_STR2(x) #x
#define EMBER_STR(x) EMBER_STR2(x)
cuda::LazyLibrary& nccl() {
  static cuda::LazyLibrary lib("libnccl.so." EMBER_STR(NCCL_MAJOR), "NCCL",
                               "install NCCL " EMBER_STR(NCCL_MAJOR) " (the CUDA toolkit's libnccl, the libnccl2 "
                               "package, or pip nvidia-nccl-cu13) and make it findable (LD_LIBRARY_PATH)");
  return lib;
}
}  // namespace
}  // namespace ember::dist

#define EMBER_NCCL_FORWARD(ret, name, params, args) \
  EMBER_LAZY_FORWARD(::ember::dist::nccl(), ret, name, params, args)

extern "C" {
EMBER_NCCL_FORWARD(ncclResult_t, ncclGetVersion, (int* version), (version))
EMBER_NCCL_FORWARD(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * uniqueId), (uniqueId))
EMBER_NCCL_FORWARD(ncclResult_t, ncclCommInitRankConfig,
                   (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config),
                   (comm, nranks, commId, rank, config))
EMBER_NCCL_FORWARD(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError), (comm, asyncError))
EMBER_NCCL_FORWARD(ncclResult_t, ncclCommAbort, (ncclComm_t comm), (comm))
EMBER_NCCL_FORWARD(ncclResult_t, ncclCommFinalize, (ncclComm_t comm), (comm))
EMBER_NCCL_FORWARD(ncclResult_t, ncclCommDestroy, (ncclComm_t comm), (comm))
EMBER_NCCL_FORWARD(const char*, ncclGetErrorString, (ncclResult_t result), (result))
EMBER_NCCL_FORWARD(const char*, ncclGetLastError, (ncclComm_t comm), (comm))
EMBER_NCCL_FORWARD(ncclResult_t, ncclAllReduce,
                   (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                    ncclComm_t comm, cudaStream_t stream),
                   (sendbuff, recvbuff, count, datatype, op, comm, stream))
EMBER_NCCL_FORWARD(ncclResult_t, ncclBroadcast,
                   (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                    ncclComm_t comm, cudaStream_t stream),
                   (sendbuff, recvbuff, count, datatype, root, comm, stream))
EMBER_NCCL_FORWARD(ncclResult_t, ncclAllGather,
                   (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,
                    cudaStream_t stream),
                   (sendbuff, recvbuff, sendcount, datatype, comm, stream))
}
