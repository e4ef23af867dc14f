// oneDNN 2.x against 3.x on the primitives ember runs: the mnistnet / lenet5 convolutions and the
// mlp (and mnistnet fc1) inner products and matmuls, forward / backward-data / backward-weights, in
// f32 and in ember's bf16 recipe (bf16 multiplicands, f32 results), plus the NCHW f32 <-> blocked
// reorders around a convolution. Built outside ember's CMake by bench/onednn_versions.sh, once per
// oneDNN, so the same source runs against both; only primitive-descriptor creation differs.
//
// Primitives and memories are created before the clock starts; a sample times k executions (k such
// that a sample lasts ~2 ms); a row gives the median and the best of --reps samples, in microseconds
// per call: row <op> <shape> <type> <median> <best> <implementation>. The implementation is
// pd.impl_info_str(), so a capped ISA (ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16) shows in every row.
//   onednn_versions [--reps N] [--filter SUBSTRING]
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;
using Args = std::unordered_map<int, memory>;

dnnl::engine& eng() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}
dnnl::stream& strm() {
  static dnnl::stream s(eng());
  return s;
}

memory::dims dims_of(const memory::desc& md) {
#if DNNL_VERSION_MAJOR >= 3
  return md.get_dims();
#else
  return md.dims();
#endif
}

// A memory in layout `md` filled with small random values, written through a plain f32 buffer
// and a reorder so that blocked layouts get their zero padding.
memory filled(const memory::desc& md, uint32_t seed) {
  const memory::dims d = dims_of(md);
  static const tag plain[] = {tag::undef, tag::a, tag::ab, tag::abc, tag::abcd, tag::abcde};
  memory src(memory::desc(d, dt::f32, plain[d.size()]), eng());
  size_t n = 1;
  for (auto v : d) n *= size_t(v);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  float* p = static_cast<float*>(src.get_data_handle());
  for (size_t i = 0; i < n; ++i) p[i] = u(gen);
  memory m(md, eng());
  dnnl::reorder(src, m).execute(strm(), src, m);
  strm().wait();
  return m;
}

// Microseconds per call of `f` over `reps` samples of k calls each: the median and the best sample
// (on a shared machine the best is the least disturbed; both are reported).
struct Timing {
  double median, best;
};
Timing time_us(const std::function<void()>& f, int reps) {
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < 3; ++i) f();
  strm().wait();
  auto t0 = clock::now();
  f();
  strm().wait();
  const double one = std::chrono::duration<double, std::micro>(clock::now() - t0).count();
  const int k = std::clamp(int(2000.0 / std::max(one, 1.0)), 1, 2000);
  std::vector<double> s;
  for (int r = 0; r < reps; ++r) {
    t0 = clock::now();
    for (int i = 0; i < k; ++i) f();
    strm().wait();
    s.push_back(std::chrono::duration<double, std::micro>(clock::now() - t0).count() / k);
  }
  std::sort(s.begin(), s.end());
  return {s[s.size() / 2], s.front()};
}

struct Options {
  int reps = 15;
  std::string filter;
};

void report(const Options& o, const std::string& op, const std::string& shape, const char* type,
            const std::string& impl, const std::function<void()>& f) {
  const std::string name = op + " " + shape + " " + type;
  if (!o.filter.empty() && name.find(o.filter) == std::string::npos) return;
  const Timing t = time_us(f, o.reps);
  std::printf("row\t%s\t%s\t%s\t%.2f\t%.2f\t%s\n", op.c_str(), shape.c_str(), type, t.median, t.best, impl.c_str());
  std::fflush(stdout);
}

template <class P>
std::function<void()> exec(const P& prim, Args args) {
  return [prim, args] { prim.execute(strm(), args); };
}
std::function<void()> reorder_fn(const memory::desc& from, const memory::desc& to) {
  memory a = filled(from, 7), b(to, eng());
  dnnl::reorder r(a, b);
  return [r, a, b]() mutable { r.execute(strm(), a, b); };
}
// An f32 nc(h)w-style plain desc of md's dims.
memory::desc plain_f32(const memory::desc& md) {
  const memory::dims d = dims_of(md);
  return memory::desc(d, dt::f32, d.size() == 4 ? tag::nchw : d.size() == 2 ? tag::nc : tag::x);
}
std::string impl_of(const dnnl::primitive_desc_base& pd) { return pd.impl_info_str(); }

