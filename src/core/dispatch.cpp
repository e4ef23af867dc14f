// The dispatch table's one piece of state outside the slots: whether the backends have registered.
// KernelSlot asks it only when a slot is empty, to tell "not registered yet" (our bug) from
// "no kernel for that device in this build" (the user's NotImplementedError).
#include "core/dispatch.h"

#include <atomic>

namespace ember::detail {
namespace {
std::atomic<bool> g_registered{false};
}
bool backends_registered() { return g_registered.load(std::memory_order_acquire); }
void mark_backends_registered() { g_registered.store(true, std::memory_order_release); }
}  // namespace ember::detail
