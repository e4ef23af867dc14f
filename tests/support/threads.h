// Restores the thread count and ember::deterministic() a test changes, when it ends (passing or not).
#pragma once

#include <ember/ember.h>

namespace ember::test {

struct ThreadsAndMode {
  int threads = get_num_threads();
  bool det = deterministic();
  ~ThreadsAndMode() {
    set_num_threads(threads);
    set_deterministic(det);
  }
};

}  // namespace ember::test
