// A 128-bit UUID as Kafka uses them for topic ids, cluster ids and directory ids, and its
// text form: the 16 bytes (most significant first) in URL-safe base64 without padding, 22
// characters (Kafka's Uuid.toString()), e.g. "AAAAAAAAAAAAAAAAAAAAAQ" for 1.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace silt {

class Uuid {
 public:
  using Bytes = std::array<uint8_t, 16>;

  constexpr Uuid() = default;  // the zero uuid (Kafka's ZERO_UUID: "no id")
  constexpr explicit Uuid(const Bytes& b) : bytes_(b) {}

  const Bytes& bytes() const { return bytes_; }
  bool is_zero() const { return *this == Uuid(); }
  // Kafka's reserved ids: the zero uuid and METADATA_TOPIC_ID (1); never a real topic's id.
  bool is_reserved() const;

  // The 22-character base64url form.
  std::string ToString() const;
  // The inverse: exactly 22 characters of [A-Za-z0-9_-] whose last one carries no stray
  // bits; InvalidArgument otherwise (naming the text).
  static Result<Uuid> Parse(std::string_view text);

  auto operator<=>(const Uuid&) const = default;

 private:
  Bytes bytes_{};
};

}  // namespace silt