// ---------------------------------------------------------------------------------- convolution
struct ConvShape {
  const char* name;
  int64_t n, ic, ih, iw, oc, k, pad;
  bool bias;
};

using cf = dnnl::convolution_forward;
using cbd = dnnl::convolution_backward_data;
using cbw = dnnl::convolution_backward_weights;
const auto kDirect = dnnl::algorithm::convolution_direct;

struct ConvGeom {
  memory::dims x, w, y, b, strides{1, 1}, dil{0, 0}, pad;
};

cf::primitive_desc conv_fwd(const ConvGeom& g, dt xt, dt wt, dt yt, bool bias) {
  const memory::desc x(g.x, xt, tag::any), w(g.w, wt, tag::any), y(g.y, yt, tag::any), b(g.b, dt::f32, tag::x);
  const auto prop = dnnl::prop_kind::forward_training;
#if DNNL_VERSION_MAJOR >= 3
  return bias ? cf::primitive_desc(eng(), prop, kDirect, x, w, b, y, g.strides, g.dil, g.pad, g.pad)
              : cf::primitive_desc(eng(), prop, kDirect, x, w, y, g.strides, g.dil, g.pad, g.pad);
#else
  return cf::primitive_desc(bias ? cf::desc(prop, kDirect, x, w, b, y, g.strides, g.dil, g.pad, g.pad)
                                 : cf::desc(prop, kDirect, x, w, y, g.strides, g.dil, g.pad, g.pad),
                            eng());
#endif
}
cbd::primitive_desc conv_bwd_data(const ConvGeom& g, dt xt, dt wt, dt yt, const cf::primitive_desc& hint) {
  const memory::desc x(g.x, xt, tag::any), w(g.w, wt, tag::any), y(g.y, yt, tag::any);
#if DNNL_VERSION_MAJOR >= 3
  return cbd::primitive_desc(eng(), kDirect, x, w, y, g.strides, g.dil, g.pad, g.pad, hint);
#else
  return cbd::primitive_desc(cbd::desc(kDirect, x, w, y, g.strides, g.dil, g.pad, g.pad), eng(), hint);
#endif
}
cbw::primitive_desc conv_bwd_weights(const ConvGeom& g, dt xt, dt wt, dt yt, const cf::primitive_desc& hint) {
  const memory::desc x(g.x, xt, tag::any), w(g.w, wt, tag::any), y(g.y, yt, tag::any);
#if DNNL_VERSION_MAJOR >= 3
  return cbw::primitive_desc(eng(), kDirect, x, w, y, g.strides, g.dil, g.pad, g.pad, hint);
#else
  return cbw::primitive_desc(cbw::desc(kDirect, x, w, y, g.strides, g.dil, g.pad, g.pad), eng(), hint);
#endif
}

