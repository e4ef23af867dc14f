// The device of a run and the precision that goes with it (device_choice.h, precision_choice.h):
// one decision for train, eval/predict and the launcher, and (issue 48, item 12) a precision only
// a GPU runs falls back with a device that fell back, with a warning, instead of a usage error
// after the device had already fallen back; `--device cpu --precision fp16` is still refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/cuda.h"
#include "ember/train/device_choice.h"
#include "ember/train/precision_choice.h"
#include "ember/train/settings.h"
#include "ember/train/wording.h"

using namespace ember;

namespace {
// The warnings of `f`, collected instead of printed.
template <class F>
std::vector<std::string> warnings_of(F&& f) {
  std::vector<std::string> seen;
  train::WarningSink before = train::set_warning_sink([&](const std::string& m) { seen.push_back(m); });
  f();
  train::set_warning_sink(std::move(before));
  return seen;
}
}  // namespace

TEST(TrainDeviceChoice, CudaWithoutAGpuFallsBackAndSaysSoOnce) {
  if (cuda::device_count() > 0) GTEST_SKIP() << "a GPU is usable here: nothing falls back";
  const train::DeviceChoice quiet = train::decide_device("cuda", false);
  EXPECT_TRUE(quiet.device.is_cpu());
  EXPECT_TRUE(quiet.fell_back_to_cpu);
  EXPECT_NE(quiet.warning.find("falling back to the CPU"), std::string::npos) << quiet.warning;
  const auto seen = warnings_of([] { train::choose_device("cuda", false); });
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], quiet.warning);
  EXPECT_TRUE(warnings_of([] { train::decide_device("cuda", false); }).empty());
  EXPECT_FALSE(train::decide_device("auto", false).fell_back_to_cpu);  // the CPU is auto's answer
  EXPECT_FALSE(train::decide_device("cpu", false).fell_back_to_cpu);
  // A benchmark never times the CPU in a missing GPU's place.
  EXPECT_THROW(train::devices_to_compare("cuda"), DeviceError);
  EXPECT_EQ(train::devices_to_compare("all"), std::vector<Device>{Device::cpu()});
}

TEST(TrainDeviceChoice, Fp16FallsBackWithTheDevice) {
  if (cuda::device_count() > 0) GTEST_SKIP() << "a GPU is usable here: nothing falls back";
  train::PrecisionChoice p;
  const auto seen = warnings_of([&] { p = train::choose_precision("fp16", train::decide_device("cuda", false)); });
  EXPECT_EQ(p.name, "fp32");
  EXPECT_NE(p.why.find("fallback"), std::string::npos) << p.why;
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NE(seen[0].find("--precision fp16 falls back with the device"), std::string::npos) << seen[0];
  // Both asked for, or the CPU chosen by auto: the CPU and fp16 cannot go together, said up front.
  EXPECT_THROW(train::choose_precision("fp16", train::decide_device("cpu", false)), train::SettingError);
  EXPECT_THROW(train::choose_precision("fp16", train::decide_device("auto", false)), train::SettingError);
  // Precisions the CPU runs are untouched by a fallback.
  EXPECT_EQ(train::choose_precision("fp32", train::decide_device("cuda", false)).name, "fp32");
}
