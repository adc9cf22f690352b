// The metadata records' encoding (metadata_records.h).
#include "cluster/metadata_records.h"

#include <cstring>

#include "base/coding.h"

namespace silt::cluster {

namespace {

constexpr int16_t kRecordVersion = 0;
// PartitionChange v1 adds expected_partition_epoch, v2 removing_replicas and adding_replicas.
constexpr int16_t kPartitionChangeVersion = 2;
// Partition v1 adds removing_replicas and adding_replicas.
constexpr int16_t kPartitionVersion = 1;
// RegisterBroker v1 adds peer_host and peer_port.
constexpr int16_t kRegisterBrokerVersion = 1;
// ProducerIds v1 adds reserved_producer_id.
constexpr int16_t kProducerIdsVersion = 1;

int16_t VersionOf(RecordType t) {
  if (t == RecordType::kPartitionChange) return kPartitionChangeVersion;
  if (t == RecordType::kPartition) return kPartitionVersion;
  if (t == RecordType::kRegisterBroker) return kRegisterBrokerVersion;
  if (t == RecordType::kProducerIds) return kProducerIdsVersion;
  return kRecordVersion;
}

// ---- writing ----

void PutString(ByteWriter& w, std::string_view s) {
  w.I16(static_cast<int16_t>(s.size()));
  w.Raw(s);
}
void PutNullableString(ByteWriter& w, const std::optional<std::string>& s) {
  if (!s) {
    w.I16(-1);
  } else {
    PutString(w, *s);
  }
}
void PutUuid(ByteWriter& w, const Uuid& u) {
  w.Raw(reinterpret_cast<const char*>(u.bytes().data()), u.bytes().size());
}
void PutNodes(ByteWriter& w, const std::vector<NodeId>& v) {
  w.I32(static_cast<int32_t>(v.size()));
  for (NodeId n : v) w.I32(n.value());
}
void PutNullableNodes(ByteWriter& w, const std::optional<std::vector<NodeId>>& v) {
  if (!v) {
    w.I32(-1);
  } else {
    PutNodes(w, *v);
  }
}

struct BodyWriter {
  ByteWriter& w;
  void operator()(const RegisterBrokerRecord& r) {
    w.I32(r.broker_id.value());
    PutUuid(w, r.incarnation_id);
    PutString(w, r.host);
    w.I32(r.port);
    PutString(w, r.peer_host);
    w.I32(r.peer_port);
  }
  void operator()(const TopicRecord& r) {
    PutString(w, r.name);
    PutUuid(w, r.topic_id);
  }
  void operator()(const PartitionRecord& r) {
    w.I32(r.partition_id.value());
    PutUuid(w, r.topic_id);
    PutNodes(w, r.replicas);
    PutNodes(w, r.isr);
    w.I32(r.leader.value());
    w.I32(r.leader_epoch.value());
    w.I32(r.partition_epoch);
    PutNodes(w, r.removing_replicas);
    PutNodes(w, r.adding_replicas);
  }
  void operator()(const ConfigRecord& r) {
    w.I8(static_cast<int8_t>(r.resource_type));
    PutString(w, r.resource_name);
    PutString(w, r.name);
    PutNullableString(w, r.value);
  }
  void operator()(const PartitionChangeRecord& r) {
    w.I32(r.partition_id.value());
    PutUuid(w, r.topic_id);
    PutNullableNodes(w, r.isr);
    w.I32(r.leader.value());
    PutNullableNodes(w, r.replicas);
    w.I32(r.expected_partition_epoch);
    PutNullableNodes(w, r.removing_replicas);
    PutNullableNodes(w, r.adding_replicas);
  }
  void operator()(const FenceBrokerRecord& r) { w.I32(r.broker_id.value()); }
  void operator()(const UnfenceBrokerRecord& r) { w.I32(r.broker_id.value()); }
  void operator()(const RemoveTopicRecord& r) { PutUuid(w, r.topic_id); }
  void operator()(const ProducerIdsRecord& r) {
    w.I32(r.broker_id.value());
    w.I64(r.next_producer_id.value());
    w.I64(r.reserved_producer_id.value());
  }
  void operator()(const ClusterIdRecord& r) { PutString(w, r.cluster_id); }
  void operator()(const AlterPartitionRecord& r) {
    w.I32(r.partition_id.value());
    PutUuid(w, r.topic_id);
    w.I32(r.leader.value());
    w.I32(r.leader_epoch.value());
    w.I32(r.partition_epoch);
    PutNodes(w, r.new_isr);
  }
};

// ---- reading: each getter returns false on short input ----

bool GetString(ByteReader& r, std::string* out) {
  int16_t n = 0;
  std::string_view b;
  if (!r.I16(&n) || n < 0 || !r.Bytes(static_cast<size_t>(n), &b)) return false;
  out->assign(b);
  return true;
}
bool GetNullableString(ByteReader& r, std::optional<std::string>* out) {
  int16_t n = 0;
  std::string_view b;
  if (!r.I16(&n) || n < -1) return false;
  if (n == -1) {
    out->reset();
    return true;
  }
  if (!r.Bytes(static_cast<size_t>(n), &b)) return false;
  *out = std::string(b);
  return true;
}
bool GetUuid(ByteReader& r, Uuid* out) {
  std::string_view b;
  if (!r.Bytes(16, &b)) return false;
  Uuid::Bytes bytes;
  std::memcpy(bytes.data(), b.data(), 16);
  *out = Uuid(bytes);
  return true;
}
bool GetNodeId(ByteReader& r, NodeId* out) {
  int32_t v = 0;
  if (!r.I32(&v)) return false;
  *out = NodeId(v);
  return true;
}
bool GetNodesCounted(ByteReader& r, int32_t n, std::vector<NodeId>* out) {
  if (n < 0 || static_cast<size_t>(n) > r.remaining() / 4) return false;
  out->clear();
  for (int32_t i = 0; i < n; ++i) {
    NodeId id;
    if (!GetNodeId(r, &id)) return false;
    out->push_back(id);
  }
  return true;
}
bool GetNodes(ByteReader& r, std::vector<NodeId>* out) {
  int32_t n = 0;
  return r.I32(&n) && GetNodesCounted(r, n, out);
}
bool GetNullableNodes(ByteReader& r, std::optional<std::vector<NodeId>>* out) {
  int32_t n = 0;
  if (!r.I32(&n) || n < -1) return false;
  if (n == -1) {
    out->reset();
    return true;
  }
  std::vector<NodeId> v;
  if (!GetNodesCounted(r, n, &v)) return false;
  *out = std::move(v);
  return true;
}

bool ReadBody(ByteReader& r, RecordType type, int16_t version, MetadataRecord* out) {
  switch (type) {
    case RecordType::kRegisterBroker: {
      RegisterBrokerRecord x;
      if (!GetNodeId(r, &x.broker_id) || !GetUuid(r, &x.incarnation_id) || !GetString(r, &x.host) ||
          !r.I32(&x.port)) {
        return false;
      }
      if (version >= 1 && (!GetString(r, &x.peer_host) || !r.I32(&x.peer_port))) return false;
      *out = std::move(x);
      return true;
    }
    case RecordType::kTopic: {
      TopicRecord x;
      if (!GetString(r, &x.name) || !GetUuid(r, &x.topic_id)) return false;
      *out = std::move(x);
      return true;
    }
    case RecordType::kPartition: {
      PartitionRecord x;
      int32_t p = 0, epoch = 0;
      if (!r.I32(&p) || !GetUuid(r, &x.topic_id) || !GetNodes(r, &x.replicas) ||
          !GetNodes(r, &x.isr) || !GetNodeId(r, &x.leader) || !r.I32(&epoch) ||
          !r.I32(&x.partition_epoch)) {
        return false;
      }
      if (version >= 1 &&
          (!GetNodes(r, &x.removing_replicas) || !GetNodes(r, &x.adding_replicas))) {
        return false;
      }
      x.partition_id = PartitionId(p);
      x.leader_epoch = LeaderEpoch(epoch);
      *out = std::move(x);
      return true;
    }
    case RecordType::kConfig: {
      ConfigRecord x;
      int8_t t = 0;
      if (!r.I8(&t) || !GetString(r, &x.resource_name) || !GetString(r, &x.name) ||
          !GetNullableString(r, &x.value)) {
        return false;
      }
      x.resource_type = static_cast<ConfigResource>(t);
      *out = std::move(x);
      return true;
    }
    case RecordType::kPartitionChange: {
      PartitionChangeRecord x;
      int32_t p = 0;
      if (!r.I32(&p) || !GetUuid(r, &x.topic_id) || !GetNullableNodes(r, &x.isr) ||
          !GetNodeId(r, &x.leader) || !GetNullableNodes(r, &x.replicas)) {
        return false;
      }
      if (version >= 1 && !r.I32(&x.expected_partition_epoch)) return false;
      if (version >= 2 && (!GetNullableNodes(r, &x.removing_replicas) ||
                           !GetNullableNodes(r, &x.adding_replicas))) {
        return false;
      }
      x.partition_id = PartitionId(p);
      *out = std::move(x);
      return true;
    }
    case RecordType::kFenceBroker: {
      FenceBrokerRecord x;
      if (!GetNodeId(r, &x.broker_id)) return false;
      *out = x;
      return true;
    }
    case RecordType::kUnfenceBroker: {
      UnfenceBrokerRecord x;
      if (!GetNodeId(r, &x.broker_id)) return false;
      *out = x;
      return true;
    }
    case RecordType::kRemoveTopic: {
      RemoveTopicRecord x;
      if (!GetUuid(r, &x.topic_id)) return false;
      *out = x;
      return true;
    }
    case RecordType::kProducerIds: {
      ProducerIdsRecord x;
      int64_t next = 0;
      if (!GetNodeId(r, &x.broker_id) || !r.I64(&next)) return false;
      x.next_producer_id = ProducerId(next);
      int64_t reserved = -1;
      if (version >= 1 && !r.I64(&reserved)) return false;
      x.reserved_producer_id = ProducerId(reserved);
      *out = x;
      return true;
    }
    case RecordType::kClusterId: {
      ClusterIdRecord x;
      if (!GetString(r, &x.cluster_id)) return false;
      *out = std::move(x);
      return true;
    }
    case RecordType::kAlterPartition: {
      AlterPartitionRecord x;
      int32_t p = 0, epoch = 0;
      if (!r.I32(&p) || !GetUuid(r, &x.topic_id) || !GetNodeId(r, &x.leader) || !r.I32(&epoch) ||
          !r.I32(&x.partition_epoch) || !GetNodes(r, &x.new_isr)) {
        return false;
      }
      x.partition_id = PartitionId(p);
      x.leader_epoch = LeaderEpoch(epoch);
      *out = std::move(x);
      return true;
    }
  }
  return false;
}

bool KnownType(int16_t t) {
  switch (static_cast<RecordType>(t)) {
    case RecordType::kRegisterBroker:
    case RecordType::kTopic:
    case RecordType::kPartition:
    case RecordType::kConfig:
    case RecordType::kPartitionChange:
    case RecordType::kFenceBroker:
    case RecordType::kUnfenceBroker:
    case RecordType::kRemoveTopic:
    case RecordType::kProducerIds:
    case RecordType::kClusterId:
    case RecordType::kAlterPartition:
      return true;
  }
  return false;
}

}  // namespace

RecordType TypeOf(const MetadataRecord& r) {
  static constexpr RecordType kTypes[] = {RecordType::kRegisterBroker,  RecordType::kTopic,
                                          RecordType::kPartition,       RecordType::kConfig,
                                          RecordType::kPartitionChange, RecordType::kFenceBroker,
                                          RecordType::kUnfenceBroker,   RecordType::kRemoveTopic,
                                          RecordType::kProducerIds,     RecordType::kClusterId,
                                          RecordType::kAlterPartition};
  static_assert(std::size(kTypes) == std::variant_size_v<MetadataRecord>);
  return kTypes[r.index()];
}

const char* RecordTypeName(RecordType t) {
  switch (t) {
    case RecordType::kRegisterBroker:
      return "RegisterBrokerRecord";
    case RecordType::kTopic:
      return "TopicRecord";
    case RecordType::kPartition:
      return "PartitionRecord";
    case RecordType::kConfig:
      return "ConfigRecord";
    case RecordType::kPartitionChange:
      return "PartitionChangeRecord";
    case RecordType::kFenceBroker:
      return "FenceBrokerRecord";
    case RecordType::kUnfenceBroker:
      return "UnfenceBrokerRecord";
    case RecordType::kRemoveTopic:
      return "RemoveTopicRecord";
    case RecordType::kProducerIds:
      return "ProducerIdsRecord";
    case RecordType::kClusterId:
      return "ClusterIdRecord";
    case RecordType::kAlterPartition:
      return "AlterPartitionRecord";
  }
  return "unknown record";
}

std::string EncodeRecord(const MetadataRecord& r) {
  std::string out;
  ByteWriter w(&out);
  w.I8(kRecordFrameVersion);
  w.I16(static_cast<int16_t>(TypeOf(r)));
  w.I16(VersionOf(TypeOf(r)));
  std::visit(BodyWriter{w}, r);
  return out;
}

Result<MetadataRecord> DecodeRecord(std::string_view bytes) {
  ByteReader r(bytes);
  int8_t frame = 0;
  int16_t type = 0, version = 0;
  if (!r.I8(&frame) || !r.I16(&type) || !r.I16(&version)) {
    return Status::Corruption("metadata record: short header");
  }
  if (frame != kRecordFrameVersion) {
    return Status::Unsupported("metadata record frame version " + std::to_string(frame));
  }
  if (!KnownType(type)) return Status::Unsupported("metadata record type " + std::to_string(type));
  auto t = static_cast<RecordType>(type);
  if (version < 0 || version > VersionOf(t)) {
    return Status::Unsupported(std::string(RecordTypeName(t)) + " version " +
                               std::to_string(version) + " (this build reads versions up to " +
                               std::to_string(VersionOf(t)) + ")");
  }
  MetadataRecord out;
  if (!ReadBody(r, t, version, &out)) {
    return Status::Corruption(std::string(RecordTypeName(t)) + ": short or damaged body");
  }
  if (!r.empty()) {
    return Status::Corruption(std::string(RecordTypeName(t)) + ": " +
                              std::to_string(r.remaining()) + " bytes after the body");
  }
  return out;
}

std::string EncodeCommand(const std::vector<MetadataRecord>& records) {
  std::string out;
  ByteWriter w(&out);
  w.I32(static_cast<int32_t>(records.size()));
  for (const auto& rec : records) {
    std::string one = EncodeRecord(rec);
    w.I32(static_cast<int32_t>(one.size()));
    w.Raw(one);
  }
  return out;
}

Result<std::vector<MetadataRecord>> DecodeCommand(std::string_view bytes) {
  ByteReader r(bytes);
  int32_t n = 0;
  if (!r.I32(&n) || n < 0) return Status::Corruption("metadata command: bad record count");
  std::vector<MetadataRecord> out;
  for (int32_t i = 0; i < n; ++i) {
    int32_t len = 0;
    std::string_view one;
    if (!r.I32(&len) || len < 0 || !r.Bytes(static_cast<size_t>(len), &one)) {
      return Status::Corruption("metadata command: record " + std::to_string(i) + " is cut short");
    }
    SILT_ASSIGN_OR_RETURN(MetadataRecord rec, DecodeRecord(one));
    out.push_back(std::move(rec));
  }
  if (!r.empty()) return Status::Corruption("metadata command: bytes after the last record");
  return out;
}

}  // namespace silt::cluster
