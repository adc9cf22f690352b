// `silt dump-segment FILE...`: print the batches (and with --records, the records) of .log
// files, and the entries of .index/.timeindex files checked against their .log.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cinttypes>
#include <cstdio>
#include <iostream>
#include <optional>

#include "base/coding.h"
#include "base/file.h"
#include "client/offset_spec.h"
#include "client/record_format.h"
#include "cluster/metadata_log.h"
#include "cmd/command.h"
#include "cmd/usage.h"
#include "format/layout.h"
#include "format/legacy.h"
#include "format/producer_snapshot.h"
#include "format/record_batch.h"
#include "protocol/consumer_offsets.h"
#include "storage/verify.h"

namespace silt::cmd {
namespace {

struct DumpFlags {
  std::vector<std::string> files;
  bool records = false;
  bool json = false;
  std::string format = "text";
  bool shallow = false;
};

// True for a file in a `__consumer_offsets-N` partition directory, whose records are Kafka's
// committed offsets and group metadata (protocol/consumer_offsets.h).
bool IsConsumerOffsetsFile(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return false;
  std::string dir = path.substr(0, slash);
  size_t start = dir.rfind('/');
  dir = start == std::string::npos ? dir : dir.substr(start + 1);
  const std::string prefix = std::string(protocol::kConsumerOffsetsTopic) + "-";
  if (dir.size() <= prefix.size() || dir.compare(0, prefix.size(), prefix) != 0) return false;
  for (size_t i = prefix.size(); i < dir.size(); ++i) {
    if (dir[i] < '0' || dir[i] > '9') return false;
  }
  return true;
}

// --iso-time: text output shows timestamps as ISO-8601 UTC instead of milliseconds.
bool g_iso_time = false;

std::string Time(int64_t ms) {
  return g_iso_time && ms >= 0 ? client::FormatTimestampMs(ms) : std::to_string(ms);
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Bytes as JSON: a string when they are valid UTF-8, else {"base64": "..."}; null stays null.
nlohmann::ordered_json BytesJson(bool is_null, std::string_view b) {
  if (is_null) return nullptr;
  if (client::IsValidUtf8(b)) return std::string(b);
  std::string encoded;
  client::Base64Encode(b, &encoded);
  return nlohmann::ordered_json{{"base64", encoded}};
}

// Bytes for a terminal: printable ASCII and UTF-8 as is, anything else as \xNN.
std::string BytesText(bool is_null, std::string_view b) {
  if (is_null) return "null";
  if (client::IsValidUtf8(b)) {
    bool plain = true;
    for (char c : b)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) plain = false;
    if (plain) return std::string(b);
  }
  std::string out;
  for (char c : b) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\') {
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    }
  }
  return out;
}

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

const char* LegacyCodec(int8_t attributes) {
  return format::CompressionName(static_cast<format::Compression>(attributes & 7));
}

nlohmann::ordered_json RecordJson(const format::RecordView& r) {
  nlohmann::ordered_json h = nlohmann::ordered_json::array();
  for (const auto& [k, v] : r.headers)
    h.push_back({{"key", std::string(k)}, {"value", BytesJson(!v.has_value(), v.value_or(""))}});
  return {{"offset", r.offset},
          {"timestamp", r.timestamp},
          {"key", BytesJson(r.key_null, r.key)},
          {"value", BytesJson(r.value_null, r.value)},
          {"headers", h}};
}

