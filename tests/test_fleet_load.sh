#!/bin/sh
# `ringtrace load` into a ClickHouse server of the test's own
# (tests/clickhouse.sh): --create makes the tables and the rows land with
# a complete `loads` row; the same trace loaded twice is skipped; --replace
# removes the earlier load's rows and marks it replaced; missing tables
# without --create, a bad database name and a bad trace directory are
# clear errors; two snapshots of one flight recorder are two loads of one
# trace; a collection with its kernel events loads its kernel tables; and
# the rows of every table equal `ringtrace query`'s (counts and per-column
# sums), loaded in small batches so that slices span chunks; a field's
# INT64_MIN (a uint64 of 2^63) loads as a value, not NULL.
# Each is a case (tests/cases.sh).
#   usage: test_fleet_load.sh BIN_DIR [CASE...] | --list
set -eu
export LC_ALL=C
. "$(dirname "$0")/cases.sh"
. "$(dirname "$0")/clickhouse.sh"
bin=$1
shift
rt="$bin/ringtrace"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ringtrace-fleet-load-XXXXXX")
chmod 755 "$tmp"
CH_AT_EXIT="rm -rf '$tmp'"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_fleet_load: ${rt_c:-}: $*" >&2; exit 1; }
skip() { echo "${rt_c:-test_fleet_load}: SKIPPED: $*"; exit 77; }

# One server, once per run of the script.
server() {
	[ -n "${CH_DIR:-}" ] || ch_start 1
	url=$(ch_url 1)
}

# load ARGS...: ringtrace load on the server (password from its file), its
# status in $st, stdout in $tmp/out, stderr in $tmp/err.
load() {
	st=0
	"$rt" load --clickhouse "$url" --password-file "$CH_PASSWORD_FILE" "$@" \
		>"$tmp/out" 2>"$tmp/err" || st=$?
}

# The demo recorded into $tmp/NAME (once per run).
demo_trace() { # NAME
	if [ ! -d "$tmp/$1" ]; then
		"$rt" record -q -o "$tmp/$1" -- "$bin/ringtrace-demo" --seconds 0.1 --threads 3 >/dev/null
		[ -f "$tmp/$1/metadata" ] || fail "record wrote no metadata"
	fi
}

# The load id and uuid of the last "loaded" line in $tmp/out.
loaded_ids() {
	id=$(sed -n 's/.* as load \([0-9]*\): .*/\1/p' "$tmp/out" | tail -n 1)
	uuid=$(sed -n 's/.*: loaded trace \([0-9a-f-]*\) .*/\1/p' "$tmp/out" | tail -n 1)
	[ -n "$id" ] && [ -n "$uuid" ] || fail "no loaded line: $(cat "$tmp/out" "$tmp/err")"
}

# A load's state (its latest version) in DB.loads.
state_of() { # DB UUID ID
	ch_sql 1 "SELECT argMax(state, version) FROM $1.loads WHERE trace_uuid = '$2' AND load_id = $3"
}

