// A vendor library (cuBLAS, cuDNN) opened with dlopen on first use instead of linked, so a CUDA
// build starts where the library is absent and a CPU run never maps it. Used by cublas_lazy.cpp
// and cudnn_lazy.cpp, which define the vendor entry points ember calls as forwarders.
#pragma once

#include <mutex>
#include <string>

namespace ember::cuda {

class LazyLibrary {
 public:
  // soname: "libcudnn.so.9"; what: "cuDNN"; install: how to get it, for the error message.
  LazyLibrary(const char* soname, const char* what, std::string install);
  // The handle, loaded once: the usual dlopen search (LD_LIBRARY_PATH, RUNPATH, ld.so cache), then
  // the directory libember lives in, $CUDA_HOME/lib64, /usr/local/cuda/lib64 and lib. Throws
  // CudaError naming every attempt and the fix when none loads.
  void* handle();
  // dlsym in handle(); throws CudaError when the symbol is missing (a library of another version).
  void* symbol(const char* name);

 private:
  const char* soname_;
  const char* what_;
  std::string install_;
  std::once_flag once_;
  void* handle_ = nullptr;
  std::string error_;
};

}  // namespace ember::cuda

// Defines the C entry point `name` forwarding to the same symbol of `lib` (a LazyLibrary&),
// resolved once on the first call (a function-local static: thread-safe initialisation).
#define EMBER_LAZY_FORWARD(lib, ret, name, params, args)                                \
  ret name params {                                                                     \
    using Fn = ret(*) params;                                                           \
    static const Fn f = reinterpret_cast<Fn>((lib).symbol(#name));                      \
    return f args;                                                                      \
  }
