// Indexing front-ends, all on the gather and scatter kernels (kernels/tensor_kernels.h): gather,
// scatter / scatter_add (src or value; in place too), index_select, index_add, masked_fill,
// masked_select, nonzero, and Python's advanced indexing for reading (index: t[idx], t[mask], any
// mix of index tensors, masks and full slices) and writing (index_put: t[idx] = v, accumulate or
// not). Every index is checked here -- dtype, shape, range, with PyTorch's wording -- with one host
// read per index tensor; the gradients pair up: gather <-> scatter_add, index_select <-> index_add.
#include <algorithm>
#include <numeric>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "kernels/kernels.h"
#include "kernels/tensor_kernels.h"
#include "ops/ops_detail.h"
#include "ops/util.h"

namespace ember {

using autograd::SavedTensor;
using kernels::ScatterMode;
using ops_detail::record_many;
using ops_detail::record_one;

void ops_detail::check_inplace(const Tensor& self, const char* op) {
  EMBER_CHECK(!(autograd::grad_mode_enabled() && self.requires_grad()), AutogradError, op,
              ": in-place operations on a tensor that requires grad are not supported while grad "
              "mode is on; use the out-of-place form (", op, " without the trailing _), or NoGradGuard");
}

Tensor ops_detail::index_as_int64(const Tensor& index, const char* op, const char* arg) {
  EMBER_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Int32, DTypeError, op, ": expected ", arg,
              " to be an int64 (or int32) tensor, got ", dtype_name(index.dtype()));
  return index.dtype() == DType::Int64 ? index.detach() : index.detach().to(DType::Int64);
}

Tensor ops_detail::checked_index(const Tensor& index, int64_t size, const char* op, int64_t dim, bool allow_negative) {
  if (index.numel() == 0) return index;
  NoGradGuard g;
  const Tensor lo = full({}, allow_negative ? double(-size) : 0.0, {.dtype = DType::Int64, .device = index.device()});
  const Tensor hi = full({}, double(size), {.dtype = DType::Int64, .device = index.device()});
  const Tensor bad = bitwise_or(lt(index, lo), ge(index, hi));
  if (sum(bad).item<int64_t>() != 0) {
    // The error path only: find the first offending value on the host for the message.
    const auto values = index.to_vector<int64_t>();
    const auto flags = bad.to_vector<bool>();
    const int64_t first = values[size_t(std::find(flags.begin(), flags.end(), true) - flags.begin())];
    throw IndexError(detail::cat(op, ": index ", first, " is out of bounds for dimension ", dim, " with size ",
                                 size));
  }
  if (!allow_negative) return index;
  return where(lt(index, 0.0), add(index, double(size)), index);
}

