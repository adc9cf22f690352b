// The shape every subcommand shares. Each cmd/<name>.cc defines one Register function that adds
// its flags to a CLI11 subcommand and returns the function that runs it; cmd/main.cc lists them
// all in one table. Keep these files thin: parse flags, call lib/, print, map Status to exit code.
#pragma once

#include <functional>
#include <string>

#include "base/status.h"

namespace CLI {
class App;
}

namespace silt::cmd {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitProblem = 1;  // the command worked and found something wrong
inline constexpr int kExitError = 2;    // usage error, I/O error, anything that stopped it

// Options every subcommand sees (set before a subcommand runs).
struct GlobalOptions {
  std::string data_dir;  // -d/--data-dir, default $SILT_DATA_DIR or ./silt-data
  std::string bootstrap;  // -b/--bootstrap-server HOST:PORT[,...]: work over the network
};

using RunFn = std::function<int()>;
using RegisterFn = RunFn (*)(CLI::App* sub, GlobalOptions* global);

struct CommandInfo {
  const char* name;
  const char* summary;
  RegisterFn register_fn;
};

// Prints "silt: error: <message>" (or "silt <cmd>: error: …") to stderr; returns kExitError.
int Fail(const std::string& message);
int Fail(const Status& status);

// The data dir default: $SILT_DATA_DIR, else ./silt-data.
std::string DefaultDataDir();

}  // namespace silt::cmd
