// The static voter list parser (voters.h).
#include "cluster/voters.h"

#include <charconv>
#include <set>

namespace silt::cluster {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

template <typename T>
bool ParseDecimal(std::string_view s, T* out) {
  if (s.empty() || s.front() == '+' || s.front() == '-') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

Status Bad(std::string_view entry, std::string_view why) {
  return Status::InvalidArgument("controller.quorum.voters entry '" + std::string(entry) +
                                 "': " + std::string(why) + " (expected id@host:port)");
}

Result<Voter> ParseOne(std::string_view entry) {
  size_t at = entry.find('@');
  if (at == std::string_view::npos) return Bad(entry, "no '@'");
  Voter v;
  int32_t id = 0;
  if (!ParseDecimal(entry.substr(0, at), &id)) return Bad(entry, "the id is not a number");
  if (id <= 0) return Bad(entry, "the id must be positive");
  v.id = NodeId(id);
  std::string_view hostport = entry.substr(at + 1);
  std::string_view host, port;
  if (!hostport.empty() && hostport.front() == '[') {
    size_t close = hostport.find(']');
    if (close == std::string_view::npos) return Bad(entry, "no ']' after an IPv6 address");
    host = hostport.substr(1, close - 1);
    std::string_view after = hostport.substr(close + 1);
    if (after.empty() || after.front() != ':') return Bad(entry, "no ':port' after the host");
    port = after.substr(1);
  } else {
    size_t colon = hostport.rfind(':');
    if (colon == std::string_view::npos) return Bad(entry, "no ':port'");
    host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return Bad(entry, "an IPv6 address needs brackets");
    }
  }
  if (host.empty()) return Bad(entry, "the host is empty");
  for (char c : host) {
    if (c == ' ' || c == '@' || c == ',' || c == '[' || c == ']') {
      return Bad(entry, "the host has a character not allowed in a host name");
    }
  }
  uint32_t p = 0;
  if (!ParseDecimal(port, &p) || p == 0 || p > 65535) {
    return Bad(entry, "the port must be 1..65535");
  }
  v.host = std::string(host);
  v.port = static_cast<uint16_t>(p);
  return v;
}

}  // namespace

std::string Voter::address() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port);
}

Result<std::vector<Voter>> ParseVoters(std::string_view text) {
  std::vector<Voter> out;
  std::set<int32_t> ids;
  std::set<std::string> addresses;
  if (Trim(text).empty()) {
    return Status::InvalidArgument("controller.quorum.voters is empty (expected id@host:port,...)");
  }
  while (true) {
    size_t comma = text.find(',');
    std::string_view entry = Trim(text.substr(0, comma));
    if (entry.empty()) return Bad(entry, "empty entry");
    SILT_ASSIGN_OR_RETURN(Voter v, ParseOne(entry));
    if (!ids.insert(v.id.value()).second) return Bad(entry, "the id is listed twice");
    if (!addresses.insert(v.address()).second) return Bad(entry, "the address is listed twice");
    out.push_back(std::move(v));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

std::string FormatVoters(const std::vector<Voter>& voters) {
  std::string out;
  for (const Voter& v : voters) {
    if (!out.empty()) out += ",";
    out += std::to_string(v.id.value()) + "@" + v.address();
  }
  return out;
}

std::optional<Voter> FindVoter(const std::vector<Voter>& voters, NodeId id) {
  for (const Voter& v : voters) {
    if (v.id == id) return v;
  }
  return std::nullopt;
}

}  // namespace silt::cluster
