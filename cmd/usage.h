// Usage errors a user can act on: the nearest known word for a typo, value checks that say what
// they expect, and one plain line in place of each of CLI11's own parse messages.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
class ParseError;
class Validator;
}  // namespace CLI

namespace silt::cmd {

// The candidate closest to `word` by edit distance (a swap of neighbours counts as one edit),
// when it is close enough to be a plausible typo; empty otherwise.
std::string Nearest(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean 'X'?)" for the Nearest candidate, or "" when none is close.
std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates);

// "a, b or c".
std::string OneOfList(const std::vector<std::string>& words);

// Validators whose failure reads as one sentence: "must be 0 or more, got '-1'", and
// "unknown value 'jsn': expected text or json (did you mean 'json'?)".
CLI::Validator NonNegative();
CLI::Validator OneOf(std::vector<std::string> values);

// The one-line message for a failed parse of argv against `root`: an unknown subcommand or
// option named with its nearest spelling, a missing subcommand with the ones there are, and
// CLI11's conversion, range and repetition errors in plain words. Never empty.
std::string ExplainParseError(const CLI::App& root, const CLI::ParseError& e, int argc,
                              const char* const* argv);

}  // namespace silt::cmd
