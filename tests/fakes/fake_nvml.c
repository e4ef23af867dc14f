/* A parametrised fake NVML (libnvidia-ml.so.1) for the doctor's and the training monitor's tests
 * (test_doctor_probe.cpp, test_doctor_nvml.cpp, test_gpu_monitor.cpp).
 * FAKE_NVML_GPUS: one "name:total_gib:used_gib:mig:ecc_uncorrected:throttle_bits" per GPU, comma
 * separated; FAKE_NVML_PROCS: "pid:mib;pid:mib" holding GPU 0; FAKE_NVML_INIT_RC: nvmlInit's return.
 * Per GPU, comma separated like FAKE_NVML_GPUS (an absent variable or an empty entry: the call
 * answers NVML_ERROR_NOT_SUPPORTED, as an older GPU does):
 *   FAKE_NVML_PERSISTENCE "1"        FAKE_NVML_DISPLAY "0"           FAKE_NVML_ECC_AGGREGATE "12"
 *   FAKE_NVML_RETIRED "sbe:dbe:pending"                               FAKE_NVML_REMAP "corr:unc:pending:failure"
 *   FAKE_NVML_CLOCKS "sm:sm_max:mem:mem_max" (MHz)                    FAKE_NVML_POWER "draw_w:limit_w"
 *   FAKE_NVML_TEMP "celsius"         FAKE_NVML_UTIL "gpu%:mem%"      FAKE_NVML_MIG "MIG-a;MIG-b" (instance UUIDs)
 * FAKE_NVML_XIDS: "gpu:xid;gpu:xid", the Xid events nvmlEventSetWait_v2 delivers once each, then it
 * times out. A GPU's UUID is "GPU-fake-<index>". */
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
  unsigned n = 0;
  nvmlDeviceGetCount_v2(&n);
  if (i >= n) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
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
static int ecc_aggregate(void* h, unsigned long long* count);
int nvmlDeviceGetTotalEccErrors(void* h, int type, int counter, unsigned long long* count) {
  if (type != 1) return 3; /* only uncorrected errors are faked */
  if (counter == 1) return ecc_aggregate(h, count);
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

/* The entry `dev` of a per-GPU variable, or 0 when there is none. */
static int entry(const char* var, int dev, char* out, size_t len) {
  const char* s = getenv(var);
  if (s == NULL) return 0;
  for (int k = 0; k < dev; ++k) {
    s = strchr(s, ',');
    if (s == NULL) return 0;
    ++s;
  }
  size_t n = strcspn(s, ",");
  if (n == 0) return 0;
  if (n >= len) n = len - 1;
  memcpy(out, s, n);
  out[n] = '\0';
  return 1;
}
#define NOT_SUPPORTED 3
static int entry_nums(const char* var, void* h, unsigned* v, int count) {
  char b[128];
  if (DEV(h) < 0 || DEV(h) >= 64 || !entry(var, DEV(h), b, sizeof b)) return NOT_SUPPORTED;
  const char* s = b;
  for (int k = 0; k < count; ++k) {
    v[k] = (unsigned)strtoul(s, NULL, 10);
    s = strchr(s, ':');
    if (s == NULL) {
      for (++k; k < count; ++k) v[k] = 0;
      break;
    }
    ++s;
  }
  return 0;
}

int nvmlDeviceGetUUID(void* h, char* uuid, unsigned len) {
  if (DEV(h) >= 1000) { /* a MIG instance: 1000 * (gpu + 1) + k */
    char b[256];
    int gpu = DEV(h) / 1000 - 1, k = DEV(h) % 1000;
    if (!entry("FAKE_NVML_MIG", gpu, b, sizeof b)) return 6; /* NVML_ERROR_NOT_FOUND */
    const char* s = b;
    for (int i = 0; i < k && s != NULL; ++i) {
      s = strchr(s, ';');
      if (s != NULL) ++s;
    }
    if (s == NULL) return 6;
    snprintf(uuid, len, "%.*s", (int)strcspn(s, ";"), s);
    return 0;
  }
  snprintf(uuid, len, "GPU-fake-%d", DEV(h));
  return 0;
}
int nvmlDeviceGetHandleByUUID(const char* uuid, void** dev) {
  int i = 0;
  if (sscanf(uuid, "GPU-fake-%d", &i) != 1) return 6;
  *dev = (void*)(size_t)(i + 1);
  return 0;
}
int nvmlDeviceGetPersistenceMode(void* h, int* on) {
  unsigned v[1];
  int rc = entry_nums("FAKE_NVML_PERSISTENCE", h, v, 1);
  if (rc == 0) *on = (int)v[0];
  return rc;
}
int nvmlDeviceGetDisplayActive(void* h, int* on) {
  unsigned v[1];
  int rc = entry_nums("FAKE_NVML_DISPLAY", h, v, 1);
  if (rc == 0) *on = (int)v[0];
  return rc;
}
int nvmlDeviceGetRetiredPages(void* h, int cause, unsigned* count, unsigned long long* addresses) {
  unsigned v[3];
  int rc = entry_nums("FAKE_NVML_RETIRED", h, v, 3);
  if (rc != 0) return rc;
  unsigned n = v[cause == 1 ? 1 : 0];
  unsigned room = *count;
  *count = n;
  if (n > room) return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
  for (unsigned k = 0; k < n && addresses != NULL; ++k) addresses[k] = 0x1000ull * (k + 1);
  return 0;
}
int nvmlDeviceGetRetiredPagesPendingStatus(void* h, int* pending) {
  unsigned v[3];
  int rc = entry_nums("FAKE_NVML_RETIRED", h, v, 3);
  if (rc == 0) *pending = (int)v[2];
  return rc;
}
int nvmlDeviceGetRemappedRows(void* h, unsigned* corr, unsigned* unc, unsigned* pending, unsigned* failure) {
  unsigned v[4];
  int rc = entry_nums("FAKE_NVML_REMAP", h, v, 4);
  if (rc == 0) *corr = v[0], *unc = v[1], *pending = v[2], *failure = v[3];
  return rc;
}
static int ecc_aggregate(void* h, unsigned long long* count) {
  unsigned v[1];
  int rc = entry_nums("FAKE_NVML_ECC_AGGREGATE", h, v, 1);
  if (rc == 0) *count = v[0];
  return rc;
}
static int clock_of(void* h, int type, int max, unsigned* mhz) {
  unsigned v[4];
  int rc = entry_nums("FAKE_NVML_CLOCKS", h, v, 4);
  if (rc != 0) return rc;
  if (type != 1 && type != 2) return NOT_SUPPORTED;
  *mhz = v[(type == 1 ? 0 : 2) + max];
  return 0;
}
int nvmlDeviceGetClockInfo(void* h, int type, unsigned* mhz) { return clock_of(h, type, 0, mhz); }
int nvmlDeviceGetMaxClockInfo(void* h, int type, unsigned* mhz) { return clock_of(h, type, 1, mhz); }
int nvmlDeviceGetPowerUsage(void* h, unsigned* mw) {
  unsigned v[2];
  int rc = entry_nums("FAKE_NVML_POWER", h, v, 2);
  if (rc == 0) *mw = v[0] * 1000;
  return rc;
}
int nvmlDeviceGetEnforcedPowerLimit(void* h, unsigned* mw) {
  unsigned v[2];
  int rc = entry_nums("FAKE_NVML_POWER", h, v, 2);
  if (rc == 0) *mw = v[1] * 1000;
  return rc;
}
int nvmlDeviceGetTemperature(void* h, int sensor, unsigned* c) {
  unsigned v[1];
  int rc = sensor == 0 ? entry_nums("FAKE_NVML_TEMP", h, v, 1) : NOT_SUPPORTED;
  if (rc == 0) *c = v[0];
  return rc;
}
typedef struct { unsigned gpu, memory; } Utilization;
int nvmlDeviceGetUtilizationRates(void* h, Utilization* u) {
  unsigned v[2];
  int rc = entry_nums("FAKE_NVML_UTIL", h, v, 2);
  if (rc == 0) u->gpu = v[0], u->memory = v[1];
  return rc;
}
int nvmlDeviceGetMaxMigDeviceCount(void* h, unsigned* count) {
  *count = num(DEV(h), 3) == 1 ? 7 : 0;
  return 0;
}
int nvmlDeviceGetMigDeviceHandleByIndex(void* h, unsigned index, void** mig) {
  char b[256];
  if (!entry("FAKE_NVML_MIG", DEV(h), b, sizeof b)) return 6;
  const char* s = b;
  for (unsigned i = 0; i < index && s != NULL; ++i) {
    s = strchr(s, ';');
    if (s != NULL) ++s;
  }
  if (s == NULL) return 6;
  *mig = (void*)(size_t)(1000 * (DEV(h) + 1) + (int)index + 1);
  return 0;
}

/* Xid events: each of FAKE_NVML_XIDS once, for the GPUs registered; then a timeout. */
typedef struct { void* device; unsigned long long type, data; unsigned gi, ci; } EventData;
static unsigned registered = 0; /* bit per GPU */
static int delivered = 0;
int nvmlEventSetCreate(void** set) {
  *set = (void*)&registered;
  registered = 0, delivered = 0;
  return 0;
}
int nvmlDeviceRegisterEvents(void* h, unsigned long long types, void* set) {
  (void)set;
  if (!(types & 0x8ull) || DEV(h) < 0 || DEV(h) >= 32) return NOT_SUPPORTED;
  registered |= 1u << DEV(h);
  return 0;
}
int nvmlEventSetWait_v2(void* set, EventData* e, unsigned timeout_ms) {
  (void)set, (void)timeout_ms;
  const char* s = getenv("FAKE_NVML_XIDS");
  for (int k = 0; s != NULL && *s != '\0'; ++k) {
    int gpu = 0;
    unsigned long long xid = 0;
    if (sscanf(s, "%d:%llu", &gpu, &xid) != 2) break;
    if (k >= delivered && gpu >= 0 && gpu < 32 && (registered & (1u << gpu))) {
      delivered = k + 1;
      e->device = (void*)(size_t)(gpu + 1), e->type = 0x8ull, e->data = xid, e->gi = e->ci = 0xFFFFFFFFu;
      return 0;
    }
    s = strchr(s, ';');
    if (s != NULL) ++s;
  }
  return 10; /* NVML_ERROR_TIMEOUT */
}
int nvmlEventSetFree(void* set) {
  (void)set;
  return 0;
}
