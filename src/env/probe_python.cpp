// The framework probe: finds the Python interpreters a user would train with and, in a child
// process per interpreter with a timeout, runs a small probe script that reports what torch,
// tensorflow, jax, onnxruntime and the nvidia-* wheels were built for, whether each sees the GPU and
// which CUDA library it cannot load (verdict_python.cpp judges it). A hung interpreter is killed
// with its process group; a crashing one is named with its signal.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "ember/env/doctor.h"
#include "env/child_wait.h"

namespace ember::env {
namespace {

namespace fs = std::filesystem;

// Prints one line "EMBER_PROBE_JSON:{...}" (the last such line counts: imports may print too).
// Each framework is imported and asked what it was built for and whether it sees a GPU
// (torch.cuda.is_available(), tf.config.list_physical_devices('GPU'), jax.devices()); where it
// does not, or the import fails, the CUDA libraries it names are loaded here, from this
// environment's nvidia-* wheels first (as the frameworks' RPATH / RUNPATH do), then through the
// loader, so the answer names the missing soname and the loader's words. TF 1.x has no build info:
// its shared objects' DT_NEEDED entries (read from the ELF file) name what it was built against.
constexpr const char* kProbe = R"py(
import json, os, sys, struct
out = {"python": sys.version.split()[0], "import_errors": {}}
try:
    import importlib.metadata as md
except Exception:
    md = None
import importlib.util

def dist_version(name):
    try:
        return md.version(name) if md else ""
    except Exception:
        return ""

def err(e):
    return ("%s: %s" % (type(e).__name__, e)).replace("\n", " ")[:300]

def package_dir(module):
    try:
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.submodule_search_locations:
            return list(spec.submodule_search_locations)[0]
    except Exception:
        pass
    return ""

WHEEL_DIRS = []
def wheel_dirs():
    if WHEEL_DIRS or not md:
        return WHEEL_DIRS
    for dist in md.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name.startswith("nvidia-"):
            for f in (dist.files or []):
                if "/lib/" in str(f) and ".so" in f.name:
                    d = str(dist.locate_file(f).parent)
                    if d not in WHEEL_DIRS:
                        WHEEL_DIRS.append(d)
    return WHEEL_DIRS

CUDA_LIBS = ("libcudart.so", "libcublas.so", "libcublasLt.so", "libcudnn.so", "libcufft.so", "libcurand.so",
             "libcusolver.so", "libcusparse.so", "libnccl.so", "libnvrtc.so")

def elf_needed(path):
    # DT_NEEDED of a 64-bit little-endian ELF, from its section headers (no full read: a
    # framework's library is hundreds of MB).
    needed = []
    with open(path, "rb") as f:
        head = f.read(64)
        if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            return needed
        shoff, = struct.unpack_from("<Q", head, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", head, 0x3A)
        f.seek(shoff)
        secs = [struct.unpack_from("<IIQQQQIIQQ", f.read(shentsize)) for _ in range(shnum)]
        for s in secs:
            if s[1] != 6 or s[6] >= len(secs):  # SHT_DYNAMIC; sh_link is its string table
                continue
            strtab = secs[s[6]]
            f.seek(strtab[4])
            strings = f.read(strtab[5])
            f.seek(s[4])
            dyn = f.read(s[5])
            for i in range(0, len(dyn) - 15, 16):
                tag, val = struct.unpack_from("<qQ", dyn, i)
                if tag == 0:
                    break
                if tag == 1 and val < len(strings):
                    needed.append(strings[val:strings.index(b"\0", val)].decode(errors="replace"))
    return needed

def cuda_needed(module, names):
    # The CUDA sonames the package's own shared objects need.
    found = []
    top = package_dir(module)
    if not top:
        return found
    for root, dirs, files in os.walk(top):
        if root[len(top):].count(os.sep) > 3:
            dirs[:] = []
            continue
        for f in files:
            if ".so" in f and any(f.startswith(n) for n in names):
                try:
                    for so in elf_needed(os.path.join(root, f)):
                        if so.startswith(CUDA_LIBS) and so not in found:
                            found.append(so)
                except Exception:
                    pass
    return found

def try_load(sonames):
    import ctypes
    loads = []
    for so in sonames:
        entry = {"soname": so, "path": "", "error": ""}
        for d in wheel_dirs():
            p = os.path.join(d, so)
            if os.path.exists(p):
                try:
                    ctypes.CDLL(p)
                    entry["path"] = p
                except OSError as e:
                    entry["error"] = err(e)
                break
        else:
            try:
                ctypes.CDLL(so)
            except OSError as e:
                entry["error"] = str(e).replace("\n", " ")[:300]
        loads.append(entry)
    return loads

def built_for(needed):
    # "libcudart.so.10.0" -> CUDA "10.0", "libcudnn.so.7" -> cuDNN "7": what a build without build
    # info (TF 1.x) was linked against.
    d = {}
    for so in needed:
        for key, prefix in (("cuda", "libcudart.so."), ("cudnn", "libcudnn.so.")):
            if so.startswith(prefix) and key not in d:
                d[key] = so[len(prefix):]
    return d

def guard(module, fn, on_fail=None):
    try:
        if importlib.util.find_spec(module) is None:
            return
    except Exception as e:
        out["import_errors"][module] = err(e)
        return
    try:
        out[module] = fn()
    except BaseException as e:
        out["import_errors"][module] = err(e)
        if on_fail is not None:
            try:
                out[module] = on_fail()
            except BaseException:
                pass

def torch_info():
    import torch
    import warnings
    d = {"version": str(torch.__version__), "cuda": getattr(torch.version, "cuda", None) or "",
         "cudnn": 0, "cudnn_compiled": 0, "cudnn_error": "", "arch_list": []}
    try:
        d["cudnn"] = int(torch.backends.cudnn.version() or 0)
    except BaseException as e:
        d["cudnn_error"] = err(e)
    try:
        v = torch._C._cudnn.getCompileVersion()
        d["cudnn_compiled"] = v[0] * (10000 if v[0] >= 9 else 1000) + v[1] * 100 + v[2]
    except BaseException:
        pass
    try:
        d["arch_list"] = list(torch.cuda.get_arch_list())
    except BaseException:
        pass
    # get_arch_list() is [] where CUDA is not available (no GPU, a broken driver): the build's
    # own flags still say which GPUs the wheel carries.
    if not d["arch_list"] and d["cuda"]:
        try:
            d["arch_list"] = str(torch._C._cuda_getArchFlags() or "").split()
        except BaseException:
            pass
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            d["cuda_available"] = bool(torch.cuda.is_available())
        d["cuda_error"] = "; ".join(str(w.message).replace("\n", " ") for w in caught)[:300]
        if d["cuda_available"]:
            d["device_count"] = int(torch.cuda.device_count())
    except BaseException as e:
        d["cuda_error"] = err(e)
    return d

def torch_failed():
    return {"version": dist_version("torch"), "imported": False,
            "libraries": try_load(cuda_needed("torch", ("libtorch_cuda", "libc10_cuda", "_C")))}

def tf_package():
    for name in ("tensorflow", "tensorflow-gpu", "tensorflow-cpu", "tf-nightly"):
        if dist_version(name):
            return name, dist_version(name)
    return "", ""

def tf_info():
    import tensorflow as tf
    package, _ = tf_package()
    d = {"version": str(tf.__version__), "package": package, "gpus": -1, "gpu_error": "", "libraries": []}
    try:
        b = dict(tf.sysconfig.get_build_info())
        d.update({"is_cuda_build": bool(b.get("is_cuda_build")), "cuda": str(b.get("cuda_version") or ""),
                  "cudnn": str(b.get("cudnn_version") or "")})
    except BaseException:
        # TF 1.x has no build info: what its shared objects need says what it was built for.
        needed = cuda_needed("tensorflow", ("_pywrap_tensorflow_internal", "libtensorflow_framework"))
        d["is_cuda_build"] = bool(needed)
        d.update(built_for(needed))
        d["libraries"] = try_load(needed)
    try:
        d["gpus"] = len(tf.config.list_physical_devices("GPU"))
    except BaseException as e:
        try:
            d["gpus"] = len(tf.config.experimental.list_physical_devices("GPU"))
        except BaseException:
            d["gpu_error"] = err(e)
    if d.get("is_cuda_build") and d["gpus"] <= 0 and not d["libraries"]:
        sonames = []
        major = d.get("cuda", "").split(".")[0]
        if major:
            sonames.append("libcudart.so." + major)
        dnn = d.get("cudnn", "").split(".")[0]
        if dnn:
            sonames.append("libcudnn.so." + dnn)
        d["libraries"] = try_load(sonames)
    return d

def tf_failed():
    package, version = tf_package()
    needed = cuda_needed("tensorflow", ("_pywrap_tensorflow_internal", "libtensorflow_framework"))
    d = {"version": version, "package": package, "imported": False, "is_cuda_build": bool(needed),
         "libraries": try_load(needed)}
    d.update(built_for(needed))
    return d

def jax_info():
    plugins = {}
    for dist in (md.distributions() if md else []):
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name.startswith("jax-cuda"):
            plugins[name] = dist.version
    d = {"jax": dist_version("jax"), "jaxlib": dist_version("jaxlib"), "cuda_plugins": plugins, "devices": [],
         "devices_error": ""}
    if plugins and importlib.util.find_spec("jax") is not None:
        try:
            import jax
            d["devices"] = sorted(set(str(x.platform) for x in jax.devices()))
        except BaseException as e:
            d["devices_error"] = err(e)
    return d

def ort_info():
    import onnxruntime as ort
    return {"version": str(ort.__version__), "providers": list(ort.get_available_providers())}

def wheels():
    found = []
    for dist in (md.distributions() if md else []):
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if not name.startswith("nvidia-"):
            continue
        dirs = set()
        for f in (dist.files or []):
            if "/lib/" in str(f) and ".so" in f.name:
                dirs.add(str(dist.locate_file(f).parent))
        found.append({"name": name, "version": dist.version, "lib_dirs": sorted(dirs)})
    return sorted(found, key=lambda w: w["name"])

guard("torch", torch_info, torch_failed)
guard("tensorflow", tf_info, tf_failed)
if dist_version("jax") or dist_version("jaxlib"):
    try:
        out["jax"] = jax_info()
    except BaseException as e:
        out["import_errors"]["jax"] = str(e)[:300]
guard("onnxruntime", ort_info)
try:
    out["nvidia_wheels"] = wheels()
except BaseException as e:
    out["import_errors"]["nvidia wheels"] = str(e)[:300]
sys.stdout.write("\nEMBER_PROBE_JSON:" + json.dumps(out) + "\n")
sys.stdout.flush()
)py";

struct ProcessResult {
  bool ok = false;        // exited 0
  std::string out, err;   // what it wrote
  std::string failure;    // how it ended otherwise
};

// Runs argv in its own process group with stdin from /dev/null; after timeout_ms the whole group
// is killed (an interpreter may have started children) and the result says so.
ProcessResult run_process(const std::vector<std::string>& argv, int timeout_ms) {
  ProcessResult r;
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return r.failure = std::string("cannot create a pipe: ") + std::strerror(errno), r;
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]), close(out[1]);
    return r.failure = std::string("cannot create a pipe: ") + std::strerror(errno), r;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {out[0], out[1], err[0], err[1]}) close(fd);
    return r.failure = std::string("cannot fork: ") + std::strerror(errno), r;
  }
  if (pid == 0) {
    setpgid(0, 0);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    execv(args[0], args.data());
    dprintf(2, "cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);  // also here: no race with the child's own call
  close(out[1]), close(err[1]);
  ChildEnd end = wait_for_child(pid, out[0], err[0], timeout_ms, /*group=*/true);
  r.ok = end.ok, r.out = std::move(end.out), r.err = std::move(end.err), r.failure = std::move(end.failure);
  return r;
}

std::vector<LibraryLoad> read_loads(const nlohmann::json& j) {
  std::vector<LibraryLoad> loads;
  for (const auto& l : j.value("libraries", nlohmann::json::array()))
    loads.push_back({l.value("soname", ""), l.value("path", ""), l.value("error", "")});
  return loads;
}

void read_probe(PythonEnv& p, const nlohmann::json& j) {
  p.python_version = j.value("python", "");
  if (j.contains("import_errors"))
    for (const auto& [k, v] : j["import_errors"].items()) p.import_errors[k] = v.get<std::string>();
  if (j.contains("torch")) {
    const auto& t = j["torch"];
    TorchBuild b;
    b.version = t.value("version", "");
    b.imported = t.value("imported", true);
    b.cuda = t.value("cuda", "");
    b.cudnn = t.value("cudnn", 0);
    b.cudnn_compiled = t.value("cudnn_compiled", 0);
    b.cudnn_error = t.value("cudnn_error", "");
    b.arch_list = t.value("arch_list", std::vector<std::string>{});
    if (t.contains("cuda_available") && t["cuda_available"].is_boolean()) b.cuda_available = t["cuda_available"].get<bool>();
    b.device_count = t.value("device_count", -1);
    b.cuda_error = t.value("cuda_error", "");
    b.libraries = read_loads(t);
    p.torch = b;
  }
  if (j.contains("tensorflow")) {
    const auto& t = j["tensorflow"];
    TensorflowBuild b;
    b.version = t.value("version", "");
    b.package = t.value("package", "");
    b.imported = t.value("imported", true);
    b.cuda_build = t.value("is_cuda_build", false);
    b.cuda = t.value("cuda", "");
    b.cudnn = t.value("cudnn", "");
    b.gpus = t.value("gpus", -1);
    b.gpu_error = t.value("gpu_error", "");
    b.libraries = read_loads(t);
    p.tensorflow = b;
  }
  if (j.contains("jax")) {
    const auto& t = j["jax"];
    JaxBuild b{t.value("jax", ""), t.value("jaxlib", ""), {}, t.value("devices", std::vector<std::string>{}),
               t.value("devices_error", "")};
    if (t.contains("cuda_plugins"))
      for (const auto& [k, v] : t["cuda_plugins"].items()) b.cuda_plugins.emplace_back(k, v.get<std::string>());
    p.jax = b;
  }
  if (j.contains("onnxruntime")) {
    const auto& t = j["onnxruntime"];
    p.onnxruntime = OnnxruntimeBuild{t.value("version", ""), t.value("providers", std::vector<std::string>{})};
  }
  if (j.contains("nvidia_wheels"))
    for (const auto& w : j["nvidia_wheels"])
      p.nvidia_wheels.push_back({w.value("name", ""), w.value("version", ""),
                                 w.value("lib_dirs", std::vector<std::string>{})});
}

// An interpreter's identity for deduplication: its directory and file, links resolved. A venv's
// bin/python links to the system binary, but is another environment: its directory tells them apart.
std::string identity(const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::absolute(path, ec);
  const fs::path dir = fs::weakly_canonical(p.parent_path(), ec);
  const fs::path bin = fs::weakly_canonical(p, ec);
  return dir.string() + "|" + bin.filename().string();
}

}  // namespace

