// Uuid's base64url text form (see uuid.h).
#include "base/uuid.h"

namespace silt {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int Digit(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

}  // namespace

bool Uuid::is_reserved() const {
  Bytes one{};
  one[15] = 1;
  return is_zero() || bytes_ == one;
}

std::string Uuid::ToString() const {
  // 16 bytes = 128 bits = 21 digits of 6 bits and 2 bits left over, padded with zeros.
  std::string out;
  out.reserve(22);
  uint32_t acc = 0;
  int bits = 0;
  for (uint8_t b : bytes_) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 6) {
      out.push_back(kAlphabet[(acc >> (bits - 6)) & 63]);
      bits -= 6;
    }
  }
  out.push_back(kAlphabet[(acc << (6 - bits)) & 63]);
  return out;
}

Result<Uuid> Uuid::Parse(std::string_view text) {
  auto bad = [&](const char* why) {
    return Status::InvalidArgument("'" + std::string(text) + "' is not a base64 uuid: " + why);
  };
  if (text.size() != 22) return bad("it must be 22 characters");
  Bytes b{};
  uint32_t acc = 0;
  int bits = 0;
  size_t n = 0;
  for (char c : text) {
    int d = Digit(c);
    if (d < 0) return bad("characters must be in [A-Za-z0-9_-]");
    acc = (acc << 6) | static_cast<uint32_t>(d);
    bits += 6;
    if (bits >= 8 && n < b.size()) {
      b[n++] = static_cast<uint8_t>(acc >> (bits - 8));
      bits -= 8;
    }
  }
  // Four bits of the last digit are left over; they must be zero, or two texts would name one
  // id.
  if ((acc & ((1u << bits) - 1)) != 0) return bad("its last character has stray bits");
  return Uuid(b);
}

}  // namespace silt
