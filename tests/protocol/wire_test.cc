// Kafka wire primitives: classic and compact encodings, tagged fields, and hostile input
// (negative lengths, huge counts, truncation) rejected before anything is allocated.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "protocol/messages.h"
#include "protocol/wire.h"

using namespace silt;
using namespace silt::protocol;

// The largest single allocation made while `g_track_allocations` is set: proves that a decoder
// fed a huge count or length fails without reserving memory for it.
namespace {
std::atomic<bool> g_track_allocations{false};
std::atomic<size_t> g_largest_allocation{0};
}  // namespace

void* operator new(size_t n) {
  if (g_track_allocations.load(std::memory_order_relaxed)) {
    size_t prev = g_largest_allocation.load(std::memory_order_relaxed);
    while (n > prev && !g_largest_allocation.compare_exchange_weak(prev, n)) {
    }
  }
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
// The nothrow forms too (std::stable_sort's temporary buffer uses one): every form that can
// reach the deletes below must come from malloc, or a sanitizer's own operator new would be
// paired with free.
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try {
    return ::operator new(n);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

// Decodes `bytes` as T at `version` while tracking allocations; returns the Status and stores
// the largest single allocation in *largest.
template <typename T>
Status DecodeTracked(std::string_view bytes, int16_t version, size_t* largest) {
  T m;
  ByteReader r(bytes);
  g_largest_allocation = 0;
  g_track_allocations = true;
  Status s = m.Decode(r, version);
  g_track_allocations = false;
  *largest = g_largest_allocation;
  return s;
}

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

}  // namespace

TEST_CASE("classic strings, bytes and arrays use int16/int32 lengths with -1 for null") {
  std::string out;
  ByteWriter w(&out);
  Encoder e(w, false);
  e.String(std::string("ab"));
  e.NullableString(std::nullopt);
  e.Bytes(std::string("xyz"));
  e.NullableBytes(std::nullopt);
  std::vector<int32_t> arr{7};
  e.Array(arr, [&](const int32_t& x) { e.I32(x); });
  std::optional<std::vector<int32_t>> none;
  e.NullableArray(none, [&](const int32_t& x) { e.I32(x); });
  CHECK(out == Bytes({0, 2, 'a', 'b', 0xff, 0xff, 0, 0, 0, 3, 'x', 'y', 'z', 0xff, 0xff, 0xff, 0xff,
                      0, 0, 0, 1, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff}));

  ByteReader r(out);
  Decoder d(r, false);
  std::string s, b;
  std::optional<std::string> ns = "x", nb = "x";
  std::vector<int32_t> a;
  std::optional<std::vector<int32_t>> na = std::vector<int32_t>{1};
  d.String(s);
  d.NullableString(ns);
  d.Bytes(b);
  d.NullableBytes(nb);
  d.Array(a, [&](int32_t& x) { d.I32(x); }, 4);
  d.NullableArray(na, [&](int32_t& x) { d.I32(x); }, 4);
  REQUIRE(d.ok());
  CHECK(s == "ab");
  CHECK_FALSE(ns.has_value());
  CHECK(b == "xyz");
  CHECK_FALSE(nb.has_value());
  CHECK(a == std::vector<int32_t>{7});
  CHECK_FALSE(na.has_value());
  CHECK(r.empty());
}

TEST_CASE("compact strings, bytes and arrays use an unsigned varint of length plus one") {
  std::string out;
  ByteWriter w(&out);
  Encoder e(w, true);
  e.String(std::string("ab"));
  e.NullableString(std::nullopt);
  e.Bytes(std::string(200, 'z'));
  std::vector<int32_t> arr{7};
  e.Array(arr, [&](const int32_t& x) { e.I32(x); });
  e.TaggedFields();
  REQUIRE(out.size() == 1 + 2 + 1 + 2 + 200 + 1 + 4 + 1);
  CHECK(out.substr(0, 4) == Bytes({3, 'a', 'b', 0}));
  CHECK(out.substr(4, 2) == Bytes({0xc9, 0x01}));  // 201 as a varint
  CHECK(out.substr(206) == Bytes({2, 0, 0, 0, 7, 0}));

  ByteReader r(out);
  Decoder d(r, true);
  std::string s, b;
  std::optional<std::string> ns;
  std::vector<int32_t> a;
  d.String(s);
  d.NullableString(ns);
  d.Bytes(b);
  d.Array(a, [&](int32_t& x) { d.I32(x); }, 4);
  d.TaggedFields();
  REQUIRE(d.ok());
  CHECK(s == "ab");
  CHECK(b == std::string(200, 'z'));
  CHECK(a == std::vector<int32_t>{7});
  CHECK(r.empty());
}

TEST_CASE("unknown tagged fields are skipped on read and none are written") {
  // Two tagged fields: tag 0 with 3 bytes, tag 5 with 0 bytes; then an int8 that must be read.
  std::string in = Bytes({2, 0, 3, 'a', 'b', 'c', 5, 0, 42});
  ByteReader r(in);
  Decoder d(r, true);
  d.TaggedFields();
  int8_t after = 0;
  d.I8(after);
  REQUIRE(d.ok());
  CHECK(after == 42);

  std::string bad = Bytes({1, 0, 9, 'a'});  // a 9-byte field with 1 byte left
  ByteReader rb(bad);
  Decoder db(rb, true);
  db.TaggedFields();
  CHECK(db.status().IsTruncated());

  std::string many = Bytes({0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0});  // 2^32-1 fields, 2 bytes left
  ByteReader rm(many);
  Decoder dm(rm, true);
  dm.TaggedFields();
  CHECK(dm.status().IsCorruption());

  // Non-flexible decoders and encoders have no tagged-field section at all.
  std::string none;
  ByteWriter w(&none);
  Encoder(w, false).TaggedFields();
  CHECK(none.empty());
}

TEST_CASE("known tagged fields are decoded, written only off their default, and bounded by their size") {
  // tag 1 (known, int32), tag 3 (unknown, 2 bytes), tag 4 (known, 2-byte field read as int8).
  std::string in = Bytes({3, 1, 4, 0, 0, 0, 7, 3, 2, 'x', 'y', 4, 2, 9, 99, 42});
  ByteReader r(in);
  Decoder d(r, true);
  int32_t one = -1;
  int8_t four = -1;
  d.TaggedFields([&](auto& tf) {
    tf.Field(1, one != -1, [&] { d.I32(one); });
    tf.Field(4, four != -1, [&] { d.I8(four); });  // reads less than its size: rest skipped
  });
  int8_t after = 0;
  d.I8(after);
  REQUIRE(d.ok());
  CHECK(one == 7);
  CHECK(four == 9);
  CHECK(after == 42);

  // A known field whose value reads past its declared size is corruption.
  std::string over = Bytes({1, 1, 2, 0, 0, 0, 7});
  ByteReader ro(over);
  Decoder dov(ro, true);
  int32_t v = 0;
  dov.TaggedFields([&](auto& tf) { tf.Field(1, true, [&] { dov.I32(v); }); });
  CHECK(dov.status().IsCorruption());

  // Encoding writes only the fields that differ from their defaults, each with its size.
  std::string out;
  ByteWriter w(&out);
  Encoder e(w, true);
  int32_t set = 7, unset = -1;
  e.TaggedFields([&](auto& tf) {
    tf.Field(1, set != -1, [&] { e.I32(set); });
    tf.Field(2, unset != -1, [&] { e.I32(unset); });
  });
  CHECK(out == Bytes({1, 1, 4, 0, 0, 0, 7}));
}

TEST_CASE("negative lengths other than -1 are corruption, and null in a non-nullable field too") {
  auto check = [](std::string in, bool flexible, auto read) {
    ByteReader r(in);
    Decoder d(r, flexible);
    read(d);
    CHECK(d.status().IsCorruption());
  };
  check(Bytes({0xff, 0xfe, 'a'}), false, [](Decoder& d) { std::string s; d.String(s); });
  check(Bytes({0xff, 0xff}), false, [](Decoder& d) { std::string s; d.String(s); });
  check(Bytes({0x80, 0, 0, 0}), false, [](Decoder& d) { std::string s; d.Bytes(s); });
  check(Bytes({0xff, 0xff, 0xff, 0xfe}), false,
        [](Decoder& d) { std::optional<std::string> s; d.NullableBytes(s); });
  check(Bytes({0xff, 0xff, 0xff, 0xfd}), false, [](Decoder& d) { RecordSet s; d.Records(s); });
  check(Bytes({0xff, 0xff, 0xff, 0xfe}), false, [](Decoder& d) {
    std::vector<int32_t> v;
    d.Array(v, [&](int32_t& x) { d.I32(x); }, 4);
  });
  check(Bytes({0xff, 0xff, 0xff, 0xff}), false, [](Decoder& d) {
    std::vector<int32_t> v;
    d.Array(v, [&](int32_t& x) { d.I32(x); }, 4);
  });
  check(Bytes({0}), true, [](Decoder& d) { std::string s; d.String(s); });
  // A varint longer than five bytes.
  check(Bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0x01}), true, [](Decoder& d) { uint32_t u; d.Uvarint(u); });
}

