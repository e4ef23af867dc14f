// LazyLibrary: dlopen of a vendor library on first use, with the search order of lazy_library.h
// and one CudaError that lists what was tried and how to fix it.
#include "cuda/lazy_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

#include "ember/core/error.h"

namespace ember::cuda {

namespace {
std::string directory_of_libember() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&directory_of_libember), &info) == 0 || info.dli_fname == nullptr) return "";
  std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}
}  // namespace

LazyLibrary::LazyLibrary(const char* soname, const char* what, std::string install)
    : soname_(soname), what_(what), install_(std::move(install)) {}

void* LazyLibrary::handle() {
  std::call_once(once_, [this] {
    std::vector<std::string> tries = {soname_};
    if (std::string d = directory_of_libember(); !d.empty()) tries.push_back(d + "/" + soname_);
    if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0')
      tries.push_back(std::string(home) + "/lib64/" + soname_);
    tries.push_back(std::string("/usr/local/cuda/lib64/") + soname_);
    tries.push_back(std::string("/usr/local/cuda/lib/") + soname_);
    for (const std::string& t : tries) {
      handle_ = dlopen(t.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle_ != nullptr) return;
      const char* e = dlerror();
      if (error_.empty()) error_ = e != nullptr ? e : t + ": not found";  // the soname's own error says most
    }
  });
  if (handle_ == nullptr)
    throw CudaError(::ember::detail::cat(what_, " could not be loaded (", soname_, "): ", error_,
                                         "; also looked beside libember, in $CUDA_HOME/lib64 and /usr/local/cuda"),
                    install_ + ", and put its directory on LD_LIBRARY_PATH; `ember doctor` checks it");
  return handle_;
}

void* LazyLibrary::symbol(const char* name) {
  void* lib = handle();
  void* f = dlsym(lib, name);
  if (f == nullptr)
    throw CudaError(::ember::detail::cat(what_, ": ", soname_, " has no symbol ", name,
                                         " (a build older than the one ember was compiled against?)"),
                    install_);
  return f;
}

}  // namespace ember::cuda
