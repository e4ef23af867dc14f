// launch_local: fork/exec of N local ranks with torchrun's variables, then a wait loop that stops
// the survivors when one rank fails, so a dead rank never leaves the others waiting on it until
// their collective timeout. Each rank leads its own process group (so its own children are
// stopped with it) and dies with the launcher (PR_SET_PDEATHSIG).
#include "ember/dist/launch.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

#include "dist/socket.h"
#include "ember/dist/error.h"

extern char** environ;

namespace ember::dist {
namespace {

std::atomic<int> g_interrupt{0};
void on_signal(int sig) { g_interrupt = sig; }

std::string describe_status(int status) {
  if (WIFEXITED(status)) return detail::cat("exited with code ", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return detail::cat("was killed by signal ", WTERMSIG(status), " (", ::strsignal(WTERMSIG(status)), ")");
  return "stopped";
}
int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

}  // namespace

std::vector<std::string> visible_devices_from_env() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  return v == nullptr ? std::vector<std::string>{} : split_commas(v);
}

LaunchResult launch_local(const LaunchOptions& o) {
  const int n = o.nproc_per_node;
  if (n < 1) throw DistError(detail::cat("--nproc-per-node must be at least 1, got ", n));
  if (o.argv.empty() || o.argv[0].empty()) throw DistError("launch_local: the command to run is empty");
  std::vector<std::string> devices = o.visible_devices;
  if (o.gpus > 0 && devices.empty())
    for (int i = 0; i < o.gpus; ++i) devices.push_back(std::to_string(i));
  if (o.gpus > 0 && n > int(devices.size())) {
    throw DistError(detail::cat("--nproc-per-node ", n, " asks for one GPU per rank, but only ", devices.size(),
                                " are visible (", o.gpus, " GPUs)"),
                    "use at most one rank per GPU, or widen CUDA_VISIBLE_DEVICES");
  }
  int cores = o.cores;
  if (cores <= 0) {
    cpu_set_t set;
    cores = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  }
  const int port = o.master_port > 0 ? o.master_port : net::free_port();

  // The environment shared by every rank, without the variables we set per rank.
  const std::vector<std::string> ours = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                                         "MASTER_PORT", "GROUP_RANK", "OMPI_COMM_WORLD_RANK",
                                         "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                                         "OMPI_COMM_WORLD_LOCAL_SIZE"};
  bool threads_given = false;
  for (const auto& e : o.extra_env) threads_given |= e.rfind("OMP_NUM_THREADS=", 0) == 0;
  std::vector<std::string> base;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string s = *e;
    const std::string name = s.substr(0, s.find('='));
    bool skip = std::find(ours.begin(), ours.end(), name) != ours.end();
    skip |= o.gpus > 0 && name == "CUDA_VISIBLE_DEVICES";
    skip |= o.gpus == 0 && !threads_given && name == "OMP_NUM_THREADS";
    if (!skip) base.push_back(s);
  }

  struct Rank {
    pid_t pid = -1;
    bool done = false;
    int status = 0;
  };
  std::vector<Rank> ranks(n);
  const auto stop_all = [&](int sig) {
    for (auto& r : ranks)
      if (r.pid > 0 && !r.done) ::kill(-r.pid, sig);
  };

  struct sigaction sa{}, old_int{}, old_term{};
  sa.sa_handler = on_signal;
  ::sigemptyset(&sa.sa_mask);
  g_interrupt = 0;
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  const auto restore = [&] {
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
  };

