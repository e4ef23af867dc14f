// cuDNN, loaded on first use (the first convolution on a GPU) instead of linked, so a CUDA build
// starts on a machine without cuDNN and a CPU run never maps it. Like cublas_lazy.cpp: the cuDNN
// entry points ember calls are defined here as forwarders to dlsym'ed functions of libcudnn.so.9
// (LazyLibrary, cuda/lazy_library.h), compiled with hidden visibility so a program that links
// cuDNN itself keeps its own. A missing cuDNN is a CudaError naming what was tried and the fix.
#include "cuda/runtime.h"

#ifdef EMBER_WITH_CUDNN  // defined only for the files that use cuDNN (see CMakeLists.txt)
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "cuda/lazy_library.h"
#include "ember/core/error.h"

namespace ember::cuda {
namespace {
#define EMBER_STR2(x) #x
#define EMBER_STR(x) EMBER_STR2(x)
LazyLibrary& cudnn() {
  constexpr int cuda_major = CUDART_VERSION / 1000;
  static LazyLibrary lib("libcudnn.so." EMBER_STR(CUDNN_MAJOR), "cuDNN",
                         ::ember::detail::cat("install cuDNN ", CUDNN_MAJOR, " for CUDA ", cuda_major,
                                              " with all of its libcudnn_*.so parts (pip nvidia-cudnn-cu", cuda_major,
                                              ", or apt cudnn", CUDNN_MAJOR, "-cuda-", cuda_major, ")"));
  return lib;
}
}  // namespace
}  // namespace ember::cuda

#define F(ret, name, params, args) EMBER_LAZY_FORWARD(::ember::cuda::cudnn(), ret, name, params, args)
using TD = cudnnTensorDescriptor_t;
using FD = cudnnFilterDescriptor_t;
using CD = cudnnConvolutionDescriptor_t;
using H = cudnnHandle_t;
using S = cudnnStatus_t;