std::vector<PythonEnv> find_pythons(const std::vector<std::string>& explicit_paths, const std::string& running) {
  std::vector<PythonEnv> found;
  std::vector<std::string> seen;
  auto add = [&](const std::string& path, const char* by) {
    const std::string id = identity(path);
    for (const auto& s : seen)
      if (s == id) return;
    seen.push_back(id);
    PythonEnv env;
    env.path = path;
    env.found_by = by;
    found.push_back(std::move(env));
  };
  if (!explicit_paths.empty()) {
    for (const auto& p : explicit_paths) add(p, "--python");
    return found;
  }
  std::error_code ec;
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
    const char* prefix = std::getenv(var);
    if (prefix == nullptr || *prefix == '\0') continue;
    for (const char* name : {"bin/python", "bin/python3"})
      if (const fs::path p = fs::path(prefix) / name; fs::exists(p, ec)) {
        add(p.string(), var);
        break;
      }
  }
  // The interpreter the caller runs in (ember.doctor() from an unactivated venv is not on PATH).
  if (!running.empty() && access(running.c_str(), X_OK) == 0) add(running, "sys.executable");
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    for (std::string dir; std::getline(ss, dir, ':');) {
      if (dir.empty()) continue;
      const fs::path p = fs::path(dir) / "python3";
      if (access(p.c_str(), X_OK) == 0 && !fs::is_directory(p, ec)) {
        add(p.string(), "PATH");
        break;  // the one `python3` runs
      }
    }
  }
  return found;
}

void audit_pythons(std::vector<PythonEnv>& pythons, int timeout_ms) {
  for (PythonEnv& p : pythons) {
    if (access(p.path.c_str(), X_OK) != 0) {
      p.error = std::string("cannot run it: ") + std::strerror(errno);
      continue;
    }
    // TensorFlow's C++ logs would bury the answer on stderr.
    setenv("TF_CPP_MIN_LOG_LEVEL", "3", 0);
    const ProcessResult r = run_process({p.path, "-c", kProbe}, timeout_ms);
    if (!r.ok) {
      p.error = r.failure;
      continue;
    }
    const size_t at = r.out.rfind("EMBER_PROBE_JSON:");
    if (at == std::string::npos) {
      p.error = "it ran but printed no probe result (is it Python 3.8 or newer?)";
      continue;
    }
    const size_t start = at + 17, end = r.out.find('\n', start);
    try {
      read_probe(p, nlohmann::json::parse(r.out.substr(start, end == std::string::npos ? end : end - start)));
    } catch (const std::exception& e) {
      p.error = std::string("its probe result did not parse: ") + e.what();
    }
  }
}

}  // namespace ember::env
