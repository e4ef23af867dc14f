// The doctor's NVIDIA probes: libcuda (cuInit, devices), the CUDA runtime, cuDNN and cuBLAS, each
// opened with dlopen (never linked) and, for `ember doctor`, inside a forked child so a broken
// install (a partial cuDNN that aborts, a library whose constructor crashes, a hung driver) is
// reported as a FAIL line with the fix instead of taking the doctor down.
#include "env/probe_nvidia.h"

#include <fmt/format.h>

#include "env/child_wait.h"
#include "env/probe_libraries.h"
#include "env/compat.h"
#include "env/nvml.h"

#include <cctype>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace ember::env::detail {
namespace {

template <class F> F sym(void* lib, const char* name) { return reinterpret_cast<F>(dlsym(lib, name)); }

// dlopen the first of `names` that loads; `error` gets the first dlerror() when none does.
void* open_first(const std::vector<std::string>& names, std::string* error = nullptr) {
  for (const auto& n : names) {
    if (void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    const char* e = dlerror();
    if (error != nullptr && error->empty() && e != nullptr) *error = e;
  }
  return nullptr;
}

std::string path_of(void* handle) {
  link_map* lm = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == nullptr || lm->l_name == nullptr) return "";
  return lm->l_name;
}

// "/usr/lib/x86_64-linux-gnu/libcudnn.so.9 -> libcudnn.so.9.19.0": where a library came from, with
// the real file when the loaded name is a link (its name carries the full version).
std::string provenance(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(path, ec);
  if (ec || real == std::filesystem::path(path)) return path;
  return path + " -> " + (real.parent_path() == std::filesystem::path(path).parent_path() ? real.filename() : real).string();
}

// key<TAB>value lines: the child's answer.
using Fields = std::multimap<std::string, std::string>;
Fields parse(const std::string& payload) {
  Fields f;
  std::istringstream in(payload);
  std::string line;
  while (std::getline(in, line))
    if (auto tab = line.find('\t'); tab != std::string::npos) f.emplace(line.substr(0, tab), line.substr(tab + 1));
  return f;
}
std::string get(const Fields& f, const std::string& key) {
  auto it = f.find(key);
  return it == f.end() ? "" : it->second;
}
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\t') c = ' ';
  return s;
}

// The child's half of the driver probe.
std::string driver_child(const std::vector<std::string>& names) {
  std::ostringstream out;
  std::string err;
  void* cuda = open_first(names, &err);
  if (cuda == nullptr) {
    out << "missing\t" << one_line(err) << "\n";
    return out.str();
  }
  out << "path\t" << path_of(cuda) << "\n";
  using IntFn = int (*)(int*);
  auto cu_init = sym<int (*)(unsigned)>(cuda, "cuInit");
  auto cu_ver = sym<IntFn>(cuda, "cuDriverGetVersion");
  auto cu_count = sym<IntFn>(cuda, "cuDeviceGetCount");
  auto cu_get = sym<int (*)(int*, int)>(cuda, "cuDeviceGet");
  auto cu_name = sym<int (*)(char*, int, int)>(cuda, "cuDeviceGetName");
  auto cu_attr = sym<int (*)(int*, int, int)>(cuda, "cuDeviceGetAttribute");
  auto cu_mem = sym<int (*)(size_t*, int)>(cuda, "cuDeviceTotalMem_v2");
  auto cu_err_name = sym<int (*)(int, const char**)>(cuda, "cuGetErrorName");
  auto cu_err_str = sym<int (*)(int, const char**)>(cuda, "cuGetErrorString");
  int v = 0;
  if (cu_ver && cu_ver(&v) == 0 && v > 0) out << "driver_cuda\t" << v << "\n";
  if (cu_init == nullptr) {
    out << "no_cuinit\t1\n";
    return out.str();
  }
  auto report = [&](const char* call, int rc) {
    const char *name = nullptr, *str = nullptr;
    if (cu_err_name == nullptr || cu_err_name(rc, &name) != 0) name = nullptr;
    if (cu_err_str == nullptr || cu_err_str(rc, &str) != 0) str = nullptr;
    out << "error_call\t" << call << "\nerror_code\t" << rc << "\n";
    if (name) out << "error_name\t" << one_line(name) << "\n";
    if (str) out << "error_string\t" << one_line(str) << "\n";
  };
  int rc = cu_init(0);
  if (rc != 0) {
    report("cuInit", rc);
    return out.str();
  }
  int n = 0;
  if (cu_count == nullptr || cu_get == nullptr) return out.str();
  if (rc = cu_count(&n); rc != 0) {
    report("cuDeviceGetCount", rc);
    return out.str();
  }
  for (int i = 0; i < n; ++i) {
    int dev = 0;
    if (cu_get(&dev, i) != 0) continue;
    char buf[256] = {};
    if (cu_name) cu_name(buf, sizeof buf - 1, dev);
    int major = 0, minor = 0;
    if (cu_attr) cu_attr(&major, 75, dev), cu_attr(&minor, 76, dev);
    size_t mem = 0;
    if (cu_mem == nullptr || cu_mem(&mem, dev) != 0) mem = 0;
    out << "gpu\t" << i << " " << major << " " << minor << " " << mem << " " << one_line(buf) << "\n";
  }
  return out.str();
}

