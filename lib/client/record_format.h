// How records look outside the log: the text, JSON-lines and template forms that `silt consume`
// prints and `silt produce --format json` reads back.
//
// JSON (one object per line):
//   {"topic":"t","partition":0,"offset":5,"timestamp":1767323045000,
//    "key":null,"value":"hello","headers":[{"key":"h","value":"v"}]}
// Keys, values and header keys/values are binary-safe: bytes that are valid UTF-8 are written
// as a JSON string; anything else as {"base64":"..."} (RFC 4648, padded); a null as null.
// Reading accepts the same forms, so printing then reading copies every byte exactly.
//
// Templates (kcat's tokens): %t topic, %p partition, %o offset, %k key, %s value,
// %T timestamp (ms), %T{iso} timestamp as ISO-8601 UTC (2026-01-02T03:04:05.000Z), %h headers
// as k=v,k=v, %K and %S the key's and the value's length in bytes (-1 for a null), %% a percent
// sign; escapes \n \t \r \\. A null key or value prints as nothing, or as the null marker
// when one is set (kcat's -Z: "NULL"), in templates and in the text form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "format/record_batch.h"


namespace silt::client {

// True if `s` is well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool IsValidUtf8(std::string_view s);
// Standard base64 with padding.
void Base64Encode(std::string_view in, std::string* out);
// Decodes standard base64 (padding optional); InvalidArgument on any other character.
Result<std::string> Base64Decode(std::string_view in);
// Appends `s` as a JSON string literal (quotes included), escaping what JSON requires.
void AppendJsonString(std::string_view s, std::string* out);
// Appends bytes the binary-safe way: a JSON string if valid UTF-8, else {"base64":"..."};
// null when `s` is nullopt.
void AppendJsonBytes(std::optional<std::string_view> s, std::string* out);

// Formats consumed records. Cheap to call per record: appends to a caller-owned buffer and
// allocates nothing beyond the buffer's growth.
class RecordFormatter {
 public:
  enum class Kind { kText, kJson, kTemplate };

  // "text" (the value and a newline), "json", or anything else as a template.
  // InvalidArgument for a template with an unknown %-token or a trailing lone '%'.
  static Result<RecordFormatter> Parse(std::string_view format);

  Kind kind() const { return kind_; }
  // What a null key or value prints as in the text and template forms (default: nothing). JSON
  // always prints null.
  void set_null_marker(std::string marker) {
    null_marker_ = std::move(marker);
    has_null_marker_ = true;
  }

  void Append(std::string_view topic, int32_t partition, const format::RecordView& r,
              std::string* out) const {
    if (kind_ == Kind::kText && !has_null_marker_) {  // the common case, kept inline
      out->append(r.value.data(), r.value.size());
      out->push_back('\n');
      return;
    }
    AppendFormatted(topic, partition, r, out);
  }

 private:
  void AppendFormatted(std::string_view topic, int32_t partition, const format::RecordView& r,
                       std::string* out) const;
  struct Piece {
    char token;          // 0 for literal text, else the letter after '%'
    std::string literal;
  };
  Kind kind_ = Kind::kText;
  std::vector<Piece> pieces_;
  bool has_null_marker_ = false;
  std::string null_marker_;
};

// One record to produce, as read from input.
struct InputRecord {
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
  int64_t timestamp = -1;  // -1: now
  void Clear() {
    key.reset();
    value.reset();
    headers.clear();
    timestamp = -1;
  }
};

// Parses one JSON object of the form printed by RecordFormatter's JSON kind. Every field is
// optional; topic, partition and offset are accepted and ignored. key/value/header values may be
// a string, null, {"base64":"..."}, or any other JSON value (stored as its compact JSON text).
// InvalidArgument saying what is wrong.
Status ParseJsonRecord(std::string_view line, InputRecord* out);

}  // namespace silt::client
