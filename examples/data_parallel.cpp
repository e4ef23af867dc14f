// Data-parallel training by hand with ember's dist layer, the way `ember train` will do it: ranks
// meet (torchrun/mpirun variables, or this program's own --nproc launcher), refuse different
// settings, start from rank 0's weights, and average gradients in DDP buckets every step. Each
// rank trains on its own random batch of global_batch / world samples; prints per-step compute and
// communication time (rank 0), so 2 ranks x 1 thread can be set beside 1 rank x 2 threads.
//
//   data_parallel [--nproc N] [--model lenet5] [--batch GLOBAL] [--steps S]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

#include <ember/dist/bucketer.h>
#include <ember/dist/launch.h>
#include <ember/dist/process_group.h>
#include <ember/ember.h>

using namespace ember;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  int nproc = 0, batch = 128, steps = 20;
  std::string model_name = "lenet5";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--nproc")) nproc = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--model")) model_name = argv[i + 1];
    else if (!std::strcmp(argv[i], "--batch")) batch = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
  }
  try {
    if (nproc > 0 && std::getenv("RANK") == nullptr) {
      // The launcher: start nproc copies of this command (they see RANK and skip this branch).
      dist::LaunchOptions lo;
      lo.nproc_per_node = nproc;
      lo.argv.assign(argv, argv + argc);
      lo.argv[0] = "/proc/self/exe";
      char exe[4096];
      const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
      if (n > 0) lo.argv[0] = std::string(exe, size_t(n));
      const auto r = dist::launch_local(lo);
      if (r.exit_code != 0) std::fprintf(stderr, "data_parallel: %s\n", r.message.c_str());
      return r.exit_code;
    }
    auto pg = dist::init_process_group({.world = dist::world_from_env()});
    const int world = pg->size(), rank = pg->rank();
    dist::check_same(*pg, "settings", model_name + " batch=" + std::to_string(batch));
    EMBER_CHECK(batch % world == 0, ValueError, "--batch ", batch, " is not a multiple of the world size ", world);
    Generator gen(1234);
    auto model = models::create(model_name, 10, 1, 28, &gen);
    auto params = model->parameters();
    dist::broadcast_tensors(*pg, params, 0);  // rank 0's initial weights everywhere
    optim::SGD opt(params, {.lr = 0.01});
    dist::GradBucketer buckets(*pg, params);
    Generator data_gen(99 + uint64_t(rank));
    const int local = batch / world;
    double compute_s = 0, comm_s = 0;
    for (int step = 0; step < steps + 3; ++step) {
      Tensor x = randn({local, 1, 28, 28}, {}, &data_gen);
      Tensor y = randint(0, 10, {local}, {.dtype = DType::Int64}, &data_gen);
      const auto t0 = Clock::now();
      opt.zero_grad();
      Tensor loss = nn::functional::cross_entropy(model->forward(x), y);
      loss.backward();
      const auto t1 = Clock::now();
      buckets.finish();  // every bucket all-reduced (averaged)
      const auto t2 = Clock::now();
      opt.step();
      if (step >= 3) {  // warm-up excluded
        compute_s += std::chrono::duration<double>(t1 - t0).count();
        comm_s += std::chrono::duration<double>(t2 - t1).count();
      }
    }
    if (rank == 0) {
      std::printf("%s: world %d, %d threads per rank, global batch %d: compute %.2f ms/step, all-reduce %.2f ms/step, "
                  "%.0f samples/s\n",
                  model_name.c_str(), world, get_num_threads(), batch, 1e3 * compute_s / steps, 1e3 * comm_s / steps,
                  batch * steps / (compute_s + comm_s));
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "data_parallel: %s\n", e.what());
    return 2;
  }
}