load_creates_tables_and_loads_rows() { # case
	server
	demo_trace t
	load --database lc --create "$tmp/t"
	[ "$st" = 0 ] || fail "status $st: $(cat "$tmp/err")"
	grep -Eq "^$tmp/t: loaded trace [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12} \(host [^)]*\) as load [0-9]+: [0-9]+ rows in [0-9.]+ s \([0-9]+ rows/s\)$" \
		"$tmp/out" || fail "the loaded line: $(cat "$tmp/out")"
	loaded_ids
	for t in process thread slice counter_track counter args event ftrace_event sched_slice \
		thread_state loss stats loads; do
		[ "$(ch_sql 1 "EXISTS TABLE lc.$t")" = 1 ] || fail "no table lc.$t"
	done
	[ "$(state_of lc "$uuid" "$id")" = complete ] || fail "the load is not complete in loads"
	# the loads row's counts are the tables'
	want=$(ch_sql 1 "SELECT count() FROM lc.slice WHERE load_id = $id")
	[ "$want" -gt 0 ] || fail "no slice rows"
	got=$(ch_sql 1 "SELECT argMax(rows, version)[indexOf(argMax(tables, version), 'slice')]
		FROM lc.loads WHERE load_id = $id")
	[ "$got" = "$want" ] || fail "loads says $got slice rows, the table has $want"
	host=$(ch_sql 1 "SELECT any(host) FROM lc.process WHERE load_id = $id")
	[ "$host" = "$(hostname)" ] || fail "host '$host', not '$(hostname)'"
	[ "$(ch_sql 1 "SELECT argMax(trace, version) FROM lc.loads WHERE load_id = $id")" = t ] ||
		fail "the loads row's trace is not the directory's name"
	# the trace says its wall clock: its offset kept, its rows on the day it
	# was recorded (the load's day, or the day before across midnight)
	[ "$(ch_sql 1 "SELECT isNotNull(argMax(clock_offset, version)) FROM lc.loads WHERE load_id = $id")" = 1 ] ||
		fail "no clock_offset in the loads row"
	d=$(ch_sql 1 "SELECT toRelativeDayNum(toDate(argMax(started, version))) FROM lc.loads WHERE load_id = $id")
	dd=$(ch_sql 1 "SELECT toRelativeDayNum(any(day)) FROM lc.slice WHERE load_id = $id")
	[ $((d - dd)) -ge 0 ] && [ $((d - dd)) -le 1 ] || fail "the rows' day $dd, the load's $d"
	# a uint64 field of 2^63 and an int64 field of INT64_MIN land as values,
	# not as NULL (the query layer's NULL is INT64_MIN)
	"$rt" record -q -o "$tmp/m" -- "$bin/test_query_spans_prog" minval >/dev/null
	load --database lc "$tmp/m"
	[ "$st" = 0 ] || fail "minval: status $st: $(cat "$tmp/err")"
	loaded_ids
	got=$(ch_sql 1 "SELECT groupArray(concat(key, '=', ifNull(toString(int_value), 'NULL')))
		FROM (SELECT key, int_value FROM lc.args WHERE load_id = $id
		AND arg_set_id = (SELECT min(arg_set_id) FROM lc.args WHERE load_id = $id AND key = 'bits')
		ORDER BY key)")
	[ "$got" = "['bits=-9223372036854775808','low=-9223372036854775808','ratio=NULL']" ] ||
		fail "minval: the args of the first span_flags: $got"
}

load_same_trace_twice_skipped() { # case
	server
	demo_trace t
	load --database ls --create "$tmp/t"
	[ "$st" = 0 ] || fail "first load: status $st: $(cat "$tmp/err")"
	loaded_ids
	n=$(ch_sql 1 "SELECT count() FROM ls.event")
	load --database ls "$tmp/t"
	[ "$st" = 0 ] || fail "second load: status $st: $(cat "$tmp/err")"
	grep -q "^$tmp/t: skipped: trace $uuid already loaded completely (load $id at [0-9-]* [0-9:]*); --replace loads it again$" \
		"$tmp/out" || fail "the skipped line: $(cat "$tmp/out")"
	[ "$(ch_sql 1 "SELECT count() FROM ls.event")" = "$n" ] || fail "rows added by the second load"
	[ "$(ch_sql 1 "SELECT uniqExact(load_id) FROM ls.loads")" = 1 ] || fail "a second load row"
}

# mutations_done DB: every ALTER ... DELETE of DB applied
mutations_done() {
	[ "$(ch_sql 1 "SELECT count() FROM system.mutations WHERE database = '$1' AND is_done = 0")" = 0 ]
}

load_replace_removes_earlier_rows() { # case
	server
	demo_trace t
	load --database lr --create "$tmp/t"
	[ "$st" = 0 ] || fail "first load: status $st: $(cat "$tmp/err")"
	loaded_ids
	first=$id
	n=$(ch_sql 1 "SELECT count() FROM lr.slice")
	load --database lr --replace "$tmp/t"
	[ "$st" = 0 ] || fail "--replace: status $st: $(cat "$tmp/err")"
	loaded_ids
	[ "$id" != "$first" ] || fail "--replace kept the load id"
	rt_wait_for 300 mutations_done lr
	mutations_done lr || fail "the deletes were not applied in 30 s"
	[ "$(ch_sql 1 "SELECT count() FROM lr.slice WHERE load_id = $first")" = 0 ] ||
		fail "rows of the replaced load left"
	[ "$(ch_sql 1 "SELECT count() FROM lr.slice")" = "$n" ] || fail "not the new load's rows alone"
	[ "$(state_of lr "$uuid" "$first")" = replaced ] || fail "the first load is not marked replaced"
	[ "$(state_of lr "$uuid" "$id")" = complete ] || fail "the new load is not complete"
	# the replaced load's row keeps its counts
	[ "$(ch_sql 1 "SELECT argMax(events, version) FROM lr.loads WHERE load_id = $first")" -gt 0 ] ||
		fail "the replaced row lost its columns"
}

load_without_create_on_missing_tables_clear_error() { # case
	server
	demo_trace t
	load --database nothing_here "$tmp/t"
	[ "$st" = 2 ] || fail "status $st, not 2"
	grep -q "table nothing_here\.[a-z_]* does not exist: --create makes" "$tmp/err" ||
		fail "the message: $(cat "$tmp/err")"
	grep -q "$url" "$tmp/err" || fail "the server not named: $(cat "$tmp/err")"
	[ ! -s "$tmp/out" ] || fail "a line on stdout: $(cat "$tmp/out")"
	# a table of other columns (there before --create, which leaves it): the column named
	ch_sql 1 "CREATE DATABASE odd"
	ch_sql 1 "CREATE TABLE odd.counter (host String, trace_uuid String, load_id UInt64, day Date,
		id Int64, ts Int64, track_id Int64, value Float32, utid Nullable(Int64))
		ENGINE = MergeTree() PARTITION BY toYYYYMM(day) ORDER BY (trace_uuid, ts)"
	load --database odd --create "$tmp/t"
	[ "$st" = 2 ] || fail "a changed column: status $st, not 2"
	grep -q "table odd.counter: column value is Float32, the loader writes Nullable(Float64)" \
		"$tmp/err" || fail "the changed column's message: $(cat "$tmp/err")"
	[ "$(ch_sql 1 "SELECT count() FROM odd.loads")" = 0 ] || fail "a load was started"
}

load_snapshot_dumps_of_one_pool_are_two_loads() { # case
	server
	RINGTRACE_OUTPUT="$tmp/fr" RINGTRACE_MODE=overwrite RINGTRACE_BUFFER_SIZE=1m \
		"$bin/ringtrace-demo" --seconds 3 --threads 2 >/dev/null 2>"$tmp/fr.err" &
	pid=$!
	rt_wait_for 100 test -d "$tmp/fr"
	"$rt" snapshot "$pid"
	rt_wait_for 100 test -f "$tmp/fr.snapshot-1/metadata"
	"$rt" snapshot "$pid"
	rt_wait_for 100 test -f "$tmp/fr.snapshot-2/metadata"
	wait "$pid" || fail "the flight recorder's program failed"
	[ -f "$tmp/fr.snapshot-2/metadata" ] || fail "no second snapshot"
	load --database ls2 --create "$tmp/fr.snapshot-1" "$tmp/fr.snapshot-2"
	[ "$st" = 0 ] || fail "status $st: $(cat "$tmp/err")"
	[ "$(grep -c ': loaded trace ' "$tmp/out")" = 2 ] || fail "not two loads: $(cat "$tmp/out")"
	[ "$(ch_sql 1 "SELECT uniqExact(trace_uuid), uniqExact(load_id), uniqExact(digest)
		FROM ls2.loads FINAL WHERE state = 'complete'")" = "$(printf '1\t2\t2')" ] ||
		fail "not one trace in two dumps: $(ch_sql 1 "SELECT * FROM ls2.loads")"
}

load_collection_with_kernel_events() { # case
	server
	[ "$(id -u)" = 0 ] || skip "needs root (the recording: a tracefs instance)"
	. "$(dirname "$0")/tracefs.sh"
	need_tracefs
	taskset -c 0 "$rt" record -q -k sched:sched_switch -k sched:sched_wakeup \
		-k sched:sched_wakeup_new -o "$tmp/k" -- "$bin/test_sleep_prog" 5 10 2>"$tmp/k.err" ||
		fail "record -k failed: $(cat "$tmp/k.err")"
	load --database lk --create "$tmp/k"
	[ "$st" = 0 ] || fail "status $st: $(cat "$tmp/err")"
	loaded_ids
	for t in ftrace_event sched_slice thread_state; do
		want=$("$rt" query --format csv "$tmp/k" "SELECT count(*) FROM $t" | tail -n 1 | tr -d '\r')
		[ "$want" -gt 0 ] || fail "ringtrace query has no $t rows"
		got=$(ch_sql 1 "SELECT count() FROM lk.$t WHERE load_id = $id")
		[ "$got" = "$want" ] || fail "$t: $got rows, ringtrace query $want"
	done
	# the collection: one uuid of the kernel's and the program's (version 8)
	echo "$uuid" | grep -Eq '^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-' ||
		fail "a collection's uuid $uuid is not a version-8 one"
}

# compare DIR DB ID: per table, the count and a sum per column of the
# load's rows equal ringtrace query's on DIR (integers summed modulo a
# prime, reals within a relative 1e-9, text by its total length)
compare() {
	python3 - "$rt" "$1" "$url" "$CH_PASSWORD_FILE" "$2" "$3" <<'PY'
import json, subprocess, sys, urllib.parse, urllib.request
rt, d, url, pwf, db, lid = sys.argv[1:]
pw = open(pwf).read().strip()
def ch(sql):
    req = urllib.request.Request(url + "/", data=sql.encode(),
        headers={"X-ClickHouse-User": "default", "X-ClickHouse-Key": pw})
    return urllib.request.urlopen(req).read().decode()
def rq(sql):
    out = subprocess.run([rt, "query", "--format", "json", d, sql], check=True,
        capture_output=True).stdout.decode()
    return [json.loads(l) for l in out.splitlines()]
P = 1000003
cols = {}
for line in ch("SELECT table, name, type FROM system.columns WHERE database = '%s' "
               "AND table != 'loads' FORMAT TabSeparated" % db).splitlines():
    t, n, ty = line.split("\t")
    if n not in ("host", "trace_uuid", "load_id", "day"):
        cols.setdefault(t, []).append((n, ty))
def exprs(cs, sqlite):
    out = ["count(*)" if sqlite else "count()"]
    for n, ty in cs:
        q = '"%s"' % n if sqlite else "`%s`" % n
        if "Int" in ty:
            out.append("sum(%s %% %d)" % (q, P))
        elif "Float" in ty:
            out.append("sum(%s)" % q)
        else:
            # bytes, as ClickHouse's length (SQLite's counts characters)
            out.append("sum(length(CAST(%s AS BLOB)))" % q if sqlite else "sum(length(%s))" % q)
    return out
def same(a, b):
    a = 0 if a is None else a
    b = 0 if b is None else b
    if isinstance(a, float) or isinstance(b, float):
        return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(a)), abs(float(b)))
    return int(a) == int(b)
