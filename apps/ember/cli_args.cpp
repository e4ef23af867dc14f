// Command-line helpers shared by every subcommand: numeric flag checks with plain-words errors (the
// rules are ember/train/settings.h's), "did you mean --X?" for mistyped flags and subcommands,
// plurals, and hints that name only flags the chosen subcommand has.
#include <fmt/format.h>

#include <cctype>
#include <thread>

#include "cli.h"
#include "ember/core/threads.h"
#include "ember/ops.h"

namespace ember::cli {

CLI::Option* check_number(CLI::Option* opt, NumberRule rule, bool whole) {
  const std::string name = opt->get_name();
  auto fn = [name, rule, whole](std::string& value) { return train::number_error(name, value, rule, whole); };
  return opt->check(CLI::Validator(fn, train::number_rule_word(rule, whole)));
}

const CLI::App* chosen_subcommand(const CLI::App& root) {
  const CLI::App* sub = &root;
  while (!sub->get_subcommands().empty()) sub = sub->get_subcommands().front();
  return sub;
}

std::string command_path(const CLI::App& sub) {
  std::string path;
  for (const CLI::App* a = &sub; a; a = a->get_parent()) path = a->get_name() + (path.empty() ? "" : " " + path);
  return path;
}

std::vector<std::string> flag_names(const CLI::App& sub) {
  std::vector<std::string> out;
  for (const CLI::Option* o : sub.get_options()) {
    for (const auto& l : o->get_lnames()) out.push_back("--" + l);
    for (const auto& s : o->get_snames()) out.push_back("-" + s);
  }
  return out;
}

std::string foreign_flag_hint(const std::string& typed, const std::vector<std::string>& flags) {
  const std::string name = typed.substr(0, typed.find('='));
  auto has = [&](const char* f) { return std::find(flags.begin(), flags.end(), f) != flags.end(); };
  auto is = [&](std::initializer_list<const char*> names) {
    return std::any_of(names.begin(), names.end(), [&](const char* n) { return name == n; });
  };
  if (is({"--gpus", "--gpu", "--num-gpus", "--ngpus", "--n-gpus", "--devices"}) && has("--device")) {
    std::string h = "ember runs on one device, chosen by --device (auto, cpu, cuda or cuda:N)";
    if (has("--nproc-per-node")) h += "; to train on N GPUs at once (data-parallel) pass --nproc-per-node N";
    return h;
  }
  if (is({"--cuda"}) && has("--device")) return "did you mean --device cuda?";
  if (is({"--no-cuda", "--cpu"}) && has("--device")) return "did you mean --device cpu?";
  if (is({"--log-dir", "--logdir", "--logging-dir", "--tensorboard-dir"}) && has("--run-dir"))
    return "ember logs into the run directory (--run-dir DIR, or runs/<--name>): metrics.jsonl and TensorBoard's "
           "events.out.tfevents.*; `tensorboard --logdir runs` reads every run";
  if (is({"--save-dir", "--checkpoint-dir", "--ckpt-dir"}) && has("--run-dir"))
    return "did you mean --run-dir? checkpoints are written to RUN_DIR/checkpoints/";
  if (is({"--pretrained"}) && has("--init-from"))
    return "ember downloads no pretrained weights; --init-from FILE starts from weights you have: a PyTorch .pth/.pt "
           "(torch.save(model.state_dict(), \"resnet18.pth\"), e.g. of torchvision's resnet18(weights=\"DEFAULT\")), "
           "a .safetensors file or a run directory";
  if (is({"--checkpoint", "--ckpt", "--resume-from", "--resume-from-checkpoint"}) && has("--resume"))
    return "did you mean --resume RUN? it continues a run from its checkpoint (--init-from FILE starts a new run "
           "from weights)";
  return "";
}

void print_unexpected_arguments(const CLI::App& root) {
  const CLI::App& sub = *chosen_subcommand(root);
  const std::vector<std::string> extras = root.remaining(true);
  std::string list;
  for (const auto& e : extras) list += (list.empty() ? "" : " ") + e;
  const std::string where = command_path(sub);
  fmt::print(stderr, "ember: usage error: {} {} {}\n", where,
             extras.size() == 1 ? "does not take the argument" : "does not take the arguments", list);
  std::vector<std::string> subcommand_names;
  for (const CLI::App* s : sub.get_subcommands([](const CLI::App*) { return true; })) subcommand_names.push_back(s->get_name());
  for (size_t i = 0; i < extras.size(); ++i) {
    const std::string& e = extras[i];
    const bool is_flag = e.starts_with("-") && e.size() > 1 && !std::isdigit(static_cast<unsigned char>(e[1])) && e[1] != '.';
    if (is_flag) {
      if (const std::string h = foreign_flag_hint(e, flag_names(sub)); !h.empty()) {
        fmt::print(stderr, "  hint: {}: {}\n", e.substr(0, e.find('=')), h);
        continue;
      }
    }
    std::string guess;
    if (is_flag) guess = closest_name(e, flag_names(sub));
    else if (i == 0 && !subcommand_names.empty()) guess = closest_name(e, subcommand_names);
    if (guess.empty()) continue;
    fmt::print(stderr, "  hint: {}: did you mean {}?\n", e.substr(0, e.find('=')),
               is_flag ? guess : fmt::format("'{} {}'", where, guess));
  }
  fmt::print(stderr, "  hint: run '{} --help' for its {}\n", where,
             subcommand_names.empty() ? "flags" : "commands and flags");
}

std::string memory_hint(const CLI::App& root) {
  const std::vector<std::string> names = flag_names(*chosen_subcommand(root));
  auto has = [&](const char* f) { return std::find(names.begin(), names.end(), f) != names.end(); };
  if (has("--sizes")) return "use smaller --sizes (one n x n float32 matrix takes 4 n^2 bytes; A, B and C are held at once)";
  if (has("--batch-sizes")) return "use smaller --batch-sizes or a smaller --model";
  if (has("--batch-size") && has("--model")) return "use a smaller --batch-size or --model";
  if (has("--batch-size")) return "use a smaller --batch-size";
  return "free some memory (close other programs) and run the command again";
}

}  // namespace ember::cli
