// The seams where a layer reaches what sits above it without calling up (docs/architecture.md,
// "Registration points"): core's tensors without autograd that the backends allocate and copy
// through (core/tensor_raw.h), the runtime tables the backends register and the layers above read
// (core/runtime.h through backends/runtime.h), and the tape's leaf sink that only the engine runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "autograd/accumulate_grad.h"
#include "backends/registry.h"
#include "backends/runtime.h"
#include "core/runtime.h"
#include "core/tensor_raw.h"
#include "cpu/gemm.h"
#include "support/errors.h"

using namespace ember;
using ember::test::message_of;

namespace {
Tensor iota(Shape shape, DType dt = DType::Float32) {
  return arange(double(shape_numel(shape)), {.dtype = dt}).reshape(shape);
}
}  // namespace

// ---- core/tensor_raw.h ---------------------------------------------------------------------------
TEST(CoreTensors, AllocateContiguousOfTheAskedKind) {
  Tensor t = core::empty({2, 3, 4}, DType::Float64, Device::cpu());
  EXPECT_EQ(t.sizes(), (Shape{2, 3, 4}));
  EXPECT_EQ(t.strides(), (Shape{12, 4, 1}));
  EXPECT_EQ(t.dtype(), DType::Float64);
  EXPECT_FALSE(t.requires_grad());
  Tensor like = core::empty_like(iota({5, 2}).t());  // a transposed view: the copy is contiguous
  EXPECT_EQ(like.sizes(), (Shape{2, 5}));
  EXPECT_TRUE(like.is_contiguous());
  EXPECT_THROW(core::empty({2, -1}, DType::Float32, Device::cpu()), ShapeError);
  EXPECT_NE(message_of([] { core::empty({2, -1}, DType::Float32, Device::cpu()); }).find("empty: negative dimension"),
            std::string::npos);
}

TEST(CoreTensors, ViewsShareStorageAndRecordNothing) {
  Tensor x = iota({2, 3}).requires_grad_(true);
  for (const Tensor& v : {core::view(x, {3, -1}), core::permute(x, {1, 0}), core::transpose(x, 0, 1),
                          core::unsqueeze(x, 0), core::expand(core::unsqueeze(x, 0), {4, 2, 3})}) {
    EXPECT_EQ(v.storage().get(), x.storage().get());
    EXPECT_EQ(v.grad_fn(), nullptr);
  }
  EXPECT_EQ(core::view(x, {3, -1}).sizes(), (Shape{3, 2}));
  EXPECT_EQ(core::permute(x, {1, 0}).strides(), (Shape{1, 3}));
  EXPECT_EQ(core::expand(core::unsqueeze(x, 0), {4, 2, 3}).strides(), (Shape{0, 3, 1}));
  // The same rules and messages as Tensor's methods, which are these plus the autograd record.
  EXPECT_NE(message_of([&] { core::view(core::transpose(x, 0, 1), {6}); }).find("view: size [6] is not compatible"),
            std::string::npos);
  EXPECT_NE(message_of([&] { x.t().view({6}); }).find("view: size [6] is not compatible"), std::string::npos);
  EXPECT_NE(message_of([&] { core::permute(x, {0, 0}); }).find("permute: dimension 0 repeated"), std::string::npos);
  EXPECT_NE(message_of([&] { core::expand(x, {3, 3}); }).find("expand: the expanded size 3"), std::string::npos);
}

TEST(CoreTensors, CopiesConvertAndKeepValues) {
  Tensor x = iota({3, 4});
  EXPECT_TRUE(core::contiguous(x).is_same(x));  // already contiguous: itself
  Tensor xt = core::transpose(x, 0, 1);
  Tensor c = core::contiguous(xt);
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_NE(c.storage().get(), x.storage().get());
  EXPECT_EQ(c.to_vector<float>(), xt.contiguous().to_vector<float>());
  Tensor d = core::to(xt, DType::Float64);
  EXPECT_EQ(d.dtype(), DType::Float64);
  EXPECT_EQ(d.to_vector<double>(), xt.to(DType::Float64).to_vector<double>());
  EXPECT_TRUE(core::to(x, DType::Float32).is_same(x));
  Tensor r = core::reshape(xt, {12});  // not viewable: a view of a contiguous copy
  EXPECT_EQ(r.to_vector<float>(), xt.contiguous().view({12}).to_vector<float>());
  Tensor dst = zeros({4, 3});
  core::copy(core::expand(core::unsqueeze(iota({3}), 0), {4, 3}), dst);  // a broadcast source
  EXPECT_EQ(dst.to_vector<float>(), (std::vector<float>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2}));
  Tensor leaf = iota({2, 2}).requires_grad_(true);
  EXPECT_EQ(core::clone(leaf).grad_fn(), nullptr);
  EXPECT_FALSE(core::clone(leaf).requires_grad());
}

