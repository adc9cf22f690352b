// Kafka's producer-state snapshot file (layout in producer_snapshot.h).
#include "format/producer_snapshot.h"

#include "base/coding.h"
#include "base/crc32c.h"

namespace silt::format {

std::string EncodeProducerSnapshot(const std::vector<ProducerSnapshotEntry>& entries) {
  std::string out(kSnapshotEntriesOffset + 4 + entries.size() * kSnapshotEntrySize, '\0');
  char* p = out.data();
  EncodeBE16(p + kSnapshotVersionOffset, static_cast<uint16_t>(kProducerSnapshotVersion));
  p += kSnapshotEntriesOffset;
  EncodeBE32(p, static_cast<uint32_t>(entries.size()));
  p += 4;
  for (const ProducerSnapshotEntry& e : entries) {
    EncodeBE64(p, static_cast<uint64_t>(e.producer_id));
    EncodeBE16(p + 8, static_cast<uint16_t>(e.epoch));
    EncodeBE32(p + 8 + 2, static_cast<uint32_t>(e.last_sequence));
    EncodeBE64(p + 8 + 2 + 4, static_cast<uint64_t>(e.last_offset));
    EncodeBE32(p + 8 + 2 + 4 + 8, static_cast<uint32_t>(e.offset_delta));
    EncodeBE64(p + 8 + 2 + 4 + 8 + 4, static_cast<uint64_t>(e.timestamp));
    EncodeBE32(p + 8 + 2 + 4 + 8 + 4 + 8, static_cast<uint32_t>(e.coordinator_epoch));
    EncodeBE64(p + 8 + 2 + 4 + 8 + 4 + 8 + 4, static_cast<uint64_t>(e.current_txn_first_offset));
    p += kSnapshotEntrySize;
  }
  std::string_view covered = std::string_view(out).substr(kSnapshotEntriesOffset);
  EncodeBE32(out.data() + kSnapshotCrcOffset, crc32c::Value(covered));
  return out;
}

Status DecodeProducerSnapshot(std::string_view data, std::vector<ProducerSnapshotEntry>* out) {
  out->clear();
  if (data.size() < static_cast<size_t>(kSnapshotEntriesOffset + 4))
    return Status::Corruption("producer snapshot of " + std::to_string(data.size()) +
                              " bytes is shorter than its header");
  const int16_t version = static_cast<int16_t>(DecodeBE16(data.data() + kSnapshotVersionOffset));
  if (version != kProducerSnapshotVersion)
    return Status::Corruption("producer snapshot has unknown version " + std::to_string(version));
  const uint32_t stored = DecodeBE32(data.data() + kSnapshotCrcOffset);
  const uint32_t computed = crc32c::Value(data.substr(kSnapshotEntriesOffset));
  if (stored != computed)
    return Status::Corruption("producer snapshot CRC mismatch (stored " + std::to_string(stored) +
                              ", computed " + std::to_string(computed) + ")");
  const int32_t count = static_cast<int32_t>(DecodeBE32(data.data() + kSnapshotEntriesOffset));
  const size_t body = data.size() - kSnapshotEntriesOffset - 4;
  if (count < 0 || body != static_cast<size_t>(count) * kSnapshotEntrySize)
    return Status::Corruption("producer snapshot claims " + std::to_string(count) +
                              " entries but holds " + std::to_string(body) + " bytes of them");
  out->reserve(static_cast<size_t>(count));
  const char* p = data.data() + kSnapshotEntriesOffset + 4;
  for (int32_t i = 0; i < count; ++i, p += kSnapshotEntrySize) {
    ProducerSnapshotEntry e;
    e.producer_id = static_cast<int64_t>(DecodeBE64(p));
    e.epoch = static_cast<int16_t>(DecodeBE16(p + 8));
    e.last_sequence = static_cast<int32_t>(DecodeBE32(p + 8 + 2));
    e.last_offset = static_cast<int64_t>(DecodeBE64(p + 8 + 2 + 4));
    e.offset_delta = static_cast<int32_t>(DecodeBE32(p + 8 + 2 + 4 + 8));
    e.timestamp = static_cast<int64_t>(DecodeBE64(p + 8 + 2 + 4 + 8 + 4));
    e.coordinator_epoch = static_cast<int32_t>(DecodeBE32(p + 8 + 2 + 4 + 8 + 4 + 8));
    e.current_txn_first_offset = static_cast<int64_t>(DecodeBE64(p + 8 + 2 + 4 + 8 + 4 + 8 + 4));
    out->push_back(e);
  }
  return Status::OK();
}

}  // namespace silt::format
