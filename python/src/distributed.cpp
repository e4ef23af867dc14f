// ember._core._dist: ember.distributed's C++ half (python/ember/distributed/) over the process group
// `ember train --nproc-per-node` uses (include/ember/dist/), and the reducer of
// ember.nn.parallel.DistributedDataParallel: GradBucketer fed by the backward engine's gradient-ready hook.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "bindings.h"
#include "ember/autograd/grad_hook.h"
#include "ember/autograd/node.h"
#include "ember/dist/bucketer.h"
#include "ember/dist/env.h"
#include "ember/dist/launch.h"
#include "ember/dist/process_group.h"

namespace ember::python {
namespace {

using namespace nb::literals;

// The default group (init_process_group's); the reducers keep their own reference, so a group
// destroyed under a live DistributedDataParallel stays valid for it.
std::shared_ptr<dist::ProcessGroup> g_group;

dist::ProcessGroup& group() {
  EMBER_CHECK(g_group != nullptr, ValueError,
              "Default process group has not been initialized, please make sure to call init_process_group.");
  return *g_group;
}

dist::ReduceOp to_op(const std::string& op) {
  if (op == "sum") return dist::ReduceOp::sum;
  if (op == "avg") return dist::ReduceOp::avg;
  throw ValueError("ember.distributed: ReduceOp." + op + " is not supported", "use ReduceOp.SUM or ReduceOp.AVG");
}

// DistributedDataParallel's reducer: the parameters' gradients are averaged in buckets as backward
// produces them. Armed by the wrapper's forward, consumed by the next backward (PyTorch's
// prepare_for_backward), so a backward without a DDP forward, or under no_sync(), reduces nothing.
class Reducer {
 public:
  Reducer(std::shared_ptr<dist::ProcessGroup> pg, std::vector<Tensor> params, size_t first_bucket_bytes,
          size_t bucket_bytes)
      : pg_(std::move(pg)), params_(std::move(params)) {
    dist::GradBucketer::Options o;
    o.first_bucket_bytes = first_bucket_bytes;
    o.bucket_bytes = bucket_bytes;
    o.op = dist::ReduceOp::avg;
    bucketer_ = std::make_unique<dist::GradBucketer>(*pg_, params_, o);
    for (size_t i = 0; i < params_.size(); ++i) index_[params_[i].impl_ptr().get()] = i;
  }
  void on_grad(const Tensor& leaf) {
    auto it = index_.find(leaf.impl_ptr().get());
    if (it != index_.end()) bucketer_->mark_ready(it->second);
  }
  // After backward: a parameter no gradient reached (unused in this forward) contributes zeros,
  // so every rank reduces the same buckets (the training engine's rule, data_parallel.cpp).
  void finish() {
    for (Tensor& p : params_)
      if (!p.grad().defined()) p.set_grad(zeros_like(p));
    bucketer_->finish();
  }
  const std::vector<std::vector<size_t>>& buckets() const { return bucketer_->buckets(); }
  // A backward that failed half-way has launched some buckets' all-reduces and not others, so this
  // rank is out of step with its peers: refuse further steps rather than mismatch collectives.
  void set_broken() { broken_ = true; }
  void check_usable() const {
    if (broken_) {
      throw dist::DistError(
          "DistributedDataParallel: an earlier backward through this module failed part-way, so this rank's "
          "gradient all-reduces are out of step with the other ranks'",
          "restart the job (every rank) after fixing the error the failed backward raised");
    }
  }

