// FetchSessionCache and FetchSession (lib/broker/fetch_session.h): slots, eviction, epochs and
// a session's partition order.
#include <climits>

#include "broker/fetch_session.h"
#include "doctest/doctest.h"

using namespace silt;
using namespace silt::broker;

namespace {

std::vector<SessionPartition> Partitions(int n, const std::string& topic = "t") {
  std::vector<SessionPartition> out;
  for (int i = 0; i < n; ++i) {
    SessionPartition p;
    p.topic = topic;
    p.partition = i;
    p.fetch_offset = 10 * i;
    out.push_back(p);
  }
  return out;
}

std::vector<int32_t> Order(const FetchSession& s) {
  std::vector<int32_t> out;
  for (const SessionPartition& p : s.partitions()) out.push_back(p.partition);
  return out;
}

}  // namespace

TEST_CASE("fetch session epochs run 1, 2, ... INT32_MAX and then 1 again") {
  CHECK(FetchSessionCache::NextEpoch(1) == 2);
  CHECK(FetchSessionCache::NextEpoch(INT32_MAX - 1) == INT32_MAX);
  CHECK(FetchSessionCache::NextEpoch(INT32_MAX) == 1);
  CHECK(FetchSessionCache::NextEpoch(-1) == -1);
}

TEST_CASE("a session keeps its partitions in order: upserts update in place, forgets remove, "
          "MoveToEnd rotates") {
  FetchSessionCache cache({});
  auto s = cache.Create(false, false, Partitions(3), 0);
  REQUIRE(s);
  CHECK(s->epoch() == 1);
  CHECK(s->id() != 0);
  CHECK(Order(*s) == std::vector<int32_t>{0, 1, 2});
  SessionPartition p1 = Partitions(3)[1];
  p1.fetch_offset = 99;
  p1.high_watermark = 5;  // what the client heard is the session's, not the request's
  s->Upsert(p1);
  CHECK(Order(*s) == std::vector<int32_t>{0, 1, 2});
  REQUIRE(s->Find(s->KeyOf("t", Uuid(), 1)));
  CHECK(s->Find(s->KeyOf("t", Uuid(), 1))->fetch_offset == 99);
  CHECK(s->Find(s->KeyOf("t", Uuid(), 1))->high_watermark == -1);
  s->MoveToEnd(s->KeyOf("t", Uuid(), 0));
  CHECK(Order(*s) == std::vector<int32_t>{1, 2, 0});
  s->Forget(s->KeyOf("t", Uuid(), 2));
  s->Forget(s->KeyOf("other", Uuid(), 1));  // not in the session: nothing happens
  CHECK(Order(*s) == std::vector<int32_t>{1, 0});
  SessionPartition added = Partitions(1, "u")[0];
  s->Upsert(added);
  CHECK(s->size() == 3);
  CHECK(s->Find(s->KeyOf("u", Uuid(), 0)));
}

TEST_CASE("sessions by topic id key their partitions by id, not by name") {
  FetchSessionCache cache({});
  const Uuid a(Uuid::Bytes{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  std::vector<SessionPartition> parts = Partitions(1, "");
  parts[0].topic_id = a;
  auto s = cache.Create(false, true, parts, 0);
  REQUIRE(s);
  CHECK(s->uses_topic_ids());
  CHECK(s->Find(s->KeyOf("renamed", a, 0)));
  CHECK_FALSE(s->Find(s->KeyOf("", Uuid(), 0)));
}

TEST_CASE("a full cache takes a stale session's slot, else a less valuable one's, else refuses") {
  FetchSessionCache::Options o;
  o.max_slots = 2;
  o.eviction_ms = 1000;
  FetchSessionCache cache(o);
  auto small = cache.Create(false, false, Partitions(2), 0);
  auto big = cache.Create(false, false, Partitions(5), 10);
  REQUIRE(small);
  REQUIRE(big);
  CHECK(cache.size() == 2);

  // Not stale yet, and a consumer's session of 1 partition is worth less than both.
  CHECK_FALSE(cache.Create(false, false, Partitions(1), 500));
  CHECK(cache.evictions() == 0);
  // 3 partitions are worth more than the 2 of `small`, which goes.
  auto mid = cache.Create(false, false, Partitions(3), 600);
  REQUIRE(mid);
  CHECK(cache.evictions() == 1);
  CHECK_FALSE(cache.Get(small->id(), 600));
  CHECK(cache.Get(big->id(), 700) == big);  // used at 700
  // A follower's session takes a consumer's slot whatever its size: the smaller, `mid`.
  auto follower = cache.Create(true, false, Partitions(1), 800);
  REQUIRE(follower);
  CHECK_FALSE(cache.Get(mid->id(), 800));
  CHECK(cache.Get(big->id(), 850) == big);
  // A consumer's cannot take a follower's, nor a bigger consumer session's while it is fresh.
  CHECK_FALSE(cache.Create(false, false, Partitions(4), 900));
  // Once the least recently used one (the follower's, used at 800) has been idle past 1 s, any
  // new session may take its slot.
  auto late = cache.Create(false, false, Partitions(1), 1801);
  REQUIRE(late);
  CHECK_FALSE(cache.Get(follower->id(), 1801));
  CHECK(cache.Get(big->id(), 1801) == big);
  CHECK(cache.size() == 2);
  CHECK(cache.evictions() == 3);

  // Resized counts: `big` shrinks to 1 partition and is then worth less than a new 2.
  cache.Resized(big, 1);
  auto two = cache.Create(false, false, Partitions(2), 1900);
  REQUIRE(two);
  CHECK(cache.size() == 2);
  CHECK((cache.Get(big->id(), 1900) == nullptr) != (cache.Get(late->id(), 1900) == nullptr));
  cache.Remove(two->id());
  CHECK(cache.size() == 1);
}

TEST_CASE("a cache of no slots makes no session") {
  FetchSessionCache::Options o;
  o.max_slots = 0;
  FetchSessionCache cache(o);
  CHECK_FALSE(cache.enabled());
  CHECK_FALSE(cache.Create(true, false, Partitions(1), 0));
  CHECK(cache.size() == 0);
}
