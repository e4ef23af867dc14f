// Shape ops that rearrange elements, composed from views, cat and index_select so they run (and
// differentiate) on every device: repeat, split / split_with_sizes / chunk, unflatten, squeeze of
// chosen dims, movedim, tril / triu, flip, roll. PyTorch's argument rules and error wording.
#include <algorithm>
#include <numeric>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "ops/util.h"

namespace ember {

namespace {
// Wrapped dims, each at most once (PyTorch's "dim 0 appears multiple times in the list of dims").
std::vector<int64_t> unique_dims(const std::vector<int64_t>& dims, int64_t ndim, const char* op) {
  std::vector<int64_t> out;
  std::vector<bool> seen(size_t(std::max<int64_t>(ndim, 1)), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, ndim, op);
    EMBER_CHECK(!seen[size_t(w)], ValueError, op, ": dim ", w, " appears multiple times in the list of dims");
    seen[size_t(w)] = true;
    out.push_back(w);
  }
  return out;
}
}  // namespace

Tensor repeat(const Tensor& a, const Shape& repeats) {
  EMBER_CHECK(int64_t(repeats.size()) >= a.dim(), ShapeError, "repeat: the number of repeat dims (",
              repeats.size(), ") can not be smaller than the number of dimensions of the tensor (", a.dim(), ")");
  for (int64_t r : repeats)
    EMBER_CHECK(r >= 0, ValueError, "repeat: repeats must be non-negative, got ", shape_str(repeats));
  // a viewed as (1, s0, 1, s1, ...), expanded to (r0, s0, r1, s1, ...) and copied as (r0 s0, r1 s1, ...).
  const size_t m = repeats.size();
  Shape padded(m - size_t(a.dim()), 1);
  padded.insert(padded.end(), a.sizes().begin(), a.sizes().end());
  Shape interleaved, expanded, result;
  for (size_t i = 0; i < m; ++i) {
    interleaved.insert(interleaved.end(), {1, padded[i]});
    expanded.insert(expanded.end(), {repeats[i], padded[i]});
    result.push_back(repeats[i] * padded[i]);
  }
  return a.reshape(interleaved).expand(expanded).contiguous().view(result);
}