// A __consumer_offsets record decoded: {"key": {...}, "value": {...} or null}. Parts that do
// not decode say so in an "error" field rather than failing the dump.
nlohmann::ordered_json ConsumerOffsetsJson(const format::RecordView& r) {
  nlohmann::ordered_json out;
  if (r.key_null) return {{"error", "null key"}};
  auto key = protocol::DecodeConsumerOffsetsKey(r.key);
  if (!key.ok()) return {{"key", {{"error", key.status().ToString()}}}};
  using Kind = protocol::ConsumerOffsetsKey::Kind;
  switch (key->kind) {
    case Kind::kOffsetCommit:
      out["key"] = {{"type", "offset_commit"},
                    {"version", key->version},
                    {"group", key->offset.group},
                    {"topic", key->offset.topic},
                    {"partition", key->offset.partition}};
      break;
    case Kind::kGroupMetadata:
      out["key"] = {{"type", "group_metadata"},
                    {"version", key->version},
                    {"group", key->metadata.group}};
      break;
    case Kind::kOther:
      out["key"] = {{"type", "unknown"}, {"version", key->version}};
      return out;
  }
  if (r.value_null) {
    out["value"] = nullptr;  // a tombstone: the offset or the group was deleted
    return out;
  }
  if (key->kind == Kind::kOffsetCommit) {
    auto v = protocol::DecodeOffsetCommitValue(r.value);
    if (!v.ok()) {
      out["value"] = {{"error", v.status().ToString()}};
      return out;
    }
    out["value"] = {{"version", v->version},
                    {"offset", v->offset},
                    {"leaderEpoch", v->leader_epoch},
                    {"metadata", v->metadata},
                    {"commitTimestamp", v->commit_timestamp}};
    if (v->version == 1) out["value"]["expireTimestamp"] = v->expire_timestamp;
    return out;
  }
  auto v = protocol::DecodeGroupMetadataValue(r.value);
  if (!v.ok()) {
    out["value"] = {{"error", v.status().ToString()}};
    return out;
  }
  nlohmann::ordered_json members = nlohmann::ordered_json::array();
  for (const auto& m : v->members) {
    members.push_back({{"memberId", m.member_id},
                       {"groupInstanceId", m.group_instance_id ? nlohmann::ordered_json(*m.group_instance_id)
                                                               : nlohmann::ordered_json(nullptr)},
                       {"clientId", m.client_id},
                       {"clientHost", m.client_host},
                       {"rebalanceTimeout", m.rebalance_timeout},
                       {"sessionTimeout", m.session_timeout},
                       {"subscription", BytesJson(false, m.subscription)},
                       {"assignment", BytesJson(false, m.assignment)}});
  }
  auto opt = [](const std::optional<std::string>& s) {
    return s ? nlohmann::ordered_json(*s) : nlohmann::ordered_json(nullptr);
  };
  out["value"] = {{"version", v->version},
                  {"protocolType", v->protocol_type},
                  {"generation", v->generation},
                  {"protocol", opt(v->protocol)},
                  {"leader", opt(v->leader)},
                  {"currentStateTimestamp", v->current_state_timestamp},
                  {"members", members}};
  return out;
}

std::string RecordText(const format::RecordView& r) {
  std::string s = "| offset: " + std::to_string(r.offset) +
                  " timestamp: " + Time(r.timestamp) +
                  " keySize: " + std::to_string(r.key_null ? -1 : static_cast<int64_t>(r.key.size())) +
                  " valueSize: " +
                  std::to_string(r.value_null ? -1 : static_cast<int64_t>(r.value.size()));
  if (!r.headers.empty()) {
    s += " headers: [";
    bool first = true;
    for (const auto& [k, v] : r.headers) {
      if (!first) s += ", ";
      first = false;
      s += BytesText(false, k) + "=" + BytesText(!v.has_value(), v.value_or(""));
    }
    s += "]";
  }
  s += " key: " + BytesText(r.key_null, r.key) + " value: " + BytesText(r.value_null, r.value);
  return s;
}

