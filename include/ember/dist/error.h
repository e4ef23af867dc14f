// Errors of data-parallel training. Every one names the rank that reports it and, where known, the
// rank and host that caused it, so a user reading one log line of a many-process job knows where
// to look. Only the CLI catches them (like every ember::Error).
#pragma once

#include <ember/core/error.h>

namespace ember::dist {

// Environment, rendezvous and argument mistakes (RANK >= WORLD_SIZE, no MASTER_ADDR, a tensor that
// is not float32 given to all_reduce).
class DistError : public Error {
 public:
  using Error::Error;
};
// A collective, a store request or a rendezvous that did not finish within its timeout.
class DistTimeoutError : public DistError {
 public:
  using DistError::DistError;
};
// A peer process died or closed its connections while this rank waited on it.
class PeerFailureError : public DistError {
 public:
  using DistError::DistError;
};
// Ranks started with different configs, datasets or ember versions (check_same).
class ConfigMismatchError : public DistError {
 public:
  using DistError::DistError;
};

}  // namespace ember::dist
