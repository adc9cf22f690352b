// Kafka wire primitives: see wire.h.
#include "protocol/wire.h"

#include <cassert>
#include <string>

namespace silt::protocol {

namespace {
std::string At(const char* what, size_t remaining) {
  return std::string(what) + " (" + std::to_string(remaining) + " bytes left)";
}
}  // namespace

// ---- Decoder ----------------------------------------------------------------------------

void Decoder::I8(int8_t& v) {
  if (ok() && !r_.I8(&v)) Fail(Status::Truncated(At("int8 past end of message", remaining())));
}
void Decoder::I16(int16_t& v) {
  if (ok() && !r_.I16(&v)) Fail(Status::Truncated(At("int16 past end of message", remaining())));
}
void Decoder::U16(uint16_t& v) {
  int16_t x = 0;
  I16(x);
  v = static_cast<uint16_t>(x);
}
void Decoder::I32(int32_t& v) {
  if (ok() && !r_.I32(&v)) Fail(Status::Truncated(At("int32 past end of message", remaining())));
}
void Decoder::I64(int64_t& v) {
  if (ok() && !r_.I64(&v)) Fail(Status::Truncated(At("int64 past end of message", remaining())));
}
void Decoder::Uuid(silt::Uuid& v) {
  std::string_view b;
  if (!ok()) return;
  if (!r_.Bytes(16, &b)) {
    Fail(Status::Truncated(At("uuid past end of message", remaining())));
    return;
  }
  silt::Uuid::Bytes bytes;
  std::copy(b.begin(), b.end(), reinterpret_cast<char*>(bytes.data()));
  v = silt::Uuid(bytes);
}
void Decoder::NullableAsEmptyString(std::string& v) {
  std::optional<std::string> s;
  NullableString(s);
  v = s.value_or(std::string());
}
void Decoder::Bool(bool& v) {
  int8_t b = 0;
  I8(b);
  if (ok()) v = b != 0;
}
void Decoder::Uvarint(uint32_t& v) {
  if (ok() && !r_.Uvarint32(&v)) {
    Fail(Status::Corruption(At("malformed or truncated unsigned varint", remaining())));
  }
}

int64_t Decoder::Length(bool int32_length, const char* what) {
  if (!ok()) return -1;
  int64_t n;
  if (flexible_) {
    uint32_t u = 0;
    Uvarint(u);
    if (!ok()) return -1;
    n = static_cast<int64_t>(u) - 1;  // compact: N+1, 0 = null
  } else if (int32_length) {
    int32_t l = 0;
    I32(l);
    n = l;
  } else {
    int16_t l = 0;
    I16(l);
    n = l;
  }
  if (!ok()) return -1;
  if (n < -1) {
    Fail(Status::Corruption(std::string("negative ") + what + " length " + std::to_string(n)));
    return -1;
  }
  if (n > static_cast<int64_t>(remaining())) {
    Fail(Status::Truncated(std::string(what) + " length " + std::to_string(n) + " exceeds the " +
                           std::to_string(remaining()) + " bytes left"));
    return -1;
  }
  return n;
}

void Decoder::String(std::string& v) {
  int64_t n = Length(false, "string");
  if (!ok()) return;
  if (n < 0) {
    Fail(Status::Corruption("null string in a non-nullable field"));
    return;
  }
  std::string_view s;
  r_.Bytes(static_cast<size_t>(n), &s);
  v.assign(s);
}

void Decoder::NullableString(std::optional<std::string>& v) {
  v.reset();
  int64_t n = Length(false, "string");
  if (!ok() || n < 0) return;
  std::string_view s;
  r_.Bytes(static_cast<size_t>(n), &s);
  v.emplace(s);
}

void Decoder::Bytes(std::string& v) {
  int64_t n = Length(true, "bytes");
  if (!ok()) return;
  if (n < 0) {
    Fail(Status::Corruption("null bytes in a non-nullable field"));
    return;
  }
  std::string_view s;
  r_.Bytes(static_cast<size_t>(n), &s);
  v.assign(s);
}

void Decoder::NullableBytes(std::optional<std::string>& v) {
  v.reset();
  int64_t n = Length(true, "bytes");
  if (!ok() || n < 0) return;
  std::string_view s;
  r_.Bytes(static_cast<size_t>(n), &s);
  v.emplace(s);
}

void Decoder::Records(RecordSet& v) {
  v = RecordSet{};
  int64_t n = Length(true, "records");
  if (!ok() || n < 0) return;
  std::string_view s;
  r_.Bytes(static_cast<size_t>(n), &s);
  v.bytes = s;
}

int64_t Decoder::ArrayCount(size_t min_element_size) {
  if (!ok()) return 0;
  int64_t n;
  if (flexible_) {
    uint32_t u = 0;
    Uvarint(u);
    n = static_cast<int64_t>(u) - 1;
  } else {
    int32_t c = 0;
    I32(c);
    n = c;
  }
  if (!ok()) return 0;
  if (n < -1) {
    Fail(Status::Corruption("negative array count " + std::to_string(n)));
    return 0;
  }
  if (min_element_size == 0) min_element_size = 1;
  if (n > 0 && static_cast<uint64_t>(n) > remaining() / min_element_size) {
    Fail(Status::Corruption("array count " + std::to_string(n) + " cannot fit in the " +
                            std::to_string(remaining()) + " bytes left"));
    return 0;
  }
  return n;
}

uint32_t Decoder::TaggedCount() {
  uint32_t count = 0;
  Uvarint(count);
  if (!ok()) return 0;
  // Each tagged field takes at least two bytes (tag and size varints).
  if (count > remaining() / 2) {
    Fail(Status::Corruption("tagged field count " + std::to_string(count) + " cannot fit in the " +
                            std::to_string(remaining()) + " bytes left"));
    return 0;
  }
  return count;
}

// ---- Encoder ----------------------------------------------------------------------------

void Encoder::Count(int64_t n) {
  if (flexible_) {
    w_->Uvarint(static_cast<uint64_t>(n + 1));
  } else {
    w_->I32(static_cast<int32_t>(n));
  }
}

void Encoder::Length(int64_t n, bool int32_length) {
  if (flexible_) {
    w_->Uvarint(static_cast<uint64_t>(n + 1));
  } else if (int32_length) {
    w_->I32(static_cast<int32_t>(n));
  } else {
    w_->I16(static_cast<int16_t>(n));
  }
}

void Encoder::StringView(std::string_view v) {
  Length(static_cast<int64_t>(v.size()), false);
  w_->Raw(v);
}

void Encoder::NullableString(const std::optional<std::string>& v) {
  if (!v) {
    Length(-1, false);
    return;
  }
  StringView(*v);
}

void Encoder::BytesView(std::string_view v) {
  Length(static_cast<int64_t>(v.size()), true);
  w_->Raw(v);
}

void Encoder::NullableBytes(const std::optional<std::string>& v) {
  if (!v) {
    Length(-1, true);
    return;
  }
  BytesView(*v);
}

void Encoder::Records(const RecordSet& v) {
  if (v.file) {
    Length(v.file->size, true);
    if (pieces_ != nullptr) {
      pieces_->push_back(Piece{piece_start_, w_->position(), std::nullopt});
      pieces_->push_back(Piece{0, 0, v.file});
      piece_start_ = w_->position();
    } else {
      // No piece list to place the file in: a bug in the caller (file slices are for
      // EncodeFetchResponseFrame). Keep the output well-formed with zeros of the promised size.
      assert(false && "RecordSet with a file slice encoded without a piece list");
      w_->buffer()->append(static_cast<size_t>(v.file->size), '\0');
    }
    return;
  }
  if (!v.bytes) {
    Length(-1, true);
    return;
  }
  BytesView(*v.bytes);
}

void Encoder::FinishPieces() {
  if (pieces_ == nullptr) return;
  if (w_->position() > piece_start_) pieces_->push_back(Piece{piece_start_, w_->position(), std::nullopt});
  piece_start_ = w_->position();
}

}  // namespace silt::protocol