void apply_driver(EnvFacts& f, const Fields& r) {
  if (r.count("missing")) {
    // "No such file" says nothing the word "missing" does not; any other dlerror (wrong ELF class,
    // an undefined symbol) is the clue, so it is kept.
    const std::string why = get(r, "missing");
    f.driver_error = "libcuda.so.1 missing";
    if (why.find("No such file") == std::string::npos) f.driver_error += ": " + why;
    return;
  }
  f.driver_found = true;
  f.driver_path = provenance(get(r, "path"));
  {  // the driver version of libcuda's own file (libcuda.so.1 -> libcuda.so.580.95.05)
    std::error_code ec;
    const std::filesystem::path real = std::filesystem::canonical(get(r, "path"), ec);
    if (!ec) f.libcuda_version = version_in_file_name(real.string(), "libcuda");
  }
  if (auto v = get(r, "driver_cuda"); !v.empty()) f.driver_cuda = Version::from_cuda_int(std::atoi(v.c_str()));
  if (r.count("no_cuinit")) {
    f.driver_error = get(r, "path") + " has no cuInit: it is not an NVIDIA driver library";
    f.driver_fix = "reinstall the NVIDIA driver (its libcuda.so.1), and check LD_LIBRARY_PATH for a stray libcuda";
    return;
  }
  if (r.count("error_code")) {
    const int code = std::atoi(get(r, "error_code").c_str());
    const std::string name = get(r, "error_name"), str = get(r, "error_string");
    DriverErrorText t = cuda_driver_error_text(code, name.empty() ? nullptr : name.c_str(),
                                               str.empty() ? nullptr : str.c_str(), f.cuda_compiled);
    if (code == 100) return;  // CUDA_ERROR_NO_DEVICE: reported as "no device", not as a broken driver
    f.driver_error_code = code;
    f.driver_error = get(r, "error_call") + " failed: " + t.message;
    if (code == 34 && !get(r, "path").empty()) f.driver_error += " (" + get(r, "path") + ")";
    f.driver_fix = t.fix;
    return;
  }
  auto [lo, hi] = r.equal_range("gpu");
  for (auto it = lo; it != hi; ++it) {
    std::istringstream ss(it->second);
    GpuInfo g;
    ss >> g.index >> g.cc_major >> g.cc_minor >> g.total_memory;
    std::getline(ss >> std::ws, g.name);
    f.gpus.push_back(g);
  }
}

// The parts a cuDNN 9 install needs beside libcudnn.so.9, which is only a front that dlopens them
// (libcudnn_adv, RNN and attention, is optional for ember).
const char* const kCudnn9Parts[] = {"libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9",
                                    "libcudnn_heuristic.so.9", "libcudnn_engines_precompiled.so.9",
                                    "libcudnn_engines_runtime_compiled.so.9"};

std::string cudnn_child(const std::vector<std::string>& names) {
  std::ostringstream out;
  void* dnn = open_first(names);
  if (dnn == nullptr) return "missing\t1\n";
  const std::string path = path_of(dnn);
  out << "path\t" << path << "\n";
  const std::string base = std::filesystem::path(path).filename().string();
  if (base.find(".so.9") != std::string::npos) {
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    std::string missing;
    for (const char* part : kCudnn9Parts) {
      std::error_code ec;
      if (!std::filesystem::exists(dir / part, ec)) missing += std::string(missing.empty() ? "" : ", ") + part;
    }
    // Never call into a partial install: its front aborts ("Invalid handle. Cannot load symbol").
    if (!missing.empty()) {
      out << "parts_missing\t" << missing << "\n";
      return out.str();
    }
  }
  auto get_version = sym<size_t (*)()>(dnn, "cudnnGetVersion");
  auto cudart = sym<size_t (*)()>(dnn, "cudnnGetCudartVersion");
  if (get_version == nullptr) return out.str() + "no_version\t1\n";
  out << "version\t" << get_version() << "\n";
  if (cudart) out << "cudart\t" << cudart() << "\n";
  return out.str();
}

