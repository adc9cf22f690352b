// Kafka's offset checkpoint text format.
#include "storage/offset_checkpoint.h"

#include <sstream>

#include "base/file.h"

namespace silt::storage {

Result<OffsetCheckpointMap> ReadOffsetCheckpoint(const std::string& path) {
  SILT_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  std::istringstream in(text);
  OffsetCheckpointMap out;
  int64_t version, count;
  if (!(in >> version >> count) || version != 0 || count < 0)
    return Status::Corruption(path + ": not a version 0 offset checkpoint");
  for (int64_t i = 0; i < count; ++i) {
    std::string topic;
    int64_t p, off;
    if (!(in >> topic >> p >> off) || p < 0 || p > INT32_MAX || off < 0)
      return Status::Corruption(path + ": bad entry " + std::to_string(i + 1));
    out[{topic, static_cast<int32_t>(p)}] = off;
  }
  std::string extra;
  if (in >> extra) return Status::Corruption(path + ": more lines than its count");
  return out;
}

Status WriteOffsetCheckpoint(const std::string& path, const OffsetCheckpointMap& entries) {
  std::string text = "0\n" + std::to_string(entries.size()) + "\n";
  for (const auto& [key, offset] : entries)
    text += key.first + " " + std::to_string(key.second) + " " + std::to_string(offset) + "\n";
  return WriteFileAtomic(path, text);
}

}  // namespace silt::storage
