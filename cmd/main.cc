// silt — one binary, one table of subcommands.
//
// Adding a subcommand (checklist):
//   1. cmd/<name>.cc with `RunFn Register<Name>(CLI::App*, GlobalOptions*)`; flags there only.
//   2. a row in kCommands in cmd/commands.cc (name, one-line summary, register function).
//   3. man/silt-<name>.1 with the fixed sections; `make completions` to regenerate completions/.
//   4. tests/cli/test_<name>.sh running the real binary, bad input included.
#include <CLI/CLI.hpp>

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

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

namespace {

// True when standard output is a pipe whose reader has closed it.
bool StdoutReaderGone() {
  pollfd p{STDOUT_FILENO, POLLOUT, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLERR) != 0;
}

// The two modes do not mix: -b works over the network, -d on a local data directory; and flags
// whose help starts "with -b:" mean nothing without it. "" when the command line is consistent.
std::string CheckModeFlags(const CLI::App& root) {
  bool network = false, data_dir = false;
  std::vector<std::string> network_only;
  for (const CLI::App* a = &root; a;) {
    for (const CLI::Option* o : a->get_options()) {
      if (o->count() == 0) continue;
      const auto& longs = o->get_lnames();
      const std::string name = longs.empty() ? o->get_name() : "--" + longs[0];
      if (name == "--bootstrap-server") network = true;
      if (name == "--data-dir" && a->get_name() != "serve") data_dir = true;
      if (o->get_description().rfind("with -b:", 0) == 0) network_only.push_back(name);
    }
    auto subs = a->get_subcommands();
    a = subs.empty() ? nullptr : subs[0];
  }
  if (network && data_dir)
    return "-b and -d cannot be used together: -b works against a cluster over the network, -d "
           "on a local data directory";
  if (!network && !network_only.empty())
    return network_only[0] + " only means something with -b (against a cluster); without -b the "
           "data directory is used directly";
  return "";
}

}  // namespace

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
  if (std::string why = CheckModeFlags(app); !why.empty()) return Fail(why);
  // A reader that goes away (`silt dump-segment ... | head`) shows up as a failed write, not a
  // killed process; the commands stop writing, and that ends as success, as for `cat | head`.
  ::signal(SIGPIPE, SIG_IGN);
  int rc = selected();
  std::cout.flush();
  std::fflush(stdout);
  if ((std::cout.bad() || std::ferror(stdout)) && !StdoutReaderGone())
    return Fail("writing to standard output failed");
  return rc;
}
