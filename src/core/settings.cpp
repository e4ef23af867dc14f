// The process-wide numeric settings of ember/core/settings.h.
#include "ember/core/settings.h"

#include <atomic>

namespace ember {

namespace {
std::atomic<bool> g_deterministic{false};
}  // namespace

void set_deterministic(bool on) { g_deterministic.store(on, std::memory_order_relaxed); }
bool deterministic() { return g_deterministic.load(std::memory_order_relaxed); }

}  // namespace ember
