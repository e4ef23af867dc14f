// ember data: dataset commands (fetch/verify land with the data loader's fetch_dataset).
#include "cli.h"
namespace ember::cli {
void register_data(CLI::App& root, Runner& run) { (void)root, (void)run; }
}  // namespace ember::cli
