// Shape ops that move data: cat, stack, pad, one_hot; flatten is a view.
#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "ops/util.h"

namespace ember {

Tensor cat(const std::vector<Tensor>& ts, int64_t dim) {
  EMBER_CHECK(!ts.empty(), ValueError, "cat: expected a non-empty list of tensors");
  const Tensor& first = ts[0];
  dim = wrap_dim(dim, first.dim(), "cat");
  Shape out_shape = first.sizes();
  out_shape[dim] = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor& t = ts[i];
    check_same_device(first, t, "cat");
    EMBER_CHECK(t.dtype() == first.dtype(), DTypeError, "cat: tensor ", i, " has dtype ",
                dtype_name(t.dtype()), ", tensor 0 has ", dtype_name(first.dtype()));
    EMBER_CHECK(t.dim() == first.dim(), ShapeError, "cat: tensor ", i, " has ", t.dim(),
                " dims, tensor 0 has ", first.dim());
    for (int64_t d = 0; d < t.dim(); ++d)
      EMBER_CHECK(d == dim || t.sizes()[d] == first.sizes()[d], ShapeError, "cat: sizes must match "
                  "except in dimension ", dim, ", but tensor ", i, " has shape ", shape_str(t.sizes()),
                  " and tensor 0 has ", shape_str(first.sizes()));
    out_shape[dim] += t.sizes()[dim];
  }
  Tensor out = empty(out_shape, {.dtype = first.dtype(), .device = first.device()});
  {
    NoGradGuard g;
    int64_t off = 0;
    for (const Tensor& t : ts) {
      out.narrow(dim, off, t.sizes()[dim]).copy_(t);
      off += t.sizes()[dim];
    }
  }
  bool any = false;
  for (const Tensor& t : ts) any = any || autograd::any_requires_grad({&t});
  if (any) {
    std::vector<int64_t> lens;
    for (const Tensor& t : ts) lens.push_back(t.sizes()[dim]);
    autograd::record(autograd::make_node("CatBackward", [lens, dim](const std::vector<Tensor>& g) {
                       std::vector<Tensor> r;
                       int64_t off = 0;
                       for (int64_t l : lens) {
                         r.push_back(g[0].narrow(dim, off, l));
                         off += l;
                       }
                       return r;
                     }),
                     ts, {out});
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& ts, int64_t dim) {
  EMBER_CHECK(!ts.empty(), ValueError, "stack: expected a non-empty list of tensors");
  for (size_t i = 1; i < ts.size(); ++i)
    EMBER_CHECK(ts[i].sizes() == ts[0].sizes(), ShapeError, "stack: expects each tensor to be equal "
                "size, but got ", shape_str(ts[0].sizes()), " at entry 0 and ", shape_str(ts[i].sizes()),
                " at entry ", i);
  int64_t d = dim < 0 ? dim + ts[0].dim() + 1 : dim;
  std::vector<Tensor> u;
  for (const Tensor& t : ts) u.push_back(t.unsqueeze(d));
  return cat(u, d);
}

Tensor flatten(const Tensor& a, int64_t start_dim, int64_t end_dim) { return a.flatten(start_dim, end_dim); }

Tensor pad(const Tensor& a, std::vector<int64_t> pads, double value) {
  EMBER_CHECK(pads.size() % 2 == 0 && int64_t(pads.size()) / 2 <= a.dim(), ValueError,
              "pad: expected an even number of pads covering at most ", a.dim(), " dims, got ",
              pads.size());
  Shape out_shape = a.sizes();
  size_t np = pads.size() / 2;
  for (size_t i = 0; i < np; ++i) {
    int64_t d = a.dim() - 1 - int64_t(i);
    EMBER_CHECK(pads[2 * i] >= 0 && pads[2 * i + 1] >= 0, ValueError,
                "pad: negative padding is not supported");
    out_shape[d] += pads[2 * i] + pads[2 * i + 1];
  }
  Tensor out = full(out_shape, value, {.dtype = a.dtype(), .device = a.device()});
  Tensor inner = out;
  for (size_t i = 0; i < np; ++i) {
    int64_t d = a.dim() - 1 - int64_t(i);
    inner = inner.narrow(d, pads[2 * i], a.sizes()[d]);
  }
  {
    NoGradGuard g;
    inner.copy_(a);
  }
  if (autograd::any_requires_grad({&a})) {
    Shape as = a.sizes();
    autograd::record(autograd::make_node("PadBackward", [pads, as](const std::vector<Tensor>& g) {
                       Tensor r = g[0];
                       for (size_t i = 0; i < pads.size() / 2; ++i) {
                         int64_t d = int64_t(as.size()) - 1 - int64_t(i);
                         r = r.narrow(d, pads[2 * i], as[d]);
                       }
                       return std::vector<Tensor>{r};
                     }),
                     {a}, {out});
  }
  return out;
}

Tensor one_hot(const Tensor& labels, int64_t num_classes) {
  EMBER_CHECK(labels.dtype() == DType::Int64, DTypeError, "one_hot: labels must be int64, got ",
              dtype_name(labels.dtype()));
  EMBER_CHECK(num_classes > 0, ValueError, "one_hot: num_classes must be positive, got ", num_classes);
  Tensor l = labels.cpu().contiguous();
  Shape s = l.sizes();
  s.push_back(num_classes);
  Tensor out = zeros(s, {.dtype = DType::Int64});
  const int64_t* lp = l.data_ptr<int64_t>();
  int64_t* op = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < l.numel(); ++i) {
    EMBER_CHECK(lp[i] >= 0 && lp[i] < num_classes, ValueError, "one_hot: label ", lp[i],
                " at index ", i, " is out of range [0, ", num_classes, ")");
    op[i * num_classes + lp[i]] = 1;
  }
  return out.to(labels.device());
}

}  // namespace ember
