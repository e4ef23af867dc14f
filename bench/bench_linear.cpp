// The linear layers behind the issue-5 mlp-inference verdict, all in one run and on the same
// threads: OpenBLAS's sgemm with the transposed weight (what PyTorch 1.13 from Debian calls),
// ember's linear under NoGradGuard (oneDNN, weight packed once), and oneDNN's inner product with
// the weight packed once in float32 and in bf16 (bf16 only where oneDNN finds AVX512-BF16 or
// AMX; otherwise the line says so). Median of 300 calls after 10 warm-up calls, GFLOP/s.
//   ./build/bench/bench_linear [--threads 2]
#include <cblas.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <ember/ember.h>

using namespace ember;

namespace {

template <class F>
double median_ms(F&& f, int reps = 300) {
  for (int i = 0; i < 10; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// oneDNN inner product, weight reordered once into the primitive's layout; the input is converted
// to `wdt` on every call (a no-op copy-free path for f32). Returns ms per call, or -1 if oneDNN has
// no implementation for that data type here.
double dnnl_ip_ms(int64_t n, int64_t in, int64_t out, dnnl::memory::data_type wdt, std::string& impl) {
  using dnnl::memory;
  using tag = memory::format_tag;
  using dt = memory::data_type;
  try {
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream s(eng);
    std::vector<float> x(size_t(n * in), 0.5f), w(size_t(out * in), 0.25f), b(size_t(out), 0.1f), y(size_t(n * out));
    const memory::desc x_f32({n, in}, dt::f32, tag::nc), w_f32({out, in}, dt::f32, tag::oi);
    const memory::desc b_d({out}, dt::f32, tag::x), y_d({n, out}, dt::f32, tag::nc);
    const memory::desc x_any({n, in}, wdt, tag::any), w_any({out, in}, wdt, tag::any);
    dnnl::inner_product_forward::primitive_desc pd(
        dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_inference, x_any, w_any, b_d, y_d), eng);
    impl = pd.impl_info_str();
    dnnl::inner_product_forward ip(pd);
    memory xm(x_f32, eng, x.data()), wm(w_f32, eng, w.data()), bm(b_d, eng, b.data()), ym(y_d, eng, y.data());
    memory wp(pd.weights_desc(), eng), xp = pd.src_desc() == x_f32 ? xm : memory(pd.src_desc(), eng);
    dnnl::reorder(wm, wp).execute(s, wm, wp);
    s.wait();
    return median_ms([&] {
      if (xp != xm) dnnl::reorder(xm, xp).execute(s, xm, xp);
      ip.execute(s, {{DNNL_ARG_SRC, xp}, {DNNL_ARG_WEIGHTS, wp}, {DNNL_ARG_BIAS, bm}, {DNNL_ARG_DST, ym}});
      s.wait();
    });
  } catch (const dnnl::error& e) {
    impl = std::string("not available: ") + e.what();
    return -1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = std::stoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bench_linear [--threads N]\n");
      return 2;
    }
  }
  set_num_threads(threads);  // OpenMP for oneDNN, and OpenBLAS follows on ember's first GEMM
  std::printf("threads %d; N x I -> O (batch x in -> out), GFLOP/s, median of 300\n", threads);
  struct Shape { int64_t n, in, out; const char* what; };
  const Shape shapes[] = {{256, 784, 256, "mlp layer 1, inference batch 256"},
                          {64, 784, 256, "mlp layer 1, training batch 64"},
                          {64, 9216, 128, "mnistnet fc1, batch 64"}};
  Generator gen(5);
  for (const Shape& s : shapes) {
    const double mflop = 2.0 * double(s.n * s.in * s.out) / 1e6;
    Tensor x = randn({s.n, s.in}, {}, &gen), w = randn({s.out, s.in}, {}, &gen), b = randn({s.out}, {}, &gen);
    std::vector<float> c(size_t(s.n * s.out));
    NoGradGuard ng;
    (void)linear(x, w, b);  // registers the backends and syncs OpenBLAS's thread count
    const double blas = median_ms([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(s.n), int(s.out), int(s.in), 1.0f, x.data_ptr<float>(),
                  int(s.in), w.data_ptr<float>(), int(s.in), 0.0f, c.data(), int(s.out));
    });
    const double ours = median_ms([&] { (void)linear(x, w, b); });
    std::string impl32, impl16;
    const double f32 = dnnl_ip_ms(s.n, s.in, s.out, dnnl::memory::data_type::f32, impl32);
    const double bf16 = dnnl_ip_ms(s.n, s.in, s.out, dnnl::memory::data_type::bf16, impl16);
    std::printf("\n%lldx%lld -> %lld (%s)\n", (long long)s.n, (long long)s.in, (long long)s.out, s.what);
    std::printf("  OpenBLAS sgemm, weight transposed     %7.3f ms %6.1f GFLOP/s\n", blas, mflop / blas);
    std::printf("  ember linear (no grad)                %7.3f ms %6.1f GFLOP/s  %.2fx OpenBLAS\n", ours, mflop / ours,
                blas / ours);
    if (f32 > 0)
      std::printf("  oneDNN f32, weight packed once        %7.3f ms %6.1f GFLOP/s  (%s)\n", f32, mflop / f32, impl32.c_str());
    if (bf16 > 0)
      std::printf("  oneDNN bf16, weight packed once       %7.3f ms %6.1f GFLOP/s  %.2fx f32  (%s)\n", bf16, mflop / bf16,
                  f32 / bf16, impl16.c_str());
    else
      std::printf("  oneDNN bf16: %s\n", impl16.c_str());
  }
  return 0;
}
