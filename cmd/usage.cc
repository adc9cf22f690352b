// Usage errors (see usage.h).
#include "cmd/usage.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <regex>

namespace silt::cmd {
namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
// neighbouring characters each cost one.
size_t EditDistance(std::string_view a, std::string_view b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

std::vector<const CLI::App*> Subs(const CLI::App* app) {
  return app->get_subcommands([](const CLI::App*) { return true; });
}

const CLI::App* FindSub(const CLI::App* app, std::string_view name) {
  for (const CLI::App* s : Subs(app))
    if (s->get_name() == name) return s;
  return nullptr;
}

// The option `name` ("-t", "--topic") of `app` or of an ancestor (options fall through).
const CLI::Option* FindOption(const CLI::App* app, const std::string& name) {
  for (const CLI::App* a = app; a; a = a->get_parent())
    if (const CLI::Option* o = a->get_option_no_throw(name); o && !o->get_positional()) return o;
  return nullptr;
}

std::vector<std::string> LongNames(const CLI::App* app) {
  std::vector<std::string> out;
  for (const CLI::App* a = app; a; a = a->get_parent())
    for (const CLI::Option* o : a->get_options())
      for (const auto& l : o->get_lnames()) out.push_back("--" + l);
  return out;
}

std::string PathOf(const CLI::App* app) {
  std::string p;
  for (const CLI::App* a = app; a; a = a->get_parent())
    p = p.empty() ? a->get_name() : a->get_name() + " " + p;
  return p;
}

std::vector<std::string> SubNames(const CLI::App* app) {
  std::vector<std::string> out;
  for (const CLI::App* s : Subs(app)) out.push_back(s->get_name());
  return out;
}

bool LooksNumeric(std::string_view s) {
  return s.size() >= 2 && s[0] == '-' && ((s[1] >= '0' && s[1] <= '9') || s[1] == '.');
}

struct Walk {
  const CLI::App* app = nullptr;  // the deepest subcommand named on the command line
  std::string problem;            // set when a word names nothing
};

// Follows argv down the subcommand tree the way CLI11 does, stopping at the first option or
// subcommand that does not exist.
Walk WalkArgs(const CLI::App& root, int argc, const char* const* argv) {
  Walk w;
  w.app = &root;
  bool only_positionals = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (!only_positionals && arg == "--") {
      only_positionals = true;
      continue;
    }
    const bool option = !only_positionals && arg.size() > 1 && arg[0] == '-' && !LooksNumeric(arg);
    if (option) {
      const bool is_long = arg.rfind("--", 0) == 0;
      std::string name = is_long ? arg.substr(0, arg.find('=')) : arg.substr(0, 2);
      const CLI::Option* o = FindOption(w.app, name);
      if (!o) {
        w.problem = "unknown option '" + name + "' for '" + PathOf(w.app) + "'";
        std::string hint = is_long ? DidYouMean(name, LongNames(w.app)) : "";
        w.problem += hint.empty() ? "; see '" + PathOf(w.app) + " --help'" : hint;
        return w;
      }
      const bool takes_value = o->get_expected_max() > 0;
      const bool attached = is_long ? arg.find('=') != std::string::npos : arg.size() > 2;
      if (takes_value && !attached) ++i;  // the next word is its value
      continue;
    }
    auto subs = Subs(w.app);
    if (!subs.empty() && !only_positionals) {
      if (const CLI::App* s = FindSub(w.app, arg)) {
        w.app = s;
        continue;
      }
      if (w.app->get_options([](const CLI::Option* o) { return o->get_positional(); }).empty()) {
        w.problem = "unknown subcommand '" + arg + "' for '" + PathOf(w.app) + "'";
        std::string hint = DidYouMean(arg, SubNames(w.app));
        w.problem += hint.empty() ? ": expected " + OneOfList(SubNames(w.app)) : hint;
        return w;
      }
    }
  }
  return w;
}

std::string Quote(const std::string& s) { return "'" + s + "'"; }

}  // namespace

