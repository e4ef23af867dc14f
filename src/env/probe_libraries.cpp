// Provenance (issue 28): NCCL probed in a forked child like the other vendor libraries, and every
// copy of libcuda, libcudart, libcublas, libcudnn, libnccl and libnvidia-ml in the places the
// loader searches (LD_LIBRARY_PATH, the ld.so cache) and the places installs leave them (CUDA_HOME,
// /usr/local/cuda*, the audited interpreters' nvidia-* wheels), each with its version.
#include "env/probe_libraries.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "env/probe_nvidia.h"

namespace ember::env::detail {
namespace {

namespace fs = std::filesystem;

// A library by its base name, the soname major it must have (-1: any, e.g. libcudart.so.12/13),
// and the word in the name of the pip wheel that ships it ("" = no wheel does).
struct Library {
  const char* base;
  int major;
  const char* wheel;
};
const Library kLibraries[] = {{"libcuda", 1, ""},       {"libcudart", -1, "cuda-runtime"}, {"libcublas", -1, "cublas"},
                              {"libcudnn", -1, "cudnn"}, {"libnccl", -1, "nccl"},          {"libnvidia-ml", 1, "nvidia-ml"}};

// The Library `file_name` is the soname of ("libcudnn.so.9"), or nullptr.
const Library* soname_of(const std::string& name) {
  for (const Library& lib : kLibraries) {
    const std::string prefix = std::string(lib.base) + ".so.";
    if (!name.starts_with(prefix) || name.size() == prefix.size()) continue;
    const std::string rest = name.substr(prefix.size());
    if (!std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    if (lib.major >= 0 && std::atoi(rest.c_str()) != lib.major) continue;
    return &lib;
  }
  return nullptr;
}

std::string decode_nccl(int code) {
  // NCCL_VERSION_CODE: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z since 2.9.
  Version v = code >= 10000 ? Version{code / 10000, code % 10000 / 100, code % 100}
                            : Version{code / 1000, code % 1000 / 100, code % 100};
  return std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
}

// The child's half: open `path` and ask the library its version with its own call.
std::string version_child(const std::string& path, const std::string& base) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return "";
  auto sym = [&](const char* name) { return dlsym(h, name); };
  std::string v;
  if (base == "libnccl") {
    int code = 0;
    if (auto fn = reinterpret_cast<int (*)(int*)>(sym("ncclGetVersion")); fn && fn(&code) == 0 && code > 0)
      v = decode_nccl(code);
  } else if (base == "libcudart") {
    int code = 0;
    if (auto fn = reinterpret_cast<int (*)(int*)>(sym("cudaRuntimeGetVersion")); fn && fn(&code) == 0 && code > 0)
      v = Version::from_cuda_int(code).str();
  } else if (base == "libcublas") {
    int a = 0, b = 0, c = 0;
    if (auto fn = reinterpret_cast<int (*)(int, int*)>(sym("cublasGetProperty"));
        fn && fn(0, &a) == 0 && fn(1, &b) == 0 && fn(2, &c) == 0)
      v = std::to_string(a) + "." + std::to_string(b) + "." + std::to_string(c);
  } else if (base == "libcudnn") {
    if (auto fn = reinterpret_cast<size_t (*)()>(sym("cudnnGetVersion"))) {
      const size_t n = fn();
      v = n >= 90000 ? std::to_string(n / 10000) + "." + std::to_string(n % 10000 / 100) + "." + std::to_string(n % 100)
                     : std::to_string(n / 1000) + "." + std::to_string(n % 1000 / 100) + "." + std::to_string(n % 100);
    }
  }
  return v.empty() ? "" : "version\t" + v + "\n";
}

std::string run_ldconfig() {
  std::string out;
  for (const char* cmd : {"/sbin/ldconfig -p 2>/dev/null", "/usr/sbin/ldconfig -p 2>/dev/null"}) {
    FILE* p = popen(cmd, "r");
    if (p == nullptr) continue;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    if (pclose(p) == 0 && !out.empty()) break;
    out.clear();
  }
  return out;
}

}  // namespace

std::string version_in_file_name(const std::string& path, const std::string& base) {
  const std::string name = fs::path(path).filename().string(), prefix = base + ".so.";
  if (!name.starts_with(prefix)) return "";
  const std::string rest = name.substr(prefix.size());
  if (rest.find('.') == std::string::npos) return "";  // the soname alone: no version in the name
  if (!std::all_of(rest.begin(), rest.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; })) return "";
  return rest;
}

