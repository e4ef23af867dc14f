// The CPU backend's answer to core's CpuLibraryQuery (core/runtime.h): oneDNN's effective ISA and
// version, the loaded OpenBLAS's configuration, threading model, threads and file.
#pragma once

#include "core/runtime.h"

namespace ember::cpu {
CpuLibraryFacts library_facts();
}  // namespace ember::cpu