TEST_CASE("a huge array count with few bytes left fails without allocating for it") {
  // Metadata v0 response: brokers count 1e9 followed by 10 bytes.
  std::string in = Bytes({0x3b, 0x9a, 0xca, 0x00});
  in.append(10, '\0');
  size_t largest = 0;
  Status s = DecodeTracked<MetadataResponse>(in, 0, &largest);
  CHECK(s.IsCorruption());
  CHECK(largest < 4096);
  INFO(s.ToString());
  CHECK(s.message().find("1000000000") != std::string::npos);

  // The tracker sees real allocations: a valid 5000-byte key is allocated once decoded.
  std::string key = Bytes({0x13, 0x88}) + std::string(5000, 'k');
  REQUIRE(DecodeTracked<FindCoordinatorRequest>(key, 0, &largest).ok());
  CHECK(largest >= 5000);

  // An int32 array of 4 elements needs 16 bytes: 15 are not enough even though 4 <= 15.
  std::string ints = Bytes({0, 0, 0, 4});
  ints.append(15, '\0');
  ByteReader r(ints);
  Decoder d(r, false);
  std::vector<int32_t> v;
  d.Array(v, [&](int32_t& x) { d.I32(x); }, 4);
  CHECK(d.status().IsCorruption());
  CHECK(v.capacity() == 0);

  // The same through a compact count (flexible ApiVersions v3): 2^31 entries.
  std::string compact = Bytes({0, 0, 0x80, 0x80, 0x80, 0x80, 0x08});
  compact.append(10, '\0');
  CHECK(DecodeTracked<ApiVersionsResponse>(compact, 3, &largest).IsCorruption());
  CHECK(largest < 4096);
}