std::vector<Tensor> split_with_sizes(const Tensor& a, const std::vector<int64_t>& sizes, int64_t dim) {
  dim = wrap_dim(dim, a.dim(), "split_with_sizes");
  EMBER_CHECK(a.dim() > 0, ShapeError, "split_with_sizes: expected at least a 1-dimensional tensor");
  const int64_t n = a.sizes()[size_t(dim)];
  int64_t total = 0;
  for (int64_t s : sizes) {
    EMBER_CHECK(s >= 0, ValueError, "split_with_sizes: split sizes must be non-negative, got ", shape_str(sizes));
    total += s;
  }
  EMBER_CHECK(total == n, ShapeError, "split_with_sizes: expects split_sizes to sum exactly to ", n,
              " (input tensor's size at dimension ", dim, "), but got split_sizes=", shape_str(sizes));
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(a.narrow(dim, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim) {
  dim = wrap_dim(dim, a.dim(), "split");
  EMBER_CHECK(a.dim() > 0, ShapeError, "split: expected at least a 1-dimensional tensor");
  EMBER_CHECK(split_size >= 0, ValueError, "split: split_size must be non-negative, got ", split_size);
  const int64_t n = a.sizes()[size_t(dim)];
  EMBER_CHECK(split_size > 0 || n == 0, ValueError,
              "split: split_size can only be 0 if dimension size is 0, but got dimension size of ", n);
  const int64_t pieces = split_size == 0 ? 1 : std::max<int64_t>((n + split_size - 1) / split_size, 1);
  std::vector<int64_t> sizes(size_t(pieces), split_size);
  sizes.back() = split_size - (split_size * pieces - n);
  return split_with_sizes(a, sizes, dim);
}

std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim) {
  EMBER_CHECK(chunks > 0, ValueError, "chunk: expects `chunks` to be greater than 0, got: ", chunks);
  dim = wrap_dim(dim, a.dim(), "chunk");
  EMBER_CHECK(a.dim() > 0, ShapeError, "chunk: expected at least a 1-dimensional tensor");
  const int64_t n = a.sizes()[size_t(dim)];
  const int64_t size = (n + chunks - 1) / chunks;
  if (size == 0) return split_with_sizes(a, std::vector<int64_t>(size_t(chunks), 0), dim);  // n == 0: chunks empties
  return split(a, size, dim);
}

Tensor unflatten(const Tensor& a, int64_t dim, const Shape& sizes) {
  dim = wrap_dim(dim, a.dim(), "unflatten");
  EMBER_CHECK(!sizes.empty(), ValueError, "unflatten: sizes must be non-empty");
  EMBER_CHECK(a.dim() > 0, ShapeError, "unflatten: expected at least a 1-dimensional tensor");
  const int64_t n = a.sizes()[size_t(dim)];
  Shape inner = sizes;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < inner.size(); ++i) {
    if (inner[i] == -1) {
      EMBER_CHECK(infer < 0, ValueError, "unflatten: only one dimension can be inferred (-1), got ", shape_str(sizes));
      infer = int64_t(i);
    } else {
      EMBER_CHECK(inner[i] >= 0, ValueError, "unflatten: invalid size ", inner[i], " in ", shape_str(sizes));
      known *= inner[i];
    }
  }
  if (infer >= 0) {
    EMBER_CHECK(known > 0 && n % known == 0, ShapeError, "unflatten: sizes ", shape_str(sizes),
                " don't multiply up to the size of dim ", dim, " (", n, ") in the input tensor");
    inner[size_t(infer)] = n / known;
  }
  EMBER_CHECK(shape_numel(inner) == n, ShapeError, "unflatten: provided sizes ", shape_str(sizes),
              " don't multiply up to the size of dim ", dim, " (", n, ") in the input tensor");
  Shape out(a.sizes().begin(), a.sizes().begin() + dim);
  out.insert(out.end(), inner.begin(), inner.end());
  out.insert(out.end(), a.sizes().begin() + dim + 1, a.sizes().end());
  return a.reshape(out);
}

Tensor squeeze(const Tensor& a) { return a.squeeze(); }
Tensor squeeze(const Tensor& a, const std::vector<int64_t>& dims) { return a.squeeze(dims); }
Tensor unsqueeze(const Tensor& a, int64_t dim) { return a.unsqueeze(dim); }

Tensor movedim(const Tensor& a, const std::vector<int64_t>& source, const std::vector<int64_t>& destination) {
  EMBER_CHECK(source.size() == destination.size(), ValueError, "movedim: invalid source or destination dims: "
              "source (", shape_str(source), ") and destination (", shape_str(destination), ") must have the same number of elements");
  const auto src = unique_dims(source, a.dim(), "movedim");
  const auto dst = unique_dims(destination, a.dim(), "movedim");
  if (a.dim() == 0) return a.reshape({});
  std::vector<int64_t> perm(size_t(a.dim()), -1);
  std::vector<bool> moved(size_t(a.dim()), false);
  for (size_t i = 0; i < src.size(); ++i) {
    perm[size_t(dst[i])] = src[i];
    moved[size_t(src[i])] = true;
  }
  int64_t next = 0;
  for (auto& p : perm) {
    if (p >= 0) continue;
    while (moved[size_t(next)]) ++next;
    p = next++;
  }
  return a.permute(perm);
}
Tensor movedim(const Tensor& a, int64_t source, int64_t destination) {
  return movedim(a, std::vector<int64_t>{source}, std::vector<int64_t>{destination});
}

