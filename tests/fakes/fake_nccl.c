/* A fake NCCL (libnccl.so.2) for the doctor's provenance tests (test_doctor_os.cpp): ncclGetVersion
 * reports FAKE_NCCL_VERSION (NCCL_VERSION_CODE, default 22809 = 2.28.9) and returns
 * FAKE_NCCL_RC (default 0 = ncclSuccess). */
#include <stdlib.h>

static int env_int(const char* name, int fallback) {
  const char* v = getenv(name);
  return v != NULL && *v != '\0' ? atoi(v) : fallback;
}

int ncclGetVersion(int* version) {
  *version = env_int("FAKE_NCCL_VERSION", 22809);
  return env_int("FAKE_NCCL_RC", 0);
}