std::string cublas_child(const std::vector<std::string>& names) {
  std::ostringstream out;
  void* blas = open_first(names);
  if (blas == nullptr) return "missing\t1\n";
  out << "path\t" << path_of(blas) << "\n";
  auto prop = sym<int (*)(int, int*)>(blas, "cublasGetProperty");
  if (prop == nullptr) return out.str() + "no_version\t1\n";
  int a = 0, b = 0, c = 0;
  if (prop(0, &a) == 0 && prop(1, &b) == 0 && prop(2, &c) == 0) out << "version\t" << a << " " << b << " " << c << "\n";
  return out.str();
}

std::string cudart_child(const std::vector<std::string>& names) {
  void* rt = open_first(names);
  if (rt == nullptr) return "missing\t1\n";
  int v = 0;
  std::string out = "path\t" + path_of(rt) + "\n";
  if (auto fn = sym<int (*)(int*)>(rt, "cudaRuntimeGetVersion"); fn && fn(&v) == 0 && v > 0)
    out += "version\t" + std::to_string(v) + "\n";
  return out;
}

// "libcudnn.so.9 (first name tried)": what a crash message calls the library.
std::string label(const std::vector<std::string>& names) { return names.empty() ? "?" : names.front(); }

}  // namespace

NvidiaSearch NvidiaSearch::defaults() {
  NvidiaSearch s;
  auto add = [](std::vector<std::string>& v, std::initializer_list<const char*> sonames) {
    std::vector<std::string> dirs = {""};
    if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0')
      dirs.push_back(std::string(home) + "/lib64/");
    dirs.push_back("/usr/local/cuda/lib64/");
    dirs.push_back("/usr/local/cuda/lib/");
    for (const auto& d : dirs)
      for (const char* n : sonames) v.push_back(d + n);
  };
  s.cuda = {"libcuda.so.1", "libcuda.so"};  // the driver's own: never from the toolkit (its stub)
  add(s.cudart, {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"});
  add(s.cudnn, {"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"});
  add(s.cublas, {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"});
  return s;
}

Isolated run_isolated(const std::function<std::string()>& fn, int timeout_ms) {
  Isolated r;
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    r.failure = std::string("cannot create a pipe: ") + std::strerror(errno);
    return r;
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]), close(out[1]);
    r.failure = std::string("cannot create a pipe: ") + std::strerror(errno);
    return r;
  }
  fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {out[0], out[1], err[0], err[1]}) close(fd);
    r.failure = std::string("cannot fork: ") + std::strerror(errno);
    return r;
  }
  if (pid == 0) {  // child: answer on out[1], its stderr (vendor messages) on err[1]
    close(out[0]), close(err[0]);
    dup2(err[1], 2);
    std::string s = fn();
    for (size_t off = 0; off < s.size();) {
      ssize_t n = write(out[1], s.data() + off, s.size() - off);
      if (n <= 0) _exit(3);
      off += size_t(n);
    }
    _exit(0);
  }
  close(out[1]), close(err[1]);
  ChildEnd end = wait_for_child(pid, out[0], err[0], timeout_ms, /*group=*/false);
  r.ok = end.ok, r.payload = std::move(end.out), r.failure = std::move(end.failure);
  return r;
}

