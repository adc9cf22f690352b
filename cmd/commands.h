// The table of subcommands (defined in commands.cc).
#pragma once

#include <span>

#include "cmd/command.h"

namespace silt::cmd {

std::span<const CommandInfo> AllCommands();

}  // namespace silt::cmd
