// Tensor methods of the ops layer: views (differentiable), clone, conversions and copies, fill,
// element access, the factories, printing. No math here: element values move only
// through the dispatch table. The bookkeeping that needs none of this is in src/core/tensor.cpp.
#include "ember/core/tensor.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>
#include <sstream>

#include "core/tensor_raw.h"
#include "core/tensor_util.h"
#include "ember/autograd/node.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "kernels/kernels.h"
#include "backends/registry.h"

namespace ember {

namespace {
// Views are differentiable: the backward of a view maps the gradient back to the base's shape.
Tensor view_with_grad(const Tensor& base, Tensor out, const char* name,
                      std::function<Tensor(const Tensor&)> backward_fn) {
  if (autograd::any_requires_grad({&base})) {
    autograd::record(autograd::make_node(name, [fn = std::move(backward_fn)](const std::vector<Tensor>& g) {
                       return std::vector<Tensor>{fn(g[0])};
                     }),
                     {base}, {out});
  }
  return out;
}

}  // namespace

// ---- views: core's view (core/tensor_raw.h: the rules and their messages) plus the backward ----
Tensor Tensor::view(Shape shape) const {
  Shape in_shape = sizes();
  return view_with_grad(*this, core::view(*this, std::move(shape)), "ViewBackward",
                        [in_shape](const Tensor& g) { return g.reshape(in_shape); });
}
Tensor Tensor::reshape(Shape shape) const {
  Shape sizes_out = core::infer_size(std::move(shape), numel(), "reshape");
  if (core::view_strides(sizes(), strides(), sizes_out)) return view(sizes_out);
  return contiguous().view(sizes_out);
}
Tensor Tensor::permute(std::vector<int64_t> dims) const {
  Tensor out = core::permute(*this, dims);  // checks dims
  std::vector<int64_t> inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) inverse[wrap_tensor_dim(dims[i], dim(), "permute")] = int64_t(i);
  return view_with_grad(*this, std::move(out), "PermuteBackward",
                        [inverse](const Tensor& g) { return g.permute(inverse); });
}
Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  std::vector<int64_t> p(dim());
  std::iota(p.begin(), p.end(), 0);
  if (dim() == 0) return *this;
  std::swap(p[wrap_tensor_dim(d0, dim(), "transpose")], p[wrap_tensor_dim(d1, dim(), "transpose")]);
  return permute(p);
}
Tensor Tensor::t() const {
  EMBER_CHECK(dim() <= 2, ShapeError, "t(): expects a tensor with <= 2 dims, got ", dim());
  return dim() < 2 ? *this : transpose(0, 1);
}
Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  d = wrap_tensor_dim(d, dim(), "slice");
  EMBER_CHECK(step > 0, ValueError, "slice: step must be positive, got ", step);
  int64_t n = sizes()[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape ns = sizes(), nst = strides();
  ns[d] = (end - start + step - 1) / step;
  nst[d] *= step;
  Shape in_shape = sizes();
  DType dt = dtype();
  return view_with_grad(*this, make_view(*this, ns, nst, storage_offset() + start * strides()[d]),
                        "SliceBackward", [=](const Tensor& g) {
                          Tensor z = zeros(in_shape, {.dtype = dt, .device = g.device()});
                          z.slice(d, start, end, step).copy_(g);
                          return z;
                        });
}
Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  int64_t dd = wrap_tensor_dim(d, dim(), "narrow");
  EMBER_CHECK(start >= 0 && length >= 0 && start + length <= sizes()[dd], IndexError,
              "narrow: range [", start, ", ", start + length, ") out of bounds for dimension ", dd,
              " of size ", sizes()[dd]);
  return slice(dd, start, start + length);
}
Tensor Tensor::select(int64_t d, int64_t index) const {
  d = wrap_tensor_dim(d, dim(), "select");
  int64_t n = sizes()[d];
  EMBER_CHECK(index >= -n && index < n, IndexError, "select: index ", index,
              " out of range for dimension ", d, " of size ", n);
  if (index < 0) index += n;
  return slice(d, index, index + 1).squeeze(d);
}
Tensor Tensor::squeeze() const {
  Shape ns;
  for (int64_t s : sizes())
    if (s != 1) ns.push_back(s);
  return reshape(ns);
}
Tensor Tensor::squeeze(int64_t d) const {
  d = wrap_tensor_dim(d, dim(), "squeeze");
  if (sizes()[d] != 1) return *this;
  Shape ns = sizes(), nst = strides();
  ns.erase(ns.begin() + d);
  nst.erase(nst.begin() + d);
  Shape in_shape = sizes();
  return view_with_grad(*this, make_view(*this, ns, nst, storage_offset()), "SqueezeBackward",
                        [in_shape](const Tensor& g) { return g.reshape(in_shape); });
}
Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_tensor_dim(d, dim(), "unsqueeze", true);
  return view_with_grad(*this, core::unsqueeze(*this, d), "UnsqueezeBackward",
                        [d](const Tensor& g) { return g.squeeze(d); });
}
Tensor Tensor::expand(Shape shape) const {
  Shape in_shape = sizes();
  return view_with_grad(*this, core::expand(*this, shape), "ExpandBackward",
                        [in_shape](const Tensor& g) { return sum_to(g, in_shape); });
}
Tensor Tensor::flatten(int64_t start, int64_t end) const {
  if (dim() == 0) return reshape({1});
  start = wrap_tensor_dim(start, dim(), "flatten");
  end = wrap_tensor_dim(end, dim(), "flatten");
  EMBER_CHECK(start <= end, ShapeError, "flatten: start_dim ", start, " > end_dim ", end);
  Shape ns(sizes().begin(), sizes().begin() + start);
  int64_t m = 1;
  for (int64_t i = start; i <= end; ++i) m *= sizes()[i];
  ns.push_back(m);
  ns.insert(ns.end(), sizes().begin() + end + 1, sizes().end());
  return reshape(ns);
}
Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }
Tensor Tensor::clone() const {
  return view_with_grad(*this, core::clone(*this), "CloneBackward", [](const Tensor& g) { return g; });
}

