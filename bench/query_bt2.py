#!/usr/bin/python3
"""query_bt2.py - the route a user has today from a CTF trace to SQL:
babeltrace2's Python bindings read the trace, and each event becomes a row
of an in-memory SQLite table inserted with executemany.

    query_bt2.py TRACE_DIR LIMIT

Reads the first LIMIT events (in babeltrace2's time order), each as a row
(ts ns, tid, name, then its payload's fields as text of JSON-like repr
and, for the first integer field, the value), in batches of 10,000 rows.
Prints one line: `events N seconds S` (the reading and inserting, the
interpreter's start and the import of bt2 left out), or exits 3 if bt2
cannot be imported (`bt2: MESSAGE` on stderr) and 1 if the trace cannot
be read.

ringtrace-bench query runs it (bench/query_bench.c) and extrapolates the
rate to the whole trace.
"""
import sqlite3
import sys
import time

BATCH = 10000


def event_row(msg):
    ev = msg.event
    ts = msg.default_clock_snapshot.ns_from_origin
    tid = None
    ctx = ev.packet.context_field if ev.packet is not None else None
    if ctx is not None and "tid" in ctx:
        tid = int(ctx["tid"])
    value = None
    fields = []
    payload = ev.payload_field
    if payload is not None:
        for name, field in payload.items():
            fields.append("%s=%s" % (name, field))
            if value is None and isinstance(field, (bt2._IntegerFieldConst,)):
                value = int(field)
    return (ts, tid, ev.name, value, " ".join(fields))


def main():
    if len(sys.argv) != 3:
        print("usage: query_bt2.py TRACE_DIR LIMIT", file=sys.stderr)
        return 2
    trace_dir, limit = sys.argv[1], int(sys.argv[2])
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE event (ts INTEGER, tid INTEGER, name TEXT, value INTEGER, "
               "fields TEXT)")
    t0 = time.monotonic()
    it = bt2.TraceCollectionMessageIterator(trace_dir)
    rows, n = [], 0
    for msg in it:
        if type(msg) is not bt2._EventMessageConst:
            continue
        rows.append(event_row(msg))
        n += 1
        if len(rows) == BATCH:
            db.executemany("INSERT INTO event VALUES (?, ?, ?, ?, ?)", rows)
            rows = []
        if n >= limit:
            break
    if rows:
        db.executemany("INSERT INTO event VALUES (?, ?, ?, ?, ?)", rows)
    db.commit()
    secs = time.monotonic() - t0
    (count,) = db.execute("SELECT count(*) FROM event").fetchone()
    if count != n:
        print("query_bt2.py: %d rows in the table for %d events" % (count, n), file=sys.stderr)
        return 1
    print("events %d seconds %.6f" % (n, secs))
    return 0


try:
    import bt2
except ImportError as e:
    print("bt2: %s" % e, file=sys.stderr)
    sys.exit(3)

if __name__ == "__main__":
    try:
        sys.exit(main())
    except (bt2._Error, RuntimeError) as e:
        print("query_bt2.py: babeltrace2: %s" % e, file=sys.stderr)
        sys.exit(1)
