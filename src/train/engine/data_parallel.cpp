// DataParallel (data_parallel.h): DistributedDataParallel's start (rank 0's state broadcast), its
// reducer (GradBucketer buckets launched from the gradient-ready hook of the last backward) and
// the host-side all-gather the engine decides with, so every rank stops, saves and selects alike.
#include "train/engine/data_parallel.h"

#include <cstring>

#include "ember/autograd/node.h"
#include "ember/ops.h"

namespace ember::train::detail {
namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

uint64_t double_bits(double v) {
  uint64_t w;
  std::memcpy(&w, &v, sizeof w);
  return w;
}
double bits_double(uint64_t w) {
  double v;
  std::memcpy(&v, &w, sizeof v);
  return v;
}

DataParallel::DataParallel(dist::ProcessGroup& pg, nn::Module& model, bool overlap, size_t first_bucket_bytes,
                           size_t bucket_bytes)
    : pg_(pg), params_(model.parameters()), buffers_(model.buffers()), overlap_(overlap) {
  dist::GradBucketer::Options bo;
  bo.first_bucket_bytes = first_bucket_bytes;
  bo.bucket_bytes = bucket_bytes;
  bo.op = dist::ReduceOp::sum;
  buckets_ = std::make_unique<dist::GradBucketer>(pg_, params_, bo);
  for (size_t i = 0; i < params_.size(); ++i) index_[params_[i].impl_ptr().get()] = i;
}

void DataParallel::broadcast_state() {
  std::vector<Tensor> state = params_;
  state.insert(state.end(), buffers_.begin(), buffers_.end());
  autograd::NoGradGuard no_grad;
  const auto t0 = Clock::now();
  dist::broadcast_tensors(pg_, state, 0);
  comm_seconds_ += since(t0);
}

void DataParallel::attach(TrainStep& step) {
  if (overlap_) {
    step.set_grad_ready_hook([this](const Tensor& leaf) {
      auto it = index_.find(leaf.impl_ptr().get());
      if (it != index_.end()) buckets_->mark_ready(it->second);
    });
  }
  step.add_gradient_hook([this](nn::Module& model, optim::Optimizer&) { finish_step(model); });
}

void DataParallel::finish_step(nn::Module&) {
  // A rank with no sample in an epoch's last step, or a parameter the forward did not use, has no
  // gradient: it contributes zeros, so every rank reduces the same buckets.
  for (Tensor& p : params_)
    if (!p.grad().defined()) p.set_grad(zeros_like(p));
  const auto t0 = Clock::now();
  buckets_->finish();  // marks what the hook did not, waits, writes the sums back
  comm_seconds_ += since(t0);
}

void DataParallel::broadcast_buffers() {
  if (buffers_.empty()) return;
  autograd::NoGradGuard no_grad;
  const auto t0 = Clock::now();
  dist::broadcast_tensors(pg_, buffers_, 0);
  comm_seconds_ += since(t0);
}

std::vector<std::vector<uint64_t>> DataParallel::all_gather(const std::vector<uint64_t>& words) {
  const auto t0 = Clock::now();
  const int64_t n = int64_t(words.size());
  Tensor in = from_blob_copy(words.data(), {n}, DType::Int64);
  // NCCL gathers device buffers; Gloo host ones.
  const Device where = pg_.backend() == "nccl" && !params_.empty() ? params_[0].device() : Device::cpu();
  if (!where.is_cpu()) in = in.to(where);
  Tensor out = empty({int64_t(pg_.size()), n}, {.dtype = DType::Int64, .device = where});
  pg_.all_gather(in, out)->wait();
  const std::vector<int64_t> flat = out.to(Device::cpu()).to_vector<int64_t>();
  std::vector<std::vector<uint64_t>> per_rank(size_t(pg_.size()));
  for (int r = 0; r < pg_.size(); ++r)
    for (int64_t i = 0; i < n; ++i) per_rank[size_t(r)].push_back(uint64_t(flat[size_t(r * n + i)]));
  comm_seconds_ += since(t0);
  return per_rank;
}

}  // namespace ember::train::detail
