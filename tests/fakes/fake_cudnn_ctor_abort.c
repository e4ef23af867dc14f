/* A fake libcudnn.so.9 whose constructor aborts: dlopen alone kills the process that loads it.
 * Used by tests/unit/test_doctor_probe.cpp to prove the doctor probes in a child process. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((constructor)) static void fail_at_load(void) {
  fprintf(stderr, "fake cuDNN: constructor aborts\n");
  abort();
}
size_t cudnnGetVersion(void) { return 91000; }
