// embedding: rows of a weight (V, D) looked up by int64 indices, as one_hot(indices) @ weight with a
// backward node whose weight gradient skips padding_idx (PyTorch's rule). The product costs V
// multiply-adds per looked-up value: a stand-in that is exact (one non-zero term per sum) and runs on
// every device, until the indexing family's index_select / index_add replace it.
#include <string>

#include "ember/autocast.h"
#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "ember/ops_nn.h"
#include "ops/util.h"

namespace ember::nn::functional {

Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx_in) {
  check_same_device(indices, weight, "embedding");
  EMBER_CHECK(indices.dtype() == DType::Int64, DTypeError, "embedding: indices must be int64, got ",
              dtype_name(indices.dtype()));
  EMBER_CHECK(weight.dim() == 2, ShapeError, "embedding: weight must be 2-D (num_embeddings, embedding_dim), got shape ",
              shape_str(weight.sizes()));
  EMBER_CHECK(weight.dtype() == DType::Float32 || weight.dtype() == DType::Float64, DTypeError,
              "embedding: weight must be float32 or float64, got ", dtype_name(weight.dtype()));
  const int64_t V = weight.size(0), D = weight.size(1);
  std::optional<int64_t> padding_idx = padding_idx_in;
  if (padding_idx) {
    EMBER_CHECK(*padding_idx >= -V && *padding_idx < V, ValueError, "embedding: padding_idx ", *padding_idx,
                " must be within [-", V, ", ", V, ") for a weight of ", V, " rows");
    if (*padding_idx < 0) padding_idx = *padding_idx + V;
  }
  // Indices are checked where they already live in host memory (as cross_entropy's targets).
  if (indices.is_cpu()) {
    const Tensor ic = indices.contiguous();
    const int64_t* idx = ic.data_ptr<int64_t>();
    for (int64_t i = 0; i < ic.numel(); ++i)
      EMBER_CHECK(idx[i] >= 0 && idx[i] < V, IndexError, "embedding: index ", idx[i], " (element ", i,
                  " of the indices) is out of range for a weight of ", V, " rows (shape ", shape_str(weight.sizes()), ")");
  }
  Shape out_shape = indices.sizes();
  out_shape.push_back(D);
  const int64_t M = indices.numel();
  if (M == 0) return zeros(out_shape, {.dtype = weight.dtype(), .device = weight.device()}).requires_grad_(false);
  // The selection matrix (M, V), multiplied in the weight's own dtype even under autocast (a lookup
  // must return the stored values).
  autocast no_autocast(weight.device().type, DType::BFloat16, false);
  Tensor select;
  Tensor out;
  {
    NoGradGuard ng;
    select = one_hot(indices.detach().reshape({M}), V).to(weight.device(), weight.dtype());
    out = matmul(select, weight.detach()).reshape(out_shape);
  }
  if (autograd::any_requires_grad({&weight})) {
    if (padding_idx) {
      NoGradGuard ng;
      // The padding row's lookups send no gradient: their rows of the selection go to zero.
      Tensor keep = ne(indices.detach().reshape({M, 1}), full({}, double(*padding_idx), {.dtype = DType::Int64,
                                                                                          .device = indices.device()}));
      select = mul(select, keep.to(weight.dtype()));
    }
    const Shape go_shape = {M, D};
    autograd::record(autograd::make_node("EmbeddingBackward",
                                         [select, go_shape](const std::vector<Tensor>& g) {
                                           autocast off(select.device().type, DType::BFloat16, false);
                                           return std::vector<Tensor>{matmul(select.t(), g[0].reshape(go_shape))};
                                         }),
                     {weight}, {out});
  }
  return out;
}

}  // namespace ember::nn::functional
