// Byte coding used by Kafka's formats: big-endian fixed-width integers, unsigned varints
// (protobuf style, 7 bits a byte, low group first) and zigzag-signed varint/varlong.
//
// Bytes are held in std::string and viewed through std::string_view (leveldb's habit): a
// string_view is the zero-copy "slice" of every layer.
//
// ByteWriter appends to a std::string; ByteReader is a bounds-checked cursor whose Read* calls
// return false (and consume nothing) when the input is too short or a varint is malformed.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace silt {

// ---- fixed width, big-endian ------------------------------------------------------------

inline void EncodeBE16(char* p, uint16_t v) {
  p[0] = static_cast<char>(v >> 8);
  p[1] = static_cast<char>(v);
}
inline void EncodeBE32(char* p, uint32_t v) {
  for (int i = 3; i >= 0; --i, v >>= 8) p[i] = static_cast<char>(v);
}
inline void EncodeBE64(char* p, uint64_t v) {
  for (int i = 7; i >= 0; --i, v >>= 8) p[i] = static_cast<char>(v);
}
inline uint16_t DecodeBE16(const char* p) {
  auto u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint16_t>((u[0] << 8) | u[1]);
}
inline uint32_t DecodeBE32(const char* p) {
  auto u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | u[3];
}
inline uint64_t DecodeBE64(const char* p) {
  return (uint64_t{DecodeBE32(p)} << 32) | DecodeBE32(p + 4);
}

// ---- varints ----------------------------------------------------------------------------

constexpr int kMaxVarint32Bytes = 5;
constexpr int kMaxVarint64Bytes = 10;

