// PyTorch's in-place rule for a tensor with history (ops.h, in_place_with_history): the change is
// computed out of place from a differentiable copy of the tensor and written back into its memory,
// and the tensor takes the result's node as its history, so gradients flow through the change.
#include <string>

#include "ember/autograd/node.h"
#include "ember/core/error.h"
#include "ember/ops.h"

namespace ember {

Tensor& in_place_with_history(Tensor& self, const std::function<Tensor(const Tensor& value)>& out_of_place,
                              const char* op) {
  if (self.is_leaf())
    throw AutogradError("a leaf Variable that requires grad is being used in an in-place operation.",
                        std::string("update it under no_grad (as an optimizer step does), or ") + op +
                            " a copy: x.clone()");
  // Views and their bases share one storage and hold separate histories; ember keeps no link from
  // one to the other to rewrite, so a change through either would leave the other's gradient wrong.
  if (self.storage().use_count() != 1)
    throw AutogradError(std::string(op) +
                            ": in-place operation on a tensor that requires grad and shares its memory with another "
                            "tensor (a view of it, the tensor it is a view of, or a tensor saved for backward); ember "
                            "cannot record that change",
                        "use the out-of-place form (y = y + 1 instead of y += 1), or clone() the view first");
  // The op may save its input for backward: it saves this copy, never the memory overwritten below.
  const Tensor value = self.clone();
  Tensor result = out_of_place(value);
  EMBER_CHECK(result.sizes() == self.sizes(), ShapeError, op, ": output with shape ", shape_str(self.sizes()),
              " doesn't match the broadcast shape ", shape_str(result.sizes()));
  if (result.dtype() != self.dtype()) result = result.to(self.dtype());
  {
    NoGradGuard no_grad;
    self.copy_(result);  // bumps the version: nodes that saved self's old values refuse at backward
  }
  TensorImpl& impl = *self.impl_ptr();
  impl.grad_fn = result.grad_fn();
  impl.output_nr = result.impl_ptr()->output_nr;
  impl.requires_grad = result.requires_grad();
  return self;
}

}  // namespace ember
