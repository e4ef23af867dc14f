// Tensors without autograd (core/tensor_raw.h): allocation from the allocator table, the view rules
// (sizes, strides and their checks), and copies through the dispatch table's copy slots. The ops
// layer's Tensor methods add the autograd record on top; the backends use these directly.
#include "core/tensor_raw.h"

#include <numeric>

#include "core/dispatch.h"
#include "core/tensor_util.h"

namespace ember::core {

// ---- allocation --------------------------------------------------------------------------------
Tensor empty(Shape sizes, DType dtype, Device device) {
  for (int64_t s : sizes)
    EMBER_CHECK(s >= 0, ShapeError, "empty: negative dimension in shape ", shape_str(sizes));
  const size_t nbytes = shape_nbytes(sizes, dtype);  // ShapeError when the shape cannot be addressed
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<StorageImpl>(nbytes, device);
  impl->strides = contiguous_strides(sizes);
  impl->sizes = std::move(sizes);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}
Tensor empty_like(const Tensor& t) { return core::empty(t.sizes(), t.dtype(), t.device()); }

// ---- views -------------------------------------------------------------------------------------
std::optional<Shape> view_strides(const Shape& old_sizes, const Shape& old_strides, const Shape& new_sizes) {
  if (old_sizes.empty()) return Shape(new_sizes.size(), 1);
  int64_t numel = shape_numel(old_sizes);
  if (numel == 0) return contiguous_strides(new_sizes);
  Shape new_strides(new_sizes.size());
  int64_t view_d = int64_t(new_sizes.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(old_sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_sizes[d];
    if (d == 0 || (old_sizes[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

Shape infer_size(Shape shape, int64_t numel, const char* op) {
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      EMBER_CHECK(infer < 0, ShapeError, op, ": only one dimension can be -1, got ", shape_str(shape));
      infer = int64_t(i);
    } else {
      EMBER_CHECK(shape[i] >= 0, ShapeError, op, ": invalid size ", shape[i], " in ", shape_str(shape));
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    EMBER_CHECK(known != 0 && numel % known == 0, ShapeError, op, ": shape ", shape_str(shape),
                " is invalid for input of size ", numel);
    shape[infer] = numel / known;
  }
  EMBER_CHECK(shape_numel(shape) == numel, ShapeError, op, ": shape ", shape_str(shape),
              " is invalid for input of size ", numel);
  return shape;
}

Tensor view(const Tensor& t, Shape shape) {
  Shape sizes_out = infer_size(std::move(shape), t.numel(), "view");
  auto st = view_strides(t.sizes(), t.strides(), sizes_out);
  EMBER_CHECK(st.has_value(), ShapeError, "view: size ", shape_str(sizes_out),
              " is not compatible with input tensor's size ", shape_str(t.sizes()), " and stride ",
              shape_str(t.strides()), "; use reshape() (which copies) or contiguous() first");
  return make_view(t, std::move(sizes_out), std::move(*st), t.storage_offset());
}

Tensor permute(const Tensor& t, const std::vector<int64_t>& dims) {
  EMBER_CHECK(int64_t(dims.size()) == t.dim(), ShapeError, "permute: got ", dims.size(),
              " dims for a ", t.dim(), "-d tensor");
  Shape ns(dims.size()), nst(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_tensor_dim(dims[i], t.dim(), "permute");
    EMBER_CHECK(!seen[d], ShapeError, "permute: dimension ", d, " repeated");
    seen[d] = true;
    ns[i] = t.sizes()[d];
    nst[i] = t.strides()[d];
  }
  return make_view(t, std::move(ns), std::move(nst), t.storage_offset());
}

Tensor transpose(const Tensor& t, int64_t d0, int64_t d1) {
  if (t.dim() == 0) return t;
  std::vector<int64_t> p(t.dim());
  std::iota(p.begin(), p.end(), 0);
  std::swap(p[wrap_tensor_dim(d0, t.dim(), "transpose")], p[wrap_tensor_dim(d1, t.dim(), "transpose")]);
  return core::permute(t, p);
}

Tensor unsqueeze(const Tensor& t, int64_t d) {
  d = wrap_tensor_dim(d, t.dim(), "unsqueeze", true);
  Shape ns = t.sizes(), nst = t.strides();
  int64_t st = d < t.dim() ? t.sizes()[d] * t.strides()[d] : 1;
  ns.insert(ns.begin() + d, 1);
  nst.insert(nst.begin() + d, st);
  return make_view(t, std::move(ns), std::move(nst), t.storage_offset());
}

Tensor expand(const Tensor& t, const Shape& shape) {
  EMBER_CHECK(int64_t(shape.size()) >= t.dim(), ShapeError, "expand: the number of sizes (",
              shape.size(), ") must be >= the tensor's dims (", t.dim(), ")");
  int64_t lead = int64_t(shape.size()) - t.dim();
  Shape ns(shape.size()), nst(shape.size());
  for (int64_t i = int64_t(shape.size()) - 1; i >= 0; --i) {
    int64_t j = i - lead;
    if (j >= 0) {
      int64_t cur = t.sizes()[j];
      int64_t want = shape[i] == -1 ? cur : shape[i];
      EMBER_CHECK(cur == want || cur == 1, ShapeError, "expand: the expanded size ", want,
                  " must match the existing size ", cur, " at dimension ", i, " (shape ",
                  shape_str(t.sizes()), " -> ", shape_str(shape), ")");
      ns[i] = want;
      nst[i] = cur == want ? t.strides()[j] : 0;
    } else {
      EMBER_CHECK(shape[i] >= 0, ShapeError, "expand: -1 is not allowed in a new leading dimension");
      ns[i] = shape[i];
      nst[i] = 0;
    }
  }
  return make_view(t, std::move(ns), std::move(nst), t.storage_offset());
}

// ---- copies ------------------------------------------------------------------------------------
void copy(const Tensor& src, const Tensor& dst) {
  if (src.device() == dst.device()) {
    kernels::copy(dst.device())(src, dst);
    return;
  }
  // Across devices: stage a contiguous tensor of the destination dtype on the source device, then
  // a raw byte copy owned by the non-CPU backend (the source's when both are non-CPU).
  const Tensor staged = core::contiguous(core::to(src, dst.dtype()));
  const Tensor landing = dst.is_contiguous() ? dst : core::empty_like(dst);
  const Device owner = src.device().is_cpu() ? dst.device() : src.device();
  kernels::device_copy(owner)(staged, landing);
  if (!landing.is_same(dst)) kernels::copy(dst.device())(landing, dst);
}

Tensor clone(const Tensor& t) {
  Tensor out = core::empty_like(t);
  kernels::copy(t.device())(t, out);
  return out;
}

Tensor contiguous(const Tensor& t) { return t.is_contiguous() ? t : core::clone(t); }

Tensor reshape(const Tensor& t, Shape shape) {
  Shape sizes_out = infer_size(std::move(shape), t.numel(), "reshape");
  if (auto st = view_strides(t.sizes(), t.strides(), sizes_out))
    return make_view(t, std::move(sizes_out), std::move(*st), t.storage_offset());
  return core::view(core::contiguous(t), std::move(sizes_out));
}

Tensor to(const Tensor& t, Device device, DType dtype) {
  if (device == t.device() && dtype == t.dtype()) return t;
  Tensor out = core::empty(t.sizes(), dtype, device);
  core::copy(t, out);
  return out;
}
Tensor to(const Tensor& t, DType dtype) { return core::to(t, t.device(), dtype); }
Tensor to(const Tensor& t, Device device) { return core::to(t, device, t.dtype()); }

}  // namespace ember::core
