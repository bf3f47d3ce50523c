#!/bin/sh
# The fleet loader on a cluster with distributed DDL: the two-shard
# cluster rt_two of tests/clickhouse.sh with a ZooKeeper of the test's own
# (tests/zookeeper.sh, Debian's 3.8) and a DDL queue in it, the loader
# given ONE server (--clickhouse once): what a user of such a cluster
# does, and what the loader does by ON CLUSTER, not by running each
# statement on every server given (test_fleet_cluster.sh tests that, on
# servers without ZooKeeper):
#  - --create --cluster makes the database, the <t>_local tables and the
#    Distributed tables on both servers, each statement through the DDL
#    queue and run by both;
#  - traces of three "hosts" (root: unshare --uts) loaded through that
#    one server: table by table, the rows through the Distributed tables
#    equal `ringtrace query`'s, and the `loads` rows say complete;
#  - --replace through the server of the shard that does NOT hold the
#    trace: the earlier load's rows are removed on the shard that does
#    (ALTER TABLE ... ON CLUSTER ... DELETE) once its mutations end;
#  - a shard's server down: the ON CLUSTER statement's timeout, said as
#    the server says it, not taken for a cluster without distributed DDL.
# Each is a case (tests/cases.sh); ZooKeeper and the servers start once
# per run of the script.
#   usage: test_fleet_zk.sh BIN_DIR [CASE...] | --list
set -eu
export LC_ALL=C
. "$(dirname "$0")/cases.sh"
bin=$1
shift
rt="$bin/ringtrace"
prog="$bin/test_fleet_prog"
tmp=$(mktemp -d /tmp/ringtrace-fleetzk-XXXXXX)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
# (ch_start's trap replaces the one above and runs this)
CH_AT_EXIT='rm -rf "$tmp"'
fail() { echo "test_fleet_zk: ${rt_c:-}: $*" >&2; exit 1; }
skip() { echo "${rt_c:-test_fleet_zk}: SKIPPED: $*"; exit 77; }
. "$(dirname "$0")/clickhouse.sh"
. "$(dirname "$0")/zookeeper.sh"
. "$(dirname "$0")/fleet_cluster_lib.sh"

# cluster: ZooKeeper and the two servers (once per run of the script)
cluster() {
	[ -n "${CH_DIR:-}" ] && return 0
	CH_ZK=1
	ch_start 2
	u1=$(ch_url 1)
	u2=$(ch_url 2)
}

# ld NAME URL ARG...: `ringtrace load --cluster rt_two` through the one
# server URL; stdout in $tmp/NAME.out, stderr in $tmp/NAME.err, the exit
# status in $st
ld() {
	ld_n=$1
	ld_u=$2
	shift 2
	st=0
	"$rt" load --cluster rt_two --clickhouse "$ld_u" --password-file "$CH_PASSWORD_FILE" "$@" \
		>"$tmp/$ld_n.out" 2>"$tmp/$ld_n.err" || st=$?
}

ld_ok() {
	ld "$@"
	[ "$st" = 0 ] || fail "load $*: exit $st: $(cat "$tmp/$1.err")"
}

# plain_trace: a small trace of this machine's host name in $tmp/plain
plain_trace() {
	[ -d "$tmp/plain" ] || "$rt" record -q -o "$tmp/plain" -- "$prog" 3 >"$tmp/plain.rec" 2>&1 ||
		fail "record failed: $(cat "$tmp/plain.rec")"
}

# ddl_queue: the statements in the DDL queue, one a line, in their order
ddl_queue() {
	chq 1 "SELECT value FROM system.zookeeper WHERE path = '$ZK_DDL' ORDER BY name" |
		sed -n 's/^.*query: \(.*\)\\nhosts: .*$/\1/p'
}