 private:
  std::shared_ptr<dist::ProcessGroup> pg_;
  std::vector<Tensor> params_;
  std::unique_ptr<dist::GradBucketer> bucketer_;
  std::unordered_map<const void*, size_t> index_;
  bool broken_ = false;
};

std::mutex g_armed_mu;
std::vector<std::shared_ptr<Reducer>> g_armed;  // armed by a DDP forward, waiting for a backward

}  // namespace

void run_backward_with_reducers(const std::function<void()>& backward) {
  std::vector<std::shared_ptr<Reducer>> armed;
  {
    std::lock_guard<std::mutex> lock(g_armed_mu);
    armed.swap(g_armed);
  }
  if (armed.empty()) return backward();
  {
    autograd::GradAccumulatedHook hook([&](const Tensor& leaf) {
      for (auto& r : armed) r->on_grad(leaf);
    });
    try {
      backward();
    } catch (...) {
      for (auto& r : armed) r->set_broken();
      throw;
    }
  }
  autograd::NoGradGuard no_grad;
  for (auto& r : armed) {
    try {
      r->finish();
    } catch (...) {
      r->set_broken();
      throw;
    }
  }
}

void register_distributed(nb::module_& m) {
  nb::module_ d = m.def_submodule("_dist", "ember.distributed's C++ half (python/ember/distributed/).");
  d.def("available_backends", &dist::available_backends);
  // The launcher's environment as a dict, read from `env` (the caller's os.environ).
  d.def("world_from_env", [](const std::map<std::string, std::string>& env) {
        dist::WorldInfo w;
        try {
          w = dist::world_from_env([&](const char* name) -> const char* {
            auto it = env.find(name);
            return it == env.end() ? nullptr : it->second.c_str();
          });
        } catch (const dist::DistError& e) {  // a bad variable is a bad value: Python's ValueError
          throw ValueError(e.what(), e.hint());
        }
        nb::dict out;
        out["rank"] = w.rank;
        out["world_size"] = w.world_size;
        out["local_rank"] = w.local_rank;
        out["local_world_size"] = w.local_world_size;
        out["master_addr"] = w.master_addr;
        out["master_port"] = w.master_port;
        out["source"] = w.source;
        return out;
      }, "env"_a);
  d.def("init", [](const std::string& backend, int rank, int world_size, const std::string& master_addr,
                   int master_port, int local_rank, double timeout_s) {
        if (g_group) throw ValueError("trying to initialize the default process group twice!");
        dist::InitOptions o;
        o.backend = backend;
        if (backend == "nccl") o.device = Device::cuda(local_rank);
        o.timeout = std::chrono::milliseconds(int64_t(timeout_s * 1000.0));
        o.world.rank = rank;
        o.world.world_size = world_size;
        o.world.master_addr = master_addr;
        o.world.master_port = master_port;
        o.world.local_rank = local_rank;
        auto pg = [&] {
          nb::gil_scoped_release release;  // the rendezvous waits for the other ranks
          return dist::init_process_group(o);
        }();
        g_group = std::move(pg);
      }, "backend"_a, "rank"_a, "world_size"_a, "master_addr"_a, "master_port"_a, "local_rank"_a, "timeout_s"_a);
  d.def("is_initialized", [] { return g_group != nullptr; });
  d.def("destroy", [] {
        std::shared_ptr<dist::ProcessGroup> pg = std::move(g_group);
        nb::gil_scoped_release release;  // stopping the worker finishes what is queued
        pg.reset();
      });
  d.def("rank", [] { return group().rank(); });
  d.def("world_size", [] { return group().size(); });
  d.def("backend", [] { return group().backend(); });
  d.def("timeout_s", [] { return group().timeout().count() / 1000.0; });

  nb::class_<dist::Work>(d, "Work", "A pending collective.")
      .def("wait", [](dist::Work& w, std::optional<double> timeout_s) {
            nb::gil_scoped_release release;
            if (timeout_s) w.wait(std::chrono::milliseconds(int64_t(*timeout_s * 1000.0)));
            else w.wait();
          }, "timeout_s"_a = nb::none())
      .def("is_completed", [](dist::Work& w) { return w.is_completed(); });
  // Each collective returns its Work; the caller waits (the GIL released) unless async_op.
  d.def("all_reduce", [](Tensor t, const std::string& op) {
        return group().all_reduce(t, to_op(op));
      }, "tensor"_a, "op"_a);
  d.def("broadcast", [](Tensor t, int src) { return group().broadcast(t, src); }, "tensor"_a, "src"_a);
  d.def("all_gather", [](const Tensor& in, Tensor out) { return group().all_gather(in, out); }, "input"_a,
        "output"_a);
  d.def("barrier", [] { return group().barrier(); });
  d.def("broadcast_tensors", [](const std::vector<Tensor>& tensors, int src) {
        dist::ProcessGroup& pg = group();
        nb::gil_scoped_release release;
        autograd::NoGradGuard no_grad;
        dist::broadcast_tensors(pg, tensors, src);
      }, "tensors"_a, "src"_a = 0);

  nb::class_<Reducer>(d, "Reducer", "DistributedDataParallel's gradient averaging (GradBucketer).")
      .def("__init__", [](Reducer* self, const std::vector<Tensor>& params, size_t first_bucket_bytes,
                          size_t bucket_bytes) {
            group();
            new (self) Reducer(g_group, params, first_bucket_bytes, bucket_bytes);
          }, "params"_a, "first_bucket_bytes"_a, "bucket_bytes"_a)
      .def_prop_ro("buckets", &Reducer::buckets);
  // The next backward feeds this reducer and then averages (called by DDP's forward).
  d.def("arm", [](std::shared_ptr<Reducer> r) {
        r->check_usable();
        std::lock_guard<std::mutex> lock(g_armed_mu);
        if (std::find(g_armed.begin(), g_armed.end(), r) == g_armed.end()) g_armed.push_back(std::move(r));
      }, "reducer"_a);
  d.def("disarm", [](std::shared_ptr<Reducer> r) {
        std::lock_guard<std::mutex> lock(g_armed_mu);
        g_armed.erase(std::remove(g_armed.begin(), g_armed.end(), r), g_armed.end());
      }, "reducer"_a);

  // `python -m ember.distributed.run`: ember train's local launcher over any command.
  d.def("launch_local", [](int nproc_per_node, const std::vector<std::string>& argv, const std::string& master_addr,
                           int master_port) {
        dist::LaunchOptions o;
        o.nproc_per_node = nproc_per_node;
        o.argv = argv;
        o.master_addr = master_addr;
        o.master_port = master_port;
        o.visible_devices = dist::visible_devices_from_env();
        dist::LaunchResult r;
        {
          nb::gil_scoped_release release;
          r = dist::launch_local(o);
        }
        return nb::make_tuple(r.exit_code, r.failed_rank, r.message);
      }, "nproc_per_node"_a, "argv"_a, "master_addr"_a, "master_port"_a);
}

}  // namespace ember::python
