// The process-wide numeric settings of ember/core/settings.h.
#include "ember/core/settings.h"

#include <atomic>

namespace ember {

namespace {
std::atomic<bool> g_deterministic{false};
std::atomic<bool> g_allow_tf32{false};
}  // namespace

void set_deterministic(bool on) { g_deterministic.store(on, std::memory_order_relaxed); }
bool deterministic() { return g_deterministic.load(std::memory_order_relaxed); }
void set_allow_tf32(bool on) { g_allow_tf32.store(on, std::memory_order_relaxed); }
bool allow_tf32() { return g_allow_tf32.load(std::memory_order_relaxed); }

}  // namespace ember
