// TensorFlow 1.14's native library as far as the doctor looks at it: a shared object built against
// CUDA 10.0 (DT_NEEDED libcudart.so.10.0), which fails to load where that runtime is missing, as
// `import tensorflow` does on a machine with only a newer CUDA (tests/unit/test_doctor_python.cpp).
int cudaRuntimeGetVersion(int* v);
int fake_tf_cuda_version(void) {
  int v = 0;
  cudaRuntimeGetVersion(&v);
  return v;
}