namespace {

using ops_detail::checked_index;
using ops_detail::index_as_int64;

int64_t size_at(const Tensor& t, int64_t dim) { return t.dim() == 0 ? 1 : t.sizes()[size_t(dim)]; }

// t's leading block of `shape` (views), for a src larger than its index.
Tensor leading_block(const Tensor& t, const Shape& shape) {
  Tensor r = t;
  for (int64_t d = 0; d < t.dim(); ++d) r = r.narrow(d, 0, shape[size_t(d)]);
  return r;
}

// The differentiable kernels behind the public ops, on indices already checked.
Tensor scatter_unchecked(ScatterMode mode, const Tensor& self, int64_t dim, const Tensor& idx, const Tensor& src);

Tensor gather_unchecked(const Tensor& a, int64_t dim, const Tensor& idx) {
  Tensor out = empty(idx.sizes(), {.dtype = a.dtype(), .device = a.device()});
  kernels::gather(a.device())(a.detach(), dim, idx, out);
  if (autograd::any_requires_grad({&a})) {
    const Shape shape = a.sizes();
    record_one("GatherBackward", a, out, [dim, idx, shape](const Tensor& g) {
      return scatter_unchecked(ScatterMode::Add, zeros(shape, {.dtype = g.dtype(), .device = g.device()}), dim, idx, g);
    });
  }
  return out;
}

// src has idx's shape (a leading block of the user's src, or an expanded value).
Tensor scatter_unchecked(ScatterMode mode, const Tensor& self, int64_t dim, const Tensor& idx, const Tensor& src) {
  Tensor out = empty(self.sizes(), {.dtype = self.dtype(), .device = self.device()});
  kernels::scatter(self.device())(mode, self.detach(), dim, idx, src.detach(), out);
  record_many(mode == ScatterMode::Add ? "ScatterAddBackward" : "ScatterBackward", {self, src}, out,
              [mode, dim, idx, need_self = self.requires_grad(), need_src = src.requires_grad()](const Tensor& g) {
                // Assign: the overwritten positions of self get no gradient; Add: all of them do.
                Tensor gs;
                if (need_self && mode == ScatterMode::Add) gs = g;
                if (need_self && mode == ScatterMode::Assign)
                  gs = scatter_unchecked(ScatterMode::Assign, g, dim, idx,
                                         zeros({}, {.dtype = g.dtype(), .device = g.device()}).expand(idx.sizes()));
                Tensor gsrc = need_src ? gather_unchecked(g, dim, idx) : Tensor();
                return std::vector<Tensor>{gs, gsrc};
              });
  return out;
}

// index (1-D, checked) viewed along dim and expanded to `shape` for the gather / scatter kernels.
Tensor along(const Tensor& index, int64_t dim, int64_t ndim, const Shape& shape) {
  if (ndim == 0) return index.reshape({});
  Shape v(size_t(ndim), 1);
  v[size_t(dim)] = index.numel();
  return index.reshape(v).expand(shape);
}

Tensor index_select_unchecked(const Tensor& a, int64_t dim, const Tensor& idx1) {
  Shape shape = a.sizes();
  if (a.dim() > 0) shape[size_t(dim)] = idx1.numel();
  return gather_unchecked(a, dim, along(idx1, dim, a.dim(), shape));
}
Tensor index_add_unchecked(const Tensor& a, int64_t dim, const Tensor& idx1, const Tensor& source) {
  return scatter_unchecked(ScatterMode::Add, a, dim, along(idx1, dim, a.dim(), source.sizes()), source);
}
Tensor index_copy_unchecked(const Tensor& a, int64_t dim, const Tensor& idx1, const Tensor& source) {
  return scatter_unchecked(ScatterMode::Assign, a, dim, along(idx1, dim, a.dim(), source.sizes()), source);
}

// gather's and scatter's shared checks: rank, sizes against self (and src), dtype, range.
Tensor gather_scatter_index(const Tensor& self, int64_t& dim, const Tensor& index, const Tensor* src, const char* op) {
  check_same_device(self, index, op);
  dim = wrap_dim(dim, self.dim(), op);
  Tensor idx = index_as_int64(index, op, "index");
  EMBER_CHECK(idx.dim() == self.dim() || (self.dim() == 0 && idx.numel() == 1), ShapeError, op,
              ": index tensor must have the same number of dimensions as the input tensor (", idx.dim(), " vs ",
              self.dim(), ")");
  if (self.dim() == 0) idx = idx.reshape({});
  for (int64_t d = 0; d < self.dim(); ++d) {
    EMBER_CHECK(d == dim || idx.sizes()[size_t(d)] <= self.sizes()[size_t(d)], ShapeError, op,
                ": size does not match at dimension ", d, ": expected index ", shape_str(idx.sizes()),
                " to be no larger than self ", shape_str(self.sizes()), " apart from dimension ", dim);
    if (src)
      EMBER_CHECK(idx.sizes()[size_t(d)] <= src->sizes()[size_t(d)], ShapeError, op, ": expected index ",
                  shape_str(idx.sizes()), " to be no larger size than src ", shape_str(src->sizes()));
  }
  return checked_index(idx, size_at(self, dim), op, dim, false);
}

void check_src(const Tensor& self, const Tensor& src, const char* op) {
  check_same_device(self, src, op);
  EMBER_CHECK(src.dtype() == self.dtype(), DTypeError, op, ": expected self.dtype to be equal to src.dtype (",
              dtype_name(self.dtype()), " vs ", dtype_name(src.dtype()), ")");
  EMBER_CHECK(src.dim() == self.dim(), ShapeError, op, ": src must have the same number of dimensions as self (",
              src.dim(), " vs ", self.dim(), ")");
}

Tensor scatter_src(ScatterMode mode, const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src, const char* op) {
  check_src(a, src, op);
  const Tensor idx = gather_scatter_index(a, dim, index, &src, op);
  return scatter_unchecked(mode, a, dim, idx, leading_block(src, idx.sizes()));
}

}  // namespace

