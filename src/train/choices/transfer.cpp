// Transfer learning (transfer.h): which part of a model is its head, freezing the rest, the
// backbone's own learning rate, and unfreezing after N epochs.
#include "ember/train/transfer.h"

#include "ember/core/error.h"

namespace ember::train {

std::string head_prefix(const nn::Module& model) {
  auto params = model.named_parameters();
  if (params.empty()) return "";
  const std::string& last = params.back().first;
  const size_t dot = last.rfind('.');
  return dot == std::string::npos ? "" : last.substr(0, dot + 1);
}

FreezeCounts count_backbone(const nn::Module& model) {
  FreezeCounts c;
  const std::string head = head_prefix(model);
  c.head = head.empty() ? "" : head.substr(0, head.size() - 1);
  for (const auto& [name, p] : model.named_parameters())
    (!head.empty() && name.starts_with(head) ? c.head_params : c.backbone_params) += p.numel();
  return c;
}

FreezeCounts freeze_backbone(nn::Module& model, bool training) {
  const FreezeCounts c = count_backbone(model);
  std::shared_ptr<nn::Module> head;
  for (const auto& [name, m] : model.named_modules())
    if (name == c.head) head = m;
  EMBER_CHECK(head != nullptr && c.backbone_params > 0, ValueError,
              "cannot freeze the backbone of ", model.type_name(),
              ": it has no separate classifier module (its last parameter is not inside a child module)");
  model.freeze(true, training);
  head->freeze(false, training);
  return c;
}

std::vector<optim::ParamGroupSpec> backbone_and_head_groups(const nn::Module& model, double lr_backbone) {
  const std::string head = head_prefix(model);
  optim::ParamGroupSpec backbone{.lr = lr_backbone}, own;
  for (const auto& [name, p] : model.named_parameters())
    (!head.empty() && name.starts_with(head) ? own : backbone).params.push_back(p);
  std::vector<optim::ParamGroupSpec> groups;
  if (!backbone.params.empty()) groups.push_back(std::move(backbone));
  if (!own.params.empty()) groups.push_back(std::move(own));
  return groups;
}

void UnfreezeAfter::on_epoch_begin(FitContext& ctx) {
  if (ctx.epoch < after_ || !ctx.model.is_frozen()) return;
  ctx.model.freeze(false, true);
  if (said_) said_(ctx.epoch + 1, ctx.model.num_parameters(true));
}

}  // namespace ember::train
