// ConsumerProtocol subscription/assignment codecs and the range assignor.
#include "client/consumer_protocol.h"

#include <algorithm>

#include "base/coding.h"

namespace silt::client {

namespace {

void PutString(ByteWriter& w, std::string_view s) {
  w.I16(static_cast<int16_t>(s.size()));
  w.Raw(s);
}

void PutNullableBytes(ByteWriter& w, const std::optional<std::string>& b) {
  if (!b) {
    w.I32(-1);
    return;
  }
  w.I32(static_cast<int32_t>(b->size()));
  w.Raw(*b);
}

void PutTopicPartitions(ByteWriter& w, const TopicPartitions& tp) {
  w.I32(static_cast<int32_t>(tp.size()));
  for (const auto& [topic, parts] : tp) {
    PutString(w, topic);
    w.I32(static_cast<int32_t>(parts.size()));
    for (int32_t p : parts) w.I32(p);
  }
}

// A small sticky reader: the first failure is kept and later reads do nothing.
class Reader {
 public:
  explicit Reader(std::string_view b) : r_(b) {}
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  size_t remaining() const { return r_.remaining(); }

  int16_t I16() {
    int16_t v = 0;
    if (ok() && !r_.I16(&v)) Fail();
    return v;
  }
  int32_t I32() {
    int32_t v = 0;
    if (ok() && !r_.I32(&v)) Fail();
    return v;
  }
  std::string String() {
    int16_t n = I16();
    if (!ok()) return {};
    if (n < 0) {
      status_ = Status::Corruption("negative string length in consumer protocol data");
      return {};
    }
    return Take(static_cast<size_t>(n));
  }
  std::optional<std::string> NullableString() {
    int16_t n = I16();
    if (!ok() || n < 0) return std::nullopt;
    return Take(static_cast<size_t>(n));
  }
  std::optional<std::string> NullableBytes() {
    int32_t n = I32();
    if (!ok() || n < 0) return std::nullopt;
    return Take(static_cast<size_t>(n));
  }
  // An array count, checked against the bytes left (each element takes at least `min_size`).
  int32_t Count(size_t min_size) {
    int32_t n = I32();
    if (!ok()) return 0;
    if (n < 0) return 0;  // null array: nothing
    if (static_cast<size_t>(n) > remaining() / min_size) {
      status_ = Status::Corruption("array count " + std::to_string(n) +
                                   " exceeds the consumer protocol data");
      return 0;
    }
    return n;
  }
  TopicPartitions ReadTopicPartitions() {
    TopicPartitions out;
    int32_t n = Count(2 + 4);
    for (int32_t i = 0; i < n && ok(); ++i) {
      std::string topic = String();
      int32_t m = Count(4);
      std::vector<int32_t>& parts = out[topic];
      for (int32_t j = 0; j < m && ok(); ++j) parts.push_back(I32());
    }
    return out;
  }

 private:
  std::string Take(size_t n) {
    std::string_view v;
    if (!r_.Bytes(n, &v)) {
      Fail();
      return {};
    }
    return std::string(v);
  }
  void Fail() {
    if (ok()) status_ = Status::Truncated("consumer protocol data ends early");
  }
  ByteReader r_;
  Status status_;
};

}  // namespace

std::string Subscription::Encode() const {
  std::string out;
  ByteWriter w(&out);
  w.I16(version);
  w.I32(static_cast<int32_t>(topics.size()));
  for (const auto& t : topics) PutString(w, t);
  PutNullableBytes(w, user_data);
  if (version >= 1) PutTopicPartitions(w, owned_partitions);
  if (version >= 2) w.I32(generation_id);
  if (version >= 3) {
    if (rack_id) {
      PutString(w, *rack_id);
    } else {
      w.I16(-1);
    }
  }
  return out;
}

Result<Subscription> Subscription::Decode(std::string_view bytes) {
  Reader r(bytes);
  Subscription s;
  s.version = r.I16();
  if (r.ok() && s.version < 0)
    return Status::Corruption("consumer subscription version " + std::to_string(s.version));
  int32_t n = r.Count(2);
  for (int32_t i = 0; i < n && r.ok(); ++i) s.topics.push_back(r.String());
  s.user_data = r.NullableBytes();
  if (s.version >= 1) s.owned_partitions = r.ReadTopicPartitions();
  if (s.version >= 2) s.generation_id = r.I32();
  if (s.version >= 3) s.rack_id = r.NullableString();
  if (!r.ok()) return r.status();
  return s;
}

std::string Assignment::Encode() const {
  std::string out;
  ByteWriter w(&out);
  w.I16(version);
  PutTopicPartitions(w, partitions);
  PutNullableBytes(w, user_data);
  return out;
}

Result<Assignment> Assignment::Decode(std::string_view bytes) {
  Assignment a;
  // An empty assignment (a member that got nothing, as some coordinators send) is valid.
  if (bytes.empty()) return a;
  Reader r(bytes);
  a.version = r.I16();
  if (r.ok() && a.version < 0)
    return Status::Corruption("consumer assignment version " + std::to_string(a.version));
  a.partitions = r.ReadTopicPartitions();
  // user_data may be absent in assignments written by some clients; read it only if present.
  if (r.ok() && r.remaining() >= 4) a.user_data = r.NullableBytes();
  if (!r.ok()) return r.status();
  return a;
}

std::map<std::string, TopicPartitions> RangeAssign(
    const std::map<std::string, std::vector<std::string>>& subscriptions,
    const std::map<std::string, int32_t>& partition_counts) {
  std::map<std::string, TopicPartitions> out;
  std::map<std::string, std::vector<std::string>> members_of;  // topic -> members (sorted)
  for (const auto& [member, topics] : subscriptions) {
    out[member];
    for (const auto& t : topics) {
      auto& v = members_of[t];
      if (std::find(v.begin(), v.end(), member) == v.end()) v.push_back(member);
    }
  }
  for (auto& [topic, members] : members_of) {
    auto count = partition_counts.find(topic);
    if (count == partition_counts.end() || count->second <= 0) continue;
    std::sort(members.begin(), members.end());
    const int32_t n = count->second;
    const int32_t m = static_cast<int32_t>(members.size());
    const int32_t each = n / m;
    const int32_t extra = n % m;
    for (int32_t i = 0; i < m; ++i) {
      int32_t start = each * i + std::min(i, extra);
      int32_t len = each + (i < extra ? 1 : 0);
      if (len == 0) continue;
      auto& parts = out[members[i]][topic];
      for (int32_t p = start; p < start + len; ++p) parts.push_back(p);
    }
  }
  return out;
}

}  // namespace silt::client
