// __consumer_offsets key and value codecs (layouts in consumer_offsets.h).
#include "protocol/consumer_offsets.h"

#include <limits>

#include "base/coding.h"
#include "protocol/wire.h"

namespace silt::protocol {
namespace {

constexpr int16_t kOffsetCommitKeyVersion = 1;
constexpr int16_t kGroupMetadataKeyVersion = 2;
constexpr int16_t kMaxValueVersion = 4;
constexpr int16_t kFirstFlexibleValueVersion = 4;

// Reads the int16 version prefix.
Result<int16_t> ReadVersion(ByteReader& r, const char* what) {
  int16_t v = 0;
  if (!r.I16(&v)) return Status::Truncated(std::string(what) + ": no version");
  return v;
}

Status Finish(const Decoder& d, const ByteReader& r, const char* what) {
  if (!d.ok()) return d.status().WithContext(what);
  if (!r.empty()) {
    return Status::Corruption(std::string(what) + ": " + std::to_string(r.remaining()) +
                              " trailing byte(s)");
  }
  return Status::OK();
}

template <class IO, class V>
void IoOffsetCommitValue(IO& io, V& v) {
  io.I64(v.offset);
  if (v.version >= 3) io.I32(v.leader_epoch);
  io.String(v.metadata);
  io.I64(v.commit_timestamp);
  if (v.version == 1) io.I64(v.expire_timestamp);
  io.TaggedFields();
}

template <class IO, class V>
void IoGroupMetadataValue(IO& io, V& v) {
  io.String(v.protocol_type);
  io.I32(v.generation);
  io.NullableString(v.protocol);
  io.NullableString(v.leader);
  if (v.version >= 2) io.I64(v.current_state_timestamp);
  // Smallest member: four empty strings, a session timeout and two empty byte strings.
  io.Array(
      v.members,
      [&](auto& m) {
        io.String(m.member_id);
        if (v.version >= 3) io.NullableString(m.group_instance_id);
        io.String(m.client_id);
        io.String(m.client_host);
        if (v.version >= 1) io.I32(m.rebalance_timeout);
        io.I32(m.session_timeout);
        io.Bytes(m.subscription);
        io.Bytes(m.assignment);
        io.TaggedFields();
      },
      /*min_element_size=*/4);
  io.TaggedFields();
}

}  // namespace

int32_t JavaStringHashCode(std::string_view s) {
  // h = 31*h + c over UTF-16 code units, in wrapping 32-bit arithmetic. A byte that does not
  // start a valid UTF-8 sequence counts as one unit (group ids on the wire are valid strings).
  uint32_t h = 0;
  auto unit = [&h](uint32_t c) { h = 31u * h + (c & 0xffffu); };
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    uint32_t c = p[i];
    int extra = (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xe ? 2 : (c >> 3) == 0x1e ? 3 : 0;
    uint32_t cp = c & (0x3fu >> extra);
    bool valid = extra > 0 && i + extra < n;
    for (int k = 1; valid && k <= extra; ++k) {
      if ((p[i + k] & 0xc0) != 0x80) valid = false;
      else cp = (cp << 6) | (p[i + k] & 0x3fu);
    }
    if (!valid) {
      unit(c);
      ++i;
      continue;
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      unit(0xd800 + (cp >> 10));
      unit(0xdc00 + (cp & 0x3ff));
    } else {
      unit(cp);
    }
    i += static_cast<size_t>(extra) + 1;
  }
  return static_cast<int32_t>(h);
}

int32_t OffsetsPartitionFor(std::string_view group, int32_t partitions) {
  int32_t h = JavaStringHashCode(group);
  int32_t a = h == std::numeric_limits<int32_t>::min() ? 0 : (h < 0 ? -h : h);
  return partitions > 0 ? a % partitions : 0;
}

std::string EncodeOffsetCommitKey(const OffsetCommitKey& k) {
  std::string out;
  ByteWriter w(&out);
  w.I16(kOffsetCommitKeyVersion);
  Encoder e(w, false);
  e.String(k.group);
  e.String(k.topic);
  e.I32(k.partition);
  return out;
}

std::string EncodeGroupMetadataKey(const GroupMetadataKey& k) {
  std::string out;
  ByteWriter w(&out);
  w.I16(kGroupMetadataKeyVersion);
  Encoder e(w, false);
  e.String(k.group);
  return out;
}

Result<ConsumerOffsetsKey> DecodeConsumerOffsetsKey(std::string_view bytes) {
  ByteReader r(bytes);
  SILT_ASSIGN_OR_RETURN(int16_t version, ReadVersion(r, "__consumer_offsets key"));
  ConsumerOffsetsKey k;
  k.version = version;
  if (version < 0) return Status::Corruption("__consumer_offsets key: negative version");
  Decoder d(r, false);
  if (version <= 1) {
    k.kind = ConsumerOffsetsKey::Kind::kOffsetCommit;
    d.String(k.offset.group);
    d.String(k.offset.topic);
    d.I32(k.offset.partition);
    SILT_TRY(Finish(d, r, "OffsetCommitKey"));
  } else if (version == 2) {
    k.kind = ConsumerOffsetsKey::Kind::kGroupMetadata;
    d.String(k.metadata.group);
    SILT_TRY(Finish(d, r, "GroupMetadataKey"));
  }
  return k;
}

std::string EncodeOffsetCommitValue(const OffsetCommitValue& v) {
  std::string out;
  ByteWriter w(&out);
  w.I16(v.version);
  Encoder e(w, v.version >= kFirstFlexibleValueVersion);
  IoOffsetCommitValue(e, v);
  return out;
}

Result<OffsetCommitValue> DecodeOffsetCommitValue(std::string_view bytes) {
  ByteReader r(bytes);
  OffsetCommitValue v;
  SILT_ASSIGN_OR_RETURN(v.version, ReadVersion(r, "OffsetCommitValue"));
  if (v.version < 0 || v.version > kMaxValueVersion) {
    return Status::Corruption("OffsetCommitValue: unknown version " + std::to_string(v.version));
  }
  Decoder d(r, v.version >= kFirstFlexibleValueVersion);
  IoOffsetCommitValue(d, v);
  SILT_TRY(Finish(d, r, "OffsetCommitValue"));
  return v;
}

std::string EncodeGroupMetadataValue(const GroupMetadataValue& v) {
  std::string out;
  ByteWriter w(&out);
  w.I16(v.version);
  Encoder e(w, v.version >= kFirstFlexibleValueVersion);
  IoGroupMetadataValue(e, v);
  return out;
}

Result<GroupMetadataValue> DecodeGroupMetadataValue(std::string_view bytes) {
  ByteReader r(bytes);
  GroupMetadataValue v;
  SILT_ASSIGN_OR_RETURN(v.version, ReadVersion(r, "GroupMetadataValue"));
  if (v.version < 0 || v.version > kMaxValueVersion) {
    return Status::Corruption("GroupMetadataValue: unknown version " + std::to_string(v.version));
  }
  Decoder d(r, v.version >= kFirstFlexibleValueVersion);
  IoGroupMetadataValue(d, v);
  SILT_TRY(Finish(d, r, "GroupMetadataValue"));
  return v;
}

}  // namespace silt::protocol