namespace {
// Keeps the elements of the last two dims with (col - row) <= diagonal (lower) or >= (upper).
Tensor triangle(const Tensor& a, int64_t diagonal, bool lower, const char* op) {
  EMBER_CHECK(a.dim() >= 2, ShapeError, op, ": input tensor must have at least 2 dimensions, got ", a.dim());
  const int64_t h = a.sizes()[size_t(a.dim() - 2)], w = a.sizes()[size_t(a.dim() - 1)];
  Tensor keep;
  {
    NoGradGuard g;
    const TensorOptions o{.dtype = DType::Int64, .device = a.device()};
    const Tensor offset = sub(arange(double(w), o).view({1, w}), arange(double(h), o).view({h, 1}));
    const Tensor k = full({}, double(diagonal), o);
    keep = lower ? le(offset, k) : ge(offset, k);
  }
  return where(keep, a, zeros({}, {.dtype = a.dtype(), .device = a.device()}));
}
}  // namespace
Tensor tril(const Tensor& a, int64_t diagonal) { return triangle(a, diagonal, true, "tril"); }
Tensor triu(const Tensor& a, int64_t diagonal) { return triangle(a, diagonal, false, "triu"); }

Tensor flip(const Tensor& a, const std::vector<int64_t>& dims) {
  const auto ds = unique_dims(dims, a.dim(), "flip");
  Tensor out = a;
  for (int64_t d : ds) {
    if (a.dim() == 0) break;
    const int64_t n = a.sizes()[size_t(d)];
    if (n < 2) continue;
    const Tensor reversed = arange(double(n - 1), -1.0, -1.0, {.dtype = DType::Int64, .device = a.device()});
    out = index_select(out, d, reversed);
  }
  return out.is_same(a) ? a.clone() : out;  // always a new tensor, as PyTorch's
}

Tensor roll(const Tensor& a, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) {
  if (dims.empty()) {
    EMBER_CHECK(shifts.size() == 1, ValueError, "roll: shifts and dimensions must align. shifts: ",
                shifts.size(), ", dims: 0 (without dims, one shift rolls the flattened tensor)");
    return roll(a.reshape({a.numel()}), shifts, {0}).view(a.sizes());
  }
  EMBER_CHECK(shifts.size() == dims.size(), ValueError, "roll: shifts and dimensions must align. shifts: ",
              shifts.size(), ", dims: ", dims.size());
  Tensor out = a;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], a.dim(), "roll");
    if (a.dim() == 0) break;
    const int64_t n = a.sizes()[size_t(d)];
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;
    if (s == 0) continue;
    out = cat({out.narrow(d, n - s, s), out.narrow(d, 0, n - s)}, d);
  }
  return out.is_same(a) ? a.clone() : out;
}

// ---- Tensor methods ------------------------------------------------------------------------------------
Tensor Tensor::repeat(const Shape& repeats) const { return ember::repeat(*this, repeats); }
std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const { return ember::split(*this, split_size, dim); }
std::vector<Tensor> Tensor::split_with_sizes(const std::vector<int64_t>& sizes, int64_t dim) const {
  return ember::split_with_sizes(*this, sizes, dim);
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const { return ember::chunk(*this, chunks, dim); }
Tensor Tensor::unflatten(int64_t dim, const Shape& sizes) const { return ember::unflatten(*this, dim, sizes); }
Tensor Tensor::squeeze(const std::vector<int64_t>& dims) const {
  // Only the listed dims of size 1 go (PyTorch 2's squeeze(dims)); a view.
  std::vector<bool> drop(size_t(std::max<int64_t>(dim(), 1)), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, dim(), "squeeze");
    if (dim() > 0 && sizes()[size_t(w)] == 1) drop[size_t(w)] = true;
  }
  Shape s;
  for (int64_t i = 0; i < dim(); ++i)
    if (!drop[size_t(i)]) s.push_back(sizes()[size_t(i)]);
  return reshape(s);
}
Tensor Tensor::movedim(const std::vector<int64_t>& source, const std::vector<int64_t>& destination) const {
  return ember::movedim(*this, source, destination);
}
Tensor Tensor::movedim(int64_t source, int64_t destination) const { return ember::movedim(*this, source, destination); }
Tensor Tensor::tril(int64_t diagonal) const { return ember::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return ember::triu(*this, diagonal); }
Tensor Tensor::flip(const std::vector<int64_t>& dims) const { return ember::flip(*this, dims); }
Tensor Tensor::roll(const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) const {
  return ember::roll(*this, shifts, dims);
}

}  // namespace ember
