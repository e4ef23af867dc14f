// LossScaler (include/ember/optim/loss_scaler.h): dynamic loss scaling with skip-and-back-off on
// overflow and growth after a run of good steps, PyTorch GradScaler's schedule.
#include "ember/optim/loss_scaler.h"

#include <cmath>

#include "ember/autograd/node.h"
#include "ember/core/error.h"
#include "ember/ops.h"

namespace ember::optim {

LossScaler::LossScaler(LossScalerOptions opt) : opt_(opt), enabled_(opt.enabled), scale_(opt.init_scale) {
  EMBER_CHECK(std::isfinite(opt.init_scale) && opt.init_scale > 0, ValueError,
              "LossScaler: init_scale must be a positive finite number, got ", opt.init_scale);
  EMBER_CHECK(opt.growth_factor > 1.0, ValueError, "LossScaler: growth_factor must be > 1, got ", opt.growth_factor);
  EMBER_CHECK(opt.backoff_factor > 0.0 && opt.backoff_factor < 1.0, ValueError,
              "LossScaler: backoff_factor must be in (0, 1), got ", opt.backoff_factor);
  EMBER_CHECK(opt.growth_interval >= 1, ValueError, "LossScaler: growth_interval must be >= 1, got ",
              opt.growth_interval);
}

Tensor LossScaler::scale(const Tensor& loss) const { return enabled_ ? mul(loss, scale_) : loss; }

bool LossScaler::unscale_and_check(const std::vector<Tensor>& params) {
  NoGradGuard no_grad;
  // inf * 0 and NaN * 0 are NaN, so the sum of the zeros is finite exactly when every element is;
  // the probes are summed on the gradients' device and read back once (one sync per step on a GPU).
  Tensor probe;
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (enabled_) g.mul_(1.0 / scale_);
    Tensor z = sum(mul(g, 0.0)).to(DType::Float64);
    if (probe.defined() && z.device() != probe.device()) z = z.to(probe.device());
    probe = probe.defined() ? add(probe, z) : z;
  }
  return !probe.defined() || std::isfinite(probe.item<double>());
}

void LossScaler::update(bool finite) {
  if (!finite) {
    ++skipped_;
    tracker_ = 0;
    if (enabled_) {
      scale_ *= opt_.backoff_factor;
      ++backoffs_;
    }
    return;
  }
  ++good_;
  if (!enabled_) return;
  if (++tracker_ >= opt_.growth_interval) {
    // Never grow into infinity: float16's largest finite value is 65504, float32's ~3.4e38.
    if (std::isfinite(scale_ * opt_.growth_factor)) {
      scale_ *= opt_.growth_factor;
      ++growths_;
    }
    tracker_ = 0;
  }
}

void LossScaler::load_state(const State& s) {
  EMBER_CHECK(std::isfinite(s.scale) && s.scale > 0, ValueError, "LossScaler::load_state: scale must be positive "
              "and finite, got ", s.scale, " (a corrupt checkpoint?)");
  scale_ = s.scale;
  tracker_ = s.tracker, skipped_ = s.skipped, good_ = s.good, growths_ = s.growths, backoffs_ = s.backoffs;
}

}  // namespace ember::optim
