// init_process_group (the store, the rank's host, the backend by device) and check_same, the
// fingerprint exchange that refuses ranks started with different configs, data or versions.
#include "ember/dist/process_group.h"

#include <unistd.h>

#include <algorithm>

#include "dist/backends.h"
#include "dist/socket.h"

namespace ember::dist {
namespace {

std::pair<std::string, std::string> shorten_at_difference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  auto cut = [&](const std::string& s) {
    if (s.size() <= 80) return "'" + s + "'";
    const size_t from = i > 20 ? i - 20 : 0;
    return detail::cat("'", from ? "..." : "", s.substr(from, 60), s.size() > from + 60 ? "..." : "",
                       "' (", s.size(), " bytes, first difference at byte ", i, ")");
  };
  return {cut(a), cut(b)};
}

}  // namespace

std::string ProcessGroup::describe_rank(int r) {
  std::string where;
  if (store_->try_get(detail::cat("ember/host/", r), &where)) return detail::cat("rank ", r, " (", where, ")");
  return detail::cat("rank ", r);
}

std::vector<std::string> available_backends() {
  std::vector<std::string> out;
#ifdef EMBER_WITH_GLOO
  out.push_back("gloo");
#endif
#ifdef EMBER_WITH_NCCL
  out.push_back("nccl");
#endif
  return out;
}

std::shared_ptr<ProcessGroup> init_process_group(const InitOptions& o) {
  const WorldInfo& w = o.world;
  EMBER_CHECK(w.world_size >= 1 && w.rank >= 0 && w.rank < w.world_size, ValueError,
              "init_process_group: rank ", w.rank, " is not in a world of ", w.world_size);
  EMBER_CHECK(o.timeout.count() > 0, ValueError, "init_process_group: the timeout must be positive, got ",
              o.timeout.count(), " ms");
  std::string backend = o.backend;
  if (backend == "auto") backend = o.device.is_cuda() ? "nccl" : "gloo";
  const auto have = available_backends();
  if (std::find(have.begin(), have.end(), backend) == have.end()) {
    std::string list;
    for (const auto& b : have) list.append(list.empty() ? "" : ", ").append(b);
    throw DistError(detail::cat("process-group backend '", backend, "' is not in this build (it has: ",
                                list.empty() ? "none" : list, ")"),
                    backend == "gloo"   ? "install libgloo-dev (scripts/setup.sh) and rebuild ember"
                    : backend == "nccl" ? "build ember with CUDA (-DEMBER_CUDA=ON) next to a toolkit that has nccl.h"
                                        : "use 'gloo' (CPU tensors) or 'nccl' (CUDA tensors)");
  }
  std::shared_ptr<TcpStore> store = o.store;
  if (!store) {
    TcpStore::Options so;
    so.host = w.master_addr.empty() ? "127.0.0.1" : w.master_addr;
    so.port = w.master_port;
    so.is_server = w.rank == 0;
    so.rank = w.rank;
    so.timeout = o.timeout;
    store = std::make_shared<TcpStore>(so);
  }
  store->set(detail::cat("ember/host/", w.rank), detail::cat("host ", net::hostname(), ", pid ", ::getpid()));
  const std::string prefix = detail::cat("ember/pg", store->next_sequence("process_group"), "/");
#ifdef EMBER_WITH_GLOO
  if (backend == "gloo") return make_gloo_group(w.rank, w.world_size, o.timeout, store, prefix);
#endif
#ifdef EMBER_WITH_NCCL
  if (backend == "nccl") {
    EMBER_CHECK(o.device.is_cuda(), DeviceError, "init_process_group: the nccl backend needs a CUDA device, got ",
                o.device.str());
    return make_nccl_group(w.rank, w.world_size, o.timeout, store, prefix, o.device.index);
  }
#endif
  throw InternalError("init_process_group: backend '" + backend + "' listed but not constructed");
}

void broadcast_tensors(ProcessGroup& pg, const std::vector<Tensor>& tensors, int root) {
  std::vector<WorkPtr> works;
  works.reserve(tensors.size());
  for (const Tensor& t : tensors) {
    Tensor handle = t;  // shares t's storage: the broadcast writes into the caller's tensor
    works.push_back(pg.broadcast(handle, root));
  }
  for (auto& w : works) w->wait();
}

void check_same(ProcessGroup& pg, const std::string& name, const std::string& value) {
  const int64_t seq = pg.store().next_sequence("check/" + name);
  const std::string base = detail::cat("ember/check/", name, "/", seq, "/");
  pg.store().set(base + std::to_string(pg.rank()), value);
  std::vector<std::string> keys;
  for (int r = 0; r < pg.size(); ++r) keys.push_back(base + std::to_string(r));
  pg.store().wait(keys, pg.timeout());
  std::vector<std::string> values(pg.size());
  for (int r = 0; r < pg.size(); ++r) pg.store().try_get(keys[r], &values[r]);
  // Compare with rank 0's value, so every rank reports the same first difference.
  for (int r = 1; r < pg.size(); ++r) {
    if (values[r] != values[0]) {
      const auto [v0, vr] = shorten_at_difference(values[0], values[r]);
      throw ConfigMismatchError(
          detail::cat("rank ", pg.rank(), ": the ranks disagree on ", name, ": ", pg.describe_rank(0), " has ", v0,
                      ", ", pg.describe_rank(r), " has ", vr),
          detail::cat("start every rank with the same ", name, " (same config, dataset and ember build)"));
    }
  }
}

}  // namespace ember::dist
