// The "consumer" protocol type of Kafka's classic group protocol: the bytes a member puts in
// JoinGroup's protocol metadata (Subscription) and the leader hands out through SyncGroup
// (Assignment), as Kafka's ConsumerProtocol encodes them, so silt, Java and librdkafka members
// can share one group; and the "range" assignor.
//
//   Subscription v0: version:int16 topics:[string] user_data:nullable_bytes
//                v1: v0 + owned_partitions:[topic:string partitions:[int32]]
//                v2: v1 + generation_id:int32      v3: v2 + rack_id:nullable_string
//   Assignment   v0/v1: version:int16 assigned_partitions:[topic:string partitions:[int32]]
//                       user_data:nullable_bytes
// Decoding accepts any version >= 0 and ignores fields after those it knows, as Kafka's
// ConsumerProtocol does so old and new members interoperate.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace silt::client {

// topic -> partitions, the shape of owned and assigned partitions.
using TopicPartitions = std::map<std::string, std::vector<int32_t>>;

struct Subscription {
  int16_t version = 1;
  std::vector<std::string> topics;
  std::optional<std::string> user_data;
  TopicPartitions owned_partitions;  // v1+
  int32_t generation_id = -1;        // v2+
  std::optional<std::string> rack_id;  // v3+

  // Writes this subscription in `version` (0..3).
  std::string Encode() const;
  // Truncated/Corruption for bytes that do not hold a subscription.
  static Result<Subscription> Decode(std::string_view bytes);
};

struct Assignment {
  int16_t version = 0;
  TopicPartitions partitions;
  std::optional<std::string> user_data;

  std::string Encode() const;
  static Result<Assignment> Decode(std::string_view bytes);
};

// Kafka's RangeAssignor: for each topic, its partitions in order and the members subscribed to
// it sorted by member id; with n partitions and m members each member gets n/m consecutive
// partitions and the first n%m members one more. `subscriptions` maps member id -> topics,
// `partition_counts` topic -> partitions (topics missing there are skipped). Every member
// appears in the result, possibly with nothing assigned.
std::map<std::string, TopicPartitions> RangeAssign(
    const std::map<std::string, std::vector<std::string>>& subscriptions,
    const std::map<std::string, int32_t>& partition_counts);

}  // namespace silt::client
