// ember train (work in progress).
#include "cli.h"
namespace ember::cli {
void register_train(CLI::App& root, Runner& run) { (void)root; (void)run; }
}  // namespace ember::cli
