"""A confluent-kafka group member run as its own process by the group tests and the group
benchmark. Prints one line per event on stdout, flushed at once:
    ready
    assigned 0,1            (after each assignment; empty after a revocation)
    record <partition> <offset> <value>       (unless --quiet)
    count <n>               (every --report records when --quiet)
Usage: group_member.py BOOTSTRAP GROUP TOPIC [--session-ms N] [--quiet] [--report N]
                       [--commit sync|auto]"""
import sys

from confluent_kafka import Consumer, KafkaException


def main():
    address, group, topic = sys.argv[1:4]
    args = sys.argv[4:]
    session_ms = int(args[args.index("--session-ms") + 1]) if "--session-ms" in args else 6000
    quiet = "--quiet" in args
    report = int(args[args.index("--report") + 1]) if "--report" in args else 1000
    commit = args[args.index("--commit") + 1] if "--commit" in args else "sync"
    c = Consumer({
        "bootstrap.servers": address,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": commit == "auto",
        "session.timeout.ms": session_ms,
        "heartbeat.interval.ms": min(1000, session_ms // 6),
        "partition.assignment.strategy": "range",
    })

    def out(line):
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def on_assign(consumer, partitions):
        out("assigned " + ",".join(str(p.partition) for p in partitions))

    def on_revoke(consumer, partitions):
        out("assigned ")

    c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    out("ready")
    n = 0
    while True:
        msgs = c.consume(num_messages=500, timeout=0.2)
        for msg in msgs:
            if msg.error():
                raise KafkaException(msg.error())
            n += 1
            if not quiet:
                out("record %d %d %s" % (msg.partition(), msg.offset(), msg.value().decode()))
            elif n % report == 0:
                out("count %d" % n)
        if msgs and commit == "sync":
            c.commit(asynchronous=False)


if __name__ == "__main__":
    main()