Status DumpLog(const std::string& path, const DumpFlags& f, storage::VerifyReport* report) {
  const bool offsets_topic = IsConsumerOffsetsFile(path);
  storage::ScanOptions options;
  options.check_records = !f.shallow;
  options.check_indexes = false;
  Status record_error;
  Status s = storage::ScanLogFile(path, options, [&](const storage::EntryInfo& e) {
    nlohmann::ordered_json j;
    std::string line;
    if (e.magic == 2) {
      const auto& h = e.header;
      if (f.json) {
        j = {{"position", e.position},
             {"baseOffset", h.base_offset},
             {"lastOffset", e.last_offset},
             {"recordCount", h.records_count},
             {"size", e.size},
             {"magic", e.magic},
             {"compression", format::CompressionName(h.compression())},
             {"crc", h.crc},
             {"crcValid", e.crc_valid},
             {"partitionLeaderEpoch", h.partition_leader_epoch},
             {"timestampType", h.log_append_time() ? "LogAppendTime" : "CreateTime"},
             {"baseTimestamp", h.base_timestamp},
             {"maxTimestamp", h.max_timestamp},
             {"producerId", h.producer_id},
             {"producerEpoch", h.producer_epoch},
             {"baseSequence", h.base_sequence},
             {"lastSequence", h.last_sequence()},
             {"isTransactional", h.transactional()},
             {"isControl", h.control()}};
      } else {
        line = "position: " + std::to_string(e.position) + " baseOffset: " +
               std::to_string(h.base_offset) + " lastOffset: " + std::to_string(e.last_offset) +
               " recordCount: " + std::to_string(h.records_count) + " size: " +
               std::to_string(e.size) + " magic: 2 compression: " +
               format::CompressionName(h.compression()) + " crc: " + Hex32(h.crc) +
               " crcValid: " + (e.crc_valid ? "true" : "false") + " partitionLeaderEpoch: " +
               std::to_string(h.partition_leader_epoch) + " " +
               (h.log_append_time() ? "LogAppendTime" : "CreateTime") + " baseTimestamp: " +
               Time(h.base_timestamp) + " maxTimestamp: " + Time(h.max_timestamp) +
               " producerId: " + std::to_string(h.producer_id) +
               " producerEpoch: " + std::to_string(h.producer_epoch) + " baseSequence: " +
               std::to_string(h.base_sequence) + " isTransactional: " +
               (h.transactional() ? "true" : "false") + " isControl: " +
               (h.control() ? "true" : "false");
      }
      if (f.records) {
        auto view = format::RecordBatchView::Parse(e.bytes);
        nlohmann::ordered_json recs = nlohmann::ordered_json::array();
        std::string text;
        Status rs = view.ok() ? view->ForEachRecord([&](const format::RecordView& r) {
          if (f.json) {
            recs.push_back(RecordJson(r));
            if (offsets_topic && !e.header.control()) recs.back()["decoded"] = ConsumerOffsetsJson(r);
          } else {
            text += "\n" + RecordText(r);
            if (offsets_topic && !e.header.control()) text += " decoded: " + ConsumerOffsetsJson(r).dump();
          }
          return true;
        }) : view.status();
        if (!rs.ok() && record_error.ok())
          record_error = rs.WithContext(path + ":" + std::to_string(e.position));
        if (f.json) j["records"] = recs;
        else line += text;
      }
    } else {
      if (f.json) {
        j = {{"position", e.position},
             {"baseOffset", e.first_offset},
             {"lastOffset", e.last_offset},
             {"size", e.size},
             {"magic", e.magic},
             {"compression", LegacyCodec(e.legacy_attributes)},
             {"crc", e.crc},
             {"crcValid", e.crc_valid}};
        if (e.magic == 1) j["timestamp"] = e.timestamp;
      } else {
        line = "position: " + std::to_string(e.position) + " offset: " +
               std::to_string(e.first_offset) + " size: " + std::to_string(e.size) +
               " magic: " + std::to_string(e.magic) + " compression: " +
               LegacyCodec(e.legacy_attributes) + " crc: " + Hex32(e.crc) + " crcValid: " +
               (e.crc_valid ? "true" : "false");
        if (e.magic == 1) line += " timestamp: " + Time(e.timestamp);
      }
      if (f.records) {
        nlohmann::ordered_json recs = nlohmann::ordered_json::array();
        std::string text;
        format::LegacyOptions lo;
        lo.verify_crc = false;  // the entry's CRC is reported above; show what it holds anyway
        lo.allow_zstd = true;
        Status rs = format::ForEachLegacyMessage(e.bytes, lo, [&](const format::LegacyMessage& m) {
          format::RecordView r = m.ToRecordView();
          if (f.json) recs.push_back(RecordJson(r));
          else text += "\n" + RecordText(r);
          return true;
        }, e.position);
        if (!rs.ok() && record_error.ok())
          record_error = rs.WithContext(path + ":" + std::to_string(e.position));
        if (f.json) j["records"] = recs;
        else line += text;
      }
    }
    if (f.json) std::cout << j.dump() << '\n';
    else std::cout << line << '\n';
    return std::cout.good();  // stop once the reader has gone (| head)
  }, report);
  if (!s.ok()) return s;
  return record_error;
}

