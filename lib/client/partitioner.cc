// Partition choice (see partitioner.h).
#include "client/partitioner.h"

#include "format/murmur2.h"

namespace silt::client {

Result<Partitioner::Kind> Partitioner::ParseKind(std::string_view name) {
  if (name == "murmur2" || name == "default") return Kind::kMurmur2;
  if (name == "round-robin") return Kind::kRoundRobin;
  if (name == "random") return Kind::kRandom;
  return Status::InvalidArgument("unknown partitioner '" + std::string(name) +
                                 "': expected murmur2, round-robin or random");
}

Partitioner::Partitioner(Kind kind, int32_t num_partitions, uint64_t seed)
    : kind_(kind), n_(num_partitions < 1 ? 1 : num_partitions), rng_(seed) {}

int32_t Partitioner::ForKey(std::string_view key, int32_t num_partitions) {
  return format::PartitionForKey(key, num_partitions);
}

int32_t Partitioner::RandomPartition(int32_t avoid) {
  if (n_ == 1) return 0;
  if (avoid < 0) return static_cast<int32_t>(rng_() % static_cast<uint64_t>(n_));
  // A different partition from `avoid`, uniformly among the others.
  int32_t p = static_cast<int32_t>(rng_() % static_cast<uint64_t>(n_ - 1));
  return p >= avoid ? p + 1 : p;
}

int32_t Partitioner::Choose(const std::optional<std::string_view>& key) {
  switch (kind_) {
    case Kind::kRoundRobin:
      return static_cast<int32_t>(counter_++ % n_);
    case Kind::kRandom:
      return RandomPartition(-1);
    case Kind::kDefault:
    case Kind::kMurmur2:
      if (key) return ForKey(*key, n_);
      if (sticky_ < 0) sticky_ = RandomPartition(-1);
      return sticky_;
  }
  return 0;
}

void Partitioner::OnBatchSent(int32_t partition) {
  if (partition == sticky_) sticky_ = RandomPartition(sticky_);
}

}  // namespace silt::client
