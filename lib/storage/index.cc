// Offset and time indexes of a segment (see index.h for the layouts).
#include "storage/index.h"

#include <algorithm>

#include "base/coding.h"
#include "format/layout.h"

namespace silt::storage {

static_assert(OffsetIndex::kEntrySize == format::kIndexEntrySize);
static_assert(TimeIndex::kEntrySize == format::kTimeIndexEntrySize);

namespace {

// Fewer entries than the file holds are persisted now: the file must be cut before it is next
// written.
void CutPersisted(IndexFile* f, size_t* persisted, size_t keep) {
  if (keep >= *persisted) return;
  *persisted = keep;
  if (f->state == IndexFile::State::kExact) f->state = IndexFile::State::kUnknown;
}

Status RemoveIndexFile(IndexFile* f, const std::string& path) {
  f->unsynced = false;
  if (PathExists(path)) {
    f->state = IndexFile::State::kUnknown;
    SILT_TRY(RemoveFile(path));
  }
  f->state = IndexFile::State::kAbsent;
  return Status::OK();
}

}  // namespace

// ---- IndexFile --------------------------------------------------------------------------

Status IndexFile::Write(const std::string& path, int64_t persisted, std::string_view tail,
                        bool sync) {
  const bool cut = state == State::kUnknown;
  const bool create = state == State::kAbsent && (sync || !tail.empty());
  if (!cut && !create && tail.empty() && !(sync && unsynced)) return Status::OK();
  if (state == State::kAbsent && !create) return Status::OK();
  SILT_ASSIGN_OR_RETURN(File f, File::Open(path, File::kCreate));
  if (cut) {
    SILT_TRY(f.Truncate(persisted));
    unsynced = true;
  }
  state = State::kExact;
  if (!tail.empty()) {
    unsynced = true;
    if (Status s = f.PWrite(persisted, tail); !s.ok()) {
      if (!f.Truncate(persisted).ok()) state = State::kUnknown;
      return s;
    }
  }
  if (sync && unsynced) {
    SILT_TRY(f.Sync());
    unsynced = false;
  }
  return f.Close();
}

// ---- OffsetIndex ------------------------------------------------------------------------

Status OffsetIndex::Load(int64_t log_size, bool* intact) {
  entries_.clear();
  persisted_ = 0;
  *intact = false;
  if (!PathExists(path_)) {
    file_.state = IndexFile::State::kAbsent;
    return Status::OK();
  }
  SILT_ASSIGN_OR_RETURN(std::string data, ReadFile(path_));
  *intact = data.size() % kEntrySize == 0;
  size_t n = data.size() / kEntrySize;
  entries_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const char* p = data.data() + i * kEntrySize;
    int32_t rel = static_cast<int32_t>(DecodeBE32(p));
    int32_t pos = static_cast<int32_t>(DecodeBE32(p + 4));
    bool ok = rel >= 0 && pos >= 0 && pos < log_size;
    if (ok && !entries_.empty()) {
      ok = base_.value() + rel > entries_.back().offset && pos > entries_.back().position;
    }
    if (!ok) {
      *intact = false;
      break;
    }
    entries_.push_back({base_.value() + rel, pos});
  }
  persisted_ = entries_.size();
  file_.state = data.size() == persisted_ * kEntrySize ? IndexFile::State::kExact
                                                       : IndexFile::State::kUnknown;
  file_.unsynced = true;  // a previous process may have written it without an fsync
  return Status::OK();
}

void OffsetIndex::EnableWrites(bool absent) {
  writes_ = true;
  if (absent && persisted_ == 0) file_.state = IndexFile::State::kAbsent;
}

Status OffsetIndex::Append(Offset offset, int64_t position, Offset base, int64_t size) {
  entries_.push_back({offset.value(), position, base.value(), size});
  if (writes_ && entries_.size() - persisted_ >= kWriteBatch) {
    Status s = WritePending();
    if (!s.ok()) {
      entries_.pop_back();
      return s;
    }
  }
  return Status::OK();
}

Status OffsetIndex::Persist(bool sync) {
  if (!writes_) return Status::OK();
  std::string data((entries_.size() - persisted_) * kEntrySize, '\0');
  for (size_t i = persisted_, j = 0; i < entries_.size(); ++i, j += kEntrySize) {
    EncodeBE32(&data[j], static_cast<uint32_t>(entries_[i].offset - base_.value()));
    EncodeBE32(&data[j + 4], static_cast<uint32_t>(entries_[i].position));
  }
  SILT_TRY(file_.Write(path_, static_cast<int64_t>(persisted_ * kEntrySize), data, sync));
  persisted_ = entries_.size();
  return Status::OK();
}

Status OffsetIndex::WritePending() { return Persist(/*sync=*/false); }

const OffsetIndex::Entry* OffsetIndex::Floor(Offset target) const {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), target.value(),
                             [](int64_t t, const Entry& e) { return t < e.offset; });
  if (it == entries_.begin()) return nullptr;
  return &*(it - 1);
}