// ---- gather / scatter ---------------------------------------------------------------------------------
Tensor gather(const Tensor& a, int64_t dim, const Tensor& index) {
  const Tensor idx = gather_scatter_index(a, dim, index, nullptr, "gather");
  return gather_unchecked(a, dim, idx);
}
Tensor scatter(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_src(ScatterMode::Assign, a, dim, index, src, "scatter");
}
Tensor scatter(const Tensor& a, int64_t dim, const Tensor& index, double value) {
  const Tensor idx = gather_scatter_index(a, dim, index, nullptr, "scatter");
  return scatter_unchecked(ScatterMode::Assign, a, dim, idx, full({}, value, {.dtype = a.dtype(), .device = a.device()}).expand(idx.sizes()));
}
Tensor scatter(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce) {
  EMBER_CHECK(reduce != "multiply", NotImplementedError, "scatter: reduce=\"multiply\" is not implemented; "
              "reduce=\"add\" (scatter_add) is");
  EMBER_CHECK(reduce == "add", ValueError, "scatter: reduce must be \"add\" or \"multiply\", got \"", reduce, "\"");
  return scatter_add(a, dim, index, src);
}
Tensor scatter_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_src(ScatterMode::Add, a, dim, index, src, "scatter_add");
}

Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src) {
  ops_detail::check_inplace(*this, "scatter_");
  check_src(*this, src, "scatter_");
  const Tensor idx = gather_scatter_index(*this, dim, index, &src, "scatter_");
  kernels::scatter(device())(ScatterMode::Assign, *this, dim, idx, leading_block(src, idx.sizes()).detach(), *this);
  storage()->bump_version();
  return *this;
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, double value) {
  ops_detail::check_inplace(*this, "scatter_");
  const Tensor idx = gather_scatter_index(*this, dim, index, nullptr, "scatter_");
  const Tensor v = full({}, value, {.dtype = dtype(), .device = device()}).expand(idx.sizes());
  kernels::scatter(device())(ScatterMode::Assign, *this, dim, idx, v, *this);
  storage()->bump_version();
  return *this;
}
Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) {
  ops_detail::check_inplace(*this, "scatter_add_");
  check_src(*this, src, "scatter_add_");
  const Tensor idx = gather_scatter_index(*this, dim, index, &src, "scatter_add_");
  kernels::scatter(device())(ScatterMode::Add, *this, dim, idx, leading_block(src, idx.sizes()).detach(), *this);
  storage()->bump_version();
  return *this;
}

