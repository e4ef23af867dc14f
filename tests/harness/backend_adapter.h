// The one place where the op harness touches backend internals: which backends exist, how the
// plain reference kernels are put in the dispatch table, and how every kernel call gets its
// outputs sentinel-filled first. Rename a slot or a reference kernel: only backend_adapter.cpp changes.
#pragma once

#include <ember/ember.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace ember::test::ops {

// A way of running ops: a device plus overrides of some CPU kernel slots.
struct Backend {
  std::string name;             // "cpu", "cpu:conv-im2col", "reference", "cuda", ...
  Device device;
  std::vector<std::string> overrides;  // kernel slots this backend replaces (empty: the registered ones)
};

// The registered CPU kernels, then each alternative CPU kernel the table must also reach.
std::vector<Backend> cpu_backends();
// The CPU with every slot that has a plain-loop reference kernel switched to it (the oracle).
Backend reference_backend();
// cuda:0 when usable; otherwise nullopt-like (empty name) and *why says why.
Backend cuda_backend(std::string* why);

// The names of every kernel slot the scopes below wrap (each has a CPU kernel to reach).
std::vector<std::string> kernel_slots();

// Deliberately broken CPU backends for the harness's own tests: "selftest:unary-writes-nothing"
// (the unary kernel returns without writing its output) and "selftest:unary-off-by-1e-3".
Backend broken_backend(const std::string& which);

// While alive: the backend's overrides are installed, and every kernel slot is wrapped so that its
// outputs are filled with a sentinel before the kernel runs (a NaN-like value for the backend under
// test, a different one for the reference: a kernel that skips an element cannot match). Records
// the names of the slots called. Restores the table on destruction. Not reentrant.
class BackendScope {
 public:
  explicit BackendScope(const Backend& b);
  ~BackendScope();
  BackendScope(const BackendScope&) = delete;
  BackendScope& operator=(const BackendScope&) = delete;
  // Slot names called since construction.
  const std::set<std::string>& kernels_called() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ember::test::ops
