// The doctor's provenance probes (probe_libraries.cpp): NCCL in a forked child, and every copy of
// the NVIDIA libraries in the places the dynamic loader and the frameworks look, with its version,
// so the same library found twice with different versions is named with the copy the loader picks.
#pragma once

#include <string>
#include <vector>

#include "ember/env/doctor.h"

namespace ember::env::detail {

// "580.95.05" from ".../libcuda.so.580.95.05" (base "libcuda"): the version a library's real file
// name carries; "" when the name is only the soname (pip wheels ship libcudnn.so.9 as a file).
std::string version_in_file_name(const std::string& path, const std::string& base);

// NCCL: dlopen the first of `names` in a child and ask ncclGetVersion.
void probe_nccl(EnvFacts& f, const std::vector<std::string>& names);
std::vector<std::string> nccl_search_names();  // libnccl.so.2, then CUDA_HOME and /usr/local/cuda

// A directory to look in, where it came from, and its place in the loader's search (-1: not searched).
struct LibraryPlace {
  std::string dir, source;
  int loader_rank = -1;
  std::string wheel_version;  // a pip wheel's version, for files whose names carry none
  std::string wheel_name;     // "nvidia-cudnn-cu12": only its own libraries are taken from the
                              // directory (CUDA 13 wheels share nvidia/cu13/lib)
};
// The libraries whose copies are compared, by soname prefix: libcuda.so.1, libcudart.so.N, ...
const std::vector<std::string>& provenance_libraries();
// The directories of the `ldconfig -p` lines that name one of those libraries, in its order.
std::vector<std::string> ld_cache_dirs(const std::string& ldconfig_output);
// The places to look on this machine: LD_LIBRARY_PATH, the ld.so cache, CUDA_HOME, /usr/local/cuda*
// under `root`, and the nvidia-* wheels of the audited interpreters.
std::vector<LibraryPlace> library_places(const EnvFacts& f, const std::string& root);
// Every copy in `places`, one per real file (the first place that has it names it); versions
// from the file name, the wheel, or — for copies of a library found more than once — asked in a child.
std::vector<LibraryCopy> scan_library_copies(const std::vector<LibraryPlace>& places);

}  // namespace ember::env::detail
