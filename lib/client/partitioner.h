// Choosing a partition for each produced record, as Kafka's Java producer does:
//   keyed records    murmur2(key) & 0x7fffffff modulo the partition count (the default)
//   unkeyed records  "sticky": every record goes to one partition until its batch is sent,
//                    then another partition is picked at random (KIP-480)
//   round-robin      record i goes to partition i mod N, keyed or not
//   random           a uniformly random partition per record
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string_view>

#include "base/status.h"

namespace silt::client {

class Partitioner {
 public:
  enum class Kind { kDefault, kMurmur2, kRoundRobin, kRandom };

  // "murmur2" (same as the default), "round-robin", "random"; InvalidArgument otherwise.
  static Result<Kind> ParseKind(std::string_view name);

  Partitioner(Kind kind, int32_t num_partitions, uint64_t seed);

  // The partition for a record with this key (nullopt: no key).
  int32_t Choose(const std::optional<std::string_view>& key);
  // Tells the sticky partitioner that `partition`'s batch was sent: unkeyed records move on.
  void OnBatchSent(int32_t partition);

  // Kafka's partition for a key: toPositive(murmur2(key)) % num_partitions.
  static int32_t ForKey(std::string_view key, int32_t num_partitions);

 private:
  int32_t RandomPartition(int32_t avoid);

  Kind kind_;
  int32_t n_;
  std::mt19937_64 rng_;
  int64_t counter_ = 0;
  int32_t sticky_ = -1;
};

}  // namespace silt::client
