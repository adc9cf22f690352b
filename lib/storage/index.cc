// Offset and time indexes of a segment (see index.h for the layouts).
#include "storage/index.h"

#include <algorithm>

#include "base/coding.h"
#include "format/layout.h"

namespace silt::storage {

static_assert(OffsetIndex::kEntrySize == format::kIndexEntrySize);
static_assert(TimeIndex::kEntrySize == format::kTimeIndexEntrySize);

// ---- OffsetIndex ------------------------------------------------------------------------

Status OffsetIndex::Load(int64_t log_size, bool* intact) {
  entries_.clear();
  *intact = false;
  if (!PathExists(path_)) return Status::OK();
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
  return Status::OK();
}

Status OffsetIndex::OpenForWrite() {
  if (file_.is_open()) return Status::OK();
  SILT_ASSIGN_OR_RETURN(file_, File::Open(path_, File::kCreate));
  return Status::OK();
}

Status OffsetIndex::Append(Offset offset, int64_t position, Offset base, int64_t size) {
  entries_.push_back({offset.value(), position, base.value(), size});
  if (file_.is_open() && entries_.size() - persisted_ >= kWriteBatch) {
    Status s = WritePending();
    if (!s.ok()) {
      entries_.pop_back();
      return s;
    }
  }
  return Status::OK();
}

Status OffsetIndex::WritePending() {
  if (!file_.is_open() || persisted_ >= entries_.size()) return Status::OK();
  std::string data((entries_.size() - persisted_) * kEntrySize, '\0');
  for (size_t i = persisted_, j = 0; i < entries_.size(); ++i, j += kEntrySize) {
    EncodeBE32(&data[j], static_cast<uint32_t>(entries_[i].offset - base_.value()));
    EncodeBE32(&data[j + 4], static_cast<uint32_t>(entries_[i].position));
  }
  int64_t at = static_cast<int64_t>(persisted_ * kEntrySize);
  Status s = file_.PWrite(at, data);
  if (!s.ok()) {
    (void)file_.Truncate(at);
    return s;
  }
  persisted_ = entries_.size();
  return Status::OK();
}

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
  persisted_ = std::min(persisted_, entries_.size());
  if (file_.is_open()) return file_.Truncate(static_cast<int64_t>(persisted_ * kEntrySize));
  return Status::OK();
}

Status OffsetIndex::Clear() {
  entries_.clear();
  persisted_ = 0;
  if (file_.is_open()) return file_.Truncate(0);
  return Status::OK();
}

Status OffsetIndex::WriteAll() {
  if (!file_.is_open()) return Status::OK();
  persisted_ = 0;
  SILT_TRY(file_.Truncate(0));
  return WritePending();
}

Status OffsetIndex::Sync() {
  if (!file_.is_open()) return Status::OK();
  SILT_TRY(WritePending());
  return file_.Sync();
}

Status OffsetIndex::Remove() {
  (void)file_.Close();
  entries_.clear();
  persisted_ = 0;
  if (PathExists(path_)) return RemoveFile(path_);
  return Status::OK();
}

// ---- TimeIndex --------------------------------------------------------------------------

Status TimeIndex::Load(int64_t next_offset_limit, bool* intact) {
  entries_.clear();
  *intact = false;
  if (!PathExists(path_)) return Status::OK();
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
  return Status::OK();
}

Status TimeIndex::OpenForWrite() {
  if (file_.is_open()) return Status::OK();
  SILT_ASSIGN_OR_RETURN(file_, File::Open(path_, File::kCreate));
  return Status::OK();
}

Status TimeIndex::MaybeAppend(int64_t timestamp, Offset offset) {
  if (timestamp < 0) return Status::OK();
  if (!entries_.empty() && timestamp <= entries_.back().timestamp) return Status::OK();
  entries_.push_back({timestamp, offset.value()});
  if (file_.is_open() && entries_.size() - persisted_ >= kWriteBatch) {
    Status s = WritePending();
    if (!s.ok()) {
      entries_.pop_back();
      return s;
    }
  }
  return Status::OK();
}

Status TimeIndex::WritePending() {
  if (!file_.is_open() || persisted_ >= entries_.size()) return Status::OK();
  std::string data((entries_.size() - persisted_) * kEntrySize, '\0');
  for (size_t i = persisted_, j = 0; i < entries_.size(); ++i, j += kEntrySize) {
    EncodeBE64(&data[j], static_cast<uint64_t>(entries_[i].timestamp));
    EncodeBE32(&data[j + 8], static_cast<uint32_t>(entries_[i].offset - base_.value()));
  }
  int64_t at = static_cast<int64_t>(persisted_ * kEntrySize);
  Status s = file_.PWrite(at, data);
  if (!s.ok()) {
    (void)file_.Truncate(at);
    return s;
  }
  persisted_ = entries_.size();
  return Status::OK();
}

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
  persisted_ = std::min(persisted_, entries_.size());
  if (file_.is_open()) return file_.Truncate(static_cast<int64_t>(persisted_ * kEntrySize));
  return Status::OK();
}

Status TimeIndex::Clear() {
  entries_.clear();
  persisted_ = 0;
  if (file_.is_open()) return file_.Truncate(0);
  return Status::OK();
}

Status TimeIndex::WriteAll() {
  if (!file_.is_open()) return Status::OK();
  persisted_ = 0;
  SILT_TRY(file_.Truncate(0));
  return WritePending();
}

Status TimeIndex::Sync() {
  if (!file_.is_open()) return Status::OK();
  SILT_TRY(WritePending());
  return file_.Sync();
}

Status TimeIndex::Remove() {
  (void)file_.Close();
  entries_.clear();
  persisted_ = 0;
  if (PathExists(path_)) return RemoveFile(path_);
  return Status::OK();
}

}  // namespace silt::storage
