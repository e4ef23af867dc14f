/* A fake cuDNN 8 (libcudnn.so.8, version 8.9.7 for CUDA 12.2), for the doctor's
 * "cuDNN of another major version" test (tests/unit/test_doctor_probe.cpp). */
#include <stddef.h>

size_t cudnnGetVersion(void) { return 8907; }
size_t cudnnGetCudartVersion(void) { return 12020; }
