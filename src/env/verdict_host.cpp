// The host's part of the doctor's verdict: the CPU (a smoke-tested matmul), ember's build (with or
// without CUDA) and the OpenBLAS build it calls (issue 22: its threading model decides whether
// ember's tiled GEMMs may run concurrently). Pure: no I/O.
#include <fmt/format.h>

#include "env/verdict_parts.h"

namespace ember::env::detail {

bool judge_host(const EnvFacts& f, std::vector<Check>& checks) {
  auto add = [&](Level l, std::string name, std::string msg, std::string fix = {}) {
    checks.push_back({l, std::move(name), std::move(msg), std::move(fix)});
  };
  // ---- CPU: always a training device unless the smoke test failed ----
  bool cpu_usable = false;
  if (f.cpu_smoke_ok) {
    std::string isa = f.avx512_bf16 ? "AVX-512 + bf16" : f.avx512f ? "AVX-512" : f.avx2 ? "AVX2" : "no AVX2";
    add(Level::Pass, "cpu", fmt::format("{} cores, {}; CPU training works", f.cores, isa));
    cpu_usable = true;
  } else {
    add(Level::Fail, "cpu", "a small matmul on the CPU gave a wrong result: " + f.cpu_smoke_error,
        "run the test suite (ctest) and report this with `ember doctor --json`");
  }

  // ---- the build ----
  // A CPU-only build is only worth a WARN where there is a GPU it could have used.
  if (!f.built_with_cuda && no_nvidia_gpu(f)) {
    add(Level::Pass, "build", "this ember was built without CUDA: it trains on the CPU, all this machine has");
  } else if (!f.built_with_cuda) {
    add(Level::Warn, "build", "this ember was built without CUDA: it trains on the CPU only",
        "rebuild with -DEMBER_CUDA=ON on a machine with the CUDA toolkit (nvcc)");
  }

  // ---- the BLAS build (issue 22) ----
  // ember calls OpenBLAS single-threaded and tiles its GEMMs over its own OpenMP threads, so the
  // pthreads and OpenMP builds run alike — provided a pthreads build kept the one thread ember gave
  // it, and the library is new enough for calls from several threads at once. The serial build is
  // not safe for concurrent calls: ember runs its tiles one at a time there (src/cpu/gemm.cpp).
  if (!f.blas.empty()) {
    const std::string where = f.blas_path.empty() ? "" : " (" + f.blas_path + ")";
    const std::string ver = f.blas_version ? "OpenBLAS " + f.blas_version->str() : f.blas;
    const std::string to_openmp =
        "use the OpenMP build: `sudo apt install libopenblas0-openmp && sudo update-alternatives --set "
        "libopenblas.so.0-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0`, or for "
        "one command `LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp ember ...`";
    if (f.blas_build.empty()) {
      add(Level::Warn, "blas", ver + where + ": its threading model is unknown (openblas_get_parallel() gave no "
          "answer); GEMM speed and determinism are unchecked with it", to_openmp);
    } else if (f.blas_build != "openmp" && f.blas_threads != 1) {
      add(Level::Warn, "blas", fmt::format("{}, {} build{}: it reports {} threads although ember set it to 1; its "
          "threads would compete with ember's OpenMP threads (training speed can drop 10x or more)",
          ver, f.blas_build, where, f.blas_threads), to_openmp);
    } else if (f.blas_build == "serial") {
      add(Level::Warn, "blas", fmt::format("{}, serial build{}: it is not safe to call from several threads at once, "
          "so ember runs its GEMMs one at a time on one core (same bits, slower linear layers on {} cores)",
          ver, where, f.cores), to_openmp);
    } else if (f.blas_build != "openmp" && f.blas_version && *f.blas_version < Version{0, 3, 7}) {
      add(Level::Warn, "blas", fmt::format("{}, {} build{}: releases before 0.3.7 are not safe to call from several "
          "threads at once, as ember's tiled GEMMs do", ver, f.blas_build, where),
          "upgrade OpenBLAS to 0.3.7 or newer, or " + to_openmp);
    } else {
      add(Level::Pass, "blas", fmt::format("{}, {} build{}: called single-threaded, ember tiles the GEMMs over its own "
          "threads (same speed and bits with every build)", ver, f.blas_build, where));
    }
  }

  return cpu_usable;
}

}  // namespace ember::env::detail
