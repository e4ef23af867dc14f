// Reads the OS layer under a root prefix (probe_os.h): /etc/os-release for the fix lines, the
// modules that keep the NVIDIA one off the GPU, Secure Boot, the device nodes CUDA opens and the
// signs of a container. Plain file reads and access(2): nothing here can hang or crash.
#include "env/probe_os.h"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ember::env::detail {
namespace {

namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

// "root:video crw-rw----": the node's owner, group and mode, as `ls -l` shows them.
std::string owner_of(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return "";
  const passwd* pw = getpwuid(st.st_uid);
  const group* gr = getgrgid(st.st_gid);
  std::string mode = S_ISCHR(st.st_mode) ? "c" : S_ISDIR(st.st_mode) ? "d" : "-";
  const char* rwx = "rwxrwxrwx";
  for (int bit = 0; bit < 9; ++bit) mode += (st.st_mode & (0400 >> bit)) ? rwx[bit] : '-';
  return (pw ? std::string(pw->pw_name) : std::to_string(st.st_uid)) + ":" +
         (gr ? std::string(gr->gr_name) : std::to_string(st.st_gid)) + " " + mode;
}

// The container runtime a `container=` value or a cgroup path names; "" when none.
std::string container_in_cgroup(const std::string& cgroup) {
  for (const char* name : {"kubepods", "docker", "containerd", "libpod", "lxc"})
    if (cgroup.find(name) != std::string::npos)
      return std::string(name) == "kubepods" ? "kubernetes" : std::string(name) == "libpod" ? "podman" : name;
  return "";
}

}  // namespace

OsRelease parse_os_release(const std::string& text) {
  OsRelease r;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq == std::string::npos || line.starts_with("#")) continue;
    const std::string key = line.substr(0, eq);
    std::string value = line.substr(eq + 1);
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
      value = value.substr(1, value.size() - 2);
    if (key == "ID") r.id = value;
    if (key == "VERSION_ID") r.version_id = value;
    if (key == "PRETTY_NAME") r.pretty_name = value;
    if (key == "ID_LIKE") {
      std::istringstream words(value);
      for (std::string w; words >> w;) r.id_like.push_back(w);
    }
  }
  return r;
}

void probe_os_release(EnvFacts& f, const std::string& root) {
  // os-release(5): /etc/os-release, else /usr/lib/os-release.
  std::string text = read_file(root + "/etc/os-release");
  if (text.empty()) text = read_file(root + "/usr/lib/os-release");
  f.os_release = parse_os_release(text);
}

void probe_modules(EnvFacts& f, const std::string& root) {
  // "nouveau 2711552 1 - Live 0x0000000000000000": the module name is the first word.
  std::istringstream in(read_file(root + "/proc/modules"));
  std::string line;
  while (std::getline(in, line)) {
    const std::string name = line.substr(0, line.find(' '));
    if (name == "nouveau" || name == "nova_core" || name == "nova_drm") f.conflicting_modules.push_back(name);
  }
}

void probe_secure_boot(EnvFacts& f, const std::string& root) {
  const std::string var =
      root + "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c";
  const std::string bytes = read_file(var);
  if (bytes.size() >= 5) f.secure_boot = bytes.back() == '\1';
  else if (exists(root + "/sys/firmware/efi") && !exists(var)) f.secure_boot = false;  // EFI without the variable
}

