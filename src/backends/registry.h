// The backend registry: the one place that knows which backends were compiled (ggml's registry
// sits the same way, above its backends). The ops layer calls ensure_backends() before its first
// allocation (empty()); the runtime queries (backends/runtime.h) call it before they read what a
// backend registered. Registration fills core's tables: the dispatch table's slots, the device
// allocators and the runtime queries (core/runtime.h), so core never calls up into a backend.
#pragma once

namespace ember {
void ensure_backends();  // registers every compiled backend once; thread-safe
}  // namespace ember
