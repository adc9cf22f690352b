#include "format/legacy.h"

#include <doctest/doctest.h>
#include <zlib.h>

#include <optional>
#include <string>
#include <vector>

#include "base/coding.h"
#include "format/compression.h"
#include "format/record_batch.h"
#include "legacy_builders.h"

using namespace silt;
using namespace silt::format;

namespace {

using Bytes = format::testing::LegacyBytes;

std::string Message(int8_t magic, int8_t attributes, int64_t timestamp, const Bytes& key,
                    const Bytes& value) {
  return format::testing::LegacyMessage(magic, attributes, timestamp, key, value);
}

std::string Entry(int64_t offset, const std::string& message) {
  return format::testing::LegacyEntry(offset, message);
}

std::string Wrapper(int8_t magic, Compression codec, int64_t timestamp,
                    const std::string& inner_set, bool log_append_time = false) {
  auto packed = Compress(codec, inner_set);
  REQUIRE(packed.ok());
  int8_t attributes = static_cast<int8_t>(codec);
  if (log_append_time) attributes |= kTimestampTypeBit;
  return Message(magic, attributes, timestamp, std::nullopt, *packed);
}

struct Seen {
  std::vector<int64_t> offsets;
  std::vector<std::string> values;
  std::vector<LegacyMessageInfo> infos;
};

Status Walk(std::string_view set, Seen* seen, LegacyOptions o = {}) {
  return ForEachLegacyMessage(set, o, [&](const LegacyMessage& m) {
    seen->offsets.push_back(m.info.offset);
    seen->values.push_back(m.value_null ? "<null>" : std::string(m.value));
    seen->infos.push_back(m.info);
    return true;
  });
}

}  // namespace

TEST_CASE("magic 0 and magic 1 messages decode with their keys, values, timestamps and CRCs") {
  std::string set = Entry(0, Message(0, 0, 0, "k0", "v0")) +
                    Entry(1, Message(1, 0, 1234, std::nullopt, "v1")) +
                    Entry(2, Message(1, 0, 99, "", std::nullopt));
  std::vector<LegacyMessage> got;
  std::vector<std::string> keys;
  REQUIRE(ForEachLegacyMessage(set, {}, [&](const LegacyMessage& m) {
    got.push_back(m);
    keys.push_back(m.key_null ? "<null>" : std::string(m.key));
    return true;
  }).ok());
  REQUIRE(got.size() == 3);
  CHECK(got[0].info.magic == 0);
  CHECK(got[0].info.timestamp == -1);
  CHECK(keys[0] == "k0");
  CHECK(got[0].info.crc_valid);
  CHECK(got[0].info.position == 0);
  CHECK(got[1].info.magic == 1);
  CHECK(got[1].info.timestamp == 1234);
  CHECK(keys[1] == "<null>");
  CHECK(got[1].info.position == static_cast<int64_t>(Entry(0, Message(0, 0, 0, "k0", "v0")).size()));
  CHECK(keys[2] == "");
  CHECK(got[2].value_null);
  CHECK(got[2].info.offset == 2);
  RecordView rv = got[1].ToRecordView();
  CHECK(rv.offset == 1);
  CHECK(rv.timestamp == 1234);
  CHECK(rv.key_null);
}

TEST_CASE("magic 1 wrapper offsets resolve relative inner offsets against the last inner one") {
  for (Compression c : {Compression::kGzip, Compression::kSnappy, Compression::kLz4}) {
    CAPTURE(std::string(CompressionName(c)));
    std::string inner = Entry(0, Message(1, 0, 10, "a", "alpha")) +
                        Entry(1, Message(1, 0, 11, "b", "beta")) +
                        Entry(2, Message(1, 0, 12, "c", "gamma"));
    // The wrapper sits at the last inner message's absolute offset, 52.
    std::string set = Entry(52, Wrapper(1, c, 12, inner));
    Seen seen;
    REQUIRE(Walk(set, &seen).ok());
    CHECK(seen.offsets == std::vector<int64_t>{50, 51, 52});
    CHECK(seen.values == std::vector<std::string>{"alpha", "beta", "gamma"});
    for (const auto& i : seen.infos) {
      CHECK(i.inner);
      CHECK(i.wrapper_codec == c);
      CHECK(i.wrapper_offset == 52);
      CHECK(i.position == 0);
      CHECK(i.crc_valid);
    }
    CHECK(seen.infos[1].timestamp == 11);
  }
}

TEST_CASE("magic 0 wrappers keep the absolute inner offsets as stored") {
  std::string inner = Entry(7, Message(0, 0, 0, std::nullopt, "x")) +
                      Entry(8, Message(0, 0, 0, std::nullopt, "y"));
  Seen seen;
  REQUIRE(Walk(Entry(8, Wrapper(0, Compression::kGzip, 0, inner)), &seen).ok());
  CHECK(seen.offsets == std::vector<int64_t>{7, 8});
}

