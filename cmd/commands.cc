#include "cmd/commands.h"

namespace silt::cmd {

RunFn RegisterCompletion(CLI::App* sub, GlobalOptions* g);
RunFn RegisterDumpSegment(CLI::App* sub, GlobalOptions* g);
RunFn RegisterVerifyCrc(CLI::App* sub, GlobalOptions* g);

namespace {
const CommandInfo kCommands[] = {
    {"dump-segment", "print the batches, records and index entries of segment files",
     RegisterDumpSegment},
    {"verify-crc", "check (and with --repair, fix) segment files, partitions or data dirs",
     RegisterVerifyCrc},
    {"completion", "print a shell completion script (bash, zsh or fish)", RegisterCompletion},
};
}  // namespace

std::span<const CommandInfo> AllCommands() { return kCommands; }

}  // namespace silt::cmd
