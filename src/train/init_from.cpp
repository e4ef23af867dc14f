// Weights from a file into a model (see init_from.h): find the key prefix, cast floating dtypes,
// and list every missing, unexpected and mis-shaped key by name before copying anything.
#include "ember/train/init_from.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "ember/autograd/node.h"
#include "ember/ops.h"

namespace ember::train {
namespace {

std::string join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// The prefix P for which the most file keys are P + a model key (P empty or ending in '.' or '/');
// ties go to the shorter prefix. "model/" in an ember checkpoint, "module." from DataParallel, ...
std::string find_prefix(const NamedTensors& file, const std::vector<std::pair<std::string, Tensor>>& own) {
  std::map<std::string, int> votes;
  std::set<std::string> own_keys;
  for (const auto& [k, t] : own) own_keys.insert(k);
  for (const auto& [fk, t] : file)
    for (const auto& mk : own_keys)
      if (fk.size() >= mk.size() && fk.compare(fk.size() - mk.size(), mk.size(), mk) == 0) {
        std::string p = fk.substr(0, fk.size() - mk.size());
        if (p.empty() || p.back() == '.' || p.back() == '/') ++votes[p];
      }
  std::string best;
  int best_votes = votes.count("") ? votes[""] : 0;
  for (const auto& [p, n] : votes)
    if (n > best_votes || (n == best_votes && p.size() < best.size())) best = p, best_votes = n;
  return best;
}

// The model's head: the module path of its last parameter ("fc3" for "fc3.weight").
std::string head_of(const nn::Module& model) {
  auto params = model.named_parameters();
  if (params.empty()) return "";
  const std::string& last = params.back().first;
  const size_t dot = last.rfind('.');
  return dot == std::string::npos ? "" : last.substr(0, dot + 1);
}

bool castable(DType from, DType to) {
  return from == to || (is_floating(from) && is_floating(to)) || (is_integral(from) && is_integral(to));
}

}  // namespace

std::string WeightLoadReport::summary() const {
  std::string s = fmt::format("loaded {} tensors{}", loaded.size(),
                              prefix.empty() ? "" : fmt::format(" (key prefix '{}' stripped)", prefix));
  for (const auto& n : notes) s += "\nnote: " + n;
  if (checkpoint_state)
    s += fmt::format("\nnote: {} optimizer/scheduler tensors of the checkpoint not used (a new run starts its own; "
                     "`--resume` continues the old run)", checkpoint_state);
  if (!missing.empty()) s += "\nnot in the file, kept as initialised: " + join(missing);
  if (!mismatched.empty()) s += "\nshape differs, reinitialised: " + join(mismatched);
  if (!unexpected.empty()) s += "\nin the file but not in the model, ignored: " + join(unexpected);
  return s;
}

WeightLoadReport load_weights(nn::Module& model, const NamedTensors& file, const std::string& source,
                              const WeightLoadOptions& opt) {
  auto own = model.state_dict().items();
  WeightLoadReport rep;
  rep.prefix = find_prefix(file, own);
  // An ember checkpoint: optimizer and scheduler state sit beside "model/"; they are not weights.
  const bool checkpoint = rep.prefix == "model/";
  std::map<std::string, const Tensor*> by_key;
  for (const auto& [k, t] : file) {
    if (k.starts_with(rep.prefix)) by_key.emplace(k.substr(rep.prefix.size()), &t);
    else if (checkpoint && (k.starts_with("optim/") || k.starts_with("sched/"))) ++rep.checkpoint_state;
    else rep.unexpected.push_back(k);
  }
  const std::string head = head_of(model);
  std::vector<std::string> bad_shape;  // mis-shaped keys that are not allowed
  std::map<std::pair<DType, DType>, int> casts;
  std::vector<std::pair<Tensor, Tensor>> copies;  // (model tensor, file tensor cast to its dtype)
  std::set<std::string> own_keys;
  for (const auto& [k, t] : own) {
    own_keys.insert(k);
    auto it = by_key.find(k);
    if (it == by_key.end()) {
      rep.missing.push_back(k);
      continue;
    }
    const Tensor& src = *it->second;
    if (src.sizes() != t.sizes() || !castable(src.dtype(), t.dtype())) {
      const std::string what = src.sizes() != t.sizes()
                                   ? fmt::format("{}: file {}, model {}", k, shape_str(src.sizes()), shape_str(t.sizes()))
                                   : fmt::format("{}: file {}, model {}", k, dtype_name(src.dtype()), dtype_name(t.dtype()));
      rep.mismatched.push_back(what);
      if (!(opt.partial && !head.empty() && k.starts_with(head))) bad_shape.push_back(what);
      continue;
    }
    if (src.dtype() != t.dtype()) ++casts[{src.dtype(), t.dtype()}];
    copies.emplace_back(t, src.dtype() == t.dtype() ? src : src.to(t.dtype()));
    rep.loaded.push_back(k);
  }
  for (const auto& [k, t] : by_key)
    if (!own_keys.count(k)) rep.unexpected.push_back(rep.prefix + k);
  for (const auto& [ft, n] : casts)
    rep.notes.push_back(fmt::format("cast {} tensor{} from {} to {} (the model's dtype)", n, n == 1 ? "" : "s",
                                    dtype_name(ft.first), dtype_name(ft.second)));

  std::string errors;
  if (!bad_shape.empty())
    errors += fmt::format("\n  shape or dtype differs ({}): {}", bad_shape.size(), join(bad_shape, "; "));
  if (!opt.partial && !rep.missing.empty())
    errors += fmt::format("\n  missing from the file ({}): {}", rep.missing.size(), join(rep.missing));
  if (!opt.partial && !rep.unexpected.empty())
    errors += fmt::format("\n  not in the model ({}): {}", rep.unexpected.size(), join(rep.unexpected));
  if (rep.loaded.empty() && errors.empty())
    errors = "\n  no tensor of the file matches a tensor of the model";
  if (!errors.empty()) {
    std::string hint = "check that --model is the architecture the weights were saved from";
    if (!opt.partial)
      hint += "; to fine-tune with a new head (another number of classes), pass --init-from-partial";
    else if (!bad_shape.empty())
      hint += fmt::format(" (--init-from-partial reinitialises only the head, '{}*')", head);
    throw FormatError(fmt::format("weights '{}' do not fit the model ({} of its {} tensors match{}):{}", source,
                                  rep.loaded.size(), own.size(),
                                  rep.prefix.empty() ? "" : fmt::format(", key prefix '{}'", rep.prefix), errors),
                      hint);
  }
  autograd::NoGradGuard ng;
  for (auto& [dst, src] : copies) {
    Tensor target = dst.detach();  // the model's own storage: an in-place load
    target.copy_(src);
  }
  return rep;
}

WeightLoadReport init_from_file(nn::Module& model, const std::filesystem::path& path, const WeightLoadOptions& opt) {
  Checkpoint ck = load_checkpoint(path);
  return load_weights(model, ck.tensors, ck.weights_path.string(), opt);
}

}  // namespace ember::train
