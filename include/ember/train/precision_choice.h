// --precision auto|fp32|bf16|fp16: which arithmetic a run's forward pass uses on its device, and
// why (for the banner). bf16 and fp16 run under ember::autocast (ember/autocast.h); fp16 training
// adds dynamic loss scaling (ember/train/loss_scaling.h); fp32 is plain.
#pragma once

#include <string>

#include "ember/core/device.h"
#include "ember/core/dtype.h"
#include "ember/train/device_choice.h"
#include "ember/train/fit.h"

namespace ember::train {

struct PrecisionChoice {
  std::string name;  // "fp32", "bf16" or "fp16"
  std::string why;   // the banner's reason ("" for plain fp32 on a device without fast bf16)
  bool autocast() const { return name != "fp32"; }
  // The autocast dtype: BFloat16 or Float16 (Float32 for fp32).
  DType dtype() const { return name == "bf16" ? DType::BFloat16 : name == "fp16" ? DType::Float16 : DType::Float32; }
};

// `auto`: bf16 where the device does it faster than fp32 (AMX-BF16, AMD's AVX512-BF16, a GPU of sm_80
// or newer; bf16_support's `fast`), else fp32. `bf16` on a device without bf16 hardware, and `fp16`
// anywhere but a GPU with float16 tensor cores (sm_70+), are refused with the reason (SettingError),
// never emulated slowly; `bf16` on an Intel CPU's AVX512-BF16 without AMX runs (measured slower).
PrecisionChoice choose_precision(const std::string& flag, Device device);
// The precision of a run on the device `device` chose: as above, except that when the device fell
// back to the CPU (`--device cuda` without a usable GPU), a precision the CPU cannot run falls back
// with it to fp32, with a warning, as torch.autocast("cuda") disables itself where CUDA is not
// available; `--device cpu --precision fp16` (both asked for) and `auto` on a machine without a GPU
// (the CPU is the device chosen) still refuse it.
PrecisionChoice choose_precision(const std::string& flag, const DeviceChoice& device);

// The banner's "precision" lines (each ends with a newline).
std::string precision_banner(const PrecisionChoice& p);
// One line for the report: what `flag` resolved to and why ("auto: bf16 autocast, float32 weights
// and gradients (<the device's bf16 support>)").
std::string precision_summary(const std::string& flag, const PrecisionChoice& p);

// Installs the choice into a training step: the autocast policy for bf16 / fp16, and for fp16 the
// dynamic loss scaler (2^16, x2 after 2000 good steps, x0.5 on an overflow, that step skipped).
void apply_precision(const PrecisionChoice& p, Device device, train::TrainStep& step);

// "" unless the run scaled its loss; else one line: the steps skipped and the final scale.
std::string loss_scaling_summary(const train::FitResult& r);

}  // namespace ember::train