extern "C" {
F(S, cudnnCreate, (H * handle), (handle))
F(S, cudnnSetStream, (H handle, cudaStream_t stream), (handle, stream))
F(const char*, cudnnGetErrorString, (S status), (status))
F(S, cudnnCreateTensorDescriptor, (TD * d), (d))
F(S, cudnnSetTensor4dDescriptor, (TD d, cudnnTensorFormat_t format, cudnnDataType_t dt, int n, int c, int h, int w),
  (d, format, dt, n, c, h, w))
F(S, cudnnDestroyTensorDescriptor, (TD d), (d))
F(S, cudnnCreateFilterDescriptor, (FD * d), (d))
F(S, cudnnSetFilter4dDescriptor, (FD d, cudnnDataType_t dt, cudnnTensorFormat_t format, int k, int c, int h, int w),
  (d, dt, format, k, c, h, w))
F(S, cudnnDestroyFilterDescriptor, (FD d), (d))
F(S, cudnnCreateConvolutionDescriptor, (CD * d), (d))
F(S, cudnnSetConvolution2dDescriptor,
  (CD d, int pad_h, int pad_w, int u, int v, int dil_h, int dil_w, cudnnConvolutionMode_t mode, cudnnDataType_t ct),
  (d, pad_h, pad_w, u, v, dil_h, dil_w, mode, ct))
F(S, cudnnSetConvolutionGroupCount, (CD d, int groups), (d, groups))
F(S, cudnnSetConvolutionMathType, (CD d, cudnnMathType_t math), (d, math))
F(S, cudnnDestroyConvolutionDescriptor, (CD d), (d))
F(S, cudnnAddTensor, (H h, const void* alpha, const TD a_desc, const void* a, const void* beta, const TD c_desc, void* c),
  (h, alpha, a_desc, a, beta, c_desc, c))
// forward
F(S, cudnnGetConvolutionForwardAlgorithmMaxCount, (H h, int* count), (h, count))
F(S, cudnnGetConvolutionForwardAlgorithm_v7,
  (H h, const TD x, const FD w, const CD conv, const TD y, const int requested, int* returned,
   cudnnConvolutionFwdAlgoPerf_t* perf),
  (h, x, w, conv, y, requested, returned, perf))
F(S, cudnnGetConvolutionForwardWorkspaceSize,
  (H h, const TD x, const FD w, const CD conv, const TD y, cudnnConvolutionFwdAlgo_t algo, size_t* bytes),
  (h, x, w, conv, y, algo, bytes))
F(S, cudnnConvolutionForward,
  (H h, const void* alpha, const TD xd, const void* x, const FD wd, const void* w, const CD conv,
   cudnnConvolutionFwdAlgo_t algo, void* ws, size_t ws_bytes, const void* beta, const TD yd, void* y),
  (h, alpha, xd, x, wd, w, conv, algo, ws, ws_bytes, beta, yd, y))
// backward data
F(S, cudnnGetConvolutionBackwardDataAlgorithmMaxCount, (H h, int* count), (h, count))
F(S, cudnnGetConvolutionBackwardDataAlgorithm_v7,
  (H h, const FD w, const TD dy, const CD conv, const TD dx, const int requested, int* returned,
   cudnnConvolutionBwdDataAlgoPerf_t* perf),
  (h, w, dy, conv, dx, requested, returned, perf))
F(S, cudnnGetConvolutionBackwardDataWorkspaceSize,
  (H h, const FD w, const TD dy, const CD conv, const TD dx, cudnnConvolutionBwdDataAlgo_t algo, size_t* bytes),
  (h, w, dy, conv, dx, algo, bytes))
F(S, cudnnConvolutionBackwardData,
  (H h, const void* alpha, const FD wd, const void* w, const TD dyd, const void* dy, const CD conv,
   cudnnConvolutionBwdDataAlgo_t algo, void* ws, size_t ws_bytes, const void* beta, const TD dxd, void* dx),
  (h, alpha, wd, w, dyd, dy, conv, algo, ws, ws_bytes, beta, dxd, dx))
// backward filter
F(S, cudnnGetConvolutionBackwardFilterAlgorithmMaxCount, (H h, int* count), (h, count))
F(S, cudnnGetConvolutionBackwardFilterAlgorithm_v7,
  (H h, const TD x, const TD dy, const CD conv, const FD dw, const int requested, int* returned,
   cudnnConvolutionBwdFilterAlgoPerf_t* perf),
  (h, x, dy, conv, dw, requested, returned, perf))
F(S, cudnnGetConvolutionBackwardFilterWorkspaceSize,
  (H h, const TD x, const TD dy, const CD conv, const FD dw, cudnnConvolutionBwdFilterAlgo_t algo, size_t* bytes),
  (h, x, dy, conv, dw, algo, bytes))
F(S, cudnnConvolutionBackwardFilter,
  (H h, const void* alpha, const TD xd, const void* x, const TD dyd, const void* dy, const CD conv,
   cudnnConvolutionBwdFilterAlgo_t algo, void* ws, size_t ws_bytes, const void* beta, const FD dwd, void* dw),
  (h, alpha, xd, x, dyd, dy, conv, algo, ws, ws_bytes, beta, dwd, dw))
}
#undef F

namespace ember::cuda {
// torch.backends.cudnn.version()'s answer: the cuDNN this process loads, loaded now if it was not
// yet (as the first convolution would); 0 when none loads. cudnnGetVersion is asked by name so a
// library of another major still answers.
int runtime_cudnn_version() {
  try {
    using Fn = size_t (*)();
    return static_cast<int>(reinterpret_cast<Fn>(cudnn().symbol("cudnnGetVersion"))());
  } catch (const Error&) {
    return 0;
  }
}
}  // namespace ember::cuda

#else  // a build without cuDNN's headers loads none

namespace ember::cuda {
int runtime_cudnn_version() { return 0; }
}  // namespace ember::cuda

#endif  // EMBER_WITH_CUDNN