// ---- index_select / index_add -------------------------------------------------------------------------
namespace {
Tensor vector_index(const Tensor& a, int64_t& dim, const Tensor& index, const char* op) {
  check_same_device(a, index, op);
  dim = wrap_dim(dim, a.dim(), op);
  EMBER_CHECK(index.dim() <= 1, IndexError, op, ": index is supposed to be a vector, got shape ", shape_str(index.sizes()));
  const Tensor idx = index_as_int64(index, op, "index").reshape({index.numel()});
  return checked_index(idx, size_at(a, dim), op, dim, false);
}
}  // namespace
Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index) {
  const Tensor idx = vector_index(a, dim, index, "index_select");
  EMBER_CHECK(a.dim() > 0 || idx.numel() == 1, IndexError, "index_select: a 0-d tensor takes one index, got ", idx.numel());
  return index_select_unchecked(a, dim, idx);
}
Tensor index_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& source, double alpha) {
  const Tensor idx = vector_index(a, dim, index, "index_add");
  check_same_device(a, source, "index_add");
  EMBER_CHECK(source.dtype() == a.dtype(), DTypeError, "index_add: expected source of dtype ", dtype_name(a.dtype()),
              ", got ", dtype_name(source.dtype()));
  Shape want = a.sizes();
  if (a.dim() > 0) want[size_t(dim)] = idx.numel();
  EMBER_CHECK(source.sizes() == want, ShapeError, "index_add: source of shape ", shape_str(source.sizes()),
              " does not match the indexed shape ", shape_str(want));
  return index_add_unchecked(a, dim, idx, alpha == 1.0 ? source : mul(source, alpha));
}

// ---- masks -----------------------------------------------------------------------------------------
namespace {
void check_mask(const Tensor& a, const Tensor& mask, const char* op) {
  check_same_device(a, mask, op);
  EMBER_CHECK(mask.dtype() == DType::Bool, DTypeError, op, " only supports boolean masks, but got mask with dtype ",
              dtype_name(mask.dtype()));
}
// The 0-d value of a masked fill in a's dtype and on its device (differentiable for a float value).
Tensor fill_value(const Tensor& a, const Tensor& value, const char* op) {
  EMBER_CHECK(value.dim() == 0, ShapeError, op, " only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s)");
  return value.to(a.device(), a.dtype());
}

// The flat positions (Int64, 1-D, ascending) of the true elements of a 1-D Bool tensor: each kept
// position goes to its rank among the kept (a cumsum), the rest to one spare slot past the end.
// One host read (the count sizes the output, as PyTorch's nonzero).
Tensor true_positions(const Tensor& flat_mask) {
  NoGradGuard g;
  const int64_t n = flat_mask.numel();
  const TensorOptions i64{.dtype = DType::Int64, .device = flat_mask.device()};
  if (n == 0) return empty({0}, i64);
  const Tensor rank = cumsum(flat_mask, 0);
  const int64_t count = rank.select(0, n - 1).item<int64_t>();
  const Tensor slot = where(flat_mask, add(rank, -1.0), full({}, double(count), i64));
  Tensor out = empty({count + 1}, i64);
  kernels::scatter(out.device())(ScatterMode::Assign, out, 0, slot, arange(double(n), i64), out);
  return out.narrow(0, 0, count);
}
}  // namespace

Tensor masked_fill(const Tensor& a, const Tensor& mask, double value) {
  check_mask(a, mask, "masked_fill");
  return where(mask, full({}, value, {.dtype = a.dtype(), .device = a.device()}), a);
}
Tensor masked_fill(const Tensor& a, const Tensor& mask, const Tensor& value) {
  check_mask(a, mask, "masked_fill");
  return where(mask, fill_value(a, value, "masked_fill"), a);
}
namespace {
Tensor& masked_fill_inplace(Tensor& self, const Tensor& mask, const Tensor& v) {
  ops_detail::check_inplace(self, "masked_fill_");
  check_mask(self, mask, "masked_fill_");
  const Shape shape = broadcast_shapes(self.sizes(), mask.sizes(), "masked_fill_");
  EMBER_CHECK(shape == self.sizes(), ShapeError, "masked_fill_: the mask of shape ", shape_str(mask.sizes()),
              " cannot be expanded to the tensor's shape ", shape_str(self.sizes()));
  // where(mask, v, self) written over self: each element is read before it is written.
  kernels::where(self.device())(mask.expand(shape), v.detach().expand(shape), self, self);
  self.storage()->bump_version();
  return self;
}
}  // namespace
Tensor& Tensor::masked_fill_(const Tensor& mask, double value) {
  return masked_fill_inplace(*this, mask, full({}, value, {.dtype = dtype(), .device = device()}));
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Tensor& value) {
  return masked_fill_inplace(*this, mask, fill_value(*this, value, "masked_fill_"));
}
Tensor Tensor::masked_fill(const Tensor& mask, double value) const { return ember::masked_fill(*this, mask, value); }
Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value) const { return ember::masked_fill(*this, mask, value); }

