// A stand-in for CUDA 10.0's runtime (libcudart.so.10.0), only so a fake framework library can name
// it in DT_NEEDED (tests/unit/test_doctor_python.cpp); the test never puts it on a search path.
int cudaRuntimeGetVersion(int* v) {
  *v = 10000;
  return 0;
}
