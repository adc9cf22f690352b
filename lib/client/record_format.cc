// Record text/JSON/template forms (see record_format.h).
#include "client/record_format.h"

#include <charconv>
#include <cstring>

#include <nlohmann/json.hpp>

#include "client/offset_spec.h"
#include "format/record_batch.h"

namespace silt::client {
namespace {
// Appends a string literal without measuring it at run time.
template <size_t N>
inline void Lit(std::string* out, const char (&s)[N]) {
  out->append(s, N - 1);
}
}  // namespace

bool IsValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    // Fast path: eight ASCII bytes at a time.
    if (end - p >= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      if ((w & 0x8080808080808080ULL) == 0) {
        p += 8;
        continue;
      }
    }
    unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int n;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (end - p <= n) return false;
    for (int i = 1; i <= n; ++i) {
      if ((p[i] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    p += n + 1;
  }
  return true;
}

namespace {
constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

void Base64Encode(std::string_view in, std::string* out) {
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  size_t n = in.size(), i = 0;
  size_t base = out->size();
  out->resize(base + (n + 2) / 3 * 4);
  char* o = out->data() + base;
  for (; i + 3 <= n; i += 3) {
    uint32_t v = (p[i] << 16) | (p[i + 1] << 8) | p[i + 2];
    *o++ = kB64[v >> 18];
    *o++ = kB64[(v >> 12) & 63];
    *o++ = kB64[(v >> 6) & 63];
    *o++ = kB64[v & 63];
  }
  if (n - i == 1) {
    uint32_t v = p[i] << 16;
    *o++ = kB64[v >> 18];
    *o++ = kB64[(v >> 12) & 63];
    *o++ = '=';
    *o++ = '=';
  } else if (n - i == 2) {
    uint32_t v = (p[i] << 16) | (p[i + 1] << 8);
    *o++ = kB64[v >> 18];
    *o++ = kB64[(v >> 12) & 63];
    *o++ = kB64[(v >> 6) & 63];
    *o++ = '=';
  }
}

Result<std::string> Base64Decode(std::string_view in) {
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  if (in.size() % 4 == 1) return Status::InvalidArgument("bad base64: wrong length");
  std::string out;
  out.reserve(in.size() / 4 * 3 + 3);
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : in) {
    int v;
    if (ch >= 'A' && ch <= 'Z') v = ch - 'A';
    else if (ch >= 'a' && ch <= 'z') v = ch - 'a' + 26;
    else if (ch >= '0' && ch <= '9') v = ch - '0' + 52;
    else if (ch == '+') v = 62;
    else if (ch == '/') v = 63;
    else return Status::InvalidArgument("bad base64: unexpected character");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

void AppendJsonString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t run = 0;  // start of the pending run of bytes that need no escaping
  for (size_t i = 0; i < s.size(); ++i) {
    // Skip eight bytes at a time while none is a control character, '"' or '\\'.
    while (i + 8 <= s.size()) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
      auto has_zero = [](uint64_t x) { return (x - kOnes) & ~x & kHigh; };
      uint64_t below_space = (w - 0x2020202020202020ULL) & ~w & kHigh;
      if (below_space | has_zero(w ^ (kOnes * '"')) | has_zero(w ^ (kOnes * '\\'))) break;
      i += 8;
    }
    if (i >= s.size()) break;
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': Lit(out, "\\\""); break;
      case '\\': Lit(out, "\\\\"); break;
      case '\n': Lit(out, "\\n"); break;
      case '\t': Lit(out, "\\t"); break;
      case '\r': Lit(out, "\\r"); break;
      case '\b': Lit(out, "\\b"); break;
      case '\f': Lit(out, "\\f"); break;
      default: {
        char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out->append(esc, 6);
      }
    }
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
}

void AppendJsonBytes(std::optional<std::string_view> s, std::string* out) {
  if (!s) {
    Lit(out, "null");
  } else if (IsValidUtf8(*s)) {
    AppendJsonString(*s, out);
  } else {
    Lit(out, "{\"base64\":\"");
    Base64Encode(*s, out);
    Lit(out, "\"}");
  }
}

namespace {

void AppendInt(int64_t v, std::string* out) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, p);
}

std::optional<std::string_view> Opt(bool is_null, std::string_view v) {
  if (is_null) return std::nullopt;
  return v;
}

}  // namespace

Result<RecordFormatter> RecordFormatter::Parse(std::string_view format) {
  RecordFormatter f;
  if (format == "text") {
    f.kind_ = Kind::kText;
    return f;
  }
  if (format == "json") {
    f.kind_ = Kind::kJson;
    return f;
  }
  f.kind_ = Kind::kTemplate;
  std::string lit;
  auto flush = [&] {
    if (!lit.empty()) f.pieces_.push_back({0, std::move(lit)});
    lit.clear();
  };
  for (size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    if (c == '\\' && i + 1 < format.size()) {
      char e = format[++i];
      switch (e) {
        case 'n': lit.push_back('\n'); break;
        case 't': lit.push_back('\t'); break;
        case 'r': lit.push_back('\r'); break;
        case '0': lit.push_back('\0'); break;
        case '\\': lit.push_back('\\'); break;
        default: lit.push_back('\\'); lit.push_back(e);
      }
    } else if (c == '%') {
      if (i + 1 >= format.size())
        return Status::InvalidArgument("bad format '" + std::string(format) +
                                       "': a lone '%' at the end");
      char t = format[++i];
      if (t == '%') {
        lit.push_back('%');
        continue;
      }
      if (std::strchr("tpoksTKSh", t) == nullptr)
        return Status::InvalidArgument("bad format '" + std::string(format) +
                                       "': unknown token %" + std::string(1, t) +
                                       " (known: %t %p %o %k %s %K %S %T %T{iso} %h %%)");
      // %T{iso}: the timestamp as ISO-8601 UTC; stored as the token 'I'.
      if (t == 'T' && format.substr(i + 1, 5) == "{iso}") {
        t = 'I';
        i += 5;
      }
      flush();
      f.pieces_.push_back({t, {}});
    } else {
      lit.push_back(c);
    }
  }
  flush();
  return f;
}

