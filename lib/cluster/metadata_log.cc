// Reading libraft's Raft directory (see metadata_log.h for the layouts).
#include "cluster/metadata_log.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>

#include "base/coding.h"
#include "base/file.h"

namespace silt::cluster {

namespace {

constexpr uint64_t kDiskFormat = 1;
constexpr size_t kFormatSize = 8;
constexpr size_t kBatchPreamble = 4 + 4 + 8;    // header_crc, data_crc, n
constexpr size_t kEntryHeader = 8 + 1 + 3 + 4;  // term, type, unused, length
constexpr int8_t kEntryVersion = 1;
constexpr int8_t kSnapshotVersion = 1;

uint64_t LE64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
uint32_t LE32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

// "<digits>" parsed whole into *v; false for anything else.
bool Digits(std::string_view s, uint64_t* v) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t x = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    x = x * 10 + static_cast<uint64_t>(c - '0');
  }
  *v = x;
  return true;
}

std::string Base(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

RaftFileName ParseRaftFileName(std::string_view name) {
  RaftFileName f;
  auto split = [](std::string_view s) {
    std::vector<std::string_view> parts;
    size_t start = 0;
    for (;;) {
      size_t dash = s.find('-', start);
      parts.push_back(s.substr(start, dash == std::string_view::npos ? dash : dash - start));
      if (dash == std::string_view::npos) return parts;
      start = dash + 1;
    }
  };
  if (name.rfind("open-", 0) == 0) {
    if (Digits(name.substr(5), &f.counter)) f.kind = RaftFileKind::kOpenSegment;
    return f;
  }
  if (name.rfind("snapshot-", 0) == 0) {
    std::string_view rest = name.substr(9);
    bool meta = rest.size() > 5 && rest.substr(rest.size() - 5) == ".meta";
    if (meta) rest.remove_suffix(5);
    auto parts = split(rest);
    uint64_t ts = 0;
    if (parts.size() == 3 && Digits(parts[0], &f.term) && Digits(parts[1], &f.index) &&
        Digits(parts[2], &ts)) {
      f.kind = meta ? RaftFileKind::kSnapshotMeta : RaftFileKind::kSnapshot;
    }
    return f;
  }
  auto parts = split(name);
  if (parts.size() == 2 && parts[0].size() == 16 && parts[1].size() == 16 &&
      Digits(parts[0], &f.first_index) && Digits(parts[1], &f.last_index)) {
    f.kind = RaftFileKind::kClosedSegment;
  }
  return f;
}

const char* RaftEntryTypeName(uint8_t type) {
  switch (type) {
    case kRaftCommand:
      return "command";
    case kRaftBarrier:
      return "barrier";
    case kRaftChange:
      return "configuration";
    default:
      return "unknown";
  }
}

uint32_t RaftCrc32(std::string_view bytes, uint32_t crc) {
  // The table of the MSB-first CRC over 0x04c11db7, built once.
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i << 24;
      for (int k = 0; k < 8; ++k) c = (c & 0x80000000u) ? (c << 1) ^ 0x04c11db7u : c << 1;
      t[i] = c;
    }
    return t;
  }();
  for (unsigned char b : bytes) crc = (crc << 8) ^ table[((crc >> 24) ^ b) & 0xff];
  return crc;
}

