#!/bin/sh
# docs/fleet.md against real servers: every ```sql block of the document
# run on traces of three "hosts" loaded by `ringtrace load` (on one
# server, and on a cluster of two shards with the setting the document
# says a cluster needs), each returning rows; and every table's columns
# as the document lists them, against the tables `--create` makes, so
# that the reference cannot drift from the loader.
#   usage: test_fleet_docs.sh SOURCE_DIR BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
. "$(dirname "$0")/clickhouse.sh"
src=$1
bin=$2
shift 2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ringtrace-fleet-docs-XXXXXX")
CH_AT_EXIT='rm -rf "$tmp"'
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_fleet_docs: $*" >&2; exit 1; }
doc=$src/docs/fleet.md
rt=$bin/ringtrace

# The traces of the document's examples: three hosts running the demo,
# host-b with a buffer small enough to drop events. As root each is
# recorded in a UTS namespace of its own under its host name, with the
# scheduling events (thread_state); otherwise under this machine's name,
# without them (the queries must still run and return rows).
record_hosts() {
	for h in host-a host-b host-c; do
		[ ! -d "$tmp/$h" ] || continue
		buf=
		[ $h != host-b ] || buf='--buffer-size 64k --page-size 4k'
		if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1; then
			unshare --uts sh -c "hostname $h && exec \"$rt\" record -q $buf \
				-k sched:sched_switch -k sched:sched_wakeup -k sched:sched_wakeup_new \
				-o \"$tmp/$h\" -- \"$bin/ringtrace-demo\" --seconds 0.1 --threads 3" \
				>/dev/null 2>"$tmp/rec.err" || fail "record $h: $(cat "$tmp/rec.err")"
		else
			"$rt" record -q $buf -o "$tmp/$h" -- "$bin/ringtrace-demo" --seconds 0.1 --threads 3 \
				>/dev/null 2>"$tmp/rec.err" || fail "record $h: $(cat "$tmp/rec.err")"
		fi
	done
}

# load [OPTION...]: the three traces into server 1 (every server given
# with --cluster), then a load that stopped half-way as the loader leaves
# one (its `started` row, no `complete` row), for the query that lists
# them.
load_hosts() {
	urls="--clickhouse $(ch_url 1)"
	[ "$CH_N" -lt 2 ] || urls="$urls --clickhouse $(ch_url 2)"
	RINGTRACE_CLICKHOUSE_PASSWORD=$CH_PASSWORD "$rt" load $urls --create "$@" \
		"$tmp/host-a" "$tmp/host-b" "$tmp/host-c" >"$tmp/load.out" 2>"$tmp/load.err" ||
		fail "ringtrace load failed: $(cat "$tmp/load.err")"
	# into the shard's own table on a cluster: a Distributed table's INSERT
	# reaches its shard later
	loads=loads
	[ "$CH_N" -lt 2 ] || loads=loads_local
	ch_sql 1 "INSERT INTO ringtrace.$loads (trace_uuid, load_id, version, digest, host, trace, state,
		started, finished, loaded_by, loader_host, clock_offset, rows, tables, events, lost)
		SELECT 'ffffffff-ffff-4fff-bfff-ffffffffffff', 1, 1, 'x', 'host-d', 'host-d', 'started',
		now(), now(), 'default (login root)', 'test', NULL, [], [], 0, 0" >/dev/null ||
		fail "could not add the half-way load's row"
}