// ember's types (src/cpu/nn_conv_dnnl.cpp): f32 throughout, or bf16 multiplicands with the one
// result f32; the backward primitives' hint is the all-bf16 forward.
void bench_conv(const Options& o, const ConvShape& s, bool bf16) {
  const int64_t oh = s.ih + 2 * s.pad - s.k + 1, ow = s.iw + 2 * s.pad - s.k + 1;
  ConvGeom g{{s.n, s.ic, s.ih, s.iw}, {s.oc, s.ic, s.k, s.k}, {s.n, s.oc, oh, ow}, {s.oc}, {1, 1}, {0, 0}, {s.pad, s.pad}};
  const std::string shape = std::string(s.name) + " " + std::to_string(s.n) + "x" + std::to_string(s.ic) + "x" +
                            std::to_string(s.ih) + "x" + std::to_string(s.iw) + " k" + std::to_string(s.k) + " ->" +
                            std::to_string(s.oc);
  const char* type = bf16 ? "bf16" : "f32";
  const dt h = bf16 ? dt::bf16 : dt::f32, f = dt::f32;

  const auto fwd = conv_fwd(g, h, h, f, s.bias);
  const auto hint = conv_fwd(g, h, h, h, false);
  const auto bwd_d = conv_bwd_data(g, f, h, h, hint);
  const auto bwd_w = conv_bwd_weights(g, h, f, h, hint);

  Args fa{{DNNL_ARG_SRC, filled(fwd.src_desc(), 1)}, {DNNL_ARG_WEIGHTS, filled(fwd.weights_desc(), 2)},
          {DNNL_ARG_DST, memory(fwd.dst_desc(), eng())}};
  if (s.bias) fa.emplace(DNNL_ARG_BIAS, filled(fwd.bias_desc(), 3));
  report(o, "conv_fwd", shape, type, impl_of(fwd), exec(cf(fwd), fa));
  report(o, "conv_bwd_data", shape, type, impl_of(bwd_d),
         exec(cbd(bwd_d), {{DNNL_ARG_DIFF_DST, filled(bwd_d.diff_dst_desc(), 4)},
                           {DNNL_ARG_WEIGHTS, filled(bwd_d.weights_desc(), 5)},
                           {DNNL_ARG_DIFF_SRC, memory(bwd_d.diff_src_desc(), eng())}}));
  report(o, "conv_bwd_weights", shape, type, impl_of(bwd_w),
         exec(cbw(bwd_w), {{DNNL_ARG_DIFF_DST, filled(bwd_w.diff_dst_desc(), 6)},
                           {DNNL_ARG_SRC, filled(bwd_w.src_desc(), 7)},
                           {DNNL_ARG_DIFF_WEIGHTS, memory(bwd_w.diff_weights_desc(), eng())}}));
  // The reorders ember runs around these: x and grad_out NCHW f32 -> the primitives' (blocked, bf16
  // in the bf16 recipe) layouts, the f32 results back to NCHW.
  report(o, "reorder_x_in", shape, type, "nchw f32 -> fwd src", reorder_fn(plain_f32(fwd.src_desc()), fwd.src_desc()));
  report(o, "reorder_gy_in", shape, type, "nchw f32 -> bwd diff_dst",
         reorder_fn(plain_f32(bwd_d.diff_dst_desc()), bwd_d.diff_dst_desc()));
  report(o, "reorder_y_out", shape, type, "fwd dst -> nchw f32", reorder_fn(fwd.dst_desc(), plain_f32(fwd.dst_desc())));
  report(o, "reorder_gx_out", shape, type, "bwd diff_src -> nchw f32",
         reorder_fn(bwd_d.diff_src_desc(), plain_f32(bwd_d.diff_src_desc())));
}

// -------------------------------------------------------------------- inner product and matmul
struct LinearShape {
  const char* name;
  int64_t n, in, out;
};

using ipf = dnnl::inner_product_forward;
using ipd = dnnl::inner_product_backward_data;
using ipw = dnnl::inner_product_backward_weights;

ipf::primitive_desc ip_fwd(dnnl::prop_kind prop, const memory::desc& x, const memory::desc& w, const memory::desc& b,
                           const memory::desc& y) {
#if DNNL_VERSION_MAJOR >= 3
  return ipf::primitive_desc(eng(), prop, x, w, b, y);
#else
  return ipf::primitive_desc(ipf::desc(prop, x, w, b, y), eng());
#endif
}
ipd::primitive_desc ip_bwd_data(const memory::desc& x, const memory::desc& w, const memory::desc& y,
                                const ipf::primitive_desc& hint) {
#if DNNL_VERSION_MAJOR >= 3
  return ipd::primitive_desc(eng(), x, w, y, hint);
#else
  return ipd::primitive_desc(ipd::desc(x, w, y), eng(), hint);
#endif
}
ipw::primitive_desc ip_bwd_weights(const memory::desc& x, const memory::desc& w, const memory::desc& b,
                                   const memory::desc& y, const ipf::primitive_desc& hint) {
#if DNNL_VERSION_MAJOR >= 3
  return ipw::primitive_desc(eng(), x, w, b, y, hint);
#else
  return ipw::primitive_desc(ipw::desc(x, w, b, y), eng(), hint);
#endif
}
dnnl::matmul::primitive_desc matmul_pd(const memory::desc& a, const memory::desc& b, const memory::desc& c,
                                       const memory::desc* bias) {
#if DNNL_VERSION_MAJOR >= 3
  return bias ? dnnl::matmul::primitive_desc(eng(), a, b, *bias, c) : dnnl::matmul::primitive_desc(eng(), a, b, c);
#else
  return dnnl::matmul::primitive_desc(bias ? dnnl::matmul::desc(a, b, *bias, c) : dnnl::matmul::desc(a, b, c), eng());
#endif
}

