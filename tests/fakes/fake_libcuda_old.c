/* A fake NVIDIA driver library (libcuda.so.1) that works but supports only CUDA 12.2, with one
 * sm_90 device: the doctor's "driver too old" test (tests/unit/test_doctor_probe.cpp). */
#include <stddef.h>
#include <string.h>

int cuInit(unsigned flags) { (void)flags; return 0; }
int cuDriverGetVersion(int* v) { *v = 12020; return 0; }
int cuDeviceGetCount(int* n) { *n = 1; return 0; }
int cuDeviceGet(int* dev, int ordinal) { *dev = ordinal; return ordinal == 0 ? 0 : 101; }
int cuDeviceGetName(char* name, int len, int dev) {
  (void)dev;
  strncpy(name, "Fake H200", (size_t)len);
  return 0;
}
int cuDeviceGetAttribute(int* v, int attr, int dev) {
  (void)dev;
  *v = attr == 75 ? 9 : 0; /* compute capability 9.0 */
  return 0;
}
int cuDeviceTotalMem_v2(size_t* bytes, int dev) {
  (void)dev;
  *bytes = (size_t)141 << 30;
  return 0;
}