TEST_CASE("inner messages of a LogAppendTime wrapper take the wrapper's timestamp") {
  std::string inner = Entry(0, Message(1, 0, 5, std::nullopt, "x")) +
                      Entry(1, Message(1, 0, 6, std::nullopt, "y"));
  Seen seen;
  REQUIRE(Walk(Entry(1, Wrapper(1, Compression::kGzip, 777, inner, true)), &seen).ok());
  REQUIRE(seen.infos.size() == 2);
  CHECK(seen.infos[0].timestamp == 777);
  CHECK(seen.infos[1].timestamp == 777);
  CHECK(seen.infos[0].log_append_time);
}

TEST_CASE("include_wrappers yields the wrapper itself before its inner messages") {
  std::string inner = Entry(0, Message(1, 0, 5, std::nullopt, "x"));
  Seen seen;
  LegacyOptions o;
  o.include_wrappers = true;
  REQUIRE(Walk(Entry(3, Wrapper(1, Compression::kSnappy, 5, inner)), &seen, o).ok());
  REQUIRE(seen.infos.size() == 2);
  CHECK(seen.infos[0].codec == Compression::kSnappy);
  CHECK_FALSE(seen.infos[0].inner);
  CHECK(seen.offsets == std::vector<int64_t>{3, 3});
}

TEST_CASE("a legacy CRC mismatch is Corruption, or reported per message when not verifying") {
  std::string msg = Message(1, 0, 1, "k", "value");
  msg.back() ^= 1;
  std::string set = Entry(0, msg);
  Seen seen;
  Status s = Walk(set, &seen);
  CHECK(s.IsCorruption());
  CHECK(seen.offsets.empty());

  LegacyOptions lenient;
  lenient.verify_crc = false;
  Seen seen2;
  REQUIRE(Walk(set, &seen2, lenient).ok());
  REQUIRE(seen2.infos.size() == 1);
  CHECK_FALSE(seen2.infos[0].crc_valid);
  CHECK(seen2.infos[0].crc != seen2.infos[0].computed_crc);
}

TEST_CASE("a message set cut short yields every whole message, then Truncated") {
  std::string set = Entry(0, Message(1, 0, 1, "a", "1")) + Entry(1, Message(1, 0, 1, "b", "2"));
  Seen seen;
  Status s = Walk(std::string_view(set).substr(0, set.size() - 3), &seen);
  CHECK(s.IsTruncated());
  CHECK(seen.offsets == std::vector<int64_t>{0});
  Seen seen2;
  CHECK(Walk(std::string_view(set).substr(0, set.size() / 2 + 5), &seen2).IsTruncated());
}

TEST_CASE("malformed legacy messages are Corruption: sizes, magic, nesting, codecs, null value") {
  Seen seen;
  // Key length overruns the message.
  std::string m = Message(0, 0, 0, "key", "v");
  EncodeBE32(m.data() + 6, 100);
  LegacyOptions nocrc;
  nocrc.verify_crc = false;
  CHECK(Walk(Entry(0, m), &seen, nocrc).IsCorruption());
  // Extra bytes after the value.
  std::string extra = Message(0, 0, 0, "key", "v") + "zz";
  CHECK(Walk(Entry(0, extra), &seen, nocrc).IsCorruption());
  // A messageSize below the minimum.
  std::string tiny = Entry(0, Message(0, 0, 0, std::nullopt, std::nullopt)).substr(0, 12) +
                     std::string(10, '\0');
  EncodeBE32(tiny.data() + 8, 5);
  CHECK(Walk(tiny, &seen).IsCorruption());
  // Nested compression.
  std::string inner_wrapper = Entry(0, Wrapper(1, Compression::kGzip, 1,
                                               Entry(0, Message(1, 0, 1, std::nullopt, "x"))));
  CHECK(Walk(Entry(0, Wrapper(1, Compression::kGzip, 1, inner_wrapper)), &seen).IsCorruption());
  // Unknown codec 6, and zstd below magic 2 unless allowed.
  CHECK(Walk(Entry(0, Message(1, 6, 1, std::nullopt, "x")), &seen).IsCorruption());
  std::string zstd = Entry(0, Wrapper(1, Compression::kZstd, 1,
                                      Entry(0, Message(1, 0, 1, std::nullopt, "z"))));
  CHECK(Walk(zstd, &seen).IsCorruption());
  LegacyOptions allow;
  allow.allow_zstd = true;
  Seen zs;
  REQUIRE(Walk(zstd, &zs, allow).ok());
  CHECK(zs.values == std::vector<std::string>{"z"});
  // A compressed message with a null value.
  CHECK(Walk(Entry(0, Message(1, 1, 1, std::nullopt, std::nullopt)), &seen).IsCorruption());
  // An inner set whose last entry is cut short.
  std::string inner = Entry(0, Message(1, 0, 1, std::nullopt, "abc"));
  inner.pop_back();
  CHECK(Walk(Entry(0, Wrapper(1, Compression::kGzip, 1, inner)), &seen).IsCorruption());
  // Magic 2 where a legacy message belongs.
  std::string v2 = Message(1, 0, 1, std::nullopt, "x");
  v2[4] = 2;
  CHECK(ForEachInLegacyMessage(v2, 0, nocrc, [](const LegacyMessage&) { return true; })
            .IsCorruption());
}

