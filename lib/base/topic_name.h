// Kafka's rules for topic names (org.apache.kafka.common.internals.Topic), in one place for
// the data dir, the broker's handlers and the CLI.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace silt {

inline constexpr size_t kMaxTopicNameLength = 249;

// OK for 1..249 characters of [a-zA-Z0-9._-] other than "." and ".."; InvalidArgument with a
// message naming the rule broken otherwise.
Status ValidateTopicName(std::string_view name);

// Two topics whose names give the same key collide ('.' and '_' are alike in metric names);
// Kafka refuses to create the second.
std::string TopicCollisionKey(std::string_view name);

}  // namespace silt
