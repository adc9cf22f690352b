#include "cmd/commands.h"

namespace silt::cmd {

RunFn RegisterCompletion(CLI::App* sub, GlobalOptions* g);
RunFn RegisterServe(CLI::App* sub, GlobalOptions* g);

namespace {
const CommandInfo kCommands[] = {
    {"completion", "print a shell completion script (bash, zsh or fish)", RegisterCompletion},
    {"serve", "run a broker that speaks the Kafka protocol", RegisterServe},
};
}  // namespace

std::span<const CommandInfo> AllCommands() { return kCommands; }

}  // namespace silt::cmd
