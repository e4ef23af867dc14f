// --precision: the choice between fp32, bf16 autocast and fp16 autocast with dynamic loss scaling
// for a device (precision_choice.h), and how a training run applies it.
#include "ember/train/precision_choice.h"

#include <fmt/format.h>

#include <cmath>

#include "ember/autocast.h"
#include "ember/train/loss_scaling.h"
#include "ember/train/settings.h"
#include "ember/train/wording.h"

namespace ember::train {

PrecisionChoice choose_precision(const std::string& flag, Device device) {
  if (flag == "fp16") {
    if (device.is_cpu())
      throw SettingError("--precision fp16: float16 is a GPU mode (with loss scaling); this run is on the cpu",
                       "use --precision bf16 (or auto) on a CPU with AMX-BF16/AVX512-BF16, else fp32");
    const PrecisionSupport fp16 = fp16_support(device);
    if (!fp16.fast)
      throw SettingError(fmt::format("--precision fp16: {} does not run float16 fast ({})", device.str(), fp16.reason),
                       "use --precision fp32");
    return {"fp16", "--precision fp16: " + fp16.reason};
  }
  const PrecisionSupport bf16 = bf16_support(device);
  if (flag == "fp32")
    return {"fp32", bf16.fast ? "this device has fast bf16: --precision auto" : ""};
  if (flag == "bf16") {
    if (!bf16.native)
      throw SettingError(fmt::format("--precision bf16: {} does not run bfloat16 in hardware ({})", device.str(), bf16.reason),
                       "use --precision fp32 (bf16 emulated without the hardware would be several times slower)");
    return {"bf16", "--precision bf16: " + bf16.reason};
  }
  if (bf16.fast) return {"bf16", "auto: " + bf16.reason};
  return {"fp32", "auto: " + bf16.reason};
}

PrecisionChoice choose_precision(const std::string& flag, const DeviceChoice& device) {
  try {
    return choose_precision(flag, device.device);
  } catch (const SettingError& e) {
    if (!device.fell_back_to_cpu) throw;
    std::string why = e.what();  // "--precision fp16: float16 is a GPU mode ..."
    if (const std::string prefix = "--precision " + flag + ": "; why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
    warn(fmt::format("--precision {} falls back with the device: the cpu runs fp32 ({})", flag, why));
    return {"fp32", fmt::format("fallback: --precision {} with the device ({})", flag, why)};
  }
}

std::string precision_banner(const PrecisionChoice& p) {
  if (p.name == "bf16") return fmt::format("precision  bf16 autocast (float32 weights and gradients)\n           {}\n", p.why);
  if (p.name == "fp16")
    return fmt::format("precision  fp16 autocast (float32 weights and gradients)\n           {}\n"
                       "           dynamic loss scaling: 2^16, x2 after 2000 good steps,\n"
                       "           x0.5 on an overflow (that step skipped and counted)\n",
                       p.why);
  return fmt::format("precision  fp32{}\n", p.why.empty() ? "" : "\n           " + p.why);
}

std::string precision_summary(const std::string& flag, const PrecisionChoice& p) {
  const std::string what = p.autocast() ? p.name + " autocast, float32 weights and gradients" : p.name;
  std::string why = p.why;  // "auto: <reason>", "--precision bf16: <reason>" or a remark
  for (const std::string& prefix : {std::string("auto: "), "--precision " + p.name + ": "})
    if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
  return fmt::format("{}{}{}", flag == "auto" ? "auto: " : "", what, why.empty() ? "" : " (" + why + ")");
}

void apply_precision(const PrecisionChoice& p, Device device, train::TrainStep& step) {
  if (!p.autocast()) return;
  step.set_precision(std::make_shared<train::AutocastPolicy>(device.type, p.dtype()));
  // float16's 5 exponent bits flush small gradients to zero: scale the loss (the defaults are the
  // issue's constants: init 2^16, growth x2 every 2000 good steps, backoff x0.5).
  if (p.name == "fp16") step.set_loss_scaler(std::make_shared<train::DynamicLossScaler>());
}

std::string loss_scaling_summary(const train::FitResult& r) {
  if (std::isnan(r.loss_scale)) return "";
  return fmt::format("fp16 loss scaling: {} optimizer step{} skipped (inf/NaN gradients), final scale {:g}\n",
                     r.skipped_steps, r.skipped_steps == 1 ? "" : "s", r.loss_scale);
}

}  // namespace ember::train