bad = []
def check(name, got, want):
    for (n, _), g, w in zip([("count", "")] + cols[name], got, want):
        if not same(g, w):
            bad.append("%s.%s: loaded %s, ringtrace query %s" % (name, n, g, w))
for t, cs in sorted(cols.items()):
    got = json.loads(ch("SELECT %s FROM %s.%s WHERE load_id = %s FORMAT JSONCompact"
        % (", ".join(exprs(cs, False)), db, t, lid)))["data"][0]
    if t == "event":
        want = [0] * len(got)
        tables = rq("SELECT event, table_name FROM event_table")
        for r in tables:
            e = exprs(cs[:4], True)
            row = list(rq("SELECT %s FROM \"%s\"" % (", ".join(e), r["table_name"]))[0].values())
            for i, v in enumerate(row):
                want[i] += v or 0
            want[5] += len(r["event"].encode()) * row[0]
        got = [float(g) if isinstance(g, float) else int(g) for g in got]
    else:
        want = list(rq("SELECT %s FROM \"%s\"" % (", ".join(exprs(cs, True)), t))[0].values())
        got = [g if isinstance(g, (int, float)) or g is None else
               (float(g) if "." in g or "e" in g else int(g)) for g in got]
    check(t, got, want)
    if got[0] == 0 and t in ("slice", "args", "event", "thread", "process", "stats"):
        bad.append("%s: no rows" % t)
