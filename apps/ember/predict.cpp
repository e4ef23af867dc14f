// ember predict (work in progress).
#include "cli.h"
namespace ember::cli {
void register_predict(CLI::App& root, Runner& run) { (void)root; (void)run; }
}  // namespace ember::cli
