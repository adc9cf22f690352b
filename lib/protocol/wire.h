// Kafka wire primitives over silt::ByteReader / silt::ByteWriter.
//
// Kafka's protocol guide (https://kafka.apache.org/protocol#protocol_types) defines the types:
//   int8/int16/int32/int64  big-endian two's complement      boolean  int8, 0 or 1
//   string                  int16 length N >= 0, N bytes      nullable_string  length -1 = null
//   bytes                   int32 length N >= 0, N bytes      nullable_bytes   length -1 = null
//   array                   int32 count N, N elements         count -1 = null
//   records                 nullable_bytes holding a record set (opaque at this layer)
// and, in "flexible" versions (KIP-482), compact forms whose length is an unsigned varint of N+1
// (0 = null), plus a tagged-field section after every struct:
//   tagged_fields           uvarint count, then count x {uvarint tag, uvarint size, size bytes}
//
// Decoder and Encoder expose the same method names taking non-const references, so one
// templated function per message describes both directions (see messages_io.h). A Decoder
// is sticky: the first failure records a Status and every later read becomes a no-op that
// yields defaults, so a codec checks status() once at the end. Every length and count is
// checked against the bytes remaining BEFORE anything is allocated.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/coding.h"
#include "base/status.h"
#include "base/uuid.h"

namespace silt::protocol {

// Bytes of a record set that live in a file, to be sent with sendfile(2) rather than copied
// into the response buffer. This layer only carries the numbers; the broker owns the fd.
struct FileSlice {
  int fd = -1;
  int64_t position = 0;  // byte offset in the file
  int32_t size = 0;      // bytes to send
  bool operator==(const FileSlice&) const = default;
};

// A record set field (Kafka type `records`): opaque bytes this layer never parses.
// Decoding yields `bytes` as a view into the input buffer (valid while that buffer lives).
// Encoding writes `bytes`, or, when `file` is set, the length prefix `file->size` followed by a
// file piece (see Encoder::set_pieces); `file` is encode-only and never produced by decoding.
struct RecordSet {
  std::optional<std::string_view> bytes;  // nullopt = null record set (length -1)
  std::optional<FileSlice> file;

  // Bytes this record set occupies after its length prefix.
  int64_t size() const {
    if (file) return file->size;
    return bytes ? static_cast<int64_t>(bytes->size()) : 0;
  }
  bool is_null() const { return !file && !bytes; }
  bool operator==(const RecordSet& o) const { return bytes == o.bytes && file == o.file; }
};

// One piece of an encoded message: a range of the encoder's buffer, or a file slice.
struct Piece {
  size_t begin = 0;  // buffer range [begin, end) when !file
  size_t end = 0;
  std::optional<FileSlice> file;
};

class Decoder {
 public:
  // Reads from `r`, advancing it. `flexible` selects compact strings/bytes/arrays.
  Decoder(ByteReader& r, bool flexible) : r_(r), flexible_(flexible) {}

  bool flexible() const { return flexible_; }
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  size_t remaining() const { return r_.remaining(); }
  // Records the first error; later reads do nothing.
  void Fail(Status s) {
    if (status_.ok()) status_ = std::move(s);
  }

  void I8(int8_t& v);
  void I16(int16_t& v);
  void U16(uint16_t& v);
  void I32(int32_t& v);
  void I64(int64_t& v);
  void Bool(bool& v);
  void Uuid(silt::Uuid& v);  // 16 bytes, most significant first
  // A string that is null on the wire where empty in the struct (a name no entity can have).
  void NullableAsEmptyString(std::string& v);
  void Uvarint(uint32_t& v);

  // string / compact_string. A null (-1) where the field is not nullable is Corruption.
  void String(std::string& v);
  // nullable_string / compact_nullable_string.
  void NullableString(std::optional<std::string>& v);
  // bytes / compact_bytes (copied).
  void Bytes(std::string& v);
  void NullableBytes(std::optional<std::string>& v);
  // records: a view into the input, no copy.
  void Records(RecordSet& v);

  // array / compact_array. `min_element_size` is the fewest bytes one element can take; the
  // count times it must fit in the bytes left before the vector is resized.
  template <typename T, typename F>
  void Array(std::vector<T>& v, F&& each, size_t min_element_size = 1) {
    v.clear();
    int64_t n = ArrayCount(min_element_size);
    if (n < 0 && ok()) Fail(Status::Corruption("null array in a non-nullable field"));
    if (n <= 0) return;
    v.resize(static_cast<size_t>(n));
    for (auto& e : v) {
      each(e);
      if (!ok()) return;
    }
  }
  // `null_as_empty` matters only when encoding; reading -1 always yields null.
  template <typename T, typename F>
  void NullableArray(std::optional<std::vector<T>>& v, F&& each, size_t min_element_size = 1,
                     bool /*null_as_empty*/ = false) {
    v.reset();
    int64_t n = ArrayCount(min_element_size);
    if (n < 0 || !ok()) return;
    v.emplace(static_cast<size_t>(n));
    for (auto& e : *v) {
      each(e);
      if (!ok()) return;
    }
  }
  // Tagged fields (flexible versions only; nothing otherwise), none of them known: every tag is
  // skipped.
  void TaggedFields() {
    TaggedFields([](auto&) {});
  }
  // Tagged fields with known tags. `fields(visitor)` names each known one as
  // `visitor.Field(tag, present, read)`; for every tag on the wire the walk is run once and the
  // matching Field's `read` decodes the value from the field's bytes. A value that reads past
  // its declared size is Corruption; one that reads less (a newer encoding) has the rest skipped.
  // Unknown tags are skipped.
  template <typename F>
  void TaggedFields(F&& fields) {
    if (!flexible_ || !ok()) return;
    uint32_t count = TaggedCount();
    for (uint32_t i = 0; i < count && ok(); ++i) {
      uint32_t tag = 0, size = 0;
      Uvarint(tag);
      Uvarint(size);
      if (!ok()) return;
      if (size > remaining()) {
        Fail(Status::Truncated("tagged field " + std::to_string(tag) + " of " +
                               std::to_string(size) + " bytes runs past the end"));
        return;
      }
      size_t before = remaining();
      TagReader visit{tag};
      fields(visit);
      if (!ok()) return;
      size_t used = before - remaining();
      if (used > size) {
        Fail(Status::Corruption("tagged field " + std::to_string(tag) + " reads " +
                                std::to_string(used) + " bytes of its " + std::to_string(size)));
        return;
      }
      r_.Skip(size - used);
    }
  }