std::vector<std::string> nccl_search_names() {
  std::vector<std::string> names = {"libnccl.so.2"};
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0')
    names.push_back(std::string(home) + "/lib64/libnccl.so.2");
  names.push_back("/usr/local/cuda/lib64/libnccl.so.2");
  return names;
}

void probe_nccl(EnvFacts& f, const std::vector<std::string>& names) {
  Isolated r = run_isolated(
      [&]() -> std::string {
        for (const std::string& n : names) {
          void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
          if (h == nullptr) continue;
          link_map* lm = nullptr;
          std::string out = "path\t";
          if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm != nullptr && lm->l_name != nullptr) out += lm->l_name;
          out += "\n";
          auto fn = reinterpret_cast<int (*)(int*)>(dlsym(h, "ncclGetVersion"));
          int code = 0;
          if (fn == nullptr) return out + "error\thas no ncclGetVersion: not an NCCL library\n";
          if (int rc = fn(&code); rc != 0 || code <= 0) return out + "error\tncclGetVersion failed with " + std::to_string(rc) + "\n";
          return out + "version\t" + decode_nccl(code) + "\n";
        }
        return "missing\t1\n";
      },
      20000);
  if (!r.ok) {
    f.nccl_error = (names.empty() ? std::string("libnccl.so.2") : names.front()) + " " + r.failure +
                   " when loaded and asked its version: a broken NCCL install";
    return;
  }
  std::map<std::string, std::string> x;
  std::istringstream in(r.payload);
  for (std::string line; std::getline(in, line);)
    if (auto tab = line.find('\t'); tab != std::string::npos) x[line.substr(0, tab)] = line.substr(tab + 1);
  if (x.count("missing")) return;
  std::error_code ec;
  const fs::path real = fs::canonical(x["path"], ec);
  f.nccl_path = ec || real == fs::path(x["path"]) ? x["path"] : x["path"] + " -> " + real.string();
  if (x.count("error")) f.nccl_error = x["path"] + " " + x["error"];
  Version v;
  if (x.count("version") && std::sscanf(x["version"].c_str(), "%d.%d.%d", &v.major, &v.minor, &v.patch) >= 2) f.nccl = v;
}

const std::vector<std::string>& provenance_libraries() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Library& lib : kLibraries) v.push_back(lib.base);
    return v;
  }();
  return names;
}

std::vector<std::string> ld_cache_dirs(const std::string& ldconfig_output) {
  // "\tlibcudnn.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.9"
  std::vector<std::string> dirs;
  std::istringstream in(ldconfig_output);
  for (std::string line; std::getline(in, line);) {
    const auto arrow = line.find("=> ");
    if (arrow == std::string::npos) continue;
    const fs::path path = line.substr(arrow + 3);
    if (soname_of(path.filename().string()) == nullptr) continue;
    const std::string dir = path.parent_path().string();
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  }
  return dirs;
}

