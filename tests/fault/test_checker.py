"""The history checker on hand-made histories: each anomaly is caught, and a clean history
passes."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import ANOMALIES, check, verdict  # noqa: E402
from workload import replica_holders  # noqa: E402


def send(v):
    return {"type": "send", "value": v, "producer": int(v[1:].split("-")[0])}


def ack(v, p, o):
    return {"type": "ack", "value": v, "partition": p, "offset": o}


def fail(v):
    return {"type": "fail", "value": v, "error": "_MSG_TIMED_OUT"}


def final(p, o, v):
    return {"type": "final", "partition": p, "offset": o, "value": v}


def poll(c, s, p, o, v):
    return {"type": "poll", "consumer": c, "session": s, "partition": p, "offset": o, "value": v}


def replica(n, p, o, v):
    return {"type": "replica", "node": n, "partition": p, "offset": o, "value": v}


def leader(node, p, leader_id, epoch):
    return {"type": "leader", "node": node, "partition": p, "leader": leader_id, "epoch": epoch}


def clean():
    """Three acked writes on partition 0, read back by a consumer and the final read."""
    h = []
    for i in range(3):
        h += [send("p0-%d" % i), ack("p0-%d" % i, 0, i)]
    for i in range(3):
        h.append(poll("c0", 1, 0, i, "p0-%d" % i))
    for i in range(3):
        h.append(final(0, i, "p0-%d" % i))
    return h


class CheckerTest(unittest.TestCase):
    def only(self, summary, anomaly):
        """`anomaly` is reported and no other."""
        self.assertFalse(summary["valid"])
        self.assertGreaterEqual(summary[anomaly], 1, summary)
        for a in ANOMALIES:
            if a != anomaly:
                self.assertEqual(summary[a], 0, (a, summary))
        self.assertIn(anomaly, summary["examples"])
        self.assertTrue(verdict(summary).startswith("FAIL"))

    def test_a_clean_history_passes_with_its_counts(self):
        s = check(clean())
        self.assertTrue(s["valid"], s)
        self.assertEqual((s["sent"], s["acked"], s["failed"], s["unknown"], s["final"]),
                         (3, 3, 0, 0, 3))
        self.assertTrue(verdict(s).startswith("PASS"))
        json.dumps(s)  # the summary is JSON

    def test_an_acked_write_missing_from_the_final_read_is_lost(self):
        h = [e for e in clean() if not (e["type"] == "final" and e["offset"] == 2)]
        h = [e for e in h if not (e["type"] == "poll" and e["offset"] == 2)]
        s = check(h)
        self.only(s, "lost")
        self.assertEqual(s["examples"]["lost"][0]["value"], "p0-2")

    def test_a_failed_or_unknown_write_missing_from_the_final_read_is_not_lost(self):
        h = clean() + [send("p1-0"), fail("p1-0"), send("p1-1")]
        s = check(h)
        self.assertTrue(s["valid"], s)
        self.assertEqual((s["failed"], s["unknown"]), (1, 1))

    def test_a_failed_write_that_happened_anyway_is_counted_not_flagged(self):
        h = clean() + [send("p1-0"), fail("p1-0"), final(0, 3, "p1-0")]
        s = check(h)
        self.assertTrue(s["valid"], s)
        self.assertEqual(s["failed_present"], 1)

    def test_one_value_at_two_offsets_is_a_duplicate(self):
        h = clean() + [final(0, 3, "p0-1")]
        self.only(check(h), "duplicates")

    def test_a_value_on_two_partitions_is_a_duplicate(self):
        h = clean() + [final(1, 0, "p0-0")]
        self.only(check(h), "duplicates")

    def test_two_values_at_one_offset_across_reads_are_inconsistent(self):
        h = clean() + [send("p1-0"), replica(2, 0, 1, "p1-0")]
        s = check(h)
        self.assertGreaterEqual(s["inconsistent"], 1, s)
        self.assertFalse(s["valid"])
        for a in ("lost", "non_monotonic", "skips", "phantom"):
            self.assertEqual(s[a], 0, (a, s))

    def test_a_poll_that_disagrees_with_the_final_read_is_inconsistent(self):
        h = clean()
        h += [send("p1-0"), fail("p1-0"), poll("c1", 1, 0, 0, "p1-0")]
        s = check(h)
        self.assertGreaterEqual(s["inconsistent"], 1, s)

    def test_an_ack_whose_offset_holds_another_value_is_inconsistent(self):
        h = [send("p0-0"), ack("p0-0", 0, 5), send("p0-1"), ack("p0-1", 0, 6),
             final(0, 5, "p0-1"), final(0, 6, "p0-0")]
        self.only(check(h), "inconsistent")

    def test_an_ack_at_an_offset_past_the_log_with_the_value_elsewhere_is_inconsistent(self):
        h = [send("p0-0"), ack("p0-0", 0, 9), final(0, 0, "p0-0")]
        self.only(check(h), "inconsistent")

    def test_an_ack_without_an_offset_needs_only_its_value_in_the_log(self):
        # librdkafka's implicit ack: the batch's own answer was lost, a later batch succeeded,
        # and the earlier one is acknowledged with offset -1001 (no offset known).
        h = clean() + [send("p0-3"), ack("p0-3", 0, -1001), final(0, 3, "p0-3")]
        s = check(h)
        self.assertTrue(s["valid"], s)
        self.assertEqual(s["acked_no_offset"], 1)

    def test_an_ack_without_an_offset_missing_from_the_log_is_lost(self):
        h = clean() + [send("p0-3"), ack("p0-3", 0, -1)]
        self.only(check(h), "lost")

    def test_an_ack_whose_offset_is_null_is_an_ack_without_an_offset(self):
        # confluent-kafka's Message.offset() is None when librdkafka knows no offset.
        h = clean() + [send("p0-3"), ack("p0-3", 0, None), final(0, 3, "p0-3")]
        s = check(h)
        self.assertTrue(s["valid"], s)
        self.assertEqual(s["acked_no_offset"], 1)

    def test_a_consumer_going_backwards_within_a_session_is_non_monotonic(self):
        h = clean() + [poll("c0", 1, 0, 1, "p0-1")]
        self.only(check(h), "non_monotonic")

    def test_a_new_session_may_start_again_from_the_beginning(self):
        h = clean() + [poll("c0", 2, 0, 0, "p0-0"), poll("c0", 2, 0, 1, "p0-1")]
        self.assertTrue(check(h)["valid"])

    def test_a_consumer_jumping_over_committed_offsets_skips(self):
        h = [e for e in clean() if not (e["type"] == "poll" and e["offset"] == 1)]
        s = check(h)
        self.only(s, "skips")
        self.assertEqual(s["examples"]["skips"][0]["missed"], 1)

    def test_a_jump_over_offsets_the_log_does_not_hold_is_not_a_skip(self):
        h = [send("p0-0"), ack("p0-0", 0, 0), send("p0-1"), ack("p0-1", 0, 5),
             poll("c0", 1, 0, 0, "p0-0"), poll("c0", 1, 0, 5, "p0-1"),
             final(0, 0, "p0-0"), final(0, 5, "p0-1")]
        self.assertTrue(check(h)["valid"])

    def test_a_value_nobody_sent_is_a_phantom(self):
        h = clean() + [final(0, 3, "p9-0")]
        self.only(check(h), "phantom")

    def test_replicas_that_agree_with_the_final_read_pass(self):
        h = clean() + [replica(n, 0, i, "p0-%d" % i) for n in (1, 2, 3) for i in range(3)]
        self.assertTrue(check(h)["valid"])

    def test_two_leaders_for_one_partition_and_epoch_are_caught(self):
        h = clean() + [leader(1, 0, 1, 4), leader(2, 0, 1, 4), leader(3, 0, 2, 4)]
        self.only(check(h), "split_leaders")

    def test_a_new_leader_in_a_new_epoch_is_fine(self):
        h = clean() + [leader(1, 0, 1, 4), leader(2, 0, -1, 5), leader(3, 0, 2, 6),
                       leader(1, 0, 1, 4)]
        self.assertTrue(check(h)["valid"])


class ReplicaHoldersTest(unittest.TestCase):
    """Only the nodes a partition is assigned to at the end are read as its replicas."""

    def test_a_node_a_reassignment_dropped_is_not_read(self):
        # fault-0 moved from [3, 1, 2] to [4, 1, 2]: node 3 still has the old leader's
        # uncommitted tail on disk, node 4 (a broker-only node) has the partition now.
        assignment = {0: {"replicas": [4, 1, 2]}, 1: {"replicas": [1, 2, 3]}}
        self.assertEqual(replica_holders(assignment, 0, [1, 2, 3, 4]), [1, 2, 4])
        self.assertEqual(replica_holders(assignment, 1, [1, 2, 3, 4]), [1, 2, 3])

    def test_without_metadata_every_node_is_read(self):
        self.assertEqual(replica_holders({}, 0, [1, 2, 3]), [1, 2, 3])
        self.assertEqual(replica_holders(None, 5, [1, 2]), [1, 2])

    def test_the_stale_tail_of_a_dropped_replica_would_be_reported(self):
        # What judging node 3 there did: its never-committed p0-198 at 65 reads as a duplicate
        # of the committed p0-198 at 86, and as a second value at offset 65.
        h = [send("p0-198"), send("p1-199"), ack("p1-199", 0, 65), ack("p0-198", 0, 86),
             final(0, 65, "p1-199"), final(0, 86, "p0-198")]
        stale = [replica(3, 0, 65, "p0-198"), replica(3, 0, 67, "p1-199")]
        self.assertTrue(check(h)["valid"])
        self.assertFalse(check(h + stale)["valid"])


if __name__ == "__main__":
    unittest.main()
