// Process-wide numeric settings. Thread-safe (atomics); read by backends when they pick algorithms.
#pragma once

namespace ember {

// When true, backends use only algorithms whose results are bit-for-bit reproducible from run to
// run on the same device (e.g. cuDNN convolutions without atomics); this may be slower, and a
// backend with no deterministic algorithm for an op throws NotImplementedError. Default false.
// Affects ops launched after the call.
void set_deterministic(bool on);
bool deterministic();

}  // namespace ember