 private:
  // Reads an array count (-1 = null). Fails, returning 0, when the count cannot fit in what is
  // left at `min_element_size` bytes per element.
  int64_t ArrayCount(size_t min_element_size);  // -1 = null
  // Reads a string/bytes length: -1 for null, >= 0 checked against remaining.
  int64_t Length(bool int32_length, const char* what);
  // Reads a tagged-field count, checked against the bytes left (0 on failure).
  uint32_t TaggedCount();

  struct TagReader {
    uint32_t tag;
    template <typename G>
    void Field(uint32_t t, bool /*present*/, G&& read) {
      if (t == tag) read();
    }
  };

  ByteReader& r_;
  bool flexible_;
  Status status_;
};

class Encoder {
 public:
  // Appends to `w`. `flexible` selects compact strings/bytes/arrays.
  Encoder(ByteWriter& w, bool flexible) : w_(&w), flexible_(flexible) {}

  bool flexible() const { return flexible_; }
  // Always true: encoding cannot fail. Present so templated codecs can poll either side.
  bool ok() const { return true; }

  // When set, record sets with a `file` are emitted as file pieces: the buffer written so far
  // (since the last piece) becomes a buffer piece, then a file piece follows. The caller ends
  // with FinishPieces() to add the trailing buffer piece.
  // The first buffer piece starts at `start` (so a frame's size prefix and header written
  // before the body can belong to it).
  void set_pieces(std::vector<Piece>* pieces, size_t start) {
    pieces_ = pieces;
    piece_start_ = start;
  }
  void FinishPieces();

  void I8(const int8_t& v) { w_->I8(v); }
  void I16(const int16_t& v) { w_->I16(v); }
  void U16(const uint16_t& v) { w_->I16(static_cast<int16_t>(v)); }
  void I32(const int32_t& v) { w_->I32(v); }
  void I64(const int64_t& v) { w_->I64(v); }
  void Bool(const bool& v) { w_->I8(v ? 1 : 0); }
  void Uuid(const silt::Uuid& v) {
    w_->Raw(reinterpret_cast<const char*>(v.bytes().data()), v.bytes().size());
  }
  void NullableAsEmptyString(const std::string& v) {
    NullableString(v.empty() ? std::nullopt : std::optional<std::string>(v));
  }
  void Uvarint(const uint32_t& v) { w_->Uvarint(v); }
  void String(const std::string& v) { StringView(v); }
  void StringView(std::string_view v);
  void NullableString(const std::optional<std::string>& v);
  void Bytes(const std::string& v) { BytesView(v); }
  void BytesView(std::string_view v);
  void NullableBytes(const std::optional<std::string>& v);
  void Records(const RecordSet& v);

  template <typename T, typename F>
  void Array(const std::vector<T>& v, F&& each, size_t = 1) {
    Count(static_cast<int64_t>(v.size()));
    for (const auto& e : v) each(e);
  }
  // With `null_as_empty` (versions where the array is not nullable yet) null is written as an
  // empty array.
  template <typename T, typename F>
  void NullableArray(const std::optional<std::vector<T>>& v, F&& each, size_t = 1,
                     bool null_as_empty = false) {
    if (!v) {
      Count(null_as_empty ? 0 : -1);
      return;
    }
    Array(*v, each);
  }
  // Writes an empty tagged-field section (flexible versions only).
  void TaggedFields() {
    if (flexible_) w_->Uvarint(0);
  }
  // Writes the known tagged fields whose `present` is true (Kafka writes a tagged field only
  // when it differs from its default), in the order the walk names them (ascending tags).
  template <typename F>
  void TaggedFields(F&& fields) {
    if (!flexible_) return;
    TagCounter counter;
    fields(counter);
    w_->Uvarint(counter.n);
    TagWriter writer{this};
    fields(writer);
  }

 private:
  void Count(int64_t n);  // -1 = null
  void Length(int64_t n, bool int32_length);

  struct TagCounter {
    uint32_t n = 0;
    template <typename G>
    void Field(uint32_t, bool present, G&&) {
      n += present ? 1 : 0;
    }
  };
  struct TagWriter {
    Encoder* e;
    template <typename G>
    void Field(uint32_t tag, bool present, G&& write) {
      if (!present) return;
      // The value is encoded aside first: its size comes before it.
      std::string value;
      ByteWriter aside(&value);
      ByteWriter* outer = e->w_;
      e->w_ = &aside;
      write();
      e->w_ = outer;
      outer->Uvarint(tag);
      outer->Uvarint(value.size());
      outer->Raw(value);
    }
  };

  ByteWriter* w_;
  bool flexible_;
  std::vector<Piece>* pieces_ = nullptr;
  size_t piece_start_ = 0;
};

}  // namespace silt::protocol
