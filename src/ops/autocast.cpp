// ember::autocast: the policy table, the thread-local guard state and the per-scope weight cast
// cache that the op front-ends (linalg.cpp, nn_conv.cpp, the float32 ops) consult through
// ops/autocast.h.
#include "ops/autocast.h"

#include <memory>
#include <unordered_map>

#include "backends/runtime.h"
#include "ember/autograd/node.h"
#include "ember/core/error.h"
#include "ember/core/storage.h"

namespace ember {

namespace {

// The policy, as PyTorch's CPU autocast lists: matrix products lower, anything that sums many
// terms, exponentiates or keeps running statistics stays float32.
constexpr AutocastRule kPolicy[] = {
    {AutocastOp::Conv2d, "nn::functional::conv2d", CastPolicy::Lower,
     "matrix products: bf16 multiplies are exact in f32, the sums run in f32 (AMX/AVX512-BF16); "
     "except, when its weight gradient is wanted, an input of fewer than 4 channels (a first layer on "
     "grey or RGB images), which stays f32: oneDNN 2.6's AMX weight gradient for 1 input channel ran "
     "3x slower than f32 (lenet5 conv1, mnistnet conv1; docs/benchmarks.md); and, without autograd "
     "(inference), a dense conv of fewer than 4,096 multiply-adds per output pixel (lenet5's 150 and "
     "2,400), where oneDNN's avx512_core_bf16 forward is slower than its f32 one"},
    {AutocastOp::Linear, "linear", CastPolicy::Lower,
     "as conv2d; without autograd a weight of fewer than 65,536 elements stays f32 on the CPU (lenet5's "
     "three, mnistnet's last: slower in bf16)"},
    {AutocastOp::Matmul, "matmul", CastPolicy::Lower,
     "as conv2d (2-D operands or a shared 2-D right operand; a true batch of products stays f32)"},
    {AutocastOp::Softmax, "nn::functional::softmax", CastPolicy::Float32,
     "exp overflows and the normalising sum loses digits in 8 mantissa bits"},
    {AutocastOp::LogSoftmax, "nn::functional::log_softmax", CastPolicy::Float32, "as softmax"},
    {AutocastOp::CrossEntropy, "nn::functional::cross_entropy", CastPolicy::Float32,
     "a loss: a log-sum-exp and a mean over the batch"},
    {AutocastOp::NllLoss, "nn::functional::nll_loss", CastPolicy::Float32, "a loss: a mean over the batch"},
    {AutocastOp::MseLoss, "nn::functional::mse_loss", CastPolicy::Float32, "a loss: squares and a mean"},
    {AutocastOp::BatchNorm, "nn::functional::batch_norm", CastPolicy::Float32,
     "batch statistics (mean, variance) and the running averages need f32"},
    {AutocastOp::Sum, "sum", CastPolicy::Float32, "a reduction: long sums lose digits in bf16"},
    {AutocastOp::Mean, "mean", CastPolicy::Float32, "a reduction, as sum"},
};

struct CacheEntry {
  std::weak_ptr<StorageImpl> owner;
  uint64_t version = 0;
  int64_t offset = 0;
  Shape sizes, strides;
  DType dtype = DType::Float32;
  Tensor cast;
};

struct State {
  bool enabled[kNumDeviceTypes] = {};
  DType dtype[kNumDeviceTypes] = {};
  int depth = 0;  // enabled scopes open on this thread
  std::unordered_map<const StorageImpl*, CacheEntry> cache;
};
State& state() {
  thread_local State s;
  return s;
}

}  // namespace

std::span<const AutocastRule> autocast_policy() { return kPolicy; }

const AutocastRule& autocast_rule(AutocastOp op) {
  for (const AutocastRule& r : kPolicy)
    if (r.op == op) return r;
  EMBER_ASSERT(false, "autocast op ", int(op), " has no row in the policy table");
  return kPolicy[0];
}

autocast::autocast(DeviceType device, DType dtype, bool enabled) : device_(device) {
  if (enabled) {
    EMBER_CHECK(is_half(dtype), DTypeError, "autocast: dtype must be bfloat16 or float16, got ", dtype_name(dtype));
    // CUDA: bfloat16 and float16 (cuBLAS / cuDNN on the tensor cores, src/cuda/linear_half.cpp and
    // nn_conv.cpp). CPU: bfloat16 only.
    EMBER_CHECK(device == DeviceType::CUDA || dtype == DType::BFloat16, NotImplementedError,
                "autocast: float16 on the CPU has no fast kernels (oneDNN 2.6 computes bf16 there); use "
                "DType::BFloat16 (float16 autocast is for CUDA devices)");
  }
  State& s = state();
  prev_enabled_ = s.enabled[int(device)];
  prev_dtype_ = s.dtype[int(device)];
  s.enabled[int(device)] = enabled;
  if (enabled) {
    s.dtype[int(device)] = dtype;
    ++s.depth;
  }
  enabled_ = enabled;
}

autocast::~autocast() {
  State& s = state();
  s.enabled[int(device_)] = prev_enabled_;
  s.dtype[int(device_)] = prev_dtype_;
  if (enabled_ && --s.depth == 0) s.cache.clear();
}

bool autocast::is_enabled(DeviceType device) { return state().enabled[int(device)]; }
DType autocast::dtype(DeviceType device) {
  const State& s = state();
  return s.enabled[int(device)] ? s.dtype[int(device)] : DType::Float32;
}
size_t autocast::cache_size() { return state().cache.size(); }

namespace autocast_detail {

DType compute_dtype(AutocastOp op, const Tensor& x) {
  const State& s = state();
  const int d = int(x.device().type);
  if (!s.enabled[d] || x.dtype() != DType::Float32 || autocast_rule(op).policy != CastPolicy::Lower) return x.dtype();
  return s.dtype[d];
}

// conv2d's exceptions in the table above: on the CPU, fewer input channels than this stay float32
// when the weight gradient is computed (cuDNN's half convolutions were never measured, so CUDA
// follows the table). With AMX, 4: oneDNN 2.6's AMX weight gradient for ic=1 ran 3x slower than
// f32 (2 and 3 not measured there). Without (AVX512-BF16, Zen 5), 2: an RGB stem is faster in bf16
// (resnet18's 7x7/2 at 224 px, batch 32: forward 33 ms against 40-60, weight gradient 14 against
// 23-30, ONEDNN_VERBOSE, 2026-12-02) while one channel is not (lenet5's bf16 training 22k samples/s
// with its 1 -> 6 conv lowered against 36-41k kept f32).
int64_t conv2d_min_lowered_channels() {
  static const int64_t n = cpu_library_facts().onednn_amx ? int64_t(4) : int64_t(2);
  return n;
}
// (Until 2026-12-02 a dense conv of fewer than 4,096 multiply-adds per output pixel stayed float32
// without autograd: oneDNN's avx512_core_bf16 forward wrote float32 and lost to its f32 one there.
// Since inference convolutions write their output in bf16 and leave it in oneDNN's layout
// (cpu/dnnl_form.h), the bf16 one wins at every size measured: mnistnet's 1 -> 32 conv1 0.38 ms
// against 1.0-1.4 in f32 at batch 256, lenet5 bf16 inference 185k samples/s against 124k with the
// rule, bncnn48_fc128 150k against 105k; docs/benchmarks.md, issue 24.)
DType conv2d_compute_dtype(const Tensor& x, const Tensor& weight, bool weight_grad) {
  const DType dt = compute_dtype(AutocastOp::Conv2d, x);
  if (dt == x.dtype() || x.device().type != DeviceType::CPU || x.dim() != 4 || weight.dim() != 4) return dt;
  if (weight_grad && x.size(1) < conv2d_min_lowered_channels()) return x.dtype();
  // Depthwise convolutions are lowered in training too. They had stayed float32 while training's
  // activations were held at float32 (lowered, each first converted its input: 14% of
  // mobilenet_v2's bf16 step at 224 px); since a lowered convolution's output is held in bf16
  // (cpu/dnnl_form.h), a float32 depthwise convolution would convert its (6x expanded) bf16 input
  // instead, and lowered its forward and weight gradient ran in 0.6-0.7x the float32 kernels' time
  // (ONEDNN_VERBOSE, 224 px, Zen 5). Its input gradient stays float32 (cpu/nn_conv_dnnl.cpp).
  return dt;
}

// Linear's counterpart, also inference only: a weight of fewer elements (multiply-adds per row) than
// this stays float32 on the CPU. lenet5's 400 -> 120, 120 -> 84 and 84 -> 10 at batch 256 (Zen 5):
// 0.096 / 0.062 / 0.046 ms in bf16 against 0.086 / 0.032 / 0.007 in f32 (the input's conversion and
// the primitive's fixed cost outweigh the halved multiply time); mlp's 784 -> 256 (200,704) and
// mnistnet's 9216 -> 128 gain in bf16.
constexpr int64_t kLinearMinLoweredMacs = 65536;

DType linear_compute_dtype(const Tensor& x, const Tensor& weight) {
  const DType dt = compute_dtype(AutocastOp::Linear, x);
  if (dt == x.dtype() || x.device().type != DeviceType::CPU) return dt;
  if (weight.numel() < kLinearMinLoweredMacs && !autograd::any_requires_grad({&x, &weight})) return x.dtype();
  return dt;
}

Tensor cast(const Tensor& t, DType dt) {
  if (t.dtype() == dt) return t.detach();
  State& s = state();
  const bool cacheable = s.depth > 0 && t.is_leaf() && t.requires_grad();
  if (!cacheable) return t.detach().to(dt);
  const Storage& st = t.storage();
  auto it = s.cache.find(st.get());
  if (it != s.cache.end()) {
    const CacheEntry& e = it->second;
    // The owner is tested for null before it is compared: `lock() == st` alone leaves GCC 12 a path
    // where both are null, on which it flagged st->version()'s atomic load (-Wstringop-overflow).
    const std::shared_ptr<StorageImpl> owner = e.owner.lock();
    if (owner != nullptr && owner == st && e.version == owner->version() && e.offset == t.storage_offset() &&
        e.sizes == t.sizes() && e.strides == t.strides() && e.dtype == dt)
      return e.cast;
  }
  CacheEntry e{st, st->version(), t.storage_offset(), t.sizes(), t.strides(), dt, t.detach().to(dt)};
  Tensor out = e.cast;
  s.cache.insert_or_assign(st.get(), std::move(e));
  return out;
}

Tensor to_float32(AutocastOp op, const Tensor& t) {
  if (!t.defined() || !is_half(t.dtype()) || !state().enabled[int(t.device().type)]) return t;
  EMBER_ASSERT(autocast_rule(op).policy == CastPolicy::Float32, "to_float32 on a lowered op");
  return t.to(DType::Float32);
}

}  // namespace autocast_detail

}  // namespace ember
