// Fix lines that fit the system (distro.cpp): how to install an NVIDIA driver new enough for the
// CUDA ember was built with, and cuDNN, on this distribution (/etc/os-release), in WSL2 (the
// Windows driver) or in a container (the host's driver and --gpus all) — instead of one
// `apt install nvidia-driver` for all. Pure functions of the facts, like the verdict.
#pragma once

#include <optional>
#include <string>

#include "ember/env/doctor.h"

namespace ember::env::detail {

enum class Distro { Debian, Ubuntu, Rhel, Fedora, Arch, Unknown };
// Debian, Ubuntu (and its derivatives through ID_LIKE), RHEL / Rocky / Alma / CentOS / Oracle,
// Fedora, Arch (and Manjaro, EndeavourOS); anything else is Unknown.
Distro distro_of(const OsRelease& os);
const char* distro_name(Distro d);

// "install the NVIDIA driver 580.65.06 or newer (CUDA 13.0): <the commands for this system>".
// `cuda`: the CUDA to support (the runtime's, else the one ember was built with); nullopt for a
// build without CUDA. Always names a driver branch from the compatibility tables when `cuda` is set.
std::string driver_install_fix(const EnvFacts& f, const std::optional<Version>& cuda);
// "upgrade the NVIDIA driver to 580.65.06 or newer (CUDA 13.0)": the words other fixes start with;
// on WSL2 the Windows driver with its Windows number, in a container the host's.
std::string driver_upgrade(const EnvFacts& f, const Version& cuda);
// How to install cuDNN `cudnn_major` for CUDA `cuda_major` here: the pip wheel always, and the
// distribution's package where it has one ("" when it has none).
std::string cudnn_package_hint(const EnvFacts& f, int cudnn_major, int cuda_major);
// The key DKMS signs the NVIDIA module with, to enroll with `mokutil --import` under Secure Boot.
std::string mok_key_path(const EnvFacts& f);
// What to do for a container whose GPUs were not passed in (the host's side, never a driver inside).
std::string container_gpu_fix(const EnvFacts& f, const std::optional<Version>& cuda);

}  // namespace ember::env::detail
