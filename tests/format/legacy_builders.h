// Legacy (magic 0/1) messages written by hand from Kafka's documented layout, for the tests of
// the legacy reader, the up/down conversion and the old-protocol broker paths.
//
//   entry   => offset int64, message_size int32, message
//   message => crc uint32 (CRC-32 of the rest), magic int8, attributes int8,
//              [timestamp int64 (magic 1)], key bytes, value bytes
#pragma once

#include <zlib.h>

#include <cstdint>
#include <optional>
#include <string>

#include "base/coding.h"

namespace silt::format::testing {

using LegacyBytes = std::optional<std::string>;

// One message, from its crc on.
inline std::string LegacyMessage(int8_t magic, int8_t attributes, int64_t timestamp,
                                 const LegacyBytes& key, const LegacyBytes& value) {
  std::string m(4, '\0');
  ByteWriter w(&m);
  w.I8(magic);
  w.I8(attributes);
  if (magic == 1) w.I64(timestamp);
  for (const LegacyBytes* b : {&key, &value}) {
    w.I32(*b ? static_cast<int32_t>((*b)->size()) : -1);
    if (*b) w.Raw(**b);
  }
  EncodeBE32(m.data(), static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(m.data() + 4),
                                                   static_cast<uInt>(m.size() - 4))));
  return m;
}

// One entry of a message set: offset, size, then `message`.
inline std::string LegacyEntry(int64_t offset, const std::string& message) {
  std::string e;
  ByteWriter w(&e);
  w.I64(offset);
  w.I32(static_cast<int32_t>(message.size()));
  w.Raw(message);
  return e;
}

// LegacyEntry of LegacyMessage.
inline std::string LegacyEntry(int64_t offset, int8_t magic, int8_t attributes, int64_t timestamp,
                               const LegacyBytes& key, const LegacyBytes& value) {
  return LegacyEntry(offset, LegacyMessage(magic, attributes, timestamp, key, value));
}

}  // namespace silt::format::testing
