// The two sparse indexes of a segment, kept in memory and mirrored to Kafka's files:
//
//   <base>.index      entries {relativeOffset: int32, position: int32}, big-endian; the offset is
//                     that of the LAST record of the batch starting at `position` (as Kafka
//                     writes it), so the batch holding offset o is found by taking the largest
//                     entry <= o and scanning forward.
//   <base>.timeindex  entries {timestamp: int64, relativeOffset: int32}; timestamps strictly
//                     increase; the offset is the last offset of the batch where the segment's
//                     max timestamp reached `timestamp`.
//
// Entries are appended in memory and written to the file in groups (every kWriteBatch entries,
// and on Sync/close), so an append costs no extra system call; entries not yet written after a
// crash are rebuilt by recovery, which rescans every segment past the recovery point. Kafka
// preallocates and memory-maps these files; silt keeps them exactly as long as their entries,
// which Kafka reads the same way. The file is opened only for the write (or fsync) at hand and
// closed after it, so an index holds no descriptor at rest, and it is not created until it has
// an entry to hold or Sync() asks for it. Not thread-safe: the owning Segment locks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/file.h"
#include "base/ids.h"
#include "base/status.h"

namespace silt::storage {

// What the index classes know of their file, which is open only while written (index.cc).
struct IndexFile {
  enum class State {
    kUnknown,  // may hold anything: cut to the persisted entries before the next write
    kAbsent,   // does not exist (and nothing is persisted)
    kExact,    // exists and holds exactly the persisted entries
  };
  State state = State::kUnknown;
  bool unsynced = false;  // written or cut since the last fdatasync
  // Makes the file hold exactly `persisted` bytes followed by `tail` (written at `persisted`),
  // opening and closing it; when `sync`, also fdatasyncs it if anything changed since the last
  // sync (creating it if absent).
  Status Write(const std::string& path, int64_t persisted, std::string_view tail, bool sync);
};

class OffsetIndex {
 public:
  struct Entry {
    int64_t offset;    // absolute; the last offset of the batch at `position`
    int64_t position;  // byte position in the .log
    // Known for entries added by this process (not stored in the file): the batch's base
    // offset and size, which spare readers a header read. -1 when unknown.
    int64_t base = -1;
    int64_t size = -1;
    bool known() const { return base >= 0 && size > 0; }
  };

  OffsetIndex(std::string path, Offset base) : path_(std::move(path)), base_(base) {}

  const std::string& path() const { return path_; }
  const std::vector<Entry>& entries() const { return entries_; }
  size_t size_bytes() const { return entries_.size() * kEntrySize; }

  // Reads the file when it exists and keeps the longest prefix of well-formed entries (relative
  // offsets >= 0 and strictly increasing, positions strictly increasing and below `log_size`).
  // *intact is false when the file is missing, has a partial entry, or entries were dropped.
  Status Load(int64_t log_size, bool* intact);
  // From now on the index is mirrored to its file (without this it is memory-only). Opens
  // nothing: the file is opened by each write. `absent` tells that the file does not exist
  // (a new segment), so that nothing needs truncating before the first write.
  void EnableWrites(bool absent = false);
  bool writable() const { return writes_; }

  // Adds an entry (offset must exceed the last one); see above for when it reaches the file.
  Status Append(Offset offset, int64_t position, Offset base = Offset(-1), int64_t size = -1);
  // Largest entry with offset <= target, or nullptr.
  const Entry* Floor(Offset target) const;
  // Largest entry with position <= max_position and offset < below, or nullptr.
  const Entry* LastWithin(int64_t max_position, Offset below) const;
  // The entry after `e` when it describes the batch right after e's (both known, adjacent).
  const Entry* NextAdjacent(const Entry* e) const {
    if (e == nullptr || !e->known()) return nullptr;
    size_t i = static_cast<size_t>(e - entries_.data()) + 1;
    if (i >= entries_.size() || entries_[i].position != e->position + e->size) return nullptr;
    return &entries_[i];
  }
  // Removes entries with offset >= `first_removed` (memory and file).
  Status TruncateFrom(Offset first_removed);
  // Drops every entry (memory and file).
  Status Clear();
  // Replaces the file's contents with the in-memory entries (after a rebuild).
  Status WriteAll();
  // Writes what is pending and fdatasyncs the file when it changed since the last Sync; creates
  // the file (empty) when it does not exist yet.
  Status Sync();
  Status Remove();
  // Writes entries not yet in the file.
  Status WritePending();
  void CloseFile() { (void)WritePending(); }

  static constexpr int kEntrySize = 8;
  static constexpr size_t kWriteBatch = 512;

 private:
  Status Persist(bool sync);

  std::string path_;
  Offset base_;
  std::vector<Entry> entries_;
  size_t persisted_ = 0;  // entries_[0, persisted_) are in the file
  bool writes_ = false;
  IndexFile file_;
};

class TimeIndex {
 public:
  struct Entry {
    int64_t timestamp;
    int64_t offset;  // absolute
  };

  TimeIndex(std::string path, Offset base) : path_(std::move(path)), base_(base) {}

  const std::string& path() const { return path_; }
  const std::vector<Entry>& entries() const { return entries_; }
  size_t size_bytes() const { return entries_.size() * kEntrySize; }

  // As OffsetIndex::Load; entries must have strictly increasing timestamps, non-decreasing
  // offsets, and offsets below `next_offset_limit` when that is known (else pass INT64_MAX).
  Status Load(int64_t next_offset_limit, bool* intact);
  void EnableWrites(bool absent = false);
  bool writable() const { return writes_; }

  // Adds (timestamp, offset) when timestamp is above the last entry's.
  Status MaybeAppend(int64_t timestamp, Offset offset);
  // Largest entry with timestamp < ts, or nullptr.
  const Entry* LastBefore(int64_t ts) const;
  const Entry* last() const { return entries_.empty() ? nullptr : &entries_.back(); }
  Status TruncateFrom(Offset first_removed);
  Status Clear();
  Status WriteAll();
  Status Sync();
  Status Remove();
  Status WritePending();
  void CloseFile() { (void)WritePending(); }

  static constexpr int kEntrySize = 12;
  static constexpr size_t kWriteBatch = 512;

 private:
  Status Persist(bool sync);

  std::string path_;
  Offset base_;
  std::vector<Entry> entries_;
  size_t persisted_ = 0;
  bool writes_ = false;
  IndexFile file_;
};

}  // namespace silt::storage