// ---- the runtime tables (core/runtime.h, backends/runtime.h) -------------------------------------
TEST(BackendRuntime, TheCpuBackendReportsItsLibraries) {
  const CpuLibraryFacts f = cpu_library_facts();
  EXPECT_FALSE(f.onednn_version.empty());
  EXPECT_EQ(std::count(f.onednn_version.begin(), f.onednn_version.end(), '.'), 2) << f.onednn_version;
  EXPECT_NE(f.blas_config.find("OpenBLAS"), std::string::npos) << f.blas_config;
  EXPECT_EQ(f.blas_threads, cpu::blas_threads());
  const int parallel[] = {0, 1, 2, -1};  // BlasBuild's order: Serial, Pthreads, OpenMP, Unknown
  EXPECT_EQ(f.blas_parallel, parallel[int(cpu::blas_build())]);
  EXPECT_FALSE(f.blas_path.empty());
  if (f.onednn_amx) EXPECT_TRUE(f.onednn_bf16);  // AMX's ISA includes avx512_core_bf16
  EXPECT_NE(registered_cpu_libraries(), nullptr);  // registered by cpu::register_kernels()
}

TEST(BackendRuntime, CudaQueriesAnswerFromTheRegisteredRuntime) {
  ensure_backends();
#ifdef EMBER_WITH_CUDA
  const CudaRuntime* r = registered_cuda_runtime();
  ASSERT_NE(r, nullptr);
  EXPECT_GT(cuda_runtime_version(), 0);  // the statically linked runtime answers without a driver
  EXPECT_EQ(cuda_runtime_version(), r->runtime_version());
  EXPECT_EQ(cuda_device_count(), r->device_count());
  EXPECT_EQ(cuda_unavailable_reason(), r->unavailable_reason());
#else
  EXPECT_EQ(registered_cuda_runtime(), nullptr);
  EXPECT_EQ(cuda_runtime_version(), 0);
  EXPECT_EQ(cuda_device_count(), 0);
  EXPECT_NE(cuda_unavailable_reason().find("built without CUDA"), std::string::npos);
  EXPECT_THROW(cuda_time_ms(0, [] {}, 1), DeviceError);
#endif
  EXPECT_EQ(ember::cuda::device_count(), cuda_device_count());
  // The public forms Python's ember.version.cuda and ember.backends.cudnn.version() read.
  EXPECT_EQ(ember::cuda::cuda_version(), cuda_runtime_version());
  EXPECT_EQ(ember::cuda::cudnn_version(), cuda_cudnn_version());
  if (cuda_device_count() == 0) EXPECT_EQ(ember::cuda::cudnn_version(), 0) << "no device: cuDNN is not loaded to be asked";
  EXPECT_EQ(Device::best(), cuda_device_count() > 0 ? Device::cuda(0) : Device::cpu());
  if (cuda_device_count() == 0) EXPECT_EQ(cuda_device_arch(0).major, 0);
}

// ---- the tape's leaf sink ----------------------------------------------------------------------
TEST(AutogradSink, OnlyTheEngineAccumulatesIntoALeaf) {
  Tensor w = ones({3}).requires_grad_(true);
  Tensor loss = (w * 2.0).sum();
  auto sink = std::dynamic_pointer_cast<autograd::detail::AccumulateGrad>(autograd::gradient_edge(w).node);
  ASSERT_NE(sink, nullptr);
  EXPECT_EQ(sink->var(), &w.impl());
  // Running the sink as a node is a bug: the engine adds into .grad itself.
  EXPECT_THROW(sink->apply({ones({3})}), InternalError);
  loss.backward();
  loss = (w * 2.0).sum();
  loss.backward();  // a second backward adds, never overwrites
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{4, 4, 4}));
}
