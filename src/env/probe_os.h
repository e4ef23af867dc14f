// The doctor's OS layer (probe_os.cpp): what the operating system says about the NVIDIA driver
// beside the libraries — /etc/os-release, the PCI bus (is there an NVIDIA GPU at all), /proc/modules
// (nouveau), the EFI Secure Boot variable, the /dev/nvidia* nodes and whether this is a container.
// Every reader takes a root prefix ("" = this machine) so the tests build fake /proc, /sys, /dev and
// /etc trees in a temporary directory.
#pragma once

#include <functional>
#include <string>

#include "ember/env/doctor.h"

namespace ember::env::detail {

// KEY=value lines, values optionally quoted (os-release(5)).
OsRelease parse_os_release(const std::string& text);
void probe_os_release(EnvFacts& f, const std::string& root);
// nouveau / nova_core in <root>/proc/modules: they hold the GPU the nvidia module needs.
void probe_modules(EnvFacts& f, const std::string& root);
// <root>/sys/firmware/efi/efivars/SecureBoot-<guid>: 4 attribute bytes, then 1 when it is on.
void probe_secure_boot(EnvFacts& f, const std::string& root);
// A container: /.dockerenv, /run/.containerenv, `container=` in this process's or PID 1's
// environment, container names in /proc/1/cgroup. `container_env`: getenv("container").
void probe_container(EnvFacts& f, const std::string& root, const char* container_env);
// /dev/nvidiactl, /dev/nvidia-uvm and /dev/nvidia<minor> for each GPU the module lists. `can_rw`
// says whether this process may read and write a path (access(2) by default; tests run as root,
// which access() always lets through, so they pass their own).
using AccessCheck = std::function<bool(const std::string& path)>;
void probe_device_nodes(EnvFacts& f, const std::string& root, const AccessCheck& can_rw = {});

// NVIDIA GPUs on the PCI bus: <root>/sys/bus/pci/devices/*/vendor 0x10de with a display-class
// `class` (0x03xxxx). Left unset (cannot tell) on WSL2, on a Jetson (its GPU is not a PCI device),
// without /sys/bus/pci, or on an empty bus.
void probe_pci_gpus(EnvFacts& f, const std::string& root);

// Everything above for this machine; call after probe_driver (the driver's setuid helper creates
// /dev/nvidia-uvm when CUDA first starts, so the nodes are read after the driver probe ran).
void probe_os(EnvFacts& f, const std::string& root);

}  // namespace ember::env::detail