void probe_container(EnvFacts& f, const std::string& root, const char* container_env) {
  auto found = [&](std::string kind, std::string hint) {
    f.container = std::move(kind);
    f.container_hint = std::move(hint);
  };
  if (exists(root + "/.dockerenv")) return found("docker", "/.dockerenv");
  if (exists(root + "/run/.containerenv")) return found("podman", "/run/.containerenv");
  if (container_env != nullptr && *container_env != '\0')
    return found(container_env, std::string("container=") + container_env);
  // PID 1's environment (readable by root): systemd-nspawn, LXC and podman set container=.
  const std::string environ = read_file(root + "/proc/1/environ");
  for (size_t at = 0; at < environ.size();) {
    const size_t end = std::min(environ.find('\0', at), environ.size());
    const std::string entry = environ.substr(at, end - at);
    if (entry.starts_with("container=") && entry.size() > 10) return found(entry.substr(10), entry + " (PID 1)");
    at = end + 1;
  }
  // cgroup v1 paths name the runtime ("/docker/<id>", "/kubepods/..."); cgroup v2 shows "0::/".
  std::istringstream cg(read_file(root + "/proc/1/cgroup"));
  for (std::string line; std::getline(cg, line);)
    if (std::string kind = container_in_cgroup(line); !kind.empty()) return found(kind, "/proc/1/cgroup");
}

void probe_device_nodes(EnvFacts& f, const std::string& root, const AccessCheck& can_rw) {
  if (f.wsl) return;  // WSL2 reaches the GPU through /dev/dxg, never /dev/nvidia*
  // Each GPU's node is /dev/nvidia<minor>; the module lists the minors ("Device Minor: 0").
  std::vector<int> minors;
  std::error_code ec;
  const fs::path gpus = root + "/proc/driver/nvidia/gpus";
  for (auto it = fs::directory_iterator(gpus, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::istringstream info(read_file((it->path() / "information").string()));
    for (std::string line; std::getline(info, line);)
      if (line.starts_with("Device Minor:")) minors.push_back(std::atoi(line.c_str() + 13));
  }
  std::sort(minors.begin(), minors.end());
  if (minors.empty())
    for (int i = 0; i < f.physical_gpus; ++i) minors.push_back(i);
  std::vector<std::string> nodes = {"/dev/nvidiactl", "/dev/nvidia-uvm"};
  for (int m : minors) nodes.push_back("/dev/nvidia" + std::to_string(m));
  f.device_nodes.clear();
  for (const std::string& node : nodes) {
    DeviceNode d;
    d.path = node;
    const std::string full = root + node;
    d.exists = exists(full);
    if (d.exists) {
      d.usable = can_rw ? can_rw(node) : access(full.c_str(), R_OK | W_OK) == 0;
      d.owner = owner_of(full);
    }
    f.device_nodes.push_back(d);
  }
}

void probe_pci_gpus(EnvFacts& f, const std::string& root) {
  // WSL2's bus shows Microsoft's virtual GPU whatever the Windows side has, and a Jetson's GPU is
  // integrated, not a PCI device: neither bus can rule one out.
  if (f.wsl || exists(root + "/etc/nv_tegra_release")) return;
  const fs::path bus = root + "/sys/bus/pci/devices";
  std::error_code ec;
  if (!fs::is_directory(bus, ec)) return;  // a container without /sys: nothing to tell
  int gpus = 0, devices = 0;
  for (auto it = fs::directory_iterator(bus, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    ++devices;
    auto field = [&](const char* name) {
      std::string v = read_file((it->path() / name).string());
      return std::strtoul(v.c_str(), nullptr, 16);
    };
    // Class 0x03xxxx: VGA (0x0300) and 3D controllers (0x0302, the data-centre GPUs). NVIDIA's
    // audio, USB and NVSwitch functions share the vendor id but not the class.
    if (field("vendor") == 0x10de && (field("class") >> 16) == 0x03) ++gpus;
  }
  if (devices > 0) f.nvidia_pci_gpus = gpus;  // an empty bus (a sandbox) says nothing either
}

void probe_os(EnvFacts& f, const std::string& root) {
  probe_os_release(f, root);
  probe_pci_gpus(f, root);
  probe_modules(f, root);
  probe_secure_boot(f, root);
  probe_container(f, root, root.empty() ? std::getenv("container") : nullptr);
  probe_device_nodes(f, root);
}

}  // namespace ember::env::detail
