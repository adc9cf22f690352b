"""The fault suite's history checker: a pure function over the logs of a run.

A history is a list of events (dicts), in the order they were logged:

  {"type": "send",  "value": "p0-17", "producer": 0}
  {"type": "ack",   "value": "p0-17", "partition": 3, "offset": 41}
  {"type": "fail",  "value": "p0-17", "error": "..."}       the client gave up on the record
  {"type": "poll",  "consumer": "c0", "session": 2, "partition": 3, "offset": 41, "value": "..."}
  {"type": "final", "partition": 3, "offset": 41, "value": "..."}   the final read, from the
                                                                     beginning of every partition
  {"type": "replica", "node": 2, "partition": 3, "offset": 41, "value": "..."}  one replica's
                                                                     own log, read off its disk

`check(history)` returns a JSON-able summary; `verdict(summary)` is its one line. Anomalies:

  lost           acked, and not in the final read at all (an ack whose offset is unknown, null
                 or below 0, counts here too: librdkafka's idempotent producer acknowledges a batch whose
                 own answer was lost once a later batch of the same producer succeeds, and gives
                 it no offset)
  duplicates     one value at two (partition, offset) positions, over every read
  inconsistent   two values at one (partition, offset) over the reads (final, polls, replicas),
                 or an ack whose position holds another value, or whose value sits elsewhere
                 (only for acks that name an offset)
  non_monotonic  within one consumer session, a partition's polled offset not above the last
  skips          within one consumer session, a poll that jumps over offsets that the final read
                 holds (committed records the consumer never saw)
  phantom        a value in a read that no producer sent
  split_leaders  two leaders named for one partition and leader epoch, over every Metadata
                 sample of every node: {"type": "leader", "node", "partition", "leader", "epoch"}

Counts: sent, acked (acked_no_offset of them without an offset), failed (the client reported an error: the write may or may not have
happened), unknown (neither ack nor error when the run ended), final (records in the final
read), failed_present / unknown_present (of those, how many the final read holds anyway).
"""
import json

ANOMALIES = ("lost", "duplicates", "inconsistent", "non_monotonic", "skips", "phantom",
             "split_leaders")
READS = ("final", "poll", "replica")
# At most this many examples of each anomaly are kept in the summary.
EXAMPLES = 10


def _where(e):
    if e["type"] == "poll":
        return "poll %s/%s" % (e.get("consumer"), e.get("session"))
    if e["type"] == "replica":
        return "replica %s" % e.get("node")
    return e["type"]


def check(history):
    sent = {}
    acks = {}
    failed = set()
    found = {a: [] for a in ANOMALIES}
    at = {}          # (partition, offset) -> {value: first read that showed it}
    positions = {}   # value -> set of (partition, offset)
    final = {}       # (partition, offset) -> value
    final_values = {}
    sessions = {}    # (consumer, session, partition) -> last offset
    polls = []
    leaders = {}     # (partition, epoch) -> {leader: node that said so}

    for e in history:
        t = e.get("type")
        if t == "send":
            sent[e["value"]] = e
        elif t == "ack":
            acks[e["value"]] = (e["partition"], e["offset"])
        elif t == "fail":
            failed.add(e["value"])
        elif t in READS:
            pos = (e["partition"], e["offset"])
            v = e["value"]
            at.setdefault(pos, {}).setdefault(v, _where(e))
            positions.setdefault(v, set()).add(pos)
            if t == "final":
                if pos in final and final[pos] != v:
                    pass  # recorded through `at` as inconsistent below
                final.setdefault(pos, v)
                final_values.setdefault(v, set()).add(pos)
            elif t == "poll":
                polls.append(e)
        elif t == "leader" and e.get("leader", -1) >= 0:
            leaders.setdefault((e["partition"], e["epoch"]), {}).setdefault(
                e["leader"], e.get("node"))

    for pos, values in sorted(at.items()):
        if len(values) > 1:
            found["inconsistent"].append({"partition": pos[0], "offset": pos[1],
                                          "values": values})
    for v, pos in sorted(positions.items()):
        if len(pos) > 1:
            found["duplicates"].append({"value": v, "at": sorted(pos)})
        if v not in sent:
            found["phantom"].append({"value": v, "at": sorted(pos)})

    for v, pos in sorted(acks.items()):
        if v not in final_values:
            found["lost"].append({"value": v, "acked_at": pos})
            continue
        if pos[1] is None or pos[1] < 0:
            continue  # acked with no offset: present is all that can be asked
        held = final.get(pos)
        if held != v:
            found["inconsistent"].append({"value": v, "acked_at": pos, "held": held,
                                          "found_at": sorted(final_values[v])})

    for (p, epoch), named in sorted(leaders.items()):
        if len(named) > 1:
            found["split_leaders"].append({"partition": p, "epoch": epoch,
                                           "leaders": sorted(named)})

    # Offsets of the final read, per partition, to tell a skip from a gap in the log.
    final_offsets = {}
    for (p, o) in final:
        final_offsets.setdefault(p, set()).add(o)
    for e in polls:
        key = (e.get("consumer"), e.get("session"), e["partition"])
        last = sessions.get(key)
        o = e["offset"]
        if last is not None:
            if o <= last:
                found["non_monotonic"].append({"consumer": key[0], "session": key[1],
                                               "partition": key[2], "after": last, "got": o})
            elif o > last + 1:
                missed = [x for x in range(last + 1, o) if x in final_offsets.get(key[2], ())]
                if missed:
                    found["skips"].append({"consumer": key[0], "session": key[1],
                                           "partition": key[2], "after": last, "got": o,
                                           "missed": len(missed)})
        sessions[key] = o if last is None else max(last, o)

    unknown = [v for v in sent if v not in acks and v not in failed]
    summary = {
        "sent": len(sent),
        "acked": len(acks),
        "acked_no_offset": sum(1 for p in acks.values() if p[1] is None or p[1] < 0),
        "failed": len(failed),
        "unknown": len(unknown),
        "final": len(final),
        "failed_present": sum(1 for v in failed if v in final_values),
        "unknown_present": sum(1 for v in unknown if v in final_values),
        "polls": len(polls),
    }
    for a in ANOMALIES:
        summary[a] = len(found[a])
    summary["valid"] = all(summary[a] == 0 for a in ANOMALIES)
    summary["examples"] = {a: found[a][:EXAMPLES] for a in ANOMALIES if found[a]}
    return summary


def verdict(summary, name=""):
    """One line: PASS/FAIL, the anomalies and the counts."""
    word = "PASS" if summary["valid"] else "FAIL"
    parts = ["%s=%d" % (k, summary[k]) for k in ANOMALIES]
    counts = ["%s=%d" % (k, summary[k]) for k in ("sent", "acked", "failed", "unknown", "final")]
    return "%s%s: %s; %s" % (word, " " + name if name else "", " ".join(parts), " ".join(counts))


def load(path):
    """A history file: one JSON event per line."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


if __name__ == "__main__":
    import sys
    s = check(load(sys.argv[1]))
    print(json.dumps(s, indent=1, default=str))
    print(verdict(s))
    sys.exit(0 if s["valid"] else 1)