  const pid_t parent = ::getpid();
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> env = base;
    env.push_back(detail::cat("RANK=", i));
    env.push_back(detail::cat("LOCAL_RANK=", i));
    env.push_back(detail::cat("WORLD_SIZE=", n));
    env.push_back(detail::cat("LOCAL_WORLD_SIZE=", n));
    env.push_back("MASTER_ADDR=" + o.master_addr);
    env.push_back(detail::cat("MASTER_PORT=", port));
    if (o.gpus > 0) env.push_back("CUDA_VISIBLE_DEVICES=" + devices[i]);
    else if (!threads_given) env.push_back(detail::cat("OMP_NUM_THREADS=", std::max(1, cores / n)));
    for (const auto& e : o.extra_env) env.push_back(e);
    std::vector<char*> envp, argv;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = o.argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    int err_pipe[2];
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) throw DistError("launch_local: pipe() failed");
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // the launcher died before prctl
      ::signal(SIGINT, SIG_DFL);
      ::signal(SIGTERM, SIG_DFL);
      ::execvpe(argv[0], argv.data(), envp.data());
      const int e = errno;
      (void)!::write(err_pipe[1], &e, sizeof e);
      ::_exit(127);
    }
    ::close(err_pipe[1]);
    if (pid < 0) {
      ::close(err_pipe[0]);
      stop_all(SIGKILL);
      for (auto& r : ranks)
        if (r.pid > 0) ::waitpid(r.pid, nullptr, 0);
      restore();
      throw DistError(detail::cat("launch_local: fork() failed for rank ", i, ": ", std::strerror(errno)));
    }
    ranks[i].pid = pid;
    ::setpgid(pid, pid);  // also from the parent, so kill(-pid) works whoever runs first
    int child_errno = 0;
    const ssize_t got = ::read(err_pipe[0], &child_errno, sizeof child_errno);
    ::close(err_pipe[0]);
    if (got == sizeof child_errno) {
      ::waitpid(pid, nullptr, 0);
      ranks[i].done = true;
      stop_all(SIGKILL);
      for (auto& r : ranks)
        if (r.pid > 0 && !r.done) ::waitpid(r.pid, nullptr, 0);
      restore();
      throw DistError(detail::cat("cannot start rank ", i, ": ", o.argv[0], ": ", std::strerror(child_errno)),
                      "check the command and PATH");
    }
  }

  LaunchResult result;
  std::chrono::steady_clock::time_point kill_at{};
  bool killed = false;
  for (;;) {
    int alive = 0;
    // Ranks reaped in this pass. When several failed since the last pass, the one killed by a
    // signal is named first: the others are usually reacting to it (a survivor exits with an
    // error code once it sees its peer gone, within the same 10 ms).
    int culprit = -1;
    for (int i = 0; i < n; ++i) {
      Rank& r = ranks[i];
      if (r.done) continue;
      int status = 0;
      const pid_t w = ::waitpid(r.pid, &status, WNOHANG);
      if (w == 0) {
        ++alive;
        continue;
      }
      r.done = true;
      r.status = status;
      const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      if (failed && (culprit < 0 || (WIFSIGNALED(status) && !WIFSIGNALED(ranks[culprit].status)))) culprit = i;
    }
    if (culprit >= 0 && result.failed_rank < 0 && result.exit_code == 0) {
      const Rank& r = ranks[culprit];
      result.failed_rank = culprit;
      result.exit_code = exit_code_of(r.status);
      result.message = detail::cat("rank ", culprit, " (pid ", r.pid, ") ", describe_status(r.status));
      stop_all(SIGTERM);
      kill_at = std::chrono::steady_clock::now() + o.kill_grace;
    }
    if (alive == 0) break;
    if (const int sig = g_interrupt.exchange(0); sig != 0 && result.failed_rank < 0) {
      result.exit_code = 128 + sig;
      result.message = detail::cat("the launcher got signal ", sig, " (", ::strsignal(sig), ") and stopped the ranks");
      stop_all(SIGTERM);
      kill_at = std::chrono::steady_clock::now() + o.kill_grace;
      result.failed_rank = -1;
      killed = false;
    }
    if (kill_at != std::chrono::steady_clock::time_point{} && !killed && std::chrono::steady_clock::now() >= kill_at) {
      stop_all(SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  restore();
  return result;
}

}  // namespace ember::dist
