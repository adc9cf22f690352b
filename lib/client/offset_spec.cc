// Offset expressions and timestamps (see offset_spec.h).
#include "client/offset_spec.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <string>

#include <time.h>

namespace silt::client {
namespace {

bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Reads exactly `n` digits at s[*i]; advances *i.
bool Digits(std::string_view s, size_t* i, int n, int* out) {
  if (*i + n > s.size()) return false;
  int v = 0;
  for (int k = 0; k < n; ++k) {
    char c = s[*i + k];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *i += n;
  *out = v;
  return true;
}

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar.
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool IsLeap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int64_t NowMs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// Splits "123ms" into 123 and "ms"; false unless digits are followed by letters only.
bool NumberAndUnit(std::string_view s, int64_t* n, std::string_view* unit) {
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == 0 || !ParseInt64(s.substr(0, i), n)) return false;
  *unit = s.substr(i);
  return std::all_of(unit->begin(), unit->end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

}  // namespace

Result<int64_t> ParseTimestampMs(std::string_view text, int64_t now_ms) {
  auto bad = [&] {
    return Status::InvalidArgument(
        "bad timestamp '" + std::string(text) +
        "': expected seconds or milliseconds since the epoch (N, Ns, Nms), a time before now "
        "(-1h, -15m, -30s, -2d) or ISO-8601 like 2026-01-02T03:04:05Z");
  };
  if (AllDigits(text)) {
    int64_t v;
    if (!ParseInt64(text, &v)) return bad();
    if (v < kSecondsBelow) return v * 1000;
    return v;
  }
  int64_t n = 0;
  std::string_view unit;
  if (NumberAndUnit(text, &n, &unit)) {
    if (unit == "ms") return n;
    if (unit == "s" && n <= INT64_MAX / 1000) return n * 1000;
    return bad();
  }
  if (!text.empty() && text[0] == '-' && NumberAndUnit(text.substr(1), &n, &unit)) {
    int64_t scale = 0;
    if (unit == "ms") scale = 1;
    else if (unit == "s") scale = 1000;
    else if (unit == "m") scale = 60 * 1000;
    else if (unit == "h") scale = 3600 * 1000;
    else if (unit == "d") scale = 24 * 3600 * 1000;
    if (scale == 0 || n > INT64_MAX / scale / 2) return bad();
    return (now_ms >= 0 ? now_ms : NowMs()) - n * scale;
  }
  size_t i = 0;
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, millis = 0;
  if (!Digits(text, &i, 4, &year) || i >= text.size() || text[i++] != '-' ||
      !Digits(text, &i, 2, &month) || i >= text.size() || text[i++] != '-' ||
      !Digits(text, &i, 2, &day))
    return bad();
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1 ||
      day > kDays[month - 1] + (month == 2 && IsLeap(year) ? 1 : 0))
    return bad();
  int64_t offset_minutes = 0;
  if (i < text.size()) {
    if (text[i] != 'T' && text[i] != 't' && text[i] != ' ') return bad();
    ++i;
    if (!Digits(text, &i, 2, &hour) || i >= text.size() || text[i++] != ':' ||
        !Digits(text, &i, 2, &minute))
      return bad();
    if (i < text.size() && text[i] == ':') {
      ++i;
      if (!Digits(text, &i, 2, &second)) return bad();
      if (i < text.size() && (text[i] == '.' || text[i] == ',')) {
        ++i;
        size_t start = i;
        int scale = 100;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
          millis += (text[i] - '0') * scale;
          scale /= 10;
          ++i;
        }
        if (i == start) return bad();
      }
    }
    if (hour > 23 || minute > 59 || second > 60) return bad();
    if (i < text.size()) {
      if (text[i] == 'Z' || text[i] == 'z') {
        ++i;
      } else if (text[i] == '+' || text[i] == '-') {
        int sign = text[i] == '-' ? -1 : 1;
        ++i;
        int oh, om = 0;
        if (!Digits(text, &i, 2, &oh)) return bad();
        if (i < text.size() && text[i] == ':') ++i;
        if (i < text.size() && !Digits(text, &i, 2, &om)) return bad();
        if (oh > 23 || om > 59) return bad();
        offset_minutes = sign * (oh * 60 + om);
      } else {
        return bad();
      }
    }
    if (i != text.size()) return bad();
  }
  int64_t days = DaysFromCivil(year, month, day);
  int64_t secs = days * 86400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
  return secs * 1000 + millis;
}

std::string FormatTimestampMs(int64_t ms) {
  int64_t secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
  int millis = static_cast<int>(ms - secs * 1000);
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  return buf;
}

Result<OffsetSpec> ParseOffsetSpec(std::string_view text, int64_t now_ms) {
  auto bad = [&](std::string why) {
    return Status::InvalidArgument("bad offset '" + std::string(text) + "'" + why +
                                   ": expected beginning, end, N, -N, @TIME or START:END");
  };
  if (text == "beginning" || text == "earliest") return OffsetSpec::Beginning();
  if (text == "end" || text == "latest") return OffsetSpec::End();
  if (!text.empty() && text[0] == '@') {
    auto ts = ParseTimestampMs(text.substr(1), now_ms);
    if (!ts.ok()) return bad(" (" + ts.status().message() + ")");
    return OffsetSpec{OffsetSpec::Kind::kTimestamp, *ts};
  }
  if (!text.empty() && text[0] == '-') {
    int64_t n;
    if (!AllDigits(text.substr(1)) || !ParseInt64(text.substr(1), &n)) return bad("");
    return OffsetSpec{OffsetSpec::Kind::kFromEnd, n};
  }
  int64_t n;
  if (!AllDigits(text) || !ParseInt64(text, &n)) return bad("");
  return OffsetSpec{OffsetSpec::Kind::kAbsolute, n};
}

Result<OffsetRange> ParseOffsetRange(std::string_view text, int64_t now_ms) {
  // Where START ends: before ":@" always; for a START that is not a time, at its first ':'
  // (a time's own ISO-8601 colons are never a separator); before a final ':' (open end).
  size_t split = text.find(":@");
  if (split == std::string_view::npos && !text.empty() && text[0] != '@')
    split = text.find(':');
  if (split == std::string_view::npos && text.size() > 1 && text.back() == ':')
    split = text.size() - 1;
  if (split == std::string_view::npos) {
    SILT_ASSIGN_OR_RETURN(OffsetSpec start, ParseOffsetSpec(text, now_ms));
    return OffsetRange{start, std::nullopt};
  }
  OffsetRange r;
  std::string_view start = text.substr(0, split), end = text.substr(split + 1);
  if (start.empty()) {
    r.start = OffsetSpec::Beginning();
  } else {
    SILT_ASSIGN_OR_RETURN(r.start, ParseOffsetSpec(start, now_ms));
  }
  if (end.empty()) return r;
  SILT_ASSIGN_OR_RETURN(OffsetSpec e, ParseOffsetSpec(end, now_ms));
  if (e.kind != OffsetSpec::Kind::kAbsolute && e.kind != OffsetSpec::Kind::kTimestamp &&
      e.kind != OffsetSpec::Kind::kEnd)
    return Status::InvalidArgument("bad offset range '" + std::string(text) +
                                   "': the end must be N, @TIME or end");
  if (e.kind == r.start.kind && e.value < r.start.value)
    return Status::InvalidArgument("bad offset range '" + std::string(text) +
                                   "': the end comes before the start");
  r.end = e;
  return r;
}

Result<int64_t> ResolveOffset(const OffsetSpec& spec, int64_t log_start, int64_t log_end,
                              const std::function<Result<int64_t>(int64_t)>& for_timestamp) {
  switch (spec.kind) {
    case OffsetSpec::Kind::kBeginning:
      return log_start;
    case OffsetSpec::Kind::kEnd:
      return log_end;
    case OffsetSpec::Kind::kAbsolute:
      return std::clamp(spec.value, log_start, log_end);
    case OffsetSpec::Kind::kFromEnd:
      return std::max(log_start, log_end - std::min(spec.value, log_end));
    case OffsetSpec::Kind::kTimestamp: {
      auto r = for_timestamp(spec.value);
      if (r.ok()) return std::clamp(*r, log_start, log_end);
      if (r.status().IsNotFound()) return log_end;
      return r.status();
    }
  }
  return Status::Internal("unreachable offset kind");
}

}  // namespace silt::client