Tensor nonzero(const Tensor& a) {
  NoGradGuard g;
  const Tensor pos = true_positions(ne(a, scalar_like(a, 0.0)).reshape({a.numel()}));
  const int64_t n = pos.numel();
  if (a.dim() == 0) return empty({n, 0}, {.dtype = DType::Int64, .device = a.device()});
  // Flat positions to coordinates: (pos // stride_d) % size_d, row-major strides.
  std::vector<Tensor> coords;
  const Shape strides = contiguous_strides(a.sizes());
  const TensorOptions i64{.dtype = DType::Int64, .device = a.device()};
  for (int64_t d = 0; d < a.dim(); ++d) {
    const Tensor q = ops_detail::floor_divide_unchecked(pos, full({}, double(strides[size_t(d)]), i64));
    coords.push_back(ops_detail::remainder_unchecked(q, full({}, double(a.sizes()[size_t(d)]), i64)));
  }
  return stack(coords, 1);
}

Tensor masked_select(const Tensor& a, const Tensor& mask) {
  check_mask(a, mask, "masked_select");
  const Shape shape = broadcast_shapes(a.sizes(), mask.sizes(), "masked_select");
  const Tensor flat = a.expand(shape).reshape({shape_numel(shape)});
  const Tensor pos = true_positions(mask.expand(shape).reshape({shape_numel(shape)}));
  return index_select_unchecked(flat, 0, pos);
}

