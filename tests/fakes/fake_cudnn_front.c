/* A fake libcudnn.so.9 front that behaves like the real one when its engine libraries are missing:
 * asked its version, it prints cuDNN's message and aborts. Used by tests/unit/test_doctor_probe.cpp. */
#include <stdio.h>
#include <stdlib.h>

size_t cudnnGetVersion(void) {
  fprintf(stderr, "Invalid handle. Cannot load symbol cudnnGetVersion\n");
  abort();
}
size_t cudnnGetCudartVersion(void) { abort(); }