Status DumpIndex(const std::string& path, bool time, const DumpFlags& f,
                 storage::VerifyReport* report) {
  SILT_ASSIGN_OR_RETURN(std::string d, ReadFile(path));
  std::string name = BaseName(path);
  int64_t base = 0;
  for (size_t i = 0; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i)
    base = base * 10 + (name[i] - '0');
  const size_t w = time ? format::kTimeIndexEntrySize : format::kIndexEntrySize;
  for (size_t i = 0; i + w <= d.size(); i += w) {
    const char* e = d.data() + i;
    if (time) {
      int64_t ts = static_cast<int64_t>(DecodeBE64(e));
      int64_t off = base + static_cast<int32_t>(DecodeBE32(e + 8));
      if (i > 0 && ts == 0 && off == base) break;  // preallocated, unused
      if (f.json) std::cout << nlohmann::ordered_json{{"timestamp", ts}, {"offset", off}}.dump() << '\n';
      else std::cout << "timestamp: " << Time(ts) << " offset: " << off << '\n';
    } else {
      int64_t off = base + static_cast<int32_t>(DecodeBE32(e));
      int32_t pos = static_cast<int32_t>(DecodeBE32(e + 4));
      if (i > 0 && off == base && pos == 0) break;
      if (f.json) std::cout << nlohmann::ordered_json{{"offset", off}, {"position", pos}}.dump() << '\n';
      else std::cout << "offset: " << off << " position: " << pos << '\n';
    }
  }
  std::string log = path.substr(0, path.rfind('.')) + format::kLogSuffix;
  if (!PathExists(log)) {
    std::cerr << "silt: note: no " << BaseName(log) << " beside " << path
              << "; entries not checked\n";
    return Status::OK();
  }
  storage::ScanOptions o;
  o.check_records = false;
  return storage::VerifyPath(path, o, report);
}

// A producer-state snapshot (format/producer_snapshot.h): one line per entry.
Status DumpSnapshot(const std::string& path, const DumpFlags& f) {
  SILT_ASSIGN_OR_RETURN(std::string data, ReadFile(path));
  std::vector<format::ProducerSnapshotEntry> entries;
  if (Status s = format::DecodeProducerSnapshot(data, &entries); !s.ok())
    return s.WithContext(path);
  if (!f.json) std::cout << "Producer-state snapshot, " << entries.size() << " entries\n";
  for (const auto& e : entries) {
    if (f.json) {
      std::cout << nlohmann::ordered_json{{"producer_id", e.producer_id},
                                          {"epoch", e.epoch},
                                          {"last_sequence", e.last_sequence},
                                          {"last_offset", e.last_offset},
                                          {"offset_delta", e.offset_delta},
                                          {"timestamp", e.timestamp},
                                          {"coordinator_epoch", e.coordinator_epoch},
                                          {"current_txn_first_offset", e.current_txn_first_offset}}
                       .dump()
                << '\n';
    } else {
      std::cout << "producer_id: " << e.producer_id << " epoch: " << e.epoch
                << " last_sequence: " << e.last_sequence << " last_offset: " << e.last_offset
                << " offset_delta: " << e.offset_delta << " timestamp: " << Time(e.timestamp)
                << " coordinator_epoch: " << e.coordinator_epoch
                << " current_txn_first_offset: " << e.current_txn_first_offset << '\n';
    }
  }
  return Status::OK();
}