TEST_CASE("a huge string or bytes length with few bytes left fails without allocating for it") {
  size_t largest = 0;
  // FindCoordinator v0 request: key length 0x7fff with 3 bytes left.
  Status s = DecodeTracked<FindCoordinatorRequest>(Bytes({0x7f, 0xff, 'a', 'b', 'c'}), 0, &largest);
  CHECK(s.IsTruncated());
  CHECK(largest < 4096);
  // SyncGroup v0 response: error 0, assignment bytes of length 2^31-1 with 4 bytes left.
  s = DecodeTracked<SyncGroupResponse>(Bytes({0, 0, 0x7f, 0xff, 0xff, 0xff, 1, 2, 3, 4}), 0, &largest);
  CHECK(s.IsTruncated());
  CHECK(largest < 4096);
  // Produce v3: records of length 2^31-1 with nothing behind.
  std::string produce = Bytes({0xff, 0xff, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 1,
                               0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff});
  s = DecodeTracked<ProduceRequest>(produce, 3, &largest);
  CHECK(s.IsTruncated());
  CHECK(largest < 4096);
}

TEST_CASE("a decoder stops at the first error and reports it with the message name") {
  // Heartbeat v0 request cut inside generation_id.
  std::string in = Bytes({0, 1, 'g', 0, 0});
  HeartbeatRequest m;
  ByteReader r(in);
  Status s = m.Decode(r, 0);
  CHECK(s.IsTruncated());
  CHECK(s.message().find("HeartbeatRequest v0") != std::string::npos);
}

TEST_CASE("encoding a file-backed record set emits buffer and file pieces in wire order") {
  std::string out;
  ByteWriter w(&out);
  std::vector<Piece> pieces;
  Encoder e(w, false);
  e.set_pieces(&pieces, 0);
  e.I32(1);
  RecordSet rs;
  rs.file = FileSlice{7, 4096, 100};
  e.Records(rs);
  e.I16(2);
  e.FinishPieces();
  REQUIRE(pieces.size() == 3);
  CHECK_FALSE(pieces[0].file.has_value());
  CHECK(pieces[0].begin == 0);
  CHECK(pieces[0].end == 8);  // int32 + records length
  REQUIRE(pieces[1].file.has_value());
  CHECK(*pieces[1].file == FileSlice{7, 4096, 100});
  CHECK(pieces[2].begin == 8);
  CHECK(pieces[2].end == 10);
  CHECK(out.substr(4, 4) == Bytes({0, 0, 0, 100}));
}
