// Kafka's topic-name rules (see topic_name.h).
#include "base/topic_name.h"

#include <algorithm>

namespace silt {

Status ValidateTopicName(std::string_view name) {
  if (name.empty()) return Status::InvalidArgument("topic name is empty");
  if (name == "." || name == "..")
    return Status::InvalidArgument("topic name cannot be \".\" or \"..\"");
  if (name.size() > kMaxTopicNameLength)
    return Status::InvalidArgument("topic name is longer than 249 characters");
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok)
      return Status::InvalidArgument("topic name '" + std::string(name) +
                                     "' has a character outside [a-zA-Z0-9._-]");
  }
  return Status::OK();
}

std::string TopicCollisionKey(std::string_view name) {
  std::string s(name);
  std::replace(s.begin(), s.end(), '.', '_');
  return s;
}

}  // namespace silt
