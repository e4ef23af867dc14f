/* A parametrised fake NVIDIA driver library (libcuda.so.1) for the doctor's tests
 * (tests/unit/test_doctor_probe.cpp). The test sets, before probing (the probe forks, the child
 * reads them):
 *   FAKE_CUDA_INIT_RC     what cuInit returns (default 0; 100 = CUDA_ERROR_NO_DEVICE, 36 = too old)
 *   FAKE_CUDA_DRIVER      what cuDriverGetVersion reports (default 13000 = CUDA 13.0)
 *   FAKE_CUDA_DEVICES     the devices as "CC:name,CC:name", e.g. "90:Fake H200,70:Fake V100"
 *                         (default: none) */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int env_int(const char* name, int fallback) {
  const char* v = getenv(name);
  return v != NULL && *v != '\0' ? atoi(v) : fallback;
}

/* The i-th "CC:name" entry of FAKE_CUDA_DEVICES; 0 when there is none. */
static int device_entry(int i, int* cc, char* name, size_t len) {
  const char* s = getenv("FAKE_CUDA_DEVICES");
  if (s == NULL) return 0;
  for (int k = 0; *s != '\0'; ++k) {
    const char* end = strchr(s, ',');
    size_t n = end != NULL ? (size_t)(end - s) : strlen(s);
    if (k == i) {
      *cc = atoi(s);
      const char* colon = memchr(s, ':', n);
      size_t m = colon != NULL ? n - (size_t)(colon + 1 - s) : 0;
      if (m >= len) m = len - 1;
      if (colon != NULL) memcpy(name, colon + 1, m);
      name[m] = '\0';
      return 1;
    }
    if (end == NULL) break;
    s = end + 1;
  }
  return 0;
}

int cuInit(unsigned flags) {
  (void)flags;
  return env_int("FAKE_CUDA_INIT_RC", 0);
}
int cuDriverGetVersion(int* v) {
  *v = env_int("FAKE_CUDA_DRIVER", 13000);
  return 0;
}
int cuDeviceGetCount(int* n) {
  int cc;
  char name[64];
  *n = 0;
  while (device_entry(*n, &cc, name, sizeof name)) ++*n;
  return 0;
}
int cuDeviceGet(int* dev, int ordinal) {
  int cc;
  char name[64];
  *dev = ordinal;
  return device_entry(ordinal, &cc, name, sizeof name) ? 0 : 101;
}
int cuDeviceGetName(char* out, int len, int dev) {
  int cc;
  return device_entry(dev, &cc, out, (size_t)len) ? 0 : 101;
}
int cuDeviceGetAttribute(int* v, int attr, int dev) {
  int cc = 0;
  char name[64];
  if (!device_entry(dev, &cc, name, sizeof name)) return 101;
  *v = attr == 75 ? cc / 10 : attr == 76 ? cc % 10 : 0;
  return 0;
}
int cuDeviceTotalMem_v2(size_t* bytes, int dev) {
  (void)dev;
  *bytes = (size_t)16 << 30;
  return 0;
}
int cuGetErrorName(int rc, const char** s) {
  *s = rc == 100 ? "CUDA_ERROR_NO_DEVICE" : rc == 36 ? "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
