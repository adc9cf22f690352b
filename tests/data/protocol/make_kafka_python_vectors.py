#!/usr/bin/python3
"""Writes request/response bodies encoded by kafka-python (an independent Kafka client) for the
API versions both it and silt speak, as golden vectors for tests/protocol/kafka_python_test.cc.

Every field is filled with a distinct value derived from a running counter (ints count up,
strings are "s<n>", bytes b"b<n>", arrays hold two elements), so a codec that misplaces a field
cannot re-encode the same bytes.

Run with Debian's python (python3-kafka 2.0.2):  /usr/bin/python3 make_kafka_python_vectors.py
"""
import os
import sys

from kafka.protocol import admin, commit, fetch, group, metadata, offset, produce
from kafka.protocol.types import (Array, Boolean, Bytes, Int8, Int16, Int32, Int64, Schema,
                                  String)

# kafka-python class list -> versions silt serves (intersected with what kafka-python has).
APIS = [
    (admin.ApiVersionRequest, admin.ApiVersionResponse, 0, 3),
    (metadata.MetadataRequest, metadata.MetadataResponse, 0, 8),
    (produce.ProduceRequest, produce.ProduceResponse, 3, 8),
    (fetch.FetchRequest, fetch.FetchResponse, 4, 11),
    (offset.OffsetRequest, offset.OffsetResponse, 0, 5),
    (commit.GroupCoordinatorRequest, commit.GroupCoordinatorResponse, 0, 2),
    (group.JoinGroupRequest, group.JoinGroupResponse, 0, 5),
    (group.SyncGroupRequest, group.SyncGroupResponse, 0, 3),
    (group.HeartbeatRequest, group.HeartbeatResponse, 0, 3),
    (group.LeaveGroupRequest, group.LeaveGroupResponse, 0, 3),
    (commit.OffsetCommitRequest, commit.OffsetCommitResponse, 0, 7),
    (commit.OffsetFetchRequest, commit.OffsetFetchResponse, 0, 5),
    (admin.CreateTopicsRequest, admin.CreateTopicsResponse, 0, 4),
    (admin.DeleteTopicsRequest, admin.DeleteTopicsResponse, 0, 3),
    (admin.DescribeGroupsRequest, admin.DescribeGroupsResponse, 0, 4),
    (admin.ListGroupsRequest, admin.ListGroupsResponse, 0, 2),
    (admin.DescribeConfigsRequest, admin.DescribeConfigsResponse, 0, 3),
    (admin.CreatePartitionsRequest, admin.CreatePartitionsResponse, 0, 1),
    (admin.AlterConfigsRequest, admin.AlterConfigsResponse, 0, 1),
    (admin.DeleteGroupsRequest, admin.DeleteGroupsResponse, 0, 1),
]

# Where kafka-python 2.0.2's schema disagrees with Kafka's own message schemas
# (clients/src/main/resources/common/message/*.json); these vectors are not written.
KNOWN_DEVIATIONS = {
    "OffsetRequest_v4": "CurrentLeaderEpoch is int32 in Kafka, int64 in kafka-python",
    "OffsetRequest_v5": "CurrentLeaderEpoch is int32 in Kafka, int64 in kafka-python",
    "GroupCoordinatorResponse_v1": "kafka-python omits ThrottleTimeMs (v1+)",
    "DescribeGroupsResponse_v3": "kafka-python omits AuthorizedOperations (v3+)",
    "ProduceResponse_v8": "kafka-python omits RecordErrors and ErrorMessage (v8+)",
}


class Filler:
    def __init__(self):
        self.n = 0

    def next(self):
        self.n += 1
        return self.n

    def value(self, t):
        if isinstance(t, Schema):
            return tuple(self.value(f) for f in t.fields)
        if isinstance(t, Array):
            return [self.value(t.array_of) for _ in range(2)]
        if t is String or isinstance(t, String):
            return "s%d" % self.next()
        if t is Bytes or isinstance(t, Bytes):
            return b"b%d" % self.next()
        if t is Boolean or isinstance(t, Boolean):
            return True
        if t is Int8 or isinstance(t, Int8):
            return self.next() % 100
        if t in (Int16, Int32, Int64) or isinstance(t, (Int16, Int32, Int64)):
            return self.next()
        raise TypeError("unhandled type %r" % (t,))


def main():
    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kafka-python")
    os.makedirs(out_dir, exist_ok=True)
    count = 0
    for req, resp, lo, hi in APIS:
        # kafka-python 2.0.2's AlterConfigsResponse list holds AlterConfigsRequest_v1 in place
        # of the v1 response; the request's RESPONSE_TYPE names the right class.
        responses = [r if "Response" in r.__name__ else req[v].RESPONSE_TYPE
                     for v, r in enumerate(resp)]
        for classes in (req, responses):
            for v in range(lo, min(hi, len(classes) - 1) + 1):
                cls = classes[v]
                if cls.__name__ in KNOWN_DEVIATIONS:
                    print("skipped %s: %s" % (cls.__name__, KNOWN_DEVIATIONS[cls.__name__]),
                          file=sys.stderr)
                    continue
                fields = Filler().value(cls.SCHEMA)
                try:
                    body = cls.SCHEMA.encode(fields)
                except Exception as e:  # a schema kafka-python itself cannot encode
                    print("skipped %s v%d: %s" % (cls.__name__, v, e), file=sys.stderr)
                    continue
                name = "%s.bin" % cls.__name__  # kafka-python names end in _v<N>
                with open(os.path.join(out_dir, name), "wb") as f:
                    f.write(body)
                count += 1
    print("wrote %d vectors to %s" % (count, out_dir), file=sys.stderr)


if __name__ == "__main__":
    main()
