// Kafka's key hash: murmur2 exactly as the Java client's Utils.murmur2 computes it (seed
// 0x9747b28c, little-endian 4-byte words), and the partition its default partitioner derives
// from it. librdkafka's "murmur2_random" partitioner and every Kafka client that promises Java
// compatibility agree with these, so a key lands on the same partition whoever produced it.
#pragma once

#include <cstdint>
#include <string_view>

namespace silt::format {

// Utils.murmur2(key) as the Java int: the 32-bit pattern is the same as the unsigned hash.
int32_t Murmur2(std::string_view key);

// Utils.toPositive: clears the sign bit (not Math.abs, which breaks on INT32_MIN).
inline int32_t ToPositive(int32_t v) { return v & 0x7fffffff; }

// The default partitioner's choice for a non-null key: toPositive(murmur2(key)) % partitions.
// `num_partitions` must be positive.
int32_t PartitionForKey(std::string_view key, int32_t num_partitions);

}  // namespace silt::format