if bad:
    print("\n".join(bad))
    sys.exit(1)
PY
}

load_rows_equal_ringtrace_query() { # case
	server
	demo_trace t
	# small batches: chunks of 5000 records, so that slices stay open across them
	load --database lq --create --batch-rows 5000 "$tmp/t"
	[ "$st" = 0 ] || fail "status $st: $(cat "$tmp/err")"
	loaded_ids
	compare "$tmp/t" lq "$id" >"$tmp/cmp" 2>&1 || fail "the tables differ: $(head -20 "$tmp/cmp")"
	# slices ended in a later chunk than their begin have their dur
	[ "$(ch_sql 1 "SELECT count() FROM lq.slice WHERE dur = -1")" = \
		"$("$rt" query --format csv "$tmp/t" "SELECT count(*) FROM slice WHERE dur = -1" |
			tail -n 1 | tr -d '\r')" ] || fail "slices without their dur"
}

load_bad_database_name_refused() { # case
	server
	demo_trace t
	for name in "x;DROP TABLE y" "1abc" "" "a-b" "\`q\`"; do
		load --database "$name" --create "$tmp/t"
		[ "$st" = 2 ] || fail "--database '$name': status $st, not 2"
		grep -q "^ringtrace load: --database .*: a name is 1 to 64 ASCII letters, digits and '_'" \
			"$tmp/err" || fail "--database '$name': $(cat "$tmp/err")"
	done
	[ "$(ch_sql 1 "SELECT count() FROM system.databases WHERE name LIKE '%DROP%'")" = 0 ] ||
		fail "a database was made"
}

load_bad_trace_dir_clear_error() { # case
	server
	demo_trace t
	mkdir -p "$tmp/empty"
	load --database lb --create "$tmp/missing" "$tmp/empty" "$tmp/t"
	[ "$st" = 1 ] || fail "status $st, not 1"
	grep -q "^ringtrace load: $tmp/missing: cannot read the trace" "$tmp/err" ||
		fail "the missing directory's message: $(cat "$tmp/err")"
	grep -q "^ringtrace load: $tmp/empty: cannot read the trace" "$tmp/err" ||
		fail "the empty directory's message: $(cat "$tmp/err")"
	# the good trace after them is still loaded
	grep -q "^$tmp/t: loaded trace " "$tmp/out" || fail "the good trace not loaded: $(cat "$tmp/out")"
}

rt_run_cases "$@"