// ---- the metadata log (<data dir>/silt-metadata-raft/) ------------------------------------

using Json = nlohmann::ordered_json;

Json Ids(const std::vector<NodeId>& ids) {
  Json a = Json::array();
  for (NodeId n : ids) a.push_back(n.value());
  return a;
}

Json OptionalIds(const std::optional<std::vector<NodeId>>& ids) {
  return ids ? Ids(*ids) : Json(nullptr);
}

// One metadata record as {"type": ..., fields...}, with KRaft's field names in snake_case.
Json MetadataRecordJson(const cluster::MetadataRecord& rec) {
  Json j = {{"type", cluster::RecordTypeName(cluster::TypeOf(rec))}};
  std::visit(
      [&j](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, cluster::RegisterBrokerRecord>) {
          j["broker_id"] = r.broker_id.value();
          j["incarnation_id"] = r.incarnation_id.ToString();
          j["host"] = r.host;
          j["port"] = r.port;
        } else if constexpr (std::is_same_v<T, cluster::TopicRecord>) {
          j["name"] = r.name;
          j["topic_id"] = r.topic_id.ToString();
        } else if constexpr (std::is_same_v<T, cluster::PartitionRecord>) {
          j["partition_id"] = r.partition_id.value();
          j["topic_id"] = r.topic_id.ToString();
          j["replicas"] = Ids(r.replicas);
          j["isr"] = Ids(r.isr);
          j["leader"] = r.leader.value();
          j["leader_epoch"] = r.leader_epoch.value();
          j["partition_epoch"] = r.partition_epoch;
        } else if constexpr (std::is_same_v<T, cluster::ConfigRecord>) {
          j["resource_type"] = r.resource_type == cluster::ConfigResource::kTopic ? "topic" : "broker";
          j["resource_name"] = r.resource_name;
          j["name"] = r.name;
          j["value"] = r.value ? Json(*r.value) : Json(nullptr);
        } else if constexpr (std::is_same_v<T, cluster::PartitionChangeRecord>) {
          j["partition_id"] = r.partition_id.value();
          j["topic_id"] = r.topic_id.ToString();
          j["isr"] = OptionalIds(r.isr);
          j["leader"] = r.leader.value();
          j["replicas"] = OptionalIds(r.replicas);
        } else if constexpr (std::is_same_v<T, cluster::FenceBrokerRecord> ||
                             std::is_same_v<T, cluster::UnfenceBrokerRecord>) {
          j["broker_id"] = r.broker_id.value();
        } else if constexpr (std::is_same_v<T, cluster::RemoveTopicRecord>) {
          j["topic_id"] = r.topic_id.ToString();
        } else if constexpr (std::is_same_v<T, cluster::ProducerIdsRecord>) {
          j["broker_id"] = r.broker_id.value();
          j["next_producer_id"] = r.next_producer_id.value();
          if (r.reserved_producer_id.value() >= 0)
            j["reserved_producer_id"] = r.reserved_producer_id.value();
        } else if constexpr (std::is_same_v<T, cluster::ClusterIdRecord>) {
          j["cluster_id"] = r.cluster_id;
        }
      },
      rec);
  return j;
}

// "TopicRecord name=orders topic_id=..." for the text form.
std::string MetadataRecordText(const cluster::MetadataRecord& rec) {
  Json j = MetadataRecordJson(rec);
  std::string s = j["type"].get<std::string>();
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "type") continue;
    s += " " + it.key() + "=" + (it->is_string() ? it->get<std::string>() : it->dump());
  }
  return s;
}