Status ReadRaftSegment(const std::string& path, uint64_t first_index,
                       std::vector<RaftLogEntry>* entries) {
  SILT_ASSIGN_OR_RETURN(std::string data, ReadFile(path));
  const bool open = ParseRaftFileName(Base(path)).kind == RaftFileKind::kOpenSegment;
  if (data.size() < kFormatSize) {
    if (open && data.empty()) return Status::OK();
    return Status::Truncated(path + ": " + std::to_string(data.size()) +
                             " bytes, shorter than the format header");
  }
  uint64_t format = LE64(data.data());
  if (format != kDiskFormat) {
    if (open && format == 0) return Status::OK();  // preallocated, nothing written yet
    return Status::Corruption(path + ": format version " + std::to_string(format) +
                              ", expected 1 (not a libraft segment?)");
  }
  uint64_t index = first_index;
  size_t pos = kFormatSize;
  while (pos < data.size()) {
    const size_t start = pos;
    auto at = [&](const std::string& what) {
      return path + ": batch at byte " + std::to_string(start) + ": " + what;
    };
    if (data.size() - pos < kBatchPreamble) {
      if (open && std::all_of(data.begin() + static_cast<long>(pos), data.end(),
                              [](char c) { return c == 0; }))
        return Status::OK();
      return Status::Truncated(at("cut short in its preamble"));
    }
    const uint32_t header_crc = LE32(data.data() + pos);
    const uint32_t data_crc = LE32(data.data() + pos + 4);
    const uint64_t n = LE64(data.data() + pos + 8);
    if (n == 0) {
      // An open segment's zeroed tail, past the last batch written.
      if (open && header_crc == 0 && data_crc == 0) return Status::OK();
      return Status::Corruption(at("entry count 0"));
    }
    if (n > (data.size() - pos) / kEntryHeader)
      return Status::Corruption(at("entry count " + std::to_string(n) + " exceeds the file"));
    const size_t header_len = 8 + kEntryHeader * n;
    if (data.size() - (pos + 8) < header_len)
      return Status::Truncated(at("cut short in its header"));
    std::string_view header(data.data() + pos + 8, header_len);
    if (RaftCrc32(header) != header_crc) return Status::Corruption(at("header checksum mismatch"));
    pos += 8 + header_len;
    std::vector<RaftLogEntry> batch(n);
    uint64_t data_len = 0;  // what the payloads take, padded
    uint64_t raw_len = 0;   // what data_crc covers: the payloads' own lengths (libraft's sum)
    for (uint64_t i = 0; i < n; ++i) {
      const char* h = header.data() + 8 + kEntryHeader * i;
      batch[i].term = LE64(h);
      batch[i].type = static_cast<uint8_t>(h[8]);
      const uint32_t len = LE32(h + 12);
      batch[i].payload.resize(len);
      data_len += (static_cast<uint64_t>(len) + 7) / 8 * 8;
      raw_len += len;
    }
    if (data.size() - pos < data_len) return Status::Truncated(at("cut short in its data"));
    if (RaftCrc32(std::string_view(data.data() + pos, raw_len)) != data_crc)
      return Status::Corruption(at("data checksum mismatch"));
    for (auto& e : batch) {
      const size_t len = e.payload.size();
      std::memcpy(e.payload.data(), data.data() + pos, len);
      pos += (len + 7) / 8 * 8;
      e.index = index ? index++ : 0;
      e.file_position = start;
      entries->push_back(std::move(e));
    }
  }
  return Status::OK();
}

Result<MetadataLogCommand> DecodeCommandEntry(std::string_view payload) {
  ByteReader rd(payload);
  int8_t version = 0;
  uint32_t len = 0;
  std::string_view id, command;
  if (!rd.I8(&version)) return Status::Corruption("empty command entry");
  if (version != kEntryVersion)
    return Status::Unsupported("command entry version " + std::to_string(version));
  if (!rd.Skip(3) || !rd.U32(&len) || !rd.Bytes(16, &id) || !rd.Bytes(len, &command))
    return Status::Corruption("command entry shorter than its header says");
  MetadataLogCommand out;
  Uuid::Bytes b;
  std::memcpy(b.data(), id.data(), 16);
  out.request_id = Uuid(b);
  SILT_ASSIGN_OR_RETURN(out.records, DecodeCommand(command));
  return out;
}

Result<MetadataLogSnapshot> ReadMetadataSnapshot(const std::string& path) {
  SILT_ASSIGN_OR_RETURN(std::string data, ReadFile(path));
  if (data.size() >= 4 && LE32(data.data()) == 0x184D2204u)
    return Status::Unsupported(path +
                               ": an LZ4-compressed snapshot (silt writes them "
                               "uncompressed)");
  ByteReader rd(data);
  int8_t version = 0;
  int32_t n = 0;
  if (!rd.I8(&version) || version != kSnapshotVersion || !rd.I32(&n) || n < 0)
    return Status::Corruption(path + ": not a silt metadata snapshot (version " +
                              std::to_string(version) + ")");
  for (int32_t i = 0; i < n; ++i) {
    int32_t len = 0;
    if (!rd.Skip(16) || !rd.I32(&len) || len < 0 || !rd.Skip(static_cast<size_t>(len)))
      return Status::Corruption(path + ": dedup window entry " + std::to_string(i) + " cut short");
  }
  MetadataLogSnapshot out;
  out.dedup_window = n;
  std::string_view state;
  if (!rd.Bytes(rd.remaining(), &state)) return Status::Corruption(path + ": no state");
  auto records = DecodeCommand(state);
  if (!records.ok()) return records.status().WithContext(path);
  out.records = std::move(records).value();
  return out;
}

Result<std::vector<std::string>> ListMetadataLogFiles(const std::string& dir) {
  SILT_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dir));
  struct Item {
    int rank;
    uint64_t key;
    std::string path;
  };
  std::vector<Item> items;
  for (const std::string& name : names) {
    RaftFileName f = ParseRaftFileName(name);
    std::string path = dir + "/" + name;
    switch (f.kind) {
      case RaftFileKind::kSnapshot:
        items.push_back({0, f.index, path});
        break;
      case RaftFileKind::kClosedSegment:
        items.push_back({1, f.first_index, path});
        break;
      case RaftFileKind::kOpenSegment:
        items.push_back({2, f.counter, path});
        break;
      default:
        break;
    }
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.key < b.key;
  });
  std::vector<std::string> out;
  for (auto& i : items) out.push_back(std::move(i.path));
  return out;
}

}  // namespace silt::cluster
