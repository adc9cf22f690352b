// Reading the metadata log off disk: the files libraft 0.15 keeps in a node's Raft directory
// (<data dir>/silt-metadata-raft/), decoded down to the metadata records (metadata_records.h),
// for `silt dump-segment`. Read-only; never needs the node to be stopped, but a file being
// written may end in a batch not yet complete (reported, like a torn tail).
//
// libraft's layouts (from its src/uv_segment.c, uv_encoding.c, uv_snapshot.c; little-endian):
//
//   segment file "<first>-<last>" (closed, %016llu each) or "open-<n>" (being written):
//     format       u64  1
//     batch...     until the end (an open segment is preallocated: zero bytes after the last)
//   batch =>
//     header_crc   u32  checksum of n and the entry headers
//     data_crc     u32  checksum of the entries' data
//     n            u64  entries in the batch (> 0)
//     entry_header => term u64, type u8 (1 command, 2 barrier, 3 configuration), 3 unused,
//                     length u32                                          (n of them)
//     data         the n payloads in order, each padded to a multiple of 8
//   checksum: CRC-32 over polynomial 0x04c11db7, most significant bit first, initial value 0,
//             no final xor (libiberty's crc32, which libraft uses).
//
//   snapshot "snapshot-<term>-<index>-<timestamp>": silt's snapshot bytes (raft_quorum.cc),
//     uncompressed (silt turns libraft's LZ4 snapshot compression off);
//   "<that name>.meta": format u64, crc u64, configuration index u64, configuration length u64,
//     configuration.
//   "metadata1", "metadata2": libraft's term and vote, not read here.
//
// silt's command entry payload (raft_quorum.cc): version i8 (1), 3 reserved bytes,
// command_length u32 big-endian, request_id [16], command (metadata_records.h's Command).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/uuid.h"
#include "cluster/metadata_records.h"

namespace silt::cluster {

enum class RaftFileKind {
  kClosedSegment,  // "<first>-<last>"
  kOpenSegment,    // "open-<n>"
  kSnapshot,       // "snapshot-<term>-<index>-<timestamp>"
  kSnapshotMeta,   // the same with ".meta"
  kOther,          // metadata1/2, anything else
};

struct RaftFileName {
  RaftFileKind kind = RaftFileKind::kOther;
  uint64_t first_index = 0;  // closed segment
  uint64_t last_index = 0;   // closed segment
  uint64_t counter = 0;      // open segment
  uint64_t term = 0;         // snapshot
  uint64_t index = 0;        // snapshot: the last index it covers
};

// Classifies a file by its base name, as libraft names them.
RaftFileName ParseRaftFileName(std::string_view basename);

// libraft's entry types.
inline constexpr uint8_t kRaftCommand = 1;
inline constexpr uint8_t kRaftBarrier = 2;
inline constexpr uint8_t kRaftChange = 3;
const char* RaftEntryTypeName(uint8_t type);

struct RaftLogEntry {
  uint64_t index = 0;  // 0: unknown (an open segment read without the segments before it)
  uint64_t term = 0;
  uint8_t type = 0;
  std::string payload;
  uint64_t file_position = 0;  // where its batch starts in the file
};

// The checksum libraft puts on its batches (see above).
uint32_t RaftCrc32(std::string_view bytes, uint32_t crc = 0);

// Reads every batch of one segment file, numbering entries from `first_index` (0 if unknown).
// Entries before a problem are in *entries either way. Corruption naming the byte position
// for a checksum mismatch or an impossible header; Truncated for a batch cut short at the end
// (a file being written). The zeroed tail of an open segment ends it quietly.
Status ReadRaftSegment(const std::string& path, uint64_t first_index,
                       std::vector<RaftLogEntry>* entries);

// A command entry's payload, decoded.
struct MetadataLogCommand {
  Uuid request_id;  // zero: no dedup
  std::vector<MetadataRecord> records;
};
// Corruption (or Unsupported for another payload version) when it does not decode.
Result<MetadataLogCommand> DecodeCommandEntry(std::string_view payload);

// A snapshot data file, decoded: the dedup window's size and the image as records.
struct MetadataLogSnapshot {
  int32_t dedup_window = 0;
  std::vector<MetadataRecord> records;
};
Result<MetadataLogSnapshot> ReadMetadataSnapshot(const std::string& path);

// The Raft directory's files in log order: snapshots (by index), closed segments (by first
// index), open segments (by counter); .meta and libraft's metadata files left out.
Result<std::vector<std::string>> ListMetadataLogFiles(const std::string& dir);

}  // namespace silt::cluster
