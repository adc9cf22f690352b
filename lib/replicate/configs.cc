#include "replicate/configs.h"

#include <string_view>

namespace silt::replicate {
namespace {

constexpr std::string_view kDestinationKeys[] = {
    "min.insync.replicas",
    "unclean.leader.election.enable",
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
    "message.timestamp.type",
    "message.timestamp.difference.max.ms",
    "message.timestamp.before.max.ms",
    "message.timestamp.after.max.ms",
    "message.format.version",
    // silt's own mark of a mirror topic: the sink decides whether the copy is one.
    "silt.mirror",
};

}  // namespace

bool IsCopiedConfig(const std::string& key) {
  if (key.rfind("confluent.", 0) == 0) return false;
  for (std::string_view k : kDestinationKeys)
    if (key == k) return false;
  return true;
}

std::map<std::string, std::string> ConfigsToCopy(const std::map<std::string, std::string>& configs) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : configs)
    if (IsCopiedConfig(k)) out.emplace(k, v);
  return out;
}

}  // namespace silt::replicate