// ---- conversion and copy ------------------------------------------------------------------------
Tensor Tensor::to(DType dt) const { return to(device(), dt); }
Tensor Tensor::to(Device dev) const { return to(dev, dtype()); }
Tensor Tensor::to(Device dev, DType dt) const {
  if (dev == device() && dt == dtype()) return *this;
  Tensor out = core::to(*this, dev, dt);
  if (is_floating(dt) && is_floating(dtype())) {
    Device src_dev = device();
    DType src_dt = dtype();
    return view_with_grad(*this, out, "ToBackward",
                          [src_dev, src_dt](const Tensor& g) { return g.to(src_dev, src_dt); });
  }
  return out;
}
Tensor& Tensor::copy_(const Tensor& src) {
  EMBER_CHECK(!(requires_grad() && is_leaf() && autograd::grad_mode_enabled()), AutogradError,
              "copy_: a leaf tensor that requires grad is being used in an in-place operation; "
              "wrap it in NoGradGuard");
  core::copy(core::expand(src, sizes()), *this);  // across devices too (core/tensor_raw.h)
  storage()->bump_version();
  return *this;
}
Tensor& Tensor::fill_(double value) {
  kernels::fill(device())(*this, value);
  storage()->bump_version();
  return *this;
}


// ---- element access ------------------------------------------------------------------------------
namespace {
std::atomic<uint64_t> g_host_reads{0};
}  // namespace
uint64_t host_read_count() { return g_host_reads.load(std::memory_order_relaxed); }

template <class T> std::vector<T> Tensor::to_vector() const {
  g_host_reads.fetch_add(1, std::memory_order_relaxed);
  Tensor c = to(Device::cpu(), dtype_of<T>()).contiguous();
  const T* p = c.data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}
template <class T> T Tensor::item() const {
  EMBER_CHECK(numel() == 1, ShapeError, "item(): a tensor with ", numel(),
              " elements cannot be converted to a scalar (shape ", shape_str(sizes()), ")");
  return to_vector<T>()[0];
}
template <class T> T Tensor::at(std::initializer_list<int64_t> index) const {
  EMBER_CHECK(int64_t(index.size()) == dim(), IndexError, "at(): ", index.size(),
              " indices for a ", dim(), "-d tensor");
  Tensor v = *this;
  int64_t d = 0;
  for (int64_t i : index) v = v.select(0, i), ++d;
  return v.detach().item<T>();
}
#define EMBER_INSTANTIATE(T)                         \
  template std::vector<T> Tensor::to_vector<T>() const; \
  template T Tensor::item<T>() const;                \
  template T Tensor::at<T>(std::initializer_list<int64_t>) const;