bool IsMetadataLogFile(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return cluster::ParseRaftFileName(base).kind != cluster::RaftFileKind::kOther;
}

// A Raft directory: it holds libraft's files.
bool IsMetadataLogDir(const std::string& path) {
  auto names = ListDir(path);
  if (!names.ok()) return false;
  for (const auto& n : *names)
    if (n == "metadata1" || n == "metadata2" || IsMetadataLogFile(n)) return true;
  return false;
}

// Dumps one Raft file; `next_index` carries the numbering from a closed segment into the open
// segments after it (0: unknown).
Status DumpMetadataLogFile(const std::string& path, const DumpFlags& f, uint64_t* next_index) {
  size_t slash = path.rfind('/');
  cluster::RaftFileName name =
      cluster::ParseRaftFileName(slash == std::string::npos ? path : path.substr(slash + 1));
  if (name.kind == cluster::RaftFileKind::kSnapshotMeta) {
    if (!f.json) std::cout << path << ": snapshot metadata (libraft's configuration), skipped\n";
    return Status::OK();
  }
  if (name.kind == cluster::RaftFileKind::kSnapshot) {
    SILT_ASSIGN_OR_RETURN(cluster::MetadataLogSnapshot snap, cluster::ReadMetadataSnapshot(path));
    if (f.json) {
      Json recs = Json::array();
      for (const auto& r : snap.records) recs.push_back(MetadataRecordJson(r));
      std::cout << Json({{"file", path},
                         {"snapshot", {{"term", name.term}, {"index", name.index}}},
                         {"dedup_window", snap.dedup_window},
                         {"records", recs}})
                       .dump()
                << '\n';
    } else {
      std::cout << "snapshot term " << name.term << " index " << name.index << ": "
                << snap.records.size() << " records, dedup window " << snap.dedup_window << '\n';
      for (const auto& r : snap.records) std::cout << "  " << MetadataRecordText(r) << '\n';
    }
    *next_index = name.index + 1;
    return Status::OK();
  }
  uint64_t first = name.kind == cluster::RaftFileKind::kClosedSegment ? name.first_index
                                                                      : *next_index;
  std::vector<cluster::RaftLogEntry> entries;
  Status read = cluster::ReadRaftSegment(path, first, &entries);
  for (const auto& e : entries) {
    if (!std::cout.good()) break;
    Json j = {{"file", path},
              {"position", e.file_position},
              {"index", e.index ? Json(e.index) : Json(nullptr)},
              {"term", e.term},
              {"type", cluster::RaftEntryTypeName(e.type)},
              {"size", e.payload.size()}};
    std::string text = "index " + (e.index ? std::to_string(e.index) : std::string("?")) +
                       " term " + std::to_string(e.term) + " " +
                       cluster::RaftEntryTypeName(e.type) + " (" +
                       std::to_string(e.payload.size()) + " bytes)";
    std::vector<std::string> lines;
    if (e.type == cluster::kRaftCommand) {
      auto cmd = cluster::DecodeCommandEntry(e.payload);
      if (cmd.ok()) {
        j["request_id"] = cmd->request_id.is_zero() ? Json(nullptr)
                                                    : Json(cmd->request_id.ToString());
        Json recs = Json::array();
        for (const auto& r : cmd->records) {
          recs.push_back(MetadataRecordJson(r));
          lines.push_back(MetadataRecordText(r));
        }
        j["records"] = recs;
        if (!cmd->request_id.is_zero()) text += " request " + cmd->request_id.ToString();
      } else {
        j["error"] = cmd.status().message();
        text += ": " + cmd.status().message();
      }
    }
    if (f.json) {
      std::cout << j.dump() << '\n';
    } else {
      std::cout << text << '\n';
      for (const auto& l : lines) std::cout << "  " << l << '\n';
    }
  }
  if (!entries.empty() && entries.back().index) *next_index = entries.back().index + 1;
  return read;
}

