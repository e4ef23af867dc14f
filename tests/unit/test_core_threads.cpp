// Thread starts a resource limit refuses (ember/core/threads.h): the probe that --threads and
// --workers go through, and the data loader's workers, under an address-space limit (RLIMIT_AS:
// each thread reserves a stack; root ignores RLIMIT_NPROC, so the tests use this one) end in a
// ResourceError with the numbers, never std::system_error or libgomp's exit.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "ember/core/error.h"
#include "ember/core/threads.h"
#include "ember/data/dataset.h"
#include "ember/data/loader.h"
#include "ember/ops.h"

namespace {

// Runs `body` in a child whose address space may grow by only `headroom` bytes; the child's exit
// code is body's return value (100 + n for an unexpected exception).
int in_limited_child(size_t headroom, int (*body)()) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::ifstream statm("/proc/self/statm");
    size_t pages = 0;
    statm >> pages;
    const rlim_t now = rlim_t(pages) * rlim_t(::sysconf(_SC_PAGESIZE));
    rlimit lim{now + headroom, now + headroom};
    if (::setrlimit(RLIMIT_AS, &lim) != 0) ::_exit(90);
    int rc = 91;
    try {
      rc = body();
    } catch (...) {
      rc = 92;
    }
    ::_exit(rc);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

}  // namespace

TEST(CoreThreads, AProbeWithinTheLimitsStartsAndJoinsItsThreads) {
  EXPECT_NO_THROW(ember::check_can_start_threads(8, "eight threads", "ask for fewer"));
  EXPECT_NO_THROW(ember::check_can_start_threads(0, "none", "-"));
}

TEST(CoreThreads, AProbeBeyondTheAddressSpaceIsAResourceError) {
  const int rc = in_limited_child(size_t(96) << 20, [] {
    try {
      ember::check_can_start_threads(1024, "--threads 1024", "pass a smaller --threads");  // 8 GiB of stacks
    } catch (const ember::ResourceError& e) {
      const std::string msg = e.what(), hint = e.hint();
      const bool ok = msg.starts_with("cannot start --threads 1024: only ") &&
                      msg.find(" more threads could start (Resource temporarily unavailable)") != std::string::npos &&
                      hint.starts_with("pass a smaller --threads, or raise the limit") &&
                      hint.find("ulimit -v ") != std::string::npos;
      if (!ok) fprintf(stderr, "%s\n  hint: %s\n", msg.c_str(), hint.c_str());
      // The threads that did start were joined: a small probe works again.
      ember::check_can_start_threads(2, "two", "-");
      return ok ? 0 : 1;
    }
    return 2;
  });
  EXPECT_EQ(rc, 0) << "1: wrong message (printed above), 2: no error, 9x: child setup, 2xx: killed by a signal";
}

TEST(CoreThreads, LoaderWorkersThatCannotStartAreAResourceError) {
  const int rc = in_limited_child(size_t(96) << 20, [] {
    using namespace ember;
    std::vector<uint8_t> px(64 * 16, 1);
    std::vector<int64_t> labels(64, 0);
    data::Dataset ds = data::dataset_from_tensors(from_blob_copy(px.data(), {64, 1, 4, 4}, DType::UInt8),
                                                  tensor(labels), 10);
    data::LoaderOptions o;
    o.batch_size = 8;
    o.workers = 1024;
    try {
      data::DataLoader loader(ds, o);
      loader.begin_epoch(0);
    } catch (const ResourceError& e) {
      const std::string msg = e.what();
      const bool ok = msg.starts_with("cannot start data-loading worker ") && msg.find(" of 1024: ") != std::string::npos &&
                      e.hint().starts_with("pass a smaller --workers (0 loads in-line)");
      if (!ok) fprintf(stderr, "%s\n  hint: %s\n", msg.c_str(), e.hint().c_str());
      return ok ? 0 : 1;
    }
    return 2;
  });
  EXPECT_EQ(rc, 0) << "1: wrong message (printed above), 2: no error, 9x: child setup, 2xx: killed by a signal";
}
