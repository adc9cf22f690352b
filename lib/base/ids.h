// Strong id types. An offset, a partition number, a leader epoch, a timestamp and a byte
// position in a file are all integers on the wire, and mixing them up is a bug the compiler
// should catch: each is a distinct type here, with explicit construction and `.value()`.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <ostream>

namespace silt {

template <typename Tag, typename Rep>
class StrongId {
 public:
  using rep = Rep;
  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep v) : v_(v) {}
  constexpr Rep value() const { return v_; }
  constexpr auto operator<=>(const StrongId&) const = default;
  constexpr bool operator==(const StrongId&) const = default;

  friend std::ostream& operator<<(std::ostream& os, StrongId id) { return os << id.v_; }

 private:
  Rep v_{};
};

// A record's position in a partition (Kafka: "offset").
struct OffsetTag {};
class Offset : public StrongId<OffsetTag, int64_t> {
 public:
  using StrongId::StrongId;
  constexpr Offset operator+(int64_t d) const { return Offset(value() + d); }
  constexpr Offset operator-(int64_t d) const { return Offset(value() - d); }
  constexpr int64_t operator-(Offset o) const { return value() - o.value(); }
  Offset& operator++() { *this = Offset(value() + 1); return *this; }
};

using PartitionId = StrongId<struct PartitionTag, int32_t>;
using LeaderEpoch = StrongId<struct LeaderEpochTag, int32_t>;
using NodeId = StrongId<struct NodeTag, int32_t>;
using ProducerId = StrongId<struct ProducerTag, int64_t>;

// Milliseconds since the Unix epoch (Kafka's timestamps).
struct TimestampTag {};
class TimestampMs : public StrongId<TimestampTag, int64_t> {
 public:
  using StrongId::StrongId;
};

// A byte position inside one file.
struct FilePosTag {};
class FilePos : public StrongId<FilePosTag, int64_t> {
 public:
  using StrongId::StrongId;
  constexpr FilePos operator+(int64_t d) const { return FilePos(value() + d); }
  constexpr int64_t operator-(FilePos o) const { return value() - o.value(); }
};

// Kafka's sentinel values.
inline constexpr Offset kInvalidOffset{-1};
inline constexpr LeaderEpoch kNoLeaderEpoch{-1};
inline constexpr TimestampMs kNoTimestamp{-1};

}  // namespace silt

template <typename Tag, typename Rep>
struct std::hash<silt::StrongId<Tag, Rep>> {
  size_t operator()(silt::StrongId<Tag, Rep> id) const { return std::hash<Rep>()(id.value()); }
};
template <>
struct std::hash<silt::Offset> {
  size_t operator()(silt::Offset id) const { return std::hash<int64_t>()(id.value()); }
};