# ddl_done_by STATEMENT: the hosts that ran the queue's (first) entry whose
# statement begins with STATEMENT without an error, as host:port lines
ddl_done_by() {
	dd_n=$(chq 1 "SELECT name FROM system.zookeeper WHERE path = '$ZK_DDL'
		AND startsWith(value, 'version: 1\\nquery: $1') ORDER BY name LIMIT 1")
	[ -n "$dd_n" ] || fail "no \"$1\" in the DDL queue: $(ddl_queue)"
	chq 1 "SELECT name FROM system.zookeeper WHERE path = '$ZK_DDL/$dd_n/finished' AND value IN ('0', '0\\n')
		ORDER BY name" | sed 's/%2E/./g'
}

fleet_on_cluster_create_with_one_url_makes_every_shard() { # case
	cluster
	plain_trace
	ld_ok create "$u1" --create --database fleet_oc "$tmp/plain"
	grep -q "loaded trace" "$tmp/create.out" || fail "the trace was not loaded: $(cat "$tmp/create.out")"
	# every table on both servers: <t>_local of its engine, <t> Distributed
	want=$(for t in $tables loads; do
		e=MergeTree
		[ $t != loads ] || e=ReplacingMergeTree
		printf '%s\tDistributed\n%s_local\t%s\n' $t $t $e
	done | sort)
	for s in 1 2; do
		got=$(chq $s "SELECT name, engine FROM system.tables WHERE database = 'fleet_oc'" | sort)
		[ "$got" = "$want" ] || fail "server $s's tables are not the fleet's:
$got
---
$want"
	done
	# made by ON CLUSTER: each statement in the DDL queue, run by both
	# servers (without distributed DDL the loader would run them on the
	# servers given, server 1 alone here, and refuses that: shard 2 has
	# none)
	ddl_queue >"$tmp/queue"
	for t in $tables loads; do
		for n in ${t}_local $t; do
			grep -q "^CREATE TABLE IF NOT EXISTS fleet_oc\.$n ON CLUSTER rt_two (" "$tmp/queue" ||
				fail "no CREATE TABLE of fleet_oc.$n ON CLUSTER in the DDL queue: $(cat "$tmp/queue")"
		done
	done
	grep -q "^CREATE DATABASE IF NOT EXISTS fleet_oc ON CLUSTER rt_two" "$tmp/queue" ||
		fail "no CREATE DATABASE ON CLUSTER in the DDL queue: $(cat "$tmp/queue")"
	want="127.0.0.1:$(ch_port tcp 1)
127.0.0.1:$(ch_port tcp 2)"
	[ "$(ddl_done_by "CREATE TABLE IF NOT EXISTS fleet_oc.slice_local" | sort)" = "$(echo "$want" | sort)" ] ||
		fail "slice_local's CREATE was not run by both servers: $(ddl_done_by "CREATE TABLE IF NOT EXISTS fleet_oc.slice_local")"
	# and --create again finds them (IF NOT EXISTS on every shard)
	ld_ok create2 "$u2" --create --database fleet_oc "$tmp/plain"
	grep -q "skipped" "$tmp/create2.out" || fail "the second load was not skipped: $(cat "$tmp/create2.out")"
}

fleet_on_cluster_load_rows_equal_ringtrace_query() { # case
	need_root
	cluster
	for h in a b c; do
		case $h in a) n=3 ;; b) n=10 ;; c) n=30 ;; esac
		host_trace "host-$h" "$tmp/$h" $n
	done
	ld_ok hosts "$u1" --create "$tmp/a" "$tmp/b" "$tmp/c"
	for h in a b c; do
		loaded hosts "$tmp/$h"
		compare ringtrace "$lu" "$tmp/$h"
		for t in process thread slice args event stats; do
			[ "$(cat "$tmp/rows.$t")" -gt 0 ] || fail "host-$h's trace has no rows in $t"
		done
		complete_load ringtrace "$lu" "$ll"
		# on the shard the Distributed tables chose, through one server
		s=$(shard_of "$lu")
		[ "$(chq "$s" "SELECT count() FROM ringtrace.slice_local WHERE trace_uuid = '$lu'")" = \
			"$(cat "$tmp/rows.slice")" ] || fail "host-$h's slices are not all on shard $s"
	done
}

