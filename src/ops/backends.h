// The backend registry: the one place that knows which backends were compiled. The ops layer calls
// ensure_backends() before its first allocation (empty()), so the dispatch table and the device
// allocators in core are filled before any tensor exists; core never calls up into it.
#pragma once

namespace ember {
void ensure_backends();  // registers every compiled backend once; thread-safe
}  // namespace ember