// ---- advanced indexing -----------------------------------------------------------------------------
namespace {
// An advanced index resolved against a tensor: the indexed dims (ascending), one Int64 index per
// dim broadcast to one shape, checked and wrapped to [0, size).
struct Advanced {
  std::vector<int64_t> dims;
  std::vector<Tensor> index;  // broadcast to `shape`
  Shape shape;                // the broadcast index shape B
  bool adjacent = true;       // the indexed dims are consecutive: B replaces them in place
};

Advanced resolve(const Tensor& a, const std::vector<Tensor>& indices, const char* op) {
  Advanced r;
  std::vector<Tensor> raw;
  int64_t pos = 0;
  for (size_t k = 0; k < indices.size(); ++k) {
    const Tensor& ix = indices[k];
    if (!ix.defined()) {  // a full slice
      ++pos;
      continue;
    }
    check_same_device(a, ix, op);
    if (ix.dtype() == DType::Bool || ix.dtype() == DType::UInt8) {
      EMBER_CHECK(ix.dim() > 0, NotImplementedError, op, ": a 0-d boolean index is not supported; use unsqueeze");
      EMBER_CHECK(pos + ix.dim() <= a.dim(), IndexError, op, ": too many indices for tensor of dimension ", a.dim());
      for (int64_t j = 0; j < ix.dim(); ++j)
        EMBER_CHECK(ix.sizes()[size_t(j)] == a.sizes()[size_t(pos + j)], IndexError, op, ": the shape of the mask ",
                    shape_str(ix.sizes()), " at index ", j, " does not match the shape of the indexed tensor ",
                    shape_str(a.sizes()), " at index ", pos + j);
      const Tensor nz = nonzero(ix);
      for (int64_t j = 0; j < ix.dim(); ++j) {
        r.dims.push_back(pos + j);
        raw.push_back(nz.select(1, j));
      }
      pos += ix.dim();
      continue;
    }
    EMBER_CHECK(ix.dtype() == DType::Int64 || ix.dtype() == DType::Int32, IndexError, op,
                ": tensors used as indices must be long, int, byte or bool tensors, got ", dtype_name(ix.dtype()));
    EMBER_CHECK(pos < a.dim(), IndexError, op, ": too many indices for tensor of dimension ", a.dim());
    raw.push_back(checked_index(index_as_int64(ix, op, "index"), a.sizes()[size_t(pos)], op, pos, true));
    r.dims.push_back(pos);
    ++pos;
  }
  EMBER_CHECK(pos <= a.dim(), IndexError, op, ": too many indices for tensor of dimension ", a.dim(), " (got ", pos, ")");
  for (const Tensor& t : raw) r.shape = broadcast_shapes(r.shape, t.sizes(), op);
  for (const Tensor& t : raw) r.index.push_back(t.expand(r.shape));
  for (size_t i = 1; i < r.dims.size(); ++i) r.adjacent = r.adjacent && r.dims[i] == r.dims[i - 1] + 1;
  return r;
}

// The layout both directions share: a permuted so the indexed dims lead and flattened into one
// (x: (prod D, rest...)), and the flat row of each index position (rows: 1-D, numel(B)).
struct Flattened {
  std::vector<int64_t> perm;  // D..., then the other dims in order
  Shape rest;                 // sizes of the other dims
  Shape indexed;              // sizes of D
  Tensor rows;
};
Flattened flatten_indexed(const Tensor& a, const Advanced& adv) {
  Flattened f;
  f.perm = adv.dims;
  for (int64_t d = 0; d < a.dim(); ++d)
    if (std::find(adv.dims.begin(), adv.dims.end(), d) == adv.dims.end()) {
      f.perm.push_back(d);
      f.rest.push_back(a.sizes()[size_t(d)]);
    }
  for (int64_t d : adv.dims) f.indexed.push_back(a.sizes()[size_t(d)]);
  NoGradGuard g;
  Tensor rows = zeros(adv.shape, {.dtype = DType::Int64, .device = a.device()});
  int64_t stride = 1;
  for (int64_t k = int64_t(adv.dims.size()) - 1; k >= 0; --k) {
    rows = add(rows, mul(adv.index[size_t(k)], double(stride)));
    stride *= f.indexed[size_t(k)];
  }
  f.rows = rows.reshape({rows.numel()});
  return f;
}
// Moves the leading block of nb dims (B) to position `at`.
Tensor move_block(const Tensor& t, int64_t nb, int64_t from, int64_t to) {
  if (nb == 0 || from == to) return t;
  std::vector<int64_t> src(static_cast<size_t>(nb)), dst(static_cast<size_t>(nb));
  std::iota(src.begin(), src.end(), from);
  std::iota(dst.begin(), dst.end(), to);
  return movedim(t, src, dst);
}
Shape flat_shape(const Flattened& f) {
  Shape s{shape_numel(f.indexed)};
  s.insert(s.end(), f.rest.begin(), f.rest.end());
  return s;
}
}  // namespace

Tensor index(const Tensor& a, const std::vector<Tensor>& indices) {
  const Advanced adv = resolve(a, indices, "index");
  if (adv.dims.empty()) return a.view(a.sizes());
  const Flattened f = flatten_indexed(a, adv);
  const Tensor x = a.permute(f.perm).reshape(flat_shape(f));
  Shape out_shape = adv.shape;
  out_shape.insert(out_shape.end(), f.rest.begin(), f.rest.end());
  const Tensor r = index_select_unchecked(x, 0, f.rows).view(out_shape);
  // Consecutive indexed dims keep their place (NumPy's rule); otherwise B leads.
  return adv.adjacent ? move_block(r, int64_t(adv.shape.size()), 0, adv.dims.front()) : r;
}

