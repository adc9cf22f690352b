#include "replicate/offset_map.h"

#include <algorithm>

#include "base/coding.h"

namespace silt::replicate {

namespace {
constexpr int8_t kChunkVersion = 1;
}  // namespace

Status PartitionOffsetMap::Begin(Offset source) {
  if (started_) return Status::InvalidArgument("the offset map has already started");
  started_ = true;
  source_begin_ = source_end_ = source.value();
  return Status::OK();
}

Status PartitionOffsetMap::AddCopied(Offset source, Offset dest, int64_t count) {
  if (count <= 0) return Status::InvalidArgument("a run of no records");
  if (!started_) SILT_TRY(Begin(source));
  if (source.value() < source_end_) {
    return Status::InvalidArgument("source offset " + std::to_string(source.value()) +
                                   " is below the map's end " + std::to_string(source_end_));
  }
  if (dest.value() < dest_end_) {
    return Status::InvalidArgument("destination offset " + std::to_string(dest.value()) +
                                   " is below the map's end " + std::to_string(dest_end_));
  }
  if (!runs_.empty() && runs_.back().source_next() == source.value() &&
      runs_.back().dest_next() == dest.value()) {
    runs_.back().count += count;
  } else {
    runs_.push_back({source.value(), dest.value(), count});
  }
  source_end_ = source.value() + count;
  dest_end_ = dest.value() + count;
  return Status::OK();
}

void PartitionOffsetMap::Advance(Offset source) {
  if (!started_) {
    started_ = true;
    source_begin_ = source_end_ = source.value();
    return;
  }
  source_end_ = std::max(source_end_, source.value());
}

Result<Offset> PartitionOffsetMap::Translate(Offset source) const {
  const int64_t s = source.value();
  if (!started_ || s > source_end_) {
    return Status::NotFound("source offset " + std::to_string(s) + " has not been copied yet");
  }
  // The first run that ends after s: either it holds s, or s is in the hole before it.
  auto it = std::upper_bound(runs_.begin(), runs_.end(), s,
                             [](int64_t v, const OffsetRun& r) { return v < r.source_next(); });
  if (it == runs_.end()) return Offset(dest_end_);
  if (s >= it->source_start) return Offset(it->dest_start + (s - it->source_start));
  return Offset(it->dest_start);
}

PartitionOffsetMap::Mark PartitionOffsetMap::mark() const {
  Mark m;
  m.runs = runs_.size();
  m.last_count = runs_.empty() ? 0 : runs_.back().count;
  m.source_end = source_end_;
  m.dest_end = dest_end_;
  m.started = started_;
  return m;
}

std::string PartitionOffsetMap::EncodeChunk(const Mark& since) const {
  if (!started_) return {};
  if (since.started && since.source_end == source_end_ && since.runs == runs_.size() &&
      since.last_count == (runs_.empty() ? 0 : runs_.back().count)) {
    return {};
  }
  std::vector<OffsetRun> added;
  if (since.started && since.runs > 0 && runs_[since.runs - 1].count > since.last_count) {
    const OffsetRun& grown = runs_[since.runs - 1];
    added.push_back({grown.source_start + since.last_count, grown.dest_start + since.last_count,
                     grown.count - since.last_count});
  }
  for (size_t i = since.started ? since.runs : 0; i < runs_.size(); ++i) added.push_back(runs_[i]);

  const int64_t from = since.started ? since.source_end : source_begin_;
  std::string out;
  ByteWriter w(&out);
  w.I8(kChunkVersion);
  w.Varlong(from);
  w.Varint(static_cast<int32_t>(added.size()));
  int64_t source_at = from;
  int64_t dest_at = since.started ? since.dest_end : 0;
  for (const OffsetRun& r : added) {
    w.Varlong(r.source_start - source_at);
    w.Varlong(r.dest_start - dest_at);
    w.Varlong(r.count);
    source_at = r.source_next();
    dest_at = r.dest_next();
  }
  w.Varlong(source_end_ - source_at);
  return out;
}

Status PartitionOffsetMap::ApplyChunk(std::string_view chunk) {
  ByteReader r(chunk);
  int8_t version;
  int64_t from;
  int32_t n;
  if (!r.I8(&version) || !r.Varlong(&from) || !r.Varint(&n)) {
    return Status::Corruption("offset map chunk: truncated header");
  }
  if (version != kChunkVersion) {
    return Status::Corruption("offset map chunk: unknown version " + std::to_string(version));
  }
  if (n < 0 || static_cast<size_t>(n) > r.remaining() / 3) {
    return Status::Corruption("offset map chunk: bad run count");
  }
  if (started_ && from < source_end_) return Status::OK();  // stored twice: already applied
  if (started_ && from > source_end_) {
    return Status::Corruption("offset map chunk starts at " + std::to_string(from) +
                              " past the map's end " + std::to_string(source_end_) +
                              " (a chunk is missing)");
  }
  PartitionOffsetMap next = *this;
  if (!next.started_) SILT_TRY(next.Begin(Offset(from)));
  int64_t source_at = from;
  int64_t dest_at = next.dest_end_;
  for (int32_t i = 0; i < n; ++i) {
    int64_t sg, dg, count;
    if (!r.Varlong(&sg) || !r.Varlong(&dg) || !r.Varlong(&count)) {
      return Status::Corruption("offset map chunk: truncated run");
    }
    if (sg < 0 || dg < 0 || count <= 0) return Status::Corruption("offset map chunk: bad run");
    Status st = next.AddCopied(Offset(source_at + sg), Offset(dest_at + dg), count);
    if (!st.ok()) return Status::Corruption("offset map chunk: " + st.message());
    source_at = next.source_end_;
    dest_at = next.dest_end_;
  }
  int64_t end_gap;
  if (!r.Varlong(&end_gap) || end_gap < 0) return Status::Corruption("offset map chunk: bad end");
  if (!r.empty()) return Status::Corruption("offset map chunk: trailing bytes");
  next.Advance(Offset(source_at + end_gap));
  *this = std::move(next);
  return Status::OK();
}

}  // namespace silt::replicate