TEST_CASE("a compressed wrapper that inflates past the limit is TooLarge") {
  std::string inner;
  for (int i = 0; i < 64; ++i) inner += Entry(i, Message(1, 0, 1, std::nullopt, std::string(32 * 1024, 'q')));
  LegacyOptions o;
  o.max_uncompressed_size = 1 << 20;
  Seen seen;
  CHECK(Walk(Entry(63, Wrapper(1, Compression::kLz4, 1, inner)), &seen, o).IsTooLarge());
  CHECK(seen.offsets.empty());
}

TEST_CASE("the visitor can stop a legacy walk early") {
  std::string set = Entry(0, Message(0, 0, 0, std::nullopt, "a")) +
                    Entry(1, Message(0, 0, 0, std::nullopt, "b"));
  int n = 0;
  CHECK(ForEachLegacyMessage(set, {}, [&](const LegacyMessage&) { return ++n < 1; }).ok());
  CHECK(n == 1);
}

TEST_CASE("the log entry scanner splits mixed magic 0, 1 and 2 entries and reports their ends") {
  RecordBatchBuilder b({.base_offset = 2});
  b.Add("k", "v2-a", 100);
  b.Add("k", "v2-b", 101);
  auto batch = b.Finish();
  REQUIRE(batch.ok());
  std::string log = Entry(0, Message(0, 0, 0, std::nullopt, "v0")) +
                    Entry(1, Message(1, 0, 50, std::nullopt, "v1")) + *batch +
                    Entry(5, Wrapper(1, Compression::kGzip, 60,
                                     Entry(0, Message(1, 0, 60, std::nullopt, "c0")) +
                                         Entry(1, Message(1, 0, 61, std::nullopt, "c1"))));
  LogEntryScanner scanner(log, 1000);
  LogEntry e;
  std::vector<int> magics;
  std::vector<int64_t> offsets, positions;
  Status s;
  while ((s = scanner.Next(&e)).ok()) {
    magics.push_back(e.magic);
    offsets.push_back(e.offset);
    positions.push_back(e.position);
  }
  CHECK(s.IsNotFound());
  CHECK(magics == std::vector<int>{0, 1, 2, 1});
  CHECK(offsets == std::vector<int64_t>{0, 1, 2, 5});
  CHECK(positions[0] == 1000);
  CHECK(scanner.consumed() == log.size());

  std::vector<int64_t> record_offsets;
  std::vector<std::string> values;
  std::vector<int> record_magics;
  REQUIRE(ForEachLogRecord(log, {}, [&](const LogRecord& r) {
    record_offsets.push_back(r.record.offset);
    values.emplace_back(r.record.value);
    record_magics.push_back(r.magic);
    if (r.magic == 2) CHECK(r.batch != nullptr);
    else CHECK(r.legacy != nullptr);
    return true;
  }).ok());
  CHECK(record_offsets == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
  CHECK(values == std::vector<std::string>{"v0", "v1", "v2-a", "v2-b", "c0", "c1"});
  CHECK(record_magics == std::vector<int>{0, 1, 2, 2, 1, 1});

  // A torn tail: every whole entry is still visited, then Truncated.
  int seen = 0;
  Status t = ForEachLogRecord(std::string_view(log).substr(0, log.size() - 1), {},
                              [&](const LogRecord&) { return ++seen > 0; });
  CHECK(t.IsTruncated());
  CHECK(seen == 4);
  // A header fragment is also Truncated.
  LogEntryScanner frag(std::string_view(log).substr(0, 10));
  CHECK(frag.Next(&e).IsTruncated());
  // An unknown magic is Corruption.
  std::string bad = log;
  bad[16] = 7;
  LogEntryScanner bad_scanner(bad);
  CHECK(bad_scanner.Next(&e).IsCorruption());
}
