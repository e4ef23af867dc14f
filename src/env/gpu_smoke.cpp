// The GPU smoke test (gpu_smoke.h): each step through ember's public ops, so it proves the paths
// training takes (the allocator and copies, the elementwise kernels, cuBLAS, cuDNN), each checked
// against the CPU the way the op harness does, on integer-valued data so "equal" means equal.
#include "ember/env/gpu_smoke.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>

#include "backends/runtime.h"
#include "ember/core/device.h"
#include "ember/cuda.h"
#include "ember/ops.h"

namespace ember::env {
namespace {

constexpr size_t kCopyBytes = size_t(64) << 20;

// Integer values in [-r, r], a different sequence per salt: sums of products of these stay exact
// in float32 and TF32 (a 10-bit mantissa) for the sizes used here.
std::vector<float> ints(size_t n, int r, unsigned salt) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(int((i * 2654435761u + salt * 40503u) % unsigned(2 * r + 1)) - r);
  return v;
}

// The largest |gpu - cpu|, relative to the largest |cpu| (1 when nothing to compare).
double max_rel_diff(const Tensor& gpu, const Tensor& cpu) {
  const std::vector<float> g = gpu.to(Device::cpu()).to_vector<float>(), c = cpu.to_vector<float>();
  if (g.size() != c.size() || c.empty()) return 1;
  double diff = 0, scale = 0;
  for (size_t i = 0; i < c.size(); ++i) diff = std::max(diff, double(std::abs(g[i] - c[i]))), scale = std::max(scale, double(std::abs(c[i])));
  return scale > 0 ? diff / scale : diff;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

bool GpuSmokeResult::passed() const {
  if (!skipped.empty() || steps.empty()) return false;
  for (const SmokeStep& s : steps)
    if (!s.ok) return false;
  return true;
}

GpuSmokeResult gpu_smoke_test(int device) {
  GpuSmokeResult r;
  r.device = device;
  if (cuda_device_count() <= device) {
    const std::string why = cuda_unavailable_reason();
    r.skipped = cuda_device_count() == 0 ? "no usable GPU: " + (why.empty() ? std::string("none found") : why)
                                         : fmt::format("no cuda:{} (this machine shows {} GPU(s))", device, cuda_device_count());
    return r;
  }
  r.device_name = cuda_device_arch(device).name;
  const Device dev = Device::cuda(device);
  // Each step: its body returns the detail; a throw (a CUDA error, a mismatch) fails it and stops.
  auto step = [&](const char* name, const std::function<std::string()>& body) {
    if (!r.steps.empty() && !r.steps.back().ok) return;
    SmokeStep s{name, false, "", 0};
    const auto t0 = std::chrono::steady_clock::now();
    try {
      s.detail = body();
      s.ok = true;
    } catch (const std::exception& e) {
      s.detail = e.what();
    }
    s.seconds = seconds_since(t0);
    r.steps.push_back(s);
  };
  step("context", [&] {
    // The first allocation on the device creates its primary context (and loads ember's kernels).
    Tensor one = full({1}, 1.0, {.device = dev});
    if (one.to(Device::cpu()).to_vector<float>().at(0) != 1.0f) throw std::runtime_error("a 1 written on the GPU read back as another value");
    return fmt::format("cuda:{} {}", device, r.device_name);
  });
  step("copy 64 MiB", [&] {
    const size_t n = kCopyBytes / sizeof(float);
    std::vector<float> host(n);
    for (size_t i = 0; i < n; ++i) host[i] = float(i % 16777213u);  // every value exact in float32
    const Tensor h = tensor(host, {int64_t(n)});
    Tensor d = h.to(dev);  // warm-up: first-touch costs out of the timing
    const double h2d_ms = cuda::time_ms(device, [&] { d = h.to(dev); }, 3);
    Tensor back;
    const double d2h_ms = cuda::time_ms(device, [&] { back = d.to(Device::cpu()); }, 3);
    back = d.to(Device::cpu());
    const std::vector<float> got = back.to_vector<float>();
    if (got.size() != n || std::memcmp(got.data(), host.data(), kCopyBytes) != 0) {
      size_t i = 0;
      while (i < std::min(n, got.size()) && got[i] == host[i]) ++i;
      throw std::runtime_error(fmt::format("the copy came back different at float {} of {}", i, n));
    }
    r.h2d_gbps = double(kCopyBytes) / (h2d_ms / 1e3) / 1e9;
    r.d2h_gbps = double(kCopyBytes) / (d2h_ms / 1e3) / 1e9;
    return fmt::format("byte-exact round trip; host->device {:.1f} GB/s, device->host {:.1f} GB/s (pageable)",
                       r.h2d_gbps, r.d2h_gbps);
  });
  step("ember kernel", [&] {
    const int64_t n = 1 << 20;
    const Tensor a = tensor(ints(size_t(n), 50, 1), {n}), b = tensor(ints(size_t(n), 50, 2), {n});
    const Tensor cpu = relu(add(a, b, 2.0));
    const double diff = max_rel_diff(relu(add(a.to(dev), b.to(dev), 2.0)), cpu);
    if (diff != 0) throw std::runtime_error(fmt::format("relu(a + 2b) differs from the CPU by {:.3g} (relative)", diff));
    return std::string("relu(a + 2b) over 1M floats equals the CPU's");
  });
  step("cublas gemm", [&] {
    const int64_t m = 256, k = 256, n = 256;
    const Tensor a = tensor(ints(size_t(m * k), 3, 3), {m, k}), b = tensor(ints(size_t(k * n), 3, 4), {k, n});
    const double diff = max_rel_diff(matmul(a.to(dev), b.to(dev)), matmul(a, b));
    if (diff > 1e-6) throw std::runtime_error(fmt::format("a 256x256x256 matmul differs from the CPU by {:.3g} (relative)", diff));
    return std::string("256x256x256 matmul equals the CPU's");
  });
  step("cudnn conv", [&] {
    const Tensor x = tensor(ints(size_t(8 * 16 * 32 * 32), 2, 5), {8, 16, 32, 32});
    const Tensor w = tensor(ints(size_t(32 * 16 * 3 * 3), 2, 6), {32, 16, 3, 3});
    const Tensor bias = tensor(ints(32, 5, 7), {32});
    nn::functional::Conv2dOptions o;
    o.padding = {1, 1};
    const double diff = max_rel_diff(nn::functional::conv2d(x.to(dev), w.to(dev), bias.to(dev), o), nn::functional::conv2d(x, w, bias, o));
    // cuDNN may pick Winograd or FFT algorithms, which round: relative 1e-4 still catches a wrong result.
    if (diff > 1e-4) throw std::runtime_error(fmt::format("a 3x3 convolution differs from the CPU by {:.3g} (relative)", diff));
    return fmt::format("3x3 conv (8x16x32x32 -> 32 channels) matches the CPU (relative {:.1g})", diff);
  });
  return r;
}

std::string format_smoke(const GpuSmokeResult& r) {
  if (!r.skipped.empty()) return "SKIP  gpu smoke test: " + r.skipped + "\n";
  std::string out = fmt::format("gpu smoke test on cuda:{} ({})\n", r.device, r.device_name);
  double total = 0;
  for (const SmokeStep& s : r.steps) {
    total += s.seconds;
    std::string line = fmt::format("  {}  {:<13} {:6.2f} s  {}", s.ok ? "PASS" : "FAIL", s.name, s.seconds, s.detail);
    // Continuation lines under the detail, so nothing passes 80 columns.
    constexpr size_t kWidth = 80, kIndent = 32;
    std::string wrapped;
    while (line.size() > kWidth) {
      size_t cut = line.rfind(' ', kWidth);
      if (cut == std::string::npos || cut <= kIndent) cut = kWidth;
      wrapped += line.substr(0, cut) + "\n";
      line = std::string(kIndent, ' ') + line.substr(line[cut] == ' ' ? cut + 1 : cut);
    }
    out += wrapped + line + "\n";
  }
  out += fmt::format("smoke: {} in {:.1f} s\n", r.passed() ? "PASS" : "FAIL", total);
  return out;
}

std::string smoke_json(const GpuSmokeResult& r) {
  nlohmann::json steps = nlohmann::json::array();
  for (const SmokeStep& s : r.steps) steps.push_back({{"name", s.name}, {"ok", s.ok}, {"detail", s.detail}, {"seconds", s.seconds}});
  return nlohmann::json{{"device", r.device}, {"device_name", r.device_name}, {"skipped", r.skipped},
                        {"passed", r.passed()}, {"h2d_gbps", r.h2d_gbps}, {"d2h_gbps", r.d2h_gbps}, {"steps", steps}}
      .dump(2);
}

}  // namespace ember::env
