// ResealBatch: a stored batch under another producer's id, epoch and sequence.
#include <doctest/doctest.h>

#include <string>

#include "format/batch_header.h"
#include "format/compression.h"
#include "format/record_batch.h"

using namespace silt;
using namespace silt::format;

TEST_CASE("a resealed batch carries the new producer fields, a valid CRC and the same records") {
  for (Compression c : {Compression::kNone, Compression::kGzip, Compression::kZstd}) {
    RecordBatchBuilder::Options o;
    o.compression = c;
    o.base_offset = 500;
    o.producer_id = 7;
    o.producer_epoch = 3;
    o.base_sequence = 40;
    o.transactional = true;
    o.partition_leader_epoch = 9;
    RecordBatchBuilder b(o);
    b.Add(std::string_view("k1"), std::string_view("v1"), 1700000000000);
    b.Add(std::nullopt, std::nullopt, 1700000000005, {{"h", std::nullopt}});
    auto batch = b.Finish();
    REQUIRE(batch.ok());
    std::string bytes = *batch;

    BatchHeader h = DecodeBatchHeader(bytes);
    h.base_offset = 0;
    h.partition_leader_epoch = -1;
    h.producer_id = 1234;
    h.producer_epoch = 0;
    h.base_sequence = 17;
    h.attributes = static_cast<int16_t>(h.attributes & ~kTransactionalBit);
    ResealBatch(h, bytes.data(), bytes.size());

    auto view = RecordBatchView::Parse(bytes);  // checks the CRC
    REQUIRE_MESSAGE(view.ok(), view.status().ToString());
    CHECK(view->header().producer_id == 1234);
    CHECK(view->header().producer_epoch == 0);
    CHECK(view->header().base_sequence == 17);
    CHECK(view->header().base_offset == 0);
    CHECK(view->header().partition_leader_epoch == -1);
    CHECK_FALSE(view->header().transactional());
    CHECK(view->header().compression() == c);
    CHECK(view->header().batch_length == DecodeBatchHeader(*batch).batch_length);
    auto records = view->Records();
    REQUIRE(records.ok());
    REQUIRE(records->size() == 2);
    CHECK((*records)[0].key == "k1");
    CHECK((*records)[1].timestamp == 1700000000005);
    CHECK_FALSE((*records)[1].value.has_value());
    // The records block is untouched.
    CHECK(view->records_block() == std::string_view(*batch).substr(kBatchHeaderSize));
  }
}