std::vector<LibraryPlace> library_places(const EnvFacts& f, const std::string& root) {
  std::vector<LibraryPlace> places;
  int rank = 0;
  // The loader's order: LD_LIBRARY_PATH, then the ld.so cache (a library's own RUNPATH aside).
  if (const char* ld = std::getenv("LD_LIBRARY_PATH")) {
    std::stringstream ss(ld);
    for (std::string dir; std::getline(ss, dir, ':');)
      if (!dir.empty()) places.push_back({dir, "LD_LIBRARY_PATH", rank++, "", ""});
  }
  if (root.empty())
    for (const std::string& dir : ld_cache_dirs(run_ldconfig())) places.push_back({dir, "ld.so cache", rank++, "", ""});
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0')
    places.push_back({std::string(home) + "/lib64", "CUDA_HOME", -1, "", ""});
  std::error_code ec;
  for (auto it = fs::directory_iterator(root + "/usr/local", ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with("cuda")) continue;
    for (const char* sub : {"lib64", "lib", "targets/x86_64-linux/lib"})
      places.push_back({(it->path() / sub).string(), it->path().string(), -1, "", ""});
  }
  for (const PythonEnv& p : f.pythons)
    for (const PipWheel& w : p.nvidia_wheels)
      for (const std::string& dir : w.lib_dirs)
        places.push_back({dir, "pip " + w.name + " " + w.version + " (" + p.path + ")", -1, w.version, w.name});
  return places;
}

std::vector<LibraryCopy> scan_library_copies(const std::vector<LibraryPlace>& places) {
  std::vector<LibraryCopy> copies;
  std::set<std::string> seen;  // real files already listed
  for (const LibraryPlace& place : places) {
    std::error_code ec;
    std::vector<std::string> names;
    for (auto it = fs::directory_iterator(place.dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
      names.push_back(it->path().filename().string());
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      const Library* lib = soname_of(name);
      if (lib == nullptr) continue;
      // A wheel's directory may hold other wheels' files: each file is its own wheel's.
      if (!place.wheel_name.empty() && (*lib->wheel == '\0' || place.wheel_name.find(lib->wheel) == std::string::npos))
        continue;
      const fs::path path = fs::path(place.dir) / name;
      std::error_code rc;
      const fs::path real = fs::canonical(path, rc);
      if (rc || !seen.insert(real.string()).second) continue;
      LibraryCopy c{name, path.string(), real.string(), version_in_file_name(real.string(), lib->base), place.source,
                    place.loader_rank};
      if (c.version.empty()) c.version = place.wheel_version;
      copies.push_back(std::move(c));
    }
  }
  // A copy without a version in its name or wheel is asked (each in its own child: two sonames alike
  // must not share a process), so the report never prints "?" for a library that can say (issue 48).
  for (LibraryCopy& c : copies) {
    const std::string base = c.soname.substr(0, c.soname.find(".so."));
    if (!c.version.empty() || base == "libcuda" || base == "libnvidia-ml") continue;  // those have no version call
    Isolated r = run_isolated([&] { return version_child(c.real_path, base); }, 20000);
    if (r.ok && r.payload.starts_with("version\t")) c.version = r.payload.substr(8, r.payload.find('\n') - 8);
  }
  return copies;
}

}  // namespace ember::env::detail

namespace ember::env {

void find_library_copies(EnvFacts& facts) {
  facts.library_copies = detail::scan_library_copies(detail::library_places(facts, ""));
  // The copies the probes loaded: mark them, and take their version from the probe's answer.
  struct Loaded {
    const char* base;
    const std::string& path;  // "X" or "X -> Y" (provenance())
    std::string version;
  };
  const Loaded loaded[] = {
      {"libcuda", facts.driver_path, facts.libcuda_version},
      {"libcudart", facts.cudart_path, facts.cuda_runtime ? facts.cuda_runtime->str() : ""},
      {"libcudnn", facts.cudnn_path, facts.cudnn ? facts.cudnn->str() : ""},
      {"libcublas", facts.cublas_path, facts.cublas ? facts.cublas->str() : ""},
      {"libnccl", facts.nccl_path, facts.nccl ? facts.nccl->str() : ""},
      {"libnvidia-ml", facts.nvml_path, ""},
  };
  for (LibraryCopy& c : facts.library_copies)
    for (const Loaded& l : loaded) {
      if (l.path.empty() || !c.soname.starts_with(std::string(l.base) + ".so.")) continue;
      std::error_code ec;
      const auto real = std::filesystem::canonical(l.path.substr(0, l.path.find(" -> ")), ec);
      if (ec || real.string() != c.real_path) continue;
      c.loaded = true;
      if (c.version.empty()) c.version = l.version;
    }
}

}  // namespace ember::env