fleet_on_cluster_replace_removes_old_rows_on_every_shard() { # case
	cluster
	plain_trace
	ld_ok first "$u1" --create --database fleet_rp "$tmp/plain"
	loaded first "$tmp/plain"
	l1=$ll
	# the server given is the one of the other shard: the old rows are
	# only where the loader has no URL
	s=$(shard_of "$lu")
	o=$((3 - s))
	n1=$(rows_of fleet_rp "$lu" "$l1")
	[ "$n1" -gt 0 ] || fail "no rows of the first load"
	[ "$(chq "$s" "SELECT count() FROM fleet_rp.slice_local WHERE load_id = $l1")" -gt 0 ] ||
		fail "the first load's slices are not on shard $s"
	ld_ok again "$(ch_url $o)" --replace --database fleet_rp "$tmp/plain"
	loaded again "$tmp/plain"
	l2=$ll
	[ "$l2" != "$l1" ] || fail "--replace did not make a new load"
	ddl_queue >"$tmp/queue"
	for t in $tables; do
		grep -q "^ALTER TABLE fleet_rp\.${t}_local ON CLUSTER rt_two DELETE WHERE" "$tmp/queue" ||
			fail "no ALTER TABLE fleet_rp.${t}_local ON CLUSTER ... DELETE in the DDL queue: $(cat "$tmp/queue")"
	done
	# the mutations (asynchronous) ended on both servers: 60 s at most
	rt_wait_for 600 mutations_done fleet_rp
	mutations_done fleet_rp ||
		fail "the mutations are not done after 60 s: $(chq "$s" "SELECT * FROM system.mutations WHERE is_done = 0")"
	[ "$(chq "$s" "SELECT count() FROM system.mutations WHERE database = 'fleet_rp'")" = "$(echo $tables | wc -w)" ] ||
		fail "shard $s has not a mutation per table: $(chq "$s" "SELECT table, command FROM system.mutations")"
	# no row of the first load left, on either shard's tables (per table,
	# those that have some); the second load's rows are the trace's
	left_q=
	for t in $tables; do
		left_q="$left_q${left_q:+ UNION ALL }SELECT '${t}_local', count() AS n
			FROM fleet_rp.\`${t}_local\` WHERE load_id = $l1"
	done
	for i in 1 2; do
		left=$(chq $i "SELECT * FROM ($left_q) WHERE n != 0")
		[ -z "$left" ] || fail "server $i's tables still have rows of the replaced load: $left"
	done
	[ "$(rows_of fleet_rp "$lu" "$l2")" = "$n1" ] || fail "the second load has not the first's rows"
	compare fleet_rp "$lu" "$tmp/plain"
	complete_load fleet_rp "$lu" "$l2"
	[ "$(chq 1 "SELECT argMax(state, version) FROM fleet_rp.loads WHERE load_id = $l1")" = replaced ] ||
		fail "the first load is not marked replaced: $(chq 1 "SELECT * FROM fleet_rp.loads")"
}

fleet_on_cluster_shard_down_clear_error() { # case
	cluster
	plain_trace
	ch_kill 2
	# the statement waits for server 2 (the servers' profile: 10 s), and
	# fails as the server says; not "no distributed DDL: add --clickhouse"
	ld down "$u1" --create --database fleet_down "$tmp/plain"
	ch_restart 2
	echo "test_fleet_zk: shard 2's server down: $(cat "$tmp/down.err")"
	[ "$st" = 1 ] || fail "exit $st with shard 2's server down, want 1 (a server's error): $(cat "$tmp/down.err")"
	grep -q "^ringtrace load: creating the tables: .*127\.0\.0\.1:$(ch_port http 1)" "$tmp/down.err" ||
		fail "the error does not name the server given: $(cat "$tmp/down.err")"
	grep -q "distributed_ddl_task_timeout.*unfinished hosts" "$tmp/down.err" ||
		fail "the error does not say the statement timed out on a server: $(cat "$tmp/down.err")"
	grep -q "no distributed DDL\|add --clickhouse" "$tmp/down.err" &&
		fail "taken for a cluster without distributed DDL: $(cat "$tmp/down.err")"
	[ "$(wc -l <"$tmp/down.err")" -le 3 ] || fail "more than a clear error: $(cat "$tmp/down.err")"
	[ ! -s "$tmp/down.out" ] || fail "a load line with a shard down: $(cat "$tmp/down.out")"
}

rt_run_cases "$@"
