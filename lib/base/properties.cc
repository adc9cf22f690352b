// Java-style properties (see properties.h).
#include "base/properties.h"

namespace silt {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\f'; }

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  return s;
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

bool HasLineBreak(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

}  // namespace

Properties ParseProperties(std::string_view text) {
  Properties out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line = TrimLeft(line);
    if (line.empty() || line[0] == '#' || line[0] == '!') continue;
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    out[std::string(TrimRight(line.substr(0, eq)))] = std::string(TrimLeft(line.substr(eq + 1)));
  }
  return out;
}

Result<std::string> FormatProperties(const Properties& props, std::string_view comment) {
  std::string out;
  if (!comment.empty()) {
    while (true) {
      size_t nl = comment.find('\n');
      out += "# ";
      out += comment.substr(0, nl);
      out += '\n';
      if (nl == std::string_view::npos) break;
      comment.remove_prefix(nl + 1);
    }
  }
  for (const auto& [k, v] : props) {
    if (k.empty() || k.find('=') != std::string::npos || HasLineBreak(k) || IsBlank(k.front()) ||
        IsBlank(k.back()) || k[0] == '#' || k[0] == '!')
      return Status::InvalidArgument("property key '" + k + "' cannot be written");
    if (HasLineBreak(v) || (!v.empty() && IsBlank(v.front())))
      return Status::InvalidArgument("value of property '" + k + "' cannot be written");
    out += k;
    out += '=';
    out += v;
    out += '\n';
  }
  return out;
}

}  // namespace silt