EMBER_INSTANTIATE(float)
EMBER_INSTANTIATE(double)
EMBER_INSTANTIATE(int64_t)
EMBER_INSTANTIATE(int32_t)
EMBER_INSTANTIATE(uint8_t)
EMBER_INSTANTIATE(bool)
#undef EMBER_INSTANTIATE

// ---- factories -----------------------------------------------------------------------------------
Tensor empty(Shape shape, TensorOptions opt) {
  ensure_backends();  // the first allocation registers the backends (allocators, kernels)
  Tensor t = core::empty(std::move(shape), opt.dtype, opt.device);
  if (opt.requires_grad) t.requires_grad_(true);
  return t;
}
Tensor full(Shape shape, double value, TensorOptions opt) {
  bool rg = opt.requires_grad;
  opt.requires_grad = false;
  Tensor t = empty(std::move(shape), opt);
  t.fill_(value);
  if (rg) t.requires_grad_(true);
  return t;
}
Tensor zeros(Shape shape, TensorOptions opt) { return full(std::move(shape), 0.0, opt); }
Tensor ones(Shape shape, TensorOptions opt) { return full(std::move(shape), 1.0, opt); }
Tensor scalar_tensor(double value, TensorOptions opt) { return full({}, value, opt); }
Tensor zeros_like(const Tensor& t) { return zeros(t.sizes(), {.dtype = t.dtype(), .device = t.device()}); }
Tensor ones_like(const Tensor& t) { return ones(t.sizes(), {.dtype = t.dtype(), .device = t.device()}); }
Tensor empty_like(const Tensor& t) { return empty(t.sizes(), {.dtype = t.dtype(), .device = t.device()}); }
Tensor full_like(const Tensor& t, double v) { return full(t.sizes(), v, {.dtype = t.dtype(), .device = t.device()}); }
Tensor arange(double end, TensorOptions opt) { return arange(0, end, 1, opt); }
Tensor arange(double start, double end, double step, TensorOptions opt) {
  EMBER_CHECK(step != 0, ValueError, "arange: step must be non-zero");
  EMBER_CHECK((end - start) / step >= 0, ValueError, "arange: the range [", start, ", ", end,
              ") is empty or inconsistent with step ", step);
  int64_t n = int64_t(std::ceil((end - start) / step));
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + double(i) * step;
  Tensor t = from_blob_copy(v.data(), {n}, DType::Float64).to(opt.device, opt.dtype);
  if (opt.requires_grad) t.requires_grad_(true);
  return t;
}
Tensor linspace(double start, double end, int64_t steps, TensorOptions opt) {
  EMBER_CHECK(steps >= 0, ValueError, "linspace: number of steps must be non-negative, got ", steps);
  std::vector<double> v(static_cast<size_t>(steps));
  const double step = steps > 1 ? (end - start) / double(steps - 1) : 0.0;
  const int64_t half = steps / 2;
  for (int64_t i = 0; i < steps; ++i) v[size_t(i)] = i < half ? start + step * double(i) : end - step * double(steps - 1 - i);
  if (steps == 1) v[0] = start;  // one step is the start (the formula's second half would give the end)
  Tensor t = from_blob_copy(v.data(), {steps}, DType::Float64).to(opt.device, opt.dtype);
  if (opt.requires_grad) t.requires_grad_(true);
  return t;
}
Tensor eye(int64_t n, int64_t m, TensorOptions opt) {
  if (m < 0) m = n;
  EMBER_CHECK(n >= 0, ValueError, "eye: n must be non-negative, got ", n);
  std::vector<double> v(size_t(n * m), 0.0);
  for (int64_t i = 0; i < std::min(n, m); ++i) v[size_t(i * m + i)] = 1.0;
  Tensor t = from_blob_copy(v.data(), {n, m}, DType::Float64).to(opt.device, opt.dtype);
  if (opt.requires_grad) t.requires_grad_(true);
  return t;
}
Tensor from_blob_copy(const void* data, Shape shape, DType dtype, Device device) {
  Tensor t = empty(std::move(shape), {.dtype = dtype, .device = Device::cpu()});
  if (t.nbytes() > 0) std::memcpy(t.raw_data(), data, t.nbytes());
  return t.to(device);
}
Tensor tensor(std::initializer_list<float> values) { return tensor(std::vector<float>(values)); }