inline uint32_t ZigZagEncode32(int32_t v) {
  return (static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31);
}
inline int32_t ZigZagDecode32(uint32_t v) {
  return static_cast<int32_t>((v >> 1) ^ (~(v & 1) + 1));
}
inline uint64_t ZigZagEncode64(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t ZigZagDecode64(uint64_t v) {
  return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
}

// Writes `v` as an unsigned varint at `p`; returns the number of bytes written (1..10).
inline int EncodeUvarint64(char* p, uint64_t v) {
  int n = 0;
  while (v >= 0x80) {
    p[n++] = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  p[n++] = static_cast<char>(v);
  return n;
}
// Bytes an unsigned varint of `v` takes.
inline int UvarintLength(uint64_t v) {
  int n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
inline int VarintLength(int32_t v) { return UvarintLength(ZigZagEncode32(v)); }
inline int VarlongLength(int64_t v) { return UvarintLength(ZigZagEncode64(v)); }

// Decodes an unsigned varint of at most `max_bytes` from [p, limit). Returns the byte count, or
// 0 when the input ends first or the varint is longer than allowed.
inline int DecodeUvarint64(const char* p, const char* limit, uint64_t* out, int max_bytes) {
  if (p < limit && static_cast<signed char>(*p) >= 0) {  // one byte: the common case
    *out = static_cast<unsigned char>(*p);
    return 1;
  }
  uint64_t result = 0;
  for (int i = 0, shift = 0; i < max_bytes && p + i < limit; ++i, shift += 7) {
    uint64_t byte = static_cast<unsigned char>(p[i]);
    result |= (byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *out = result;
      return i + 1;
    }
  }
  return 0;
}

// ---- writer -----------------------------------------------------------------------------

class ByteWriter {
 public:
  explicit ByteWriter(std::string* dst) : dst_(dst) {}

  void I8(int8_t v) { dst_->push_back(static_cast<char>(v)); }
  void U8(uint8_t v) { dst_->push_back(static_cast<char>(v)); }
  void I16(int16_t v) { char b[2]; EncodeBE16(b, static_cast<uint16_t>(v)); dst_->append(b, 2); }
  void I32(int32_t v) { char b[4]; EncodeBE32(b, static_cast<uint32_t>(v)); dst_->append(b, 4); }
  void U32(uint32_t v) { char b[4]; EncodeBE32(b, v); dst_->append(b, 4); }
  void I64(int64_t v) { char b[8]; EncodeBE64(b, static_cast<uint64_t>(v)); dst_->append(b, 8); }
  void Uvarint(uint64_t v) { char b[10]; dst_->append(b, EncodeUvarint64(b, v)); }
  void Varint(int32_t v) { Uvarint(ZigZagEncode32(v)); }
  void Varlong(int64_t v) { Uvarint(ZigZagEncode64(v)); }
  void Raw(std::string_view b) { dst_->append(b.data(), b.size()); }
  void Raw(const char* p, size_t n) { dst_->append(p, n); }

  // Position for later back-patching with Patch*.
  size_t position() const { return dst_->size(); }
  void PatchI32(size_t pos, int32_t v) { EncodeBE32(&(*dst_)[pos], static_cast<uint32_t>(v)); }
  void PatchU32(size_t pos, uint32_t v) { EncodeBE32(&(*dst_)[pos], v); }
  void PatchI16(size_t pos, int16_t v) { EncodeBE16(&(*dst_)[pos], static_cast<uint16_t>(v)); }
  void PatchI64(size_t pos, int64_t v) { EncodeBE64(&(*dst_)[pos], static_cast<uint64_t>(v)); }
  std::string* buffer() { return dst_; }

 private:
  std::string* dst_;
};

// ---- reader -----------------------------------------------------------------------------

class ByteReader {
 public:
  ByteReader() = default;
  explicit ByteReader(std::string_view data) : p_(data.data()), end_(data.data() + data.size()),
                                               begin_(data.data()) {}

  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  size_t position() const { return static_cast<size_t>(p_ - begin_); }
  bool empty() const { return p_ == end_; }
  const char* cursor() const { return p_; }
  std::string_view rest() const { return {p_, remaining()}; }

  bool I8(int8_t* v) {
    if (remaining() < 1) return false;
    *v = static_cast<int8_t>(*p_++);
    return true;
  }
  bool I16(int16_t* v) { return Fixed<uint16_t, 2>(v, DecodeBE16); }
  bool I32(int32_t* v) { return Fixed<uint32_t, 4>(v, DecodeBE32); }
  bool U32(uint32_t* v) { return Fixed<uint32_t, 4>(v, DecodeBE32); }
  bool I64(int64_t* v) { return Fixed<uint64_t, 8>(v, DecodeBE64); }
  bool Uvarint32(uint32_t* v) {
    uint64_t x;
    int n = DecodeUvarint64(p_, end_, &x, kMaxVarint32Bytes);
    if (n == 0 || x > 0xffffffffu) return false;
    p_ += n;
    *v = static_cast<uint32_t>(x);
    return true;
  }
  bool Uvarint64(uint64_t* v) {
    int n = DecodeUvarint64(p_, end_, v, kMaxVarint64Bytes);
    if (n == 0) return false;
    p_ += n;
    return true;
  }
  bool Varint(int32_t* v) {
    uint32_t u;
    if (!Uvarint32(&u)) return false;
    *v = ZigZagDecode32(u);
    return true;
  }
  bool Varlong(int64_t* v) {
    uint64_t u;
    if (!Uvarint64(&u)) return false;
    *v = ZigZagDecode64(u);
    return true;
  }
  // A view of the next `n` bytes (no copy).
  bool Bytes(size_t n, std::string_view* out) {
    if (remaining() < n) return false;
    *out = std::string_view(p_, n);
    p_ += n;
    return true;
  }
  bool Skip(size_t n) {
    if (remaining() < n) return false;
    p_ += n;
    return true;
  }

 private:
  template <typename U, int N, typename T, typename F>
  bool Fixed(T* v, F decode) {
    if (remaining() < N) return false;
    *v = static_cast<T>(static_cast<U>(decode(p_)));
    p_ += N;
    return true;
  }

  const char* p_ = nullptr;
  const char* end_ = nullptr;
  const char* begin_ = nullptr;
};

}  // namespace silt