DriverErrorText cuda_driver_error_text(int code, const char* name, const char* description,
                                       const std::optional<Version>& cuda) {
  const std::string container = "in a container, start it with the NVIDIA runtime (`docker run --gpus all`)";
  const std::string upgrade =
      cuda ? fmt::format("upgrade the NVIDIA driver to {} (this ember was built with CUDA {})",
                         compat::driver_requirement(*cuda), Version{cuda->major, cuda->minor, 0}.str())
           : std::string("upgrade the NVIDIA driver to the newest release for this GPU (`nvidia-smi` shows the one "
                         "installed)");
  struct Row {
    int code;
    const char* name;
    const char* words;
    std::string fix;
  };
  // No row for 35: that is the runtime's cudaErrorInsufficientDriver; cuInit and the driver API never
  // return it (CUresult goes from 34 to 36). A driver too old for the runtime is judged from versions.
  const Row rows[] = {
      {1, "CUDA_ERROR_INVALID_VALUE", "the driver rejected a probe argument (a driver/library mismatch)",
       "reinstall the NVIDIA driver so libcuda.so.1 matches the kernel module (`nvidia-smi` must work)"},
      {2, "CUDA_ERROR_OUT_OF_MEMORY", "the driver ran out of memory while starting",
       "free GPU memory (`nvidia-smi` lists the processes holding it) and retry"},
      {3, "CUDA_ERROR_NOT_INITIALIZED", "the driver is not initialised (cuInit did not succeed)",
       "check `nvidia-smi` and `dmesg` for driver errors; reboot after a driver upgrade"},
      {4, "CUDA_ERROR_DEINITIALIZED", "the driver is shutting down",
       "retry; if it persists, check `dmesg` and reboot"},
      {34, "CUDA_ERROR_STUB_LIBRARY",
       "libcuda is the CUDA toolkit's stub library (a link-time placeholder), not the NVIDIA driver",
       "install the NVIDIA driver, or " + container + "; remove the toolkit's lib64/stubs directory from "
       "LD_LIBRARY_PATH"},
      {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", "this call needs a newer NVIDIA driver",
       upgrade},
      {46, "CUDA_ERROR_DEVICE_UNAVAILABLE",
       "the GPU is busy or unavailable (exclusive-process compute mode held by another process)",
       "stop the other process (`nvidia-smi`), or set the compute mode to default: `nvidia-smi -c DEFAULT`"},
      {100, "CUDA_ERROR_NO_DEVICE", "the driver sees no CUDA-capable device",
       "check `nvidia-smi` and CUDA_VISIBLE_DEVICES; " + container},
      {101, "CUDA_ERROR_INVALID_DEVICE", "a device index is out of range",
       "check CUDA_VISIBLE_DEVICES (indices start at 0)"},
      {102, "CUDA_ERROR_DEVICE_NOT_LICENSED", "the device is not licensed for compute (vGPU license missing)",
       "check the vGPU license server, or use a compute-licensed GPU profile"},
      {304, "CUDA_ERROR_OPERATING_SYSTEM", "an operating-system call of the driver failed (device files or permissions)",
       "check that /dev/nvidia* exist and are readable by this user (`ls -l /dev/nvidia*`); " + container},
      {801, "CUDA_ERROR_NOT_SUPPORTED", "the driver does not support this operation on this system",
       "update the NVIDIA driver; check `nvidia-smi`"},
      {802, "CUDA_ERROR_SYSTEM_NOT_READY", "the system is not ready (on NVSwitch machines: fabric manager not running)",
       "start the fabric manager (`systemctl start nvidia-fabricmanager`) and check `nvidia-smi -q`"},
      {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
       "libcuda.so.1 and the NVIDIA kernel module are of different versions",
       "reboot after the driver upgrade, or reinstall the driver so user-space and kernel module match "
       "(compare `cat /proc/driver/nvidia/version` with the libcuda.so version)"},
      {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
       "a CUDA forward-compatibility libcuda is in use on a GPU that does not support it",
       "remove the cuda-compat directory from LD_LIBRARY_PATH, or upgrade the NVIDIA driver itself"},
      {999, "CUDA_ERROR_UNKNOWN", "the driver failed for an unknown reason",
       "check `nvidia-smi` and `dmesg`; reboot after a driver upgrade"},
  };
  for (const Row& row : rows)
    if (row.code == code) return {std::string(row.name) + " (" + std::to_string(code) + "): " + row.words, row.fix};
  std::string words = description != nullptr ? description : "no description from the driver";
  return {std::string(name != nullptr ? name : "an unknown CUDA driver error") + " (" + std::to_string(code) + "): " +
              words,
          "check `nvidia-smi` and `dmesg`; reinstall the NVIDIA driver or reboot after an upgrade"};
}

void probe_kernel_module(EnvFacts& f, const std::string& root) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path nv = fs::path(root + "/proc/driver/nvidia");
  // WSL2: the Windows driver serves CUDA through /dev/dxg and /usr/lib/wsl/lib; there is no module.
  f.wsl = fs::exists(root + "/usr/lib/wsl/lib/libcuda.so.1", ec) || fs::exists(root + "/dev/dxg", ec);
  std::ifstream in(nv / "version");
  std::string line;
  std::getline(in, line);
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 ..." (the proprietary module) or
  // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..." (the open one,
  // seen on the lent H200): the version is the first word after "Kernel Module" that is digits and dots.
  if (auto p = line.find("Kernel Module"); p != std::string::npos) {
    std::istringstream ss(line.substr(p + 13));
    for (std::string word; ss >> word;)
      if (std::isdigit(static_cast<unsigned char>(word[0])) && word.find('.') != std::string::npos &&
          word.find_first_not_of("0123456789.") == std::string::npos) {
        f.driver_version = word;
        break;
      }
  }
  if (fs::is_directory(nv / "gpus", ec)) {
    f.physical_gpus = 0;
    for (auto it = fs::directory_iterator(nv / "gpus", ec); !ec && it != fs::directory_iterator(); it.increment(ec))
      ++f.physical_gpus;
  } else if (!fs::exists(nv, ec) && !f.wsl) {
    f.physical_gpus = 0;  // no kernel module: no GPU this driver stack can see
  }
  if (!f.wsl) f.kernel_module_loaded = fs::exists(nv / "version", ec);
}