// ---- printing (PyTorch style) ---------------------------------------------------------------------
namespace {
struct Formatter {
  bool floating = false, int_mode = true, sci = false, boolean = false;
  int width = 1;
  std::string fmt(double v) const {
    char buf[64];
    if (boolean) return v != 0 ? "True" : "False";
    if (!floating) {
      std::snprintf(buf, sizeof buf, "%lld", (long long)v);
    } else if (std::isnan(v)) {
      return "nan";
    } else if (std::isinf(v)) {
      return v > 0 ? "inf" : "-inf";
    } else if (sci) {
      std::snprintf(buf, sizeof buf, "%.4e", v);
    } else if (int_mode) {
      std::snprintf(buf, sizeof buf, "%.0f.", v);
    } else {
      std::snprintf(buf, sizeof buf, "%.4f", v);
    }
    return buf;
  }
};

void print_rec(std::ostringstream& os, const std::vector<double>& vals, const Shape& sizes,
               const Shape& strides, size_t dim, int64_t offset, const Formatter& f, int indent,
               bool summarize) {
  if (dim == sizes.size()) {
    std::string s = f.fmt(vals[offset]);
    os << std::string(std::max<int>(0, f.width - int(s.size())), ' ') << s;
    return;
  }
  os << "[";
  int64_t n = sizes[dim];
  auto emit = [&](int64_t i, bool first) {
    if (!first) {
      if (dim + 1 == sizes.size()) {
        os << ", ";
      } else {
        os << "," << std::string(sizes.size() - dim - 1, '\n') << std::string(indent + dim + 1, ' ');
      }
    }
    print_rec(os, vals, sizes, strides, dim + 1, offset + i * strides[dim], f, indent, summarize);
  };
  if (summarize && n > 6) {
    for (int64_t i = 0; i < 3; ++i) emit(i, i == 0);
    os << (dim + 1 == sizes.size() ? ", ..." : ",\n" + std::string(indent + dim + 1, ' ') + "...");
    for (int64_t i = n - 3; i < n; ++i) emit(i, false);
  } else {
    for (int64_t i = 0; i < n; ++i) emit(i, i == 0);
  }
  os << "]";
}
}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  Tensor c = detach().to(Device::cpu(), DType::Float64).contiguous();
  std::vector<double> vals = c.to_vector<double>();
  Formatter f;
  f.floating = is_floating(dtype());
  f.boolean = dtype() == DType::Bool;
  double amax = 0, amin = INFINITY;
  for (double v : vals) {
    if (!std::isfinite(v)) continue;
    if (v != std::floor(v)) f.int_mode = false;
    amax = std::max(amax, std::abs(v));
    if (v != 0) amin = std::min(amin, std::abs(v));
  }
  if (f.floating && !f.int_mode && (amax >= 1e8 || (amin < 1e-4) || (amin != INFINITY && amax / amin > 1000)))
    f.sci = true;
  if (f.floating && f.int_mode && amax >= 1e8) f.sci = true;
  bool summarize = numel() > 1000;
  for (double v : vals) {
    std::string s = f.fmt(v);
    f.width = std::max<int>(f.width, int(s.size()));
  }
  std::ostringstream os;
  os << "tensor(";
  print_rec(os, vals, c.sizes(), c.strides(), 0, 0, f, 7, summarize);
  if (is_cuda()) os << ", device='" << device().str() << "'";
  if (dtype() != DType::Float32 && dtype() != DType::Int64 && dtype() != DType::Bool)
    os << ", dtype=" << dtype_name(dtype());
  if (numel() == 0 && dim() != 1) os << ", size=" << shape_str(sizes());
  if (grad_fn()) os << ", grad_fn=<" << grad_fn()->name() << ">";
  else if (requires_grad()) os << ", requires_grad=True";
  os << ")";
  return os.str();
}
std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace ember
