/* A fake cuBLAS 12 (libcublas.so.12 reporting 12.4.5), for the doctor's "cuBLAS of another major
 * version" test (tests/unit/test_doctor_probe.cpp). */
int cublasGetProperty(int type, int* value) {
  static const int v[3] = {12, 4, 5};
  if (type < 0 || type > 2) return 7; /* CUBLAS_STATUS_INVALID_VALUE */
  *value = v[type];
  return 0;
}