// ember's linear (src/cpu/linear_dnnl.cpp, linear_matmul.cpp): inference is the inner product
// on a packed (format any) weight; training's f32 weight gradient is the inner product on the plain
// layouts; bf16 training is three matmuls on the row-major tensors (transposes as `ba` views).
void bench_linear(const Options& o, const LinearShape& s, bool bf16) {
  const int64_t n = s.n, in = s.in, out = s.out;
  const std::string shape = std::string(s.name) + " " + std::to_string(n) + "x" + std::to_string(in) + "->" +
                            std::to_string(out);
  const char* type = bf16 ? "bf16" : "f32";
  const dt h = bf16 ? dt::bf16 : dt::f32, f = dt::f32;
  const memory::desc x_nc({n, in}, h, tag::nc), y_f32({n, out}, f, tag::nc), b({out}, f, tag::x);

  const auto inf = ip_fwd(dnnl::prop_kind::forward_inference, x_nc, memory::desc({out, in}, h, tag::any), b, y_f32);
  report(o, "ip_fwd_inference", shape, type, impl_of(inf),
         exec(ipf(inf), {{DNNL_ARG_SRC, filled(inf.src_desc(), 1)}, {DNNL_ARG_WEIGHTS, filled(inf.weights_desc(), 2)},
                         {DNNL_ARG_BIAS, filled(b, 3)}, {DNNL_ARG_DST, memory(inf.dst_desc(), eng())}}));

  // Weight gradient: f32 on the plain layouts; bf16 with x / grad_out in oneDNN's layouts and
  // grad_w plain f32 (what ember tries first).
  const memory::desc xw = bf16 ? memory::desc({n, in}, h, tag::any) : x_nc;
  const memory::desc yw = bf16 ? memory::desc({n, out}, h, tag::any) : memory::desc({n, out}, f, tag::nc);
  const memory::desc wh = bf16 ? memory::desc({out, in}, h, tag::any) : memory::desc({out, in}, f, tag::oi);
  const auto hint_w = ip_fwd(dnnl::prop_kind::forward_training, xw, wh, b, yw);
  const auto bw = ip_bwd_weights(xw, memory::desc({out, in}, f, tag::oi), b, yw, hint_w);
  report(o, "ip_bwd_weights", shape, type, impl_of(bw),
         exec(ipw(bw), {{DNNL_ARG_SRC, filled(bw.src_desc(), 4)}, {DNNL_ARG_DIFF_DST, filled(bw.diff_dst_desc(), 5)},
                        {DNNL_ARG_DIFF_WEIGHTS, memory(bw.diff_weights_desc(), eng())},
                        {DNNL_ARG_DIFF_BIAS, memory(bw.diff_bias_desc(), eng())}}));

  const memory::desc w_any({out, in}, h, tag::any), y_any({n, out}, h, tag::any);
  const auto hint_d = ip_fwd(dnnl::prop_kind::forward_training, memory::desc({n, in}, h, tag::any), w_any, memory::desc(), y_any);
  const auto bd = ip_bwd_data(memory::desc({n, in}, f, tag::any), w_any, y_any, hint_d);
  report(o, "ip_bwd_data", shape, type, impl_of(bd),
         exec(ipd(bd), {{DNNL_ARG_DIFF_DST, filled(bd.diff_dst_desc(), 6)}, {DNNL_ARG_WEIGHTS, filled(bd.weights_desc(), 7)},
                        {DNNL_ARG_DIFF_SRC, memory(bd.diff_src_desc(), eng())}}));

  // Matmuls on the row-major tensors: y = x @ W^T + b; grad_x = grad_y @ W; grad_W = grad_y^T @ x.
  const memory::desc mb({1, out}, f, tag::ab);
  const auto mf = matmul_pd(memory::desc({n, in}, h, tag::ab), memory::desc({in, out}, h, tag::ba),
                            memory::desc({n, out}, f, tag::ab), &mb);
  report(o, "matmul_fwd", shape, type, impl_of(mf),
         exec(dnnl::matmul(mf), {{DNNL_ARG_SRC, filled(mf.src_desc(), 8)}, {DNNL_ARG_WEIGHTS, filled(mf.weights_desc(), 9)},
                                 {DNNL_ARG_BIAS, filled(mb, 10)}, {DNNL_ARG_DST, memory(mf.dst_desc(), eng())}}));
  const auto md = matmul_pd(memory::desc({n, out}, h, tag::ab), memory::desc({out, in}, h, tag::ab),
                            memory::desc({n, in}, f, tag::ab), nullptr);
  report(o, "matmul_bwd_data", shape, type, impl_of(md),
         exec(dnnl::matmul(md), {{DNNL_ARG_SRC, filled(md.src_desc(), 11)}, {DNNL_ARG_WEIGHTS, filled(md.weights_desc(), 12)},
                                 {DNNL_ARG_DST, memory(md.dst_desc(), eng())}}));
  const auto mw = matmul_pd(memory::desc({out, n}, h, tag::ba), memory::desc({n, in}, h, tag::ab),
                            memory::desc({out, in}, f, tag::ab), nullptr);
  report(o, "matmul_bwd_weights", shape, type, impl_of(mw),
         exec(dnnl::matmul(mw), {{DNNL_ARG_SRC, filled(mw.src_desc(), 13)}, {DNNL_ARG_WEIGHTS, filled(mw.weights_desc(), 14)},
                                 {DNNL_ARG_DST, memory(mw.dst_desc(), eng())}}));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      o.reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--filter" && i + 1 < argc) {
      o.filter = argv[++i];
    } else {
      std::fprintf(stderr, "onednn_versions: unknown argument '%s'\nusage: onednn_versions [--reps N] [--filter SUBSTRING]\n",
                   a.c_str());
      return 2;
    }
  }
  const dnnl_version_t* v = dnnl_version();
  std::printf("version\t%d.%d.%d\t%s\tcpu_runtime=%d\teffective_isa=0x%x\n", v->major, v->minor, v->patch, v->hash,
              int(v->cpu_runtime), unsigned(dnnl::get_effective_cpu_isa()));
  // The shapes at ember's 28x28 single-channel inputs (src/nn/models.cpp), batch 64.
  const ConvShape convs[] = {{"mnistnet.conv1", 64, 1, 28, 28, 32, 3, 0, true},
                             {"mnistnet.conv2", 64, 32, 26, 26, 64, 3, 0, true},
                             {"lenet5.conv1", 64, 1, 28, 28, 6, 5, 2, true},
                             {"lenet5.conv2", 64, 6, 14, 14, 16, 5, 0, true}};
  const LinearShape linears[] = {{"mlp.fc1", 64, 784, 256},  {"mlp.fc2", 64, 256, 10},       {"mlp.fc1", 256, 784, 256},
                                 {"mlp.fc2", 256, 256, 10}, {"mnistnet.fc1", 64, 9216, 128}};
  try {
    for (bool bf16 : {false, true}) {
      for (const ConvShape& s : convs) bench_conv(o, s, bf16);
      for (const LinearShape& s : linears) bench_linear(o, s, bf16);
    }
  } catch (const dnnl::error& e) {
    std::fprintf(stderr, "onednn_versions: oneDNN failed: %s (status %d)\n", e.what(), int(e.status));
    return 1;
  }
  return 0;
}