void RecordFormatter::AppendFormatted(std::string_view topic, int32_t partition,
                                      const format::RecordView& r, std::string* out) const {
  switch (kind_) {
    case Kind::kText:  // Append handles it inline unless nulls have a marker
      if (r.value_null) out->append(null_marker_);
      else out->append(r.value.data(), r.value.size());
      out->push_back('\n');
      return;
    case Kind::kJson: {
      Lit(out, "{\"topic\":");
      AppendJsonString(topic, out);
      Lit(out, ",\"partition\":");
      AppendInt(partition, out);
      Lit(out, ",\"offset\":");
      AppendInt(r.offset, out);
      Lit(out, ",\"timestamp\":");
      AppendInt(r.timestamp, out);
      Lit(out, ",\"key\":");
      AppendJsonBytes(Opt(r.key_null, r.key), out);
      Lit(out, ",\"value\":");
      AppendJsonBytes(Opt(r.value_null, r.value), out);
      Lit(out, ",\"headers\":[");
      bool first = true;
      for (const auto& [k, v] : r.headers) {
        if (!first) out->push_back(',');
        first = false;
        Lit(out, "{\"key\":");
        AppendJsonBytes(k, out);
        Lit(out, ",\"value\":");
        AppendJsonBytes(v, out);
        out->push_back('}');
      }
      Lit(out, "]}\n");
      return;
    }
    case Kind::kTemplate:
      for (const Piece& p : pieces_) {
        switch (p.token) {
          case 0: out->append(p.literal); break;
          case 't': out->append(topic); break;
          case 'p': AppendInt(partition, out); break;
          case 'o': AppendInt(r.offset, out); break;
          case 'k':
            if (r.key_null) out->append(null_marker_);
            else out->append(r.key);
            break;
          case 's':
            if (r.value_null) out->append(null_marker_);
            else out->append(r.value);
            break;
          case 'K': AppendInt(r.key_null ? -1 : static_cast<int64_t>(r.key.size()), out); break;
          case 'S':
            AppendInt(r.value_null ? -1 : static_cast<int64_t>(r.value.size()), out);
            break;
          case 'T': AppendInt(r.timestamp, out); break;
          case 'I':
            if (r.timestamp < 0) AppendInt(r.timestamp, out);  // no timestamp (-1)
            else out->append(FormatTimestampMs(r.timestamp));
            break;
          case 'h': {
            bool first = true;
            for (const auto& [k, v] : r.headers) {
              if (!first) out->push_back(',');
              first = false;
              out->append(k);
              if (v) {
                out->push_back('=');
                out->append(*v);
              }
            }
            break;
          }
        }
      }
      return;
  }
}

namespace {

using Json = nlohmann::json;

Status BytesField(const Json& j, const char* what, std::optional<std::string>* out) {
  if (j.is_null()) {
    out->reset();
  } else if (j.is_string()) {
    *out = j.get_ref<const std::string&>();
  } else if (j.is_object() && j.size() == 1 && j.contains("base64") && j["base64"].is_string()) {
    auto d = Base64Decode(j["base64"].get_ref<const std::string&>());
    if (!d.ok()) return Status::InvalidArgument(std::string(what) + ": " + d.status().message());
    *out = std::move(*d);
  } else {
    *out = j.dump();
  }
  return Status::OK();
}

}  // namespace

Status ParseJsonRecord(std::string_view line, InputRecord* out) {
  out->Clear();
  Json j = Json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument("not valid JSON");
  if (!j.is_object()) return Status::InvalidArgument("expected a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const Json& v = it.value();
    if (k == "key") {
      SILT_TRY(BytesField(v, "key", &out->key));
    } else if (k == "value") {
      SILT_TRY(BytesField(v, "value", &out->value));
    } else if (k == "timestamp") {
      if (v.is_null()) continue;
      if (!v.is_number_integer()) return Status::InvalidArgument("timestamp: expected an integer");
      out->timestamp = v.get<int64_t>();
    } else if (k == "headers") {
      if (v.is_null()) continue;
      if (!v.is_array()) return Status::InvalidArgument("headers: expected an array");
      for (const Json& h : v) {
        if (!h.is_object() || !h.contains("key"))
          return Status::InvalidArgument("headers: expected objects {\"key\":...,\"value\":...}");
        std::optional<std::string> hk, hv;
        SILT_TRY(BytesField(h["key"], "header key", &hk));
        if (!hk) return Status::InvalidArgument("header key: must not be null");
        if (h.contains("value")) SILT_TRY(BytesField(h["value"], "header value", &hv));
        out->headers.emplace_back(std::move(*hk), std::move(hv));
      }
    } else if (k == "topic" || k == "partition" || k == "offset") {
      // Where the record came from; the producer decides where it goes.
    } else {
      return Status::InvalidArgument("unknown field '" + k + "'");
    }
  }
  return Status::OK();
}

}  // namespace silt::client
