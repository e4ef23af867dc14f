// GradBucketer: DistributedDataParallel's reducer in small. Buckets are fixed at construction
// (reverse parameter order, a small first bucket, then bucket_bytes); each bucket has one flat
// buffer, so a bucket costs one all-reduce whatever its parameter count.
#include "ember/dist/bucketer.h"

namespace ember::dist {

GradBucketer::GradBucketer(ProcessGroup& pg, std::vector<Tensor> params, Options options)
    : pg_(pg), params_(std::move(params)), op_(options.op) {
  EMBER_CHECK(options.bucket_bytes > 0 && options.first_bucket_bytes > 0, ValueError,
              "GradBucketer: bucket sizes must be positive");
  const size_t n = params_.size();
  bucket_of_.assign(n, 0);
  offset_in_bucket_.assign(n, 0);
  size_t cap = options.first_bucket_bytes, bytes = 0;
  Device device = n ? params_[0].device() : Device::cpu();
  for (size_t k = n; k-- > 0;) {
    const Tensor& p = params_[k];
    EMBER_CHECK(p.defined(), ValueError, "GradBucketer: parameter ", k, " is undefined");
    EMBER_CHECK(p.dtype() == DType::Float32, DTypeError, "GradBucketer: parameter ", k, " is ",
                dtype_name(p.dtype()), "; gradients are averaged in float32");
    EMBER_CHECK(p.device() == device, DeviceError, "GradBucketer: parameter ", k, " is on ", p.device().str(),
                ", parameter 0 on ", device.str(), "; one bucketer per device");
    // A parameter is never split: it goes into the open bucket unless that one is non-empty and
    // would overflow (PyTorch's rule).
    if (buckets_.empty() || (!buckets_.back().empty() && bytes + p.nbytes() > cap)) {
      if (!buckets_.empty()) cap = options.bucket_bytes;
      buckets_.emplace_back();
      bytes = 0;
    }
    bucket_of_[k] = buckets_.size() - 1;
    offset_in_bucket_[k] = bytes / sizeof(float);
    buckets_.back().push_back(k);
    bytes += p.nbytes();
  }
  for (const auto& b : buckets_) {
    int64_t elems = 0;
    for (size_t k : b) elems += params_[k].numel();
    buffers_.push_back(zeros({elems}, {DType::Float32, device}));
  }
  pending_.resize(buckets_.size());
  works_.resize(buckets_.size());
  for (size_t b = 0; b < buckets_.size(); ++b) pending_[b] = buckets_[b].size();
  ready_.assign(n, false);
}

void GradBucketer::mark_ready(size_t i) {
  EMBER_CHECK(i < params_.size(), ValueError, "GradBucketer::mark_ready: parameter ", i, " of ", params_.size());
  EMBER_CHECK(!ready_[i], ValueError, "GradBucketer::mark_ready: parameter ", i,
              " was marked ready twice in one step (call finish() after each backward)");
  const Tensor g = params_[i].grad();
  EMBER_CHECK(g.defined(), ValueError, "GradBucketer::mark_ready: parameter ", i,
              " has no gradient; every rank must produce a gradient for every bucketed parameter "
              "(zero the unused ones, or leave them out of the bucketer)");
  EMBER_CHECK(g.shape() == params_[i].shape(), ShapeError, "GradBucketer: the gradient of parameter ", i,
              " has another shape than the parameter");
  ready_[i] = true;
  const size_t b = bucket_of_[i];
  buffers_[b].narrow(0, int64_t(offset_in_bucket_[i]), g.numel()).copy_(g.reshape({-1}));
  --pending_[b];
  // Buckets launch in bucket order on every rank, whatever order the gradients arrive in: the
  // collectives of a group are matched by their order, and a rank that marks everything in
  // finish() (no backward this step) must issue them as one whose hook marked them during backward.
  while (next_launch_ < buckets_.size() && pending_[next_launch_] == 0) launch(next_launch_++);
}

void GradBucketer::launch(size_t b) { works_[b] = pg_.all_reduce(buffers_[b], op_); }

int64_t GradBucketer::index_of(const Tensor& param) const {
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].is_same(param)) return int64_t(i);
  return -1;
}

void GradBucketer::finish() {
  for (size_t b = 0; b < buckets_.size(); ++b)
    for (size_t k : buckets_[b])
      if (!ready_[k]) mark_ready(k);
  std::exception_ptr first;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    try {
      works_[b]->wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  // Reset first, so a caller that catches the error can still use the bucketer's state sanely.
  ready_.assign(params_.size(), false);
  for (size_t b = 0; b < buckets_.size(); ++b) pending_[b] = buckets_[b].size();
  next_launch_ = 0;
  if (first) {
    works_.assign(buckets_.size(), nullptr);
    std::rethrow_exception(first);
  }
  for (size_t b = 0; b < buckets_.size(); ++b) {
    for (size_t k : buckets_[b]) {
      Tensor g = params_[k].grad();
      g.copy_(buffers_[b].narrow(0, int64_t(offset_in_bucket_[k]), g.numel()).view(g.shape()));
    }
    works_[b] = nullptr;
  }
}

}  // namespace ember::dist