const OffsetIndex::Entry* OffsetIndex::LastWithin(int64_t max_position, Offset below) const {
  // Both fields increase, so the entries satisfying each bound form a prefix.
  auto a = std::upper_bound(entries_.begin(), entries_.end(), max_position,
                            [](int64_t p, const Entry& e) { return p < e.position; });
  auto b = std::lower_bound(entries_.begin(), entries_.end(), below.value(),
                            [](const Entry& e, int64_t o) { return e.offset < o; });
  auto end = std::min(a, b);
  if (end == entries_.begin()) return nullptr;
  return &*(end - 1);
}

Status OffsetIndex::TruncateFrom(Offset first_removed) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), first_removed.value(),
                             [](const Entry& e, int64_t o) { return e.offset < o; });
  entries_.erase(it, entries_.end());
  CutPersisted(&file_, &persisted_, entries_.size());
  return WritePending();
}

Status OffsetIndex::Clear() {
  entries_.clear();
  CutPersisted(&file_, &persisted_, 0);
  return WritePending();
}

Status OffsetIndex::WriteAll() {
  CutPersisted(&file_, &persisted_, 0);
  return WritePending();
}

Status OffsetIndex::Sync() { return Persist(/*sync=*/true); }

Status OffsetIndex::Remove() {
  entries_.clear();
  persisted_ = 0;
  return RemoveIndexFile(&file_, path_);
}

// ---- TimeIndex --------------------------------------------------------------------------

Status TimeIndex::Load(int64_t next_offset_limit, bool* intact) {
  entries_.clear();
  persisted_ = 0;
  *intact = false;
  if (!PathExists(path_)) {
    file_.state = IndexFile::State::kAbsent;
    return Status::OK();
  }
  SILT_ASSIGN_OR_RETURN(std::string data, ReadFile(path_));
  *intact = data.size() % kEntrySize == 0;
  size_t n = data.size() / kEntrySize;
  entries_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const char* p = data.data() + i * kEntrySize;
    int64_t ts = static_cast<int64_t>(DecodeBE64(p));
    int32_t rel = static_cast<int32_t>(DecodeBE32(p + 8));
    int64_t off = base_.value() + rel;
    bool ok = rel >= 0 && off < next_offset_limit;
    if (ok && !entries_.empty()) {
      ok = ts > entries_.back().timestamp && off >= entries_.back().offset;
    }
    if (!ok) {
      *intact = false;
      break;
    }
    entries_.push_back({ts, off});
  }
  persisted_ = entries_.size();
  file_.state = data.size() == persisted_ * kEntrySize ? IndexFile::State::kExact
                                                       : IndexFile::State::kUnknown;
  file_.unsynced = true;
  return Status::OK();
}

void TimeIndex::EnableWrites(bool absent) {
  writes_ = true;
  if (absent && persisted_ == 0) file_.state = IndexFile::State::kAbsent;
}

Status TimeIndex::MaybeAppend(int64_t timestamp, Offset offset) {
  if (timestamp < 0) return Status::OK();
  if (!entries_.empty() && timestamp <= entries_.back().timestamp) return Status::OK();
  entries_.push_back({timestamp, offset.value()});
  if (writes_ && entries_.size() - persisted_ >= kWriteBatch) {
    Status s = WritePending();
    if (!s.ok()) {
      entries_.pop_back();
      return s;
    }
  }
  return Status::OK();
}

Status TimeIndex::Persist(bool sync) {
  if (!writes_) return Status::OK();
  std::string data((entries_.size() - persisted_) * kEntrySize, '\0');
  for (size_t i = persisted_, j = 0; i < entries_.size(); ++i, j += kEntrySize) {
    EncodeBE64(&data[j], static_cast<uint64_t>(entries_[i].timestamp));
    EncodeBE32(&data[j + 8], static_cast<uint32_t>(entries_[i].offset - base_.value()));
  }
  SILT_TRY(file_.Write(path_, static_cast<int64_t>(persisted_ * kEntrySize), data, sync));
  persisted_ = entries_.size();
  return Status::OK();
}

Status TimeIndex::WritePending() { return Persist(/*sync=*/false); }

const TimeIndex::Entry* TimeIndex::LastBefore(int64_t ts) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), ts,
                             [](const Entry& e, int64_t t) { return e.timestamp < t; });
  if (it == entries_.begin()) return nullptr;
  return &*(it - 1);
}

Status TimeIndex::TruncateFrom(Offset first_removed) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Entry& e) { return e.offset >= first_removed.value(); });
  entries_.erase(it, entries_.end());
  CutPersisted(&file_, &persisted_, entries_.size());
  return WritePending();
}

Status TimeIndex::Clear() {
  entries_.clear();
  CutPersisted(&file_, &persisted_, 0);
  return WritePending();
}

Status TimeIndex::WriteAll() {
  CutPersisted(&file_, &persisted_, 0);
  return WritePending();
}

Status TimeIndex::Sync() { return Persist(/*sync=*/true); }

Status TimeIndex::Remove() {
  entries_.clear();
  persisted_ = 0;
  return RemoveIndexFile(&file_, path_);
}

}  // namespace silt::storage
