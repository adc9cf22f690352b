// silt — one binary, one table of subcommands.
//
// Adding a subcommand (checklist):
//   1. cmd/<name>.cc with `RunFn Register<Name>(CLI::App*, GlobalOptions*)`; flags there only.
//   2. a row in kCommands in cmd/commands.cc (name, one-line summary, register function).
//   3. man/silt-<name>.1 with the fixed sections; `make completions` to regenerate completions/.
//   4. tests/cli/test_<name>.sh running the real binary, bad input included.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "cmd/command.h"
#include "cmd/commands.h"
#include "cmd/usage.h"

namespace silt::cmd {

int Fail(const std::string& message) {
  std::fprintf(stderr, "silt: error: %s\n", message.c_str());
  return kExitError;
}

int Fail(const Status& status) { return Fail(status.message().empty() ? status.ToString()
                                                                      : status.message()); }

std::string DefaultDataDir() {
  const char* env = std::getenv("SILT_DATA_DIR");
  return env && *env ? env : "./silt-data";
}

}  // namespace silt::cmd

int main(int argc, char** argv) {
  using namespace silt::cmd;
  CLI::App app{"silt — a Kafka-compatible partitioned, replicated commit log", "silt"};
  app.set_version_flag("-V,--version", std::string("silt ") + SILT_VERSION);
  app.require_subcommand(1);
  app.fallthrough();
  GlobalOptions global;
  global.data_dir = DefaultDataDir();

  RunFn selected;
  for (const CommandInfo& c : AllCommands()) {
    CLI::App* sub = app.add_subcommand(c.name, c.summary);
    RunFn run = c.register_fn(sub, &global);
    sub->callback([&selected, run] { selected = run; });
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Usage errors: one line on stderr, exit 2, as for every other error.
    return Fail(ExplainParseError(app, e, argc, argv));
  }
  if (!selected) return kExitError;
  return selected();
}