void probe_driver(EnvFacts& f, const std::vector<std::string>& names, bool isolated) {
  if (!isolated) {
    apply_driver(f, parse(driver_child(names)));
    return;
  }
  Isolated r = run_isolated([&] { return driver_child(names); }, 60000);
  if (!r.ok) {
    f.driver_found = true;  // something answered to the name, and broke
    f.driver_error = "probing " + label(names) + " " + r.failure;
    f.driver_fix = "reinstall the NVIDIA driver (its libcuda.so.1 and kernel module); check `nvidia-smi` and `dmesg`";
    return;
  }
  apply_driver(f, parse(r.payload));
}

void probe_cudnn(EnvFacts& f, const std::vector<std::string>& names) {
  Isolated r = run_isolated([&] { return cudnn_child(names); }, 30000);
  if (!r.ok) {
    f.cudnn_error = label(names) + " " + r.failure + " when loaded and asked its version: a broken cuDNN install";
    return;
  }
  Fields x = parse(r.payload);
  if (x.count("missing")) return;
  const std::string where = get(x, "path");
  f.cudnn_path = provenance(where);
  if (x.count("parts_missing")) {
    f.cudnn_error = "partial cuDNN install: " + where + " is there but not " + get(x, "parts_missing") +
                    " (cuDNN 9 loads them on first use, and aborts when one is missing)";
    return;
  }
  if (x.count("no_version")) {
    f.cudnn_error = where + " has no cudnnGetVersion: not a cuDNN library";
    return;
  }
  const size_t v = size_t(std::strtoull(get(x, "version").c_str(), nullptr, 10));
  // 9.x: major*10000 + minor*100 + patch; 8.x: major*1000 + minor*100 + patch
  f.cudnn = v >= 90000 ? Version{int(v / 10000), int(v % 10000 / 100), int(v % 100)}
                       : Version{int(v / 1000), int(v % 1000 / 100), int(v % 100)};
  if (auto c = get(x, "cudart"); !c.empty()) f.cudnn_cuda_major = std::atoi(c.c_str()) / 1000;
}

void probe_cublas(EnvFacts& f, const std::vector<std::string>& names) {
  Isolated r = run_isolated([&] { return cublas_child(names); }, 30000);
  if (!r.ok) {
    f.cublas_error = label(names) + " " + r.failure + " when loaded and asked its version: a broken cuBLAS install";
    return;
  }
  Fields x = parse(r.payload);
  if (x.count("missing")) return;
  f.cublas_path = provenance(get(x, "path"));
  if (x.count("no_version")) {
    f.cublas_error = get(x, "path") + " has no cublasGetProperty: not a cuBLAS library";
    return;
  }
  Version v;
  std::istringstream(get(x, "version")) >> v.major >> v.minor >> v.patch;
  if (v.major > 0) f.cublas = v;
}

void probe_nvml(EnvFacts& f, const std::vector<std::string>& names, int xid_wait_ms) {
  // The Xid watch waits xid_wait_ms per event; the rest is quick unless the driver hangs.
  Isolated r = run_isolated([&] { return nvml_report(names, xid_wait_ms); }, 30000 + xid_wait_ms);
  if (!r.ok) {
    f.nvml_error = label(names) + " " + r.failure;
    return;
  }
  const nlohmann::json x = nlohmann::json::parse(r.payload, nullptr, /*allow_exceptions=*/false);
  if (x.is_discarded() || !x.value("loaded", false)) return;
  f.nvml_path = provenance(x.value("path", ""));
  f.nvml_error = x.value("error", "");
  for (const auto& g : x.value("gpus", nlohmann::json::array())) f.nvml_gpus.push_back(nvml_gpu_from_json(g));
}

void probe_cudart(EnvFacts& f, const std::vector<std::string>& names) {
  Isolated r = run_isolated([&] { return cudart_child(names); }, 30000);
  if (!r.ok) return;  // only a CPU-only build asks (a CUDA build carries its runtime)
  const Fields x = parse(r.payload);
  f.cudart_path = provenance(get(x, "path"));
  if (auto v = get(x, "version"); !v.empty()) f.cuda_runtime = Version::from_cuda_int(std::atoi(v.c_str()));
}

}  // namespace ember::env::detail