# run_queries SUFFIX: every worked query, with SUFFIX appended, on server
# 1; each must succeed and return at least one row.
run_queries() {
	rt_sql_blocks "$doc" "$tmp/q"
	for q in "$tmp"/q/*.sql; do
		sql="$(cat "$q")$1 FORMAT TabSeparated"
		if ! ch_sql 1 "$sql" >"$tmp/out" 2>"$tmp/err"; then
			echo "--- $q:" >&2
			cat "$q" >&2
			fail "a worked query of docs/fleet.md failed: $(cat "$tmp/err")"
		fi
		[ -s "$tmp/out" ] || { cat "$q" >&2; fail "a worked query of docs/fleet.md (above) returned no rows"; }
	done
}

fleet_docs_hold_the_worked_queries() { # case
	rt_sql_blocks "$doc" "$tmp/q"
	# the complete-loads filter, the incomplete loads, the slowest spans,
	# two percentiles, events per minute, three on losses
	[ "$n" -ge 9 ] || fail "docs/fleet.md has $n sql blocks; the worked queries are missing or not fenced as \`\`\`sql"
}

fleet_docs_every_worked_query_returns_rows_on_one_server() { # case
	ch_start 1
	record_hosts
	load_hosts
	run_queries ""
	ch_stop
}

fleet_docs_every_worked_query_returns_rows_on_a_cluster() { # case
	ch_start 2
	record_hosts
	load_hosts --cluster rt_two
	# as the document says, the complete-loads filter alone is refused on
	# a cluster of two shards (wherever the traces landed) ...
	rt_sql_blocks "$doc" "$tmp/q"
	! ch_sql 1 "$(cat "$tmp/q/001.sql")" >/dev/null 2>"$tmp/err" ||
		fail "the complete-loads filter ran on the cluster without distributed_product_mode"
	grep -q "Double-distributed" "$tmp/err" || fail "the filter failed otherwise: $(cat "$tmp/err")"
	# ... and every query runs with the setting
	run_queries " SETTINGS distributed_product_mode = 'local'"
	ch_stop
}

# Every table as the reference lists it: `| T | col Type, col Type |` rows
# of "The tables", and the `loads` table's `| col | Type | ... |` rows.
fleet_docs_list_every_column_of_every_table() { # case
	ch_start 1
	"$rt" record -q -o "$tmp/t" -- "$bin/ringtrace-demo" --seconds 0.05 --threads 1 >/dev/null ||
		fail "record failed"
	RINGTRACE_CLICKHOUSE_PASSWORD=$CH_PASSWORD "$rt" load --clickhouse "$(ch_url 1)" --create -q "$tmp/t" \
		2>"$tmp/load.err" || fail "ringtrace load failed: $(cat "$tmp/load.err")"
	tables=$(ch_sql 1 "SELECT name FROM system.tables WHERE database = 'ringtrace' ORDER BY name")
	[ -n "$tables" ] || fail "--create made no tables"
	# the document's lists, a line "TABLE<tab>col Type, col Type, ..." each
	python3 - "$doc" >"$tmp/documented" <<'PY'
import re, sys
doc = open(sys.argv[1]).read()
lead = "host String, trace_uuid String, load_id UInt64, day Date"
for t, cols in re.findall(r"^\| `([a-z_]+)` \| ([a-z_]+ [A-Za-z0-9()]+(?:, [a-z_]+ [A-Za-z0-9()]+)*) \|$", doc, re.M):
    print("%s\t%s, %s" % (t, lead, cols))
m = re.search(r"^`loads`, one row per load and state:\n\n\| column .*\n\| --- .*\n((?:\|.*\n)+)", doc, re.M)
rows = re.findall(r"^\| ([a-z_]+) \| ([A-Za-z0-9()]+) \|", m.group(1), re.M) if m else []
print("loads\t" + ", ".join("%s %s" % r for r in rows))
PY
	for t in $tables; do
		real=$(ch_sql 1 "DESCRIBE TABLE ringtrace.$t FORMAT TabSeparated" |
			awk -F '\t' '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 }')
		documented=$(awk -F '\t' -v t="$t" '$1 == t { print $2 }' "$tmp/documented")
		[ "$documented" = "$real" ] ||
			fail "docs/fleet.md lists the columns of $t as '$documented'; the table has '$real'"
	done
	ch_stop
}

rt_run_cases "$@"
