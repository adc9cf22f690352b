// The static voter list: `controller.quorum.voters` (Kafka's KRaft name), also `--peers`.
//
// Grammar: VOTER ("," VOTER)*, VOTER = ID "@" HOST ":" PORT, where ID is a positive decimal
// int32, HOST a name, an IPv4 address or a bracketed IPv6 address ("[::1]"), PORT 1..65535.
// Every listed node is a voter; the list is the same on every node and never changes at run
// time. A node reaches a peer only at the address this list gives for its id.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/ids.h"
#include "base/status.h"

namespace silt::cluster {

struct Voter {
  NodeId id;
  std::string host;  // without the brackets of an IPv6 address
  uint16_t port = 0;

  // "host:port", with brackets around an IPv6 host; the form libraft's configuration carries.
  std::string address() const;
  bool operator==(const Voter&) const = default;
};

// Parses `text` (surrounding spaces around each entry are ignored). InvalidArgument naming the
// offending entry when an entry is malformed, an id is not positive, an id or an address is
// listed twice, or the list is empty. The result keeps the order of the text.
Result<std::vector<Voter>> ParseVoters(std::string_view text);

// The inverse of ParseVoters: "1@host:port,2@host:port".
std::string FormatVoters(const std::vector<Voter>& voters);

// The entry of `id`, or nullopt.
std::optional<Voter> FindVoter(const std::vector<Voter>& voters, NodeId id);

}  // namespace silt::cluster