std::string Nearest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& c : candidates) {
    size_t d = EditDistance(word, c);
    // A prefix of a candidate ("consum", "--form") is as good as one edit.
    if (d > 1 && word.size() >= 3 && c.rfind(word, 0) == 0) d = 1;
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // Close enough to be a typo: at most a third of the word, and never more than 3 edits.
  const size_t limit = std::min<size_t>(3, std::max<size_t>(1, word.size() / 3));
  return best_d <= limit && best != word ? best : std::string();
}

std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  std::string n = Nearest(word, candidates);
  return n.empty() ? "" : " (did you mean '" + n + "'?)";
}

std::string OneOfList(const std::vector<std::string>& words) {
  std::string s;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) s += i + 1 == words.size() ? " or " : ", ";
    s += words[i];
  }
  return s;
}

CLI::Validator NonNegative() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        if (!v.empty() && v[0] == '-') return "must be 0 or more, got '" + v + "'";
        return "";
      },
      "N>=0");
}

CLI::Validator OneOf(std::vector<std::string> values) {
  std::string desc = "{";
  for (size_t i = 0; i < values.size(); ++i) desc += (i ? "," : "") + values[i];
  desc += "}";
  return CLI::Validator(
      [values](std::string& v) -> std::string {
        if (std::find(values.begin(), values.end(), v) != values.end()) return "";
        return "unknown value '" + v + "': expected " + OneOfList(values) + DidYouMean(v, values);
      },
      desc);
}

std::string ExplainParseError(const CLI::App& root, const CLI::ParseError& e, int argc,
                              const char* const* argv) {
  Walk w = WalkArgs(root, argc, argv);
  if (!w.problem.empty()) return w.problem;
  const std::string where = PathOf(w.app);
  const std::string what = e.what();
  std::smatch m;
  if (dynamic_cast<const CLI::RequiredError*>(&e)) {
    if (!Subs(w.app).empty() && w.app->get_require_subcommand_min() > 0)
      return "'" + where + "' needs a subcommand: " + OneOfList(SubNames(w.app));
    static const std::regex kRequired("^(\\S+) is required$");
    if (std::regex_match(what, m, kRequired)) {
      std::string opt = m[1];
      if (opt[0] == '-') return "'" + where + "' needs " + opt + "; see '" + where + " --help'";
      std::string upper = opt;
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      return "'" + where + "' needs the " + upper + " argument; see '" + where + " --help'";
    }
  }
  if (dynamic_cast<const CLI::ConversionError*>(&e)) {
    static const std::regex kConvert("^Could not convert: (\\S+) = (.*)$");
    if (std::regex_match(what, m, kConvert)) {
      std::string v = m[2];
      static const std::regex kInteger("^-?[0-9]+$");
      if (std::regex_match(v, kInteger))
        return std::string(m[1]) + ": " + Quote(v) + " is out of range";
      return std::string(m[1]) + ": expected a number, got " + Quote(v);
    }
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e)) {
    static const std::regex kAtMost("^(\\S+): At Most \\d+ required but received (\\d+)$");
    if (std::regex_match(what, m, kAtMost))
      return std::string(m[1]) + " was given " + std::string(m[2]) + " times; give it once";
    static const std::regex kMissing("^(\\S+): \\d+ required \\S+ missing$");
    if (std::regex_match(what, m, kMissing)) return std::string(m[1]) + " needs a value";
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    static const std::regex kExtras("^The following arguments? (?:was|were) not expected: (.*)$");
    if (std::regex_match(what, m, kExtras)) {
      // CLI11 lists them last first.
      std::vector<std::string> words;
      std::string list = m[1];
      for (size_t at = 0; at <= list.size();) {
        size_t sp = std::min(list.find(' ', at), list.size());
        words.insert(words.begin(), list.substr(at, sp - at));
        at = sp + 1;
      }
      std::string joined;
      for (const auto& word : words) joined += (joined.empty() ? "" : " ") + word;
      return std::string(words.size() > 1 ? "unexpected arguments '" : "unexpected argument '") +
             joined + "' for '" + where + "'; see '" + where + " --help'";
    }
  }
  return what;
}

}  // namespace silt::cmd