Tensor index_put(const Tensor& a, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) {
  check_same_device(a, values, "index_put");
  EMBER_CHECK(values.dtype() == a.dtype(), DTypeError, "index_put: index put requires the source and destination "
              "dtypes match, got ", dtype_name(a.dtype()), " for the destination and ", dtype_name(values.dtype()),
              " for the source");
  const Advanced adv = resolve(a, indices, "index_put");
  if (adv.dims.empty()) {
    // Only full slices: every element is written (or added to).
    const Tensor v = values.expand(a.sizes());
    return accumulate ? add(a, v) : v.clone();
  }
  const Flattened f = flatten_indexed(a, adv);
  const int64_t nb = int64_t(adv.shape.size());
  // The indexing result's shape, where values must broadcast.
  Shape result = adv.shape;
  result.insert(result.end(), f.rest.begin(), f.rest.end());
  if (adv.adjacent) {
    const int64_t at = adv.dims.front();
    result = Shape(f.rest.begin(), f.rest.begin() + at);
    result.insert(result.end(), adv.shape.begin(), adv.shape.end());
    result.insert(result.end(), f.rest.begin() + at, f.rest.end());
  }
  bool fits = values.dim() <= int64_t(result.size());
  for (int64_t i = 1; fits && i <= values.dim(); ++i) {
    const int64_t v = values.sizes()[size_t(values.dim() - i)], r = result[result.size() - size_t(i)];
    fits = v == r || v == 1;
  }
  EMBER_CHECK(fits, ShapeError,
              "index_put: shape mismatch: value tensor of shape ", shape_str(values.sizes()),
              " cannot be broadcast to indexing result of shape ", shape_str(result));
  Tensor v = values.expand(result);
  if (adv.adjacent) v = move_block(v, nb, adv.dims.front(), 0);
  Shape rows_shape{f.rows.numel()};
  rows_shape.insert(rows_shape.end(), f.rest.begin(), f.rest.end());
  v = v.reshape(rows_shape);
  const Tensor x = a.permute(f.perm).reshape(flat_shape(f));
  const Tensor written = accumulate ? index_add_unchecked(x, 0, f.rows, v) : index_copy_unchecked(x, 0, f.rows, v);
  // Back to a's layout: unflatten D, then the inverse permutation.
  Shape unflat = f.indexed;
  unflat.insert(unflat.end(), f.rest.begin(), f.rest.end());
  std::vector<int64_t> inverse(f.perm.size());
  for (size_t i = 0; i < f.perm.size(); ++i) inverse[size_t(f.perm[i])] = int64_t(i);
  return written.view(unflat).permute(inverse).contiguous();
}

Tensor& Tensor::index_put_(const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) {
  ops_detail::check_inplace(*this, "index_put_");
  // t[mask] = scalar: a masked fill in place (no copy of the tensor).
  if (!accumulate && indices.size() == 1 && indices[0].defined() && indices[0].dtype() == DType::Bool &&
      indices[0].sizes() == sizes() && values.numel() == 1 && values.dtype() == dtype())
    return masked_fill_(indices[0], values.reshape({}));
  Tensor written;
  {
    NoGradGuard g;
    written = index_put(detach(), indices, values.detach(), accumulate);
  }
  NoGradGuard g;
  return copy_(written);
}
Tensor Tensor::index(const std::vector<Tensor>& indices) const { return ember::index(*this, indices); }
Tensor Tensor::gather(int64_t dim, const Tensor& index) const { return ember::gather(*this, dim, index); }
Tensor Tensor::index_select(int64_t dim, const Tensor& index) const { return ember::index_select(*this, dim, index); }
Tensor Tensor::masked_select(const Tensor& mask) const { return ember::masked_select(*this, mask); }
Tensor Tensor::nonzero() const { return ember::nonzero(*this); }

}  // namespace ember