bool IsSegmentFileName(const std::string& path) {
  return EndsWith(path, format::kLogSuffix) || EndsWith(path, format::kIndexSuffix) ||
         EndsWith(path, format::kTimeIndexSuffix) || EndsWith(path, format::kSnapshotSuffix);
}

int Run(const DumpFlags& f) {
  storage::VerifyReport report;
  int rc = kExitOk;
  // The metadata log: a Raft directory, or files of one, dumped in log order.
  std::vector<std::string> files;
  for (const auto& file : f.files) {
    if (IsDirectory(file) && IsMetadataLogDir(file)) {
      auto listed = cluster::ListMetadataLogFiles(file);
      if (!listed.ok()) return Fail(listed.status());
      files.insert(files.end(), listed->begin(), listed->end());
    } else {
      files.push_back(file);
    }
  }
  uint64_t next_index = 0;
  for (const auto& file : files) {
    if (!std::cout.good()) break;  // the reader has gone
    if (IsDirectory(file))
      return Fail(file + " is a directory; give segment files (.log, .index, .timeindex) or a "
                  "metadata log directory (silt-metadata-raft)");
    if (!PathExists(file)) return Fail("no such file: " + file);
    if (!IsSegmentFileName(file) && !IsMetadataLogFile(file))
      return Fail(file + " is not a segment file (expected a .log, .index, .timeindex or "
                  ".snapshot file of a partition directory, or a file of silt-metadata-raft)");
    if (!f.json && files.size() > 1) std::cout << "Dumping " << file << '\n';
    Status s;
    if (IsMetadataLogFile(file)) s = DumpMetadataLogFile(file, f, &next_index);
    else if (EndsWith(file, format::kIndexSuffix)) s = DumpIndex(file, false, f, &report);
    else if (EndsWith(file, format::kTimeIndexSuffix)) s = DumpIndex(file, true, f, &report);
    else if (EndsWith(file, format::kSnapshotSuffix)) s = DumpSnapshot(file, f);
    else s = DumpLog(file, f, &report);
    if (!s.ok()) {
      std::cout.flush();
      if (s.IsCorruption() || s.IsTruncated() || s.IsTooLarge()) {
        std::fprintf(stderr, "silt: problem: %s\n", s.message().c_str());
        rc = std::max(rc, kExitProblem);
      } else {
        return Fail(s);
      }
    }
  }
  std::cout.flush();
  for (const auto& p : report.problems)
    std::fprintf(stderr, "silt: problem: %s:%lld: %s: %s\n", p.file.c_str(),
                 static_cast<long long>(p.position), storage::ProblemKindName(p.kind),
                 p.detail.c_str());
  if (!report.problems.empty()) rc = std::max(rc, kExitProblem);
  return rc;
}

}  // namespace

RunFn RegisterDumpSegment(CLI::App* sub, GlobalOptions*) {
  auto f = std::make_shared<DumpFlags>();
  sub->add_option("file", f->files,
                  "segment files: .log, .index, .timeindex or .snapshot; or a metadata log "
                  "directory (silt-metadata-raft) or its files")
      ->required()
      ->type_name("FILE");
  sub->add_flag("--records", f->records, "print every record of each batch");
  sub->add_option("--format", f->format,
                  "text, or json: one JSON object per line per batch (records nested)")
      ->check(OneOf({"text", "json"}));
  sub->add_flag("--json", f->json, "the same as --format json");
  sub->add_flag("--shallow", f->shallow, "do not decode records to validate batches");
  sub->add_flag("--iso-time", g_iso_time,
                "text output: timestamps as ISO-8601 UTC instead of milliseconds");
  return [f] {
    if (f->format == "json") f->json = true;
    return Run(*f);
  };
}

}  // namespace silt::cmd
