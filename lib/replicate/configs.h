// Which topic configs `silt replicate --configs` copies from a source topic to its copy.
#pragma once

#include <map>
#include <string>

namespace silt::replicate {

// `configs` (a source topic's overrides) without the keys that describe the destination cluster
// rather than the data: the ones MirrorMaker 2 leaves out by default (min.insync.replicas,
// unclean.leader.election.enable, leader/follower.replication.throttled.replicas,
// message.timestamp.type, message.timestamp.difference.max.ms and its successors
// message.timestamp.before/after.max.ms), message.format.version (a broker's
// compatibility setting) and every confluent.* key (replica placement and other vendor
// settings).
std::map<std::string, std::string> ConfigsToCopy(const std::map<std::string, std::string>& configs);

// True when ConfigsToCopy keeps `key`.
bool IsCopiedConfig(const std::string& key);

}  // namespace silt::replicate
