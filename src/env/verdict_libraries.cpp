// Library provenance's part of the doctor's verdict: NCCL (only multi-GPU training loads it), and the
// same NVIDIA library found in several places with different versions. Copies are a problem only
// when the one the dynamic loader picks is older than another: a program built for the newer one
// then gets the older. The newest copy shadowing older ones is fine (a newer minor of the same soname
// runs programs built for an older one), and PyTorch's wheels load their own copy through DT_RPATH,
// which the loader searches before LD_LIBRARY_PATH (ld.so(8); compat tables, source pytorch_rpath).
#include "env/verdict_libraries.h"

#include <fmt/format.h>

#include <map>

#include "env/compat.h"

namespace ember::env::detail {
namespace {

std::vector<long> components(const std::string& v) {
  std::vector<long> out;
  long x = 0;
  bool any = false;
  for (char c : v + ".") {
    if (c >= '0' && c <= '9') x = x * 10 + (c - '0'), any = true;
    else if (c == '.' && any) out.push_back(x), x = 0, any = false;
    else if (c != '.') break;
  }
  return out;
}

// Versions compare on the components both give ("9.1.0.70" from a wheel is "9.1.0" from a file).
int compare_versions(const std::string& a, const std::string& b) {
  const std::vector<long> x = components(a), y = components(b);
  for (size_t i = 0; i < std::min(x.size(), y.size()); ++i)
    if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
  return 0;
}

}  // namespace

void judge_libraries(const EnvFacts& f, std::vector<Check>& checks) {
  auto add = [&](Level l, std::string name, std::string msg, std::string fix = {}) {
    checks.push_back({l, std::move(name), std::move(msg), std::move(fix)});
  };
  // ---- NCCL: only multi-GPU training needs it ----
  if (f.built_with_cuda) {
    const int cuda_m = f.cuda_compiled ? f.cuda_compiled->major : 13;
    const std::string install = "`pip install " + compat::pip_wheels(cuda_m).nccl +
                                "` and its lib directory on LD_LIBRARY_PATH, or the libnccl2 package of NVIDIA's CUDA "
                                "repository";
    if (!f.nccl_error.empty())
      add(f.gpus.size() > 1 ? Level::Warn : Level::Pass, "nccl",
          f.nccl_error + (f.gpus.size() > 1 ? "; multi-GPU training would fail" : "; only multi-GPU training uses it"),
          f.gpus.size() > 1 ? "reinstall NCCL: " + install : "");
    else if (f.nccl)
      add(Level::Pass, "nccl", "NCCL " + f.nccl->str() + (f.nccl_path.empty() ? "" : ", " + f.nccl_path));
    else if (f.gpus.size() > 1)
      add(Level::Warn, "nccl",
          fmt::format("libnccl.so.2 not found: training on the {} GPUs together (ember train --nproc) needs it",
                      f.gpus.size()),
          "install NCCL: " + install);
  }

  // ---- the same library in several places with different versions ----
  std::map<std::string, std::vector<const LibraryCopy*>> by_soname;
  std::vector<std::string> order;
  for (const LibraryCopy& c : f.library_copies) {
    if (!by_soname.count(c.soname)) order.push_back(c.soname);
    by_soname[c.soname].push_back(&c);
  }
  for (const std::string& soname : order) {
    const auto& copies = by_soname[soname];
    std::vector<const LibraryCopy*> known;
    for (const LibraryCopy* c : copies)
      if (!c->version.empty()) known.push_back(c);
    const LibraryCopy* newest = nullptr;
    bool differ = false;
    for (const LibraryCopy* c : known) {
      differ |= compare_versions(c->version, known.front()->version) != 0;
      if (newest == nullptr || compare_versions(newest->version, c->version) < 0) newest = c;
    }
    if (!differ) continue;
    std::string where;
    for (const LibraryCopy* c : known)
      where += fmt::format("{}{} {} ({})", where.empty() ? "" : "; ", c->version, c->path, c->source);
    // The loader's pick: the copy ember's probe loaded, else the first in the loader's order.
    const LibraryCopy* pick = nullptr;
    for (const LibraryCopy* c : copies)
      if (c->loaded) pick = c;
    if (pick == nullptr)
      for (const LibraryCopy* c : copies)
        if (c->loader_rank >= 0 && (pick == nullptr || c->loader_rank < pick->loader_rank)) pick = c;
    if (pick == nullptr) {
      add(Level::Pass, soname,
          fmt::format("{} copies with different versions: {}; none is on the loader's path (each program loads the "
                      "copy it names)",
                      known.size(), where));
      continue;
    }
    const std::string picked = fmt::format(
        "the dynamic loader picks {} ({}{})", pick->path, pick->version.empty() ? "version unknown" : pick->version,
        pick->loaded ? ", the one ember loaded"
        : pick->source == "LD_LIBRARY_PATH" ? ", first on LD_LIBRARY_PATH"
                                            : ", from the ld.so cache");
    if (!pick->version.empty() && compare_versions(pick->version, newest->version) >= 0) {
      add(Level::Pass, soname,
          fmt::format("{} copies with different versions: {}; {}, the newest: programs built for an older one run on "
                      "it (a newer release of the same soname keeps its interface), and PyTorch's wheels load their "
                      "own copy through RPATH",
                      known.size(), where, picked));
      continue;
    }
    add(Level::Warn, soname,
        fmt::format("{} copies with different versions: {}; {}, older than {} ({}): a program built against the newer one gets the older "
                    "and may fail (PyTorch's wheels load their own copy through RPATH, searched before "
                    "LD_LIBRARY_PATH; other programs take the loader's)",
                    known.size(), where, picked, newest->version, newest->path),
        fmt::format("let the loader find the newest first: put {}'s directory before {}'s on LD_LIBRARY_PATH, or "
                    "uninstall the older copy (`ldconfig -p | grep {}` lists the ld.so cache's)",
                    newest->path, pick->path, soname));
  }
}

}  // namespace ember::env::detail
