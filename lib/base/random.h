// Random identifiers, drawn from the operating system's entropy source (getrandom(2)).
// Thread-safe.
#pragma once

#include <cstddef>
#include <string>

#include "base/uuid.h"

namespace silt {

// Fills `n` bytes at `out` with random bytes.
void RandomBytes(void* out, size_t n);

// A random (version 4, RFC 4122 variant) uuid that is never reserved (zero or 1) and whose
// text form never starts with '-' (so that it cannot be taken for a command-line flag): what
// Kafka's Uuid.randomUuid() yields.
Uuid RandomUuid();

// A new topic id, as a controller mints one (RandomUuid()).
inline Uuid NewTopicId() { return RandomUuid(); }
// A new cluster id in its text form, as `kafka-storage random-uuid` prints one.
inline std::string NewClusterId() { return RandomUuid().ToString(); }

}  // namespace silt
