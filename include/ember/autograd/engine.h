// The backward engine over the tape of ember/autograd/node.h: runs the recorded nodes in reverse
// topological order, summing the gradients that meet (with ops: this layer sits above them).
// Tensor::backward() is the usual entry point; these are for several roots and gradient checks.
#pragma once

#include <vector>

#include "ember/autograd/node.h"

namespace ember::autograd {

// Runs backward from `roots` with seed gradients `grads` (same length). ADDS into the .grad of every
// leaf that requires grad.
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph);

// Gradients of `outputs` w.r.t. `inputs` without touching .grad (used by gradient checks). An input
// no gradient reaches gets zeros, or an undefined Tensor with `unused_undefined` (what Python's
// torch.autograd.grad(allow_unused=True) returns as None, and refuses without it).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false,
                         bool unused_undefined = false);

}  // namespace ember::autograd
