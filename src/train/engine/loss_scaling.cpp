// DynamicLossScaler (ember/train/loss_scaling.h): optim::LossScaler behind the training step's
// loss-scaler seam, over the optimizer's parameters, with its state as checkpoint scalars.
#include "ember/train/loss_scaling.h"

namespace ember::train {

bool DynamicLossScaler::unscale_and_check(optim::Optimizer& opt) {
  std::vector<Tensor> params;
  for (const optim::ParamGroup& g : opt.param_groups()) params.insert(params.end(), g.params.begin(), g.params.end());
  return s_.unscale_and_check(params);
}

std::map<std::string, double> DynamicLossScaler::state() const {
  if (!s_.enabled()) return {};
  const optim::LossScaler::State st = s_.state();
  return {{"loss_scale", st.scale},
          {"loss_scale_tracker", double(st.tracker)},
          {"loss_scale_skipped", double(st.skipped)},
          {"loss_scale_good", double(st.good)},
          {"loss_scale_growths", double(st.growths)},
          {"loss_scale_backoffs", double(st.backoffs)}};
}

void DynamicLossScaler::load_state(const std::map<std::string, double>& m) {
  auto it = m.find("loss_scale");
  if (it == m.end()) return;  // a checkpoint of a run without loss scaling: start from init_scale
  auto get = [&](const char* k) {
    auto j = m.find(k);
    return j == m.end() ? int64_t(0) : int64_t(j->second);
  };
  s_.load_state({it->second, get("loss_scale_tracker"), get("loss_scale_skipped"), get("loss_scale_good"),
                 get("loss_scale_growths"), get("loss_scale_backoffs")});
}

}  // namespace ember::train
