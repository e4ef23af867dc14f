/* A parametrised fake NVML (libnvidia-ml.so.1) for the doctor's tests (test_doctor_probe.cpp).
 * FAKE_NVML_GPUS: one "name:total_gib:used_gib:mig:ecc_uncorrected:throttle_bits" per GPU, comma
 * separated; FAKE_NVML_PROCS: "pid:mib;pid:mib" holding GPU 0; FAKE_NVML_INIT_RC: nvmlInit's return. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { unsigned long long total, free, used; } Memory;
typedef struct { unsigned pid; unsigned long long used; unsigned gi, ci; } Process;

static int field(int dev, int which, char* out, size_t len) {
  const char* s = getenv("FAKE_NVML_GPUS");
  if (s == NULL) return 0;
  for (int k = 0; k < dev; ++k) {
    s = strchr(s, ',');
    if (s == NULL) return 0;
    ++s;
  }
  for (int k = 0; k < which; ++k) {
    const char* c = strchr(s, ':');
    const char* e = strchr(s, ',');
    if (c == NULL || (e != NULL && c > e)) return 0;
    s = c + 1;
  }
  size_t n = strcspn(s, ":,");
  if (n >= len) n = len - 1;
  memcpy(out, s, n);
  out[n] = '\0';
  return 1;
}
static long long num(int dev, int which) {
  char b[64];
  return field(dev, which, b, sizeof b) ? atoll(b) : 0;
}

int nvmlInit_v2(void) { return getenv("FAKE_NVML_INIT_RC") ? atoi(getenv("FAKE_NVML_INIT_RC")) : 0; }
int nvmlShutdown(void) { return 0; }
int nvmlDeviceGetCount_v2(unsigned* n) {
  char b[64];
  *n = 0;
  while (field((int)*n, 0, b, sizeof b)) ++*n;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** dev) {
  *dev = (void*)(size_t)(i + 1);
  return 0;
}
#define DEV(h) ((int)(size_t)(h) - 1)
int nvmlDeviceGetName(void* h, char* name, unsigned len) { return field(DEV(h), 0, name, len) ? 0 : 2; }
int nvmlDeviceGetMemoryInfo(void* h, Memory* m) {
  m->total = (unsigned long long)num(DEV(h), 1) << 30;
  m->used = (unsigned long long)num(DEV(h), 2) << 30;
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetMigMode(void* h, unsigned* current, unsigned* pending) {
  *current = *pending = (unsigned)num(DEV(h), 3);
  return 0;
}
int nvmlDeviceGetTotalEccErrors(void* h, int type, int counter, unsigned long long* count) {
  (void)type, (void)counter;
  *count = (unsigned long long)num(DEV(h), 4);
  return 0;
}
int nvmlDeviceGetCurrentClocksEventReasons(void* h, unsigned long long* bits) {
  *bits = (unsigned long long)num(DEV(h), 5);
  return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(void* h, unsigned* count, Process* out) {
  const char* s = DEV(h) == 0 ? getenv("FAKE_NVML_PROCS") : NULL;
  unsigned n = 0;
  while (s != NULL && *s != '\0') {
    unsigned pid = 0, mib = 0;
    if (sscanf(s, "%u:%u", &pid, &mib) != 2) break;
    if (out != NULL && n < *count) out[n].pid = pid, out[n].used = (unsigned long long)mib << 20;
    ++n;
    s = strchr(s, ';');
    if (s != NULL) ++s;
  }
  if (out == NULL || n > *count) {
    *count = n;
    return n == 0 ? 0 : 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
  }
  *count = n;
  return 0;
}
