// Reading libraft's Raft directory: file names, the batch checksum, a segment built byte by
// byte from libraft's layout (metadata_log.h), damage and a torn end, and silt's command entry.
#include "cluster/metadata_log.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "base/coding.h"
#include "base/file.h"

using namespace silt;
using namespace silt::cluster;

namespace {

void PutLE(std::string* s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// One batch of `payloads` (each a multiple of 8 bytes) at `term`, in libraft's layout.
std::string Batch(uint64_t term, const std::vector<std::string>& payloads, uint8_t type = 1) {
  std::string header;
  PutLE(&header, payloads.size(), 8);
  std::string data;
  for (const auto& p : payloads) {
    PutLE(&header, term, 8);
    header.push_back(static_cast<char>(type));
    header.append(3, '\0');
    PutLE(&header, p.size(), 4);
    data += p;
  }
  std::string out;
  PutLE(&out, RaftCrc32(header), 4);
  PutLE(&out, RaftCrc32(data), 4);
  return out + header + data;
}

// silt's command entry around `records`, padded to a multiple of 8.
std::string Entry(const std::vector<MetadataRecord>& records, uint8_t id_byte) {
  std::string command = EncodeCommand(records);
  std::string e;
  ByteWriter w(&e);
  w.I8(1);
  w.Raw(std::string(3, '\0'));
  w.U32(static_cast<uint32_t>(command.size()));
  w.Raw(std::string(16, static_cast<char>(id_byte)));
  w.Raw(command);
  e.append((8 - e.size() % 8) % 8, '\0');
  return e;
}

// One temp directory for the file's tests, removed when they end.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/silt-metadata-log-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { (void)RemoveAll(path); }
};

std::string TempFile(const std::string& name, const std::string& bytes) {
  static TempDir dir;
  std::string path = dir.path + "/" + name;
  REQUIRE(ReplaceFile(path, bytes).ok());
  return path;
}

}  // namespace

TEST_CASE("libraft's file names are told apart and their numbers read") {
  RaftFileName c = ParseRaftFileName("0000000000000002-0000000000001025");
  CHECK(c.kind == RaftFileKind::kClosedSegment);
  CHECK(c.first_index == 2);
  CHECK(c.last_index == 1025);
  RaftFileName o = ParseRaftFileName("open-7");
  CHECK(o.kind == RaftFileKind::kOpenSegment);
  CHECK(o.counter == 7);
  RaftFileName s = ParseRaftFileName("snapshot-2-1024-26350568");
  CHECK(s.kind == RaftFileKind::kSnapshot);
  CHECK(s.term == 2);
  CHECK(s.index == 1024);
  CHECK(ParseRaftFileName("snapshot-2-1024-26350568.meta").kind == RaftFileKind::kSnapshotMeta);
  CHECK(ParseRaftFileName("metadata1").kind == RaftFileKind::kOther);
  CHECK(ParseRaftFileName("2-1025").kind == RaftFileKind::kOther);
  CHECK(ParseRaftFileName("open-x").kind == RaftFileKind::kOther);
  CHECK(ParseRaftFileName("00000000000000000000.log").kind == RaftFileKind::kOther);
}

TEST_CASE("the batch checksum is the MSB-first CRC-32 with initial value 0 and no final xor") {
  // CRC-32/POSIX's check value 0x765e7680 is this one with its final xor of all ones.
  CHECK(RaftCrc32("123456789") == (0x765e7680u ^ 0xffffffffu));
  CHECK(RaftCrc32("") == 0);
}

TEST_CASE("a segment's batches decode into numbered entries and silt's commands") {
  std::vector<MetadataRecord> a = {ClusterIdRecord{"c1"}};
  std::vector<MetadataRecord> b = {TopicRecord{"orders", Uuid()}, FenceBrokerRecord{NodeId(3)}};
  std::string seg;
  PutLE(&seg, 1, 8);
  seg += Batch(2, {Entry(a, 1)});
  seg += Batch(3, {Entry(b, 2), std::string(8, '\0')}, 1);
  std::string path = TempFile("0000000000000005-0000000000000007", seg);
  std::vector<RaftLogEntry> entries;
  REQUIRE(ReadRaftSegment(path, 5, &entries).ok());
  REQUIRE(entries.size() == 3);
  CHECK(entries[0].index == 5);
  CHECK(entries[0].term == 2);
  CHECK(entries[1].index == 6);
  CHECK(entries[1].term == 3);
  CHECK(entries[2].index == 7);
  CHECK(entries[0].file_position == 8);
  auto first = DecodeCommandEntry(entries[0].payload);
  REQUIRE(first.ok());
  CHECK(first->records == a);
  CHECK(first->request_id.bytes()[0] == 1);
  auto second = DecodeCommandEntry(entries[1].payload);
  REQUIRE(second.ok());
  CHECK(second->records == b);
  CHECK_FALSE(DecodeCommandEntry(entries[2].payload).ok());  // not silt's entry version

  SUBCASE("a flipped byte in the data is a checksum mismatch, after the good batch") {
    std::string bad = seg;
    bad[bad.size() - 20] ^= 0x40;
    std::vector<RaftLogEntry> got;
    Status st = ReadRaftSegment(TempFile("0000000000000005-0000000000000007", bad), 5, &got);
    CHECK(st.IsCorruption());
    CHECK(st.message().find("data checksum mismatch") != std::string::npos);
    CHECK(got.size() == 1);
  }
  SUBCASE("a file cut inside its last batch is a torn end, not damage") {
    std::vector<RaftLogEntry> got;
    Status st = ReadRaftSegment(TempFile("open-1", seg.substr(0, seg.size() - 3)), 0, &got);
    CHECK(st.IsTruncated());
    CHECK(got.size() == 1);
    CHECK(got[0].index == 0);  // an open segment alone: indexes unknown
  }
  SUBCASE("an open segment's zeroed tail ends it quietly") {
    std::vector<RaftLogEntry> got;
    REQUIRE(ReadRaftSegment(TempFile("open-2", seg + std::string(4096, '\0')), 5, &got).ok());
    CHECK(got.size() == 3);
  }
}
