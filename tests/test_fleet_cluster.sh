#!/bin/sh
# The fleet loader end to end, with real servers: two clickhouse-server
# processes of the test's own as the two-shard cluster rt_two
# (tests/clickhouse.sh), the schema made by `ringtrace load --create
# --cluster rt_two` on both (18.16 without ZooKeeper has no ON CLUSTER:
# the loader runs the DDL on every server given), and traces of three
# "hosts" (test_fleet_prog recorded under `unshare --uts` with host names
# of their own: root, as CI runs; skipped elsewhere) of three sizes:
#  - table by table, per trace, the row count and, per column, the count
#    of values not NULL and the sum of the numbers (of the strings: of
#    their lengths in bytes) through the Distributed tables equal
#    `ringtrace query`'s on the same trace (SQLite), and the `loads` row
#    says complete with the same rows per table; the same for a collection
#    with kernel events (sched_slice, thread_state, ftrace_event);
#  - each trace's rows are all on the shard its uuid's cityHash64 names,
#    and both shards hold traces;
#  - a second load of a trace is skipped, said so, and adds no row;
#  - the loader given one server of the two (they have no distributed
#    DDL): refused before anything is made, naming the shard without one;
#  - a server that is down, a wrong password: a clear error that names the
#    server, the exit status `ringtrace load --help` says (2: no server
#    reachable; 1: the traces failed), nothing half-made, the password in
#    neither the message nor the process list;
#  - a shard's server killed in the middle of a load (made through the
#    other server): a clear error, the `loads` row stays 'started'; after the server's restart the next load
#    completes the trace, queries that keep to complete loads count only
#    its rows, and the mutation removes the incomplete load's;
#  - a trace whose host name, process name, event and field names and
#    string values hold quotes and SQL loads as data: the tables are
#    intact and every value comes back byte for byte.
# Each is a case (tests/cases.sh); the servers start once per run of the
# script (CTest runs each case in its own run).
#   usage: test_fleet_cluster.sh BIN_DIR [CASE...] | --list
set -eu
export LC_ALL=C
. "$(dirname "$0")/cases.sh"
bin=$1
shift
rt="$bin/ringtrace"
prog="$bin/test_fleet_prog"
tmp=$(mktemp -d /tmp/ringtrace-fleet-XXXXXX)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
# (ch_start's trap replaces the one above and runs this)
CH_AT_EXIT='rm -rf "$tmp"'
fail() { echo "test_fleet_cluster: ${rt_c:-}: $*" >&2; exit 1; }
skip() { echo "${rt_c:-test_fleet_cluster}: SKIPPED: $*"; exit 77; }
. "$(dirname "$0")/clickhouse.sh"
. "$(dirname "$0")/tracefs.sh"
. "$(dirname "$0")/fleet_cluster_lib.sh"

# cluster: the two servers (once per run of the script)
cluster() {
	[ -n "${CH_DIR:-}" ] && return 0
	ch_start 2
	u1=$(ch_url 1)
	u2=$(ch_url 2)
}

# ld NAME ARG...: `ringtrace load` into the cluster through server 1, both
# servers given, the password from its file; stdout in $tmp/NAME.out,
# stderr in $tmp/NAME.err, the exit status in $st
ld() {
	ld_n=$1
	shift
	st=0
	"$rt" load --cluster rt_two --clickhouse "$u1" --clickhouse "$u2" \
		--password-file "$CH_PASSWORD_FILE" "$@" >"$tmp/$ld_n.out" 2>"$tmp/$ld_n.err" || st=$?
}

# ld_ok NAME ARG...: the same, which must succeed
ld_ok() {
	ld "$@"
	[ "$st" = 0 ] || fail "load $*: exit $st: $(cat "$tmp/$1.err")"
}

# three_hosts: the traces of host-a, host-b and host-c (5, 20 and 60
# rounds) recorded and loaded with --create, once per run; a_uuid a_lid,
# b_..., c_...
three_hosts() {
	need_root
	cluster
	[ -z "${a_uuid:-}" ] || return 0
	for h in a b c; do
		case $h in a) n=5 ;; b) n=20 ;; c) n=60 ;; esac
		host_trace "host-$h" "$tmp/$h" $n
	done
	ld_ok hosts --create "$tmp/a" "$tmp/b" "$tmp/c"
	for h in a b c; do
		loaded hosts "$tmp/$h"
		eval "${h}_uuid=\$lu ${h}_lid=\$ll"
	done
}

fleet_rows_per_table_equal_ringtrace_query() { # case
	three_hosts
	for h in a b c; do
		eval "u=\$${h}_uuid lid=\$${h}_lid"
		compare ringtrace "$u" "$tmp/$h"
		# not an empty comparison: the workload's rows are there
		for t in process thread slice counter_track counter args event stats; do
			[ "$(cat "$tmp/rows.$t")" -gt 0 ] || fail "host-$h's trace has no rows in $t"
		done
		complete_load ringtrace "$u" "$lid"
		[ "$(chq 1 "SELECT DISTINCT host FROM ringtrace.slice WHERE trace_uuid = '$u'")" = "host-$h" ] ||
			fail "the slices of host-$h's trace are not of host host-$h"
		grep -q "^$tmp/$h: loaded trace $u (host host-$h) as load $lid: " "$tmp/hosts.out" ||
			fail "the loaded line does not name host-$h: $(cat "$tmp/hosts.out")"
	done
	# the sizes differ (what is compared is per trace)
	[ "$(chq 1 "SELECT uniqExact(count) FROM (SELECT trace_uuid, count() AS count FROM ringtrace.slice
		WHERE trace_uuid IN ('$a_uuid', '$b_uuid', '$c_uuid') GROUP BY trace_uuid)")" = 3 ] ||
		fail "the three traces have the same number of slices"
}

fleet_kernel_collection_rows_equal_ringtrace_query() { # case
	need_tracefs
	cluster
	k="$tmp/kernel-collection"
	# the sleeper's switches, on CPU 0 (docs/kernel.md: this VM records no
	# switch out of CPU 1's idle task), as host-k
	unshare --uts sh -c 'printf "%s" host-k >/proc/sys/kernel/hostname && exec "$@"' sh \
		taskset -c 0 "$rt" record -q -k sched:sched_switch -k sched:sched_wakeup \
		-k sched:sched_wakeup_new -o "$k" -- "$bin/test_sleep_prog" 5 10 >"$k.rec" 2>&1 ||
		fail "record -k failed: $(cat "$k.rec")"
	[ -f "$k/kernel/metadata" ] || fail "no kernel trace in the collection: $(ls "$k")"
	ld_ok kernel --create "$k"
	loaded kernel "$k"
	compare ringtrace "$lu" "$k"
	for t in ftrace_event sched_slice thread_state process thread; do
		[ "$(cat "$tmp/rows.$t")" -gt 0 ] || fail "the collection has no rows in $t"
	done
	complete_load ringtrace "$lu" "$ll"
	[ "$(chq 1 "SELECT DISTINCT host FROM ringtrace.sched_slice WHERE trace_uuid = '$lu'")" = host-k ] ||
		fail "the collection's sched_slice rows are not of host-k"
}

fleet_trace_rows_on_one_shard() { # case
	three_hosts
	uuids="$a_uuid $b_uuid $c_uuid"
	# more traces until both shards have one: by cityHash64 of a random
	# uuid, each trace lands on shard 1 or 2 as by a coin; the first
	# three all on one shard in a quarter of the runs, 12 once in 2,000,
	# 40 once in 2^39
	have=" $(shard_of "$a_uuid") $(shard_of "$b_uuid") $(shard_of "$c_uuid") "
	i=0
	while [ "${have#* 1 }" = "$have" ] || [ "${have#* 2 }" = "$have" ]; do
		[ $i -lt 37 ] || fail "40 traces, all on one shard: $uuids"
		i=$((i + 1))
		host_trace "host-more$i" "$tmp/more$i" 2
		ld_ok more$i "$tmp/more$i"
		loaded more$i "$tmp/more$i"
		uuids="$uuids $lu"
		have="$have$(shard_of "$lu") "
	done
	# every trace in the database: per table, its rows through the
	# Distributed table are all on its shard's local table
	per_trace ringtrace "" >"$tmp/dist"
	per_trace ringtrace _local 1 >"$tmp/local"
	per_trace ringtrace _local 2 >>"$tmp/local"
	for u in $uuids; do
		grep -q "	$u	" "$tmp/dist" || fail "no rows of trace $u"
	done
	cut -f2 "$tmp/dist" | sort -u >"$tmp/uuids"
	for u in $(cat "$tmp/uuids"); do
		printf '%s\t%s\n' "$u" "$(shard_of "$u")"
	done >"$tmp/shards"
	awk -F '\t' 'FILENAME ~ /shards$/ { shard[$1] = $2; next }
		FILENAME ~ /local$/ { on[$1 "\t" $2] = on[$1 "\t" $2] " " $4 "=" $3; next }
		{ want = " " shard[$2] "=" $3
		  if (on[$1 "\t" $2] != want) { print "trace " $2 ", " $1 ": " $3 " rows, on shards:" on[$1 "\t" $2] ", want" want; bad = 1 }
		  delete on[$1 "\t" $2] }
		END { for (k in on) { print "rows on a shard, not through the Distributed table: " k on[k]; bad = 1 }
		      exit bad }' "$tmp/shards" "$tmp/local" "$tmp/dist" >"$tmp/diff" ||
		fail "rows not on their trace's shard: $(cat "$tmp/diff")"
	for s in 1 2; do
		[ "$(chq $s "SELECT count() FROM ringtrace.process_local")" -gt 0 ] || fail "shard $s holds no trace"
	done
}

fleet_reload_same_trace_skipped_no_duplicate() { # case
	three_hosts
	counts ringtrace "$b_uuid" >"$tmp/before"
	ld_ok again "$tmp/b"
	grep -q "^$tmp/b: skipped: trace $b_uuid already loaded completely (load $b_lid at [^)]*); --replace loads it again\$" \
		"$tmp/again.out" || fail "the second load did not say skipped as docs/fleet.md does: $(cat "$tmp/again.out" "$tmp/again.err")"
	grep -q "loaded trace" "$tmp/again.out" && fail "the second load says it loaded: $(cat "$tmp/again.out")"
	echo "test_fleet_cluster: $(cat "$tmp/again.out")"
	counts ringtrace "$b_uuid" >"$tmp/after"
	cmp -s "$tmp/before" "$tmp/after" ||
		fail "the second load changed the rows: $(diff "$tmp/before" "$tmp/after" | tr '\n' ' ')"
	[ "$(chq 1 "SELECT uniqExact(load_id) FROM ringtrace.loads WHERE trace_uuid = '$b_uuid'")" = 1 ] ||
		fail "more than one load of host-b's trace"
	# the same trace among others: only the others are loaded
	host_trace host-d "$tmp/d" 3
	ld_ok mixed "$tmp/b" "$tmp/d"
	grep -q "^$tmp/b: skipped: " "$tmp/mixed.out" && grep -q "^$tmp/d: loaded trace " "$tmp/mixed.out" ||
		fail "b skipped and d loaded, in one command: $(cat "$tmp/mixed.out" "$tmp/mixed.err")"
	counts ringtrace "$b_uuid" >"$tmp/after"
	cmp -s "$tmp/before" "$tmp/after" ||
		fail "loading b again among others changed its rows: $(diff "$tmp/before" "$tmp/after" | tr '\n' ' ')"
}

# plain_trace: a small trace of this machine's host name in $tmp/plain
# (once per run)
plain_trace() {
	[ -d "$tmp/plain" ] || "$rt" record -q -o "$tmp/plain" -- "$prog" 3 >"$tmp/plain.rec" 2>&1 ||
		fail "record failed: $(cat "$tmp/plain.rec")"
}

# a loopback port nothing listens on (free now)
dead_port() {
	ch_free_ports 1
}

fleet_server_down_clear_error() { # case
	cluster
	plain_trace
	dead=$(dead_port)
	# the only server given is down: a usage-time failure (exit 2)
	st=0
	"$rt" load --clickhouse "http://127.0.0.1:$dead" --password-file "$CH_PASSWORD_FILE" "$tmp/plain" \
		>"$tmp/down.out" 2>"$tmp/down.err" || st=$?
	[ "$st" = 2 ] || fail "exit $st with the server down, want 2 (no server reachable): $(cat "$tmp/down.err")"
	grep -q "^ringtrace load: .*127\.0\.0\.1:$dead" "$tmp/down.err" ||
		fail "the error does not name the server 127.0.0.1:$dead: $(cat "$tmp/down.err")"
	[ "$(wc -l <"$tmp/down.err")" -le 3 ] || fail "more than a clear error: $(cat "$tmp/down.err")"
	[ ! -s "$tmp/down.out" ] || fail "a load line with the server down: $(cat "$tmp/down.out")"
	echo "test_fleet_cluster: server down: $(cat "$tmp/down.err")"
	# one shard's server down at --create: nothing made on the other
	st=0
	"$rt" load --create --database fleet_down --cluster rt_two --clickhouse "$u1" \
		--clickhouse "http://127.0.0.1:$dead" --password-file "$CH_PASSWORD_FILE" "$tmp/plain" \
		>"$tmp/down2.out" 2>"$tmp/down2.err" || st=$?
	[ "$st" = 2 ] || fail "exit $st with shard 2's server down, want 2: $(cat "$tmp/down2.err")"
	grep -q "^ringtrace load: .*127\.0\.0\.1:$dead" "$tmp/down2.err" ||
		fail "the error does not name the server 127.0.0.1:$dead: $(cat "$tmp/down2.err")"
	[ "$(chq 1 "SELECT count() FROM system.databases WHERE name = 'fleet_down'")" = 0 ] ||
		fail "the database was made on server 1 with server 2 down: $(chq 1 "SELECT name FROM system.tables WHERE database = 'fleet_down'")"
	echo "test_fleet_cluster: shard 2's server down: $(cat "$tmp/down2.err")"
}

fleet_no_ddl_queue_one_server_names_the_shard_without_one() { # case
	cluster
	plain_trace
	# these servers have no ZooKeeper: ON CLUSTER refused, the loader runs
	# each statement on the servers given, server 1 only, which holds shard
	# 1 only: refused before any statement, naming shard 2's server
	st=0
	"$rt" load --create --database fleet_one --cluster rt_two --clickhouse "$u1" \
		--password-file "$CH_PASSWORD_FILE" "$tmp/plain" >"$tmp/one.out" 2>"$tmp/one.err" || st=$?
	[ "$st" = 2 ] || fail "exit $st with one server of two shards, want 2: $(cat "$tmp/one.err")"
	grep -q "no distributed DDL.*shard 2 (127\.0\.0\.1:$(ch_port tcp 2)) has none of them: add --clickhouse URL" \
		"$tmp/one.err" || fail "the error does not name shard 2 and its server: $(cat "$tmp/one.err")"
	[ "$(wc -l <"$tmp/one.err")" -le 3 ] || fail "more than a clear error: $(cat "$tmp/one.err")"
	[ "$(chq 1 "SELECT count() FROM system.databases WHERE name = 'fleet_one'")" = 0 ] ||
		fail "the database was made on server 1 alone"
	echo "test_fleet_cluster: one server of two shards: $(cat "$tmp/one.err")"
}

# listener PORTFILE LOG: a server that accepts connections and never
# answers (its port written to PORTFILE, "accepted" to LOG at each
# connection); its pid in $lpid
listener() {
	command -v python3 >/dev/null 2>&1 || fail "python3 is not installed (make deps installs it)"
	python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
held = []
while True:
    c, _ = s.accept(); held.append(c)
    with open(sys.argv[2], "a") as f: f.write("accepted\n")
' "$1" "$2" &
	lpid=$!
	rt_wait_for 300 test -s "$1"
	[ -s "$1" ] || fail "the silent listener did not start"
}

fleet_wrong_password_clear_error_not_in_ps() { # case
	cluster
	plain_trace
	bad="wrong-$CH_PASSWORD-x"
	umask 077
	printf '%s\n' "$bad" >"$tmp/bad.pw"
	umask 022
	host1=${u1#http://}
	# by file, by the environment, in the URL
	for how in file env url; do
		st=0
		case $how in
		file) "$rt" load --clickhouse "$u1" --password-file "$tmp/bad.pw" "$tmp/plain" ;;
		env) RINGTRACE_CLICKHOUSE_PASSWORD=$bad "$rt" load --clickhouse "$u1" "$tmp/plain" ;;
		url) "$rt" load --clickhouse "http://default:$bad@$host1" "$tmp/plain" ;;
		esac >"$tmp/pw.out" 2>"$tmp/pw.err" || st=$?
		# (the server answered: every trace failed, 1; 2 is for no server)
		[ "$st" = 1 ] || fail "$how: exit $st with a wrong password, want 1: $(cat "$tmp/pw.err")"
		grep -q "^ringtrace load: .*$host1" "$tmp/pw.err" ||
			fail "$how: the error does not name the server $host1: $(cat "$tmp/pw.err")"
		grep -qi "password\|authentic" "$tmp/pw.err" ||
			fail "$how: the error does not say the password was refused: $(cat "$tmp/pw.err")"
		grep -q "wrong-" "$tmp/pw.err" "$tmp/pw.out" && fail "$how: the password is in the message: $(cat "$tmp/pw.err")"
		[ ! -s "$tmp/pw.out" ] || fail "$how: a load line with a wrong password: $(cat "$tmp/pw.out")"
		echo "test_fleet_cluster: wrong password ($how): $(cat "$tmp/pw.err")"
	done
	# the process list while the loader waits for an answer (a server that
	# never answers): the password of its URL is not in its arguments
	listener "$tmp/l.port" "$tmp/l.log"
	CH_AT_EXIT="kill $lpid 2>/dev/null; $CH_AT_EXIT"
	"$rt" load --clickhouse "http://default:$bad@127.0.0.1:$(cat "$tmp/l.port")" "$tmp/plain" \
		>"$tmp/ps.out" 2>"$tmp/ps.err" &
	lp=$!
	rt_wait_for 300 grep -qs accepted "$tmp/l.log"
	grep -q accepted "$tmp/l.log" || fail "the loader did not connect: $(cat "$tmp/ps.err")"
	ps -ww -o args= -p $lp >"$tmp/ps" || fail "the loader is gone: $(cat "$tmp/ps.err")"
	tr '\0' ' ' <"/proc/$lp/cmdline" >>"$tmp/ps"
	kill $lp $lpid
	wait $lp $lpid 2>/dev/null || true
	grep -q "ringtrace load" "$tmp/ps" || fail "not the loader's arguments: $(cat "$tmp/ps")"
	grep -q "wrong-" "$tmp/ps" && fail "the password is in the process list: $(cat "$tmp/ps")"
	return 0
}

fleet_hostile_names_are_data() { # case
	three_hosts
	# quotes, back quotes, a backslash, a tab, a line break and SQL
	hh="h'); DROP TABLE ringtrace.slice; --"
	pn="p'\"); DROP --"
	tx=$(printf 'v'\''"`\\\t\n); DROP TABLE ringtrace.loads; -- é')
	# the program's path too (the process's executable)
	hp="$tmp/e'\"); DROP TABLE ringtrace.thread; --"
	mkdir "$hp"
	cp "$prog" "$hp/test_fleet_prog"
	h_prog=$prog
	prog="$hp/test_fleet_prog"
	host_trace "$hh" "$tmp/h" 4 "$pn" "$tx"
	prog=$h_prog
	# event and field names (percent-encoded in the schema block)
	m="$tmp/h/metadata"
	sed -i 's/^event \([0-9]* [0-9]*\) fleet_mark /event \1 m%27%29%3B%20DROP%20TABLE%20ringtrace.event%3B%20-- /;
		s/^event \([0-9]* [0-9]*\) fleet_begin /event \1 b%22%60%5C%09x /;
		s/^field what /field w%27%22%3B%20DROP%20TABLE%20ringtrace.args%3B%20-- /' "$m"
	grep -q '^event [0-9]* [0-9]* m%27' "$m" && grep -q '^field w%27' "$m" ||
		fail "the metadata was not made hostile: $(grep '^event\|^field' "$m")"
	chq 1 "SELECT name FROM system.tables WHERE database = 'ringtrace' ORDER BY name" >"$tmp/tables1"
	chq 2 "SELECT name FROM system.tables WHERE database = 'ringtrace' ORDER BY name" >>"$tmp/tables1"
	counts ringtrace "$a_uuid" >"$tmp/a.before"
	ld_ok hostile "$tmp/h"
	loaded hostile "$tmp/h"
	hu=$lu
	chq 1 "SELECT name FROM system.tables WHERE database = 'ringtrace' ORDER BY name" >"$tmp/tables2"
	chq 2 "SELECT name FROM system.tables WHERE database = 'ringtrace' ORDER BY name" >>"$tmp/tables2"
	cmp -s "$tmp/tables1" "$tmp/tables2" || fail "the tables changed: $(diff "$tmp/tables1" "$tmp/tables2")"
	counts ringtrace "$a_uuid" >"$tmp/a.after"
	cmp -s "$tmp/a.before" "$tmp/a.after" || fail "another trace's rows changed"
	compare ringtrace "$hu" "$tmp/h"
	# byte for byte (as hex): the names and strings of each table
	for spec in "process:hostname, name, executable" "thread:name" "slice:name" \
		"counter_track:name, event, field" "args:key, string_value, value_type" "event:name"; do
		t=${spec%%:*}
		cols=$(echo "${spec#*:}" | sed 's/\([a-z_][a-z_]*\)/hex(\1)/g')
		got=$(chq 1 "SELECT $cols, count() FROM ringtrace.$t WHERE trace_uuid = '$hu'
			GROUP BY $cols ORDER BY $cols" | sed 's/\\N//g')
		want=$(q "$tmp/h" "SELECT $cols, count(*) FROM $(sqlite_from "$tmp/h" "$t") GROUP BY $cols ORDER BY $cols")
		[ "$got" = "$want" ] || fail "$t: the strings differ from ringtrace query's (hex):
$got
---
$want"
	done
	# and the hostile ones are among them
	for s in "$hh" "$pn" "$tx" "$hp/test_fleet_prog" "m'); DROP TABLE ringtrace.event; --" \
		"w'\"; DROP TABLE ringtrace.args; --"; do
		[ "$(chq 1 "SELECT count() FROM ringtrace.process WHERE trace_uuid = '$hu'
				AND (hex(hostname) = '$(hex "$s")' OR hex(executable) = '$(hex "$s")')
			UNION ALL SELECT count() FROM ringtrace.args WHERE trace_uuid = '$hu' AND (hex(string_value) = '$(hex "$s")' OR hex(key) = '$(hex "$s")')
			UNION ALL SELECT count() FROM ringtrace.event WHERE trace_uuid = '$hu' AND hex(name) = '$(hex "$s")'
			UNION ALL SELECT count() FROM ringtrace.thread WHERE trace_uuid = '$hu' AND hex(name) = '$(hex "$s")'" |
			awk '{ n += $1 } END { print n + 0 }')" -gt 0 ] || fail "no value $s in the fleet's tables"
	done
	[ "$(chq 1 "SELECT DISTINCT hex(host) FROM ringtrace.slice WHERE trace_uuid = '$hu'")" = "$(hex "$hh")" ] &&
		[ "$(chq 1 "SELECT hex(host) FROM ringtrace.loads FINAL WHERE trace_uuid = '$hu'")" = "$(hex "$hh")" ] ||
		fail "the host column is not the trace's host name"
}

fleet_server_killed_mid_load_incomplete_then_completed() { # case
	need_root
	cluster
	big="$tmp/big"
	host_trace host-big "$big" 20000
	u=$(sed -n 's/^[[:space:]]*uuid = "\([0-9a-f-]*\)";$/\1/p' "$big/metadata" | head -n 1)
	[ -n "$u" ] || fail "no uuid in $big/metadata"
	# the server killed: the one of the trace's shard, ks; the load goes
	# through the other (its Distributed tables insert into shard ks)
	ks=$(shard_of "$u")
	"$rt" load --create --database fleet_kill --cluster rt_two --clickhouse "$(ch_url $((3 - ks)))" \
		--clickhouse "$(ch_url $ks)" --password-file "$CH_PASSWORD_FILE" --batch-rows 2000 "$big" \
		>"$tmp/killed.out" 2>"$tmp/killed.err" &
	lp=$!
	# until the load started and rows of it arrived on the shard
	started() {
		[ "$(ch_sql $ks "SELECT count() FROM fleet_kill.loads_local WHERE trace_uuid = '$u' AND state = 'started'" 2>/dev/null)" = 1 ] &&
			[ "$(ch_sql $ks "SELECT sum(rows) FROM system.parts WHERE database = 'fleet_kill'
				AND table != 'loads_local' AND active" 2>/dev/null)" -gt 0 ]
	}
	rt_wait_for 600 started
	started || { kill $lp; fail "the load did not start: $(cat "$tmp/killed.out" "$tmp/killed.err")"; }
	ch_kill $ks
	kst=0
	wait $lp || kst=$?
	grep -q "loaded trace" "$tmp/killed.out" &&
		fail "the load ended before shard $ks's server was killed: make the trace bigger: $(cat "$tmp/killed.out")"
	[ "$kst" = 1 ] || fail "exit $kst with shard $ks's server killed mid-load, want 1: $(cat "$tmp/killed.err")"
	grep -q "^ringtrace load: $big: .*127\.0\.0\.1:[0-9]" "$tmp/killed.err" ||
		fail "the error does not say the trace and the server: $(cat "$tmp/killed.err")"
	[ "$(wc -l <"$tmp/killed.err")" -le 3 ] || fail "more than a clear error: $(cat "$tmp/killed.err")"
	grep -q "$CH_PASSWORD" "$tmp/killed.err" && fail "the password is in the message"
	echo "test_fleet_cluster: shard $ks's server killed mid-load: $(cat "$tmp/killed.err")"
	ch_restart $ks
	# the load stays incomplete, with some of its rows
	chq 1 "SELECT load_id, argMax(state, version) FROM fleet_kill.loads WHERE trace_uuid = '$u'
		GROUP BY load_id" >"$tmp/loads1"
	[ "$(wc -l <"$tmp/loads1")" = 1 ] && [ "$(cut -f2 "$tmp/loads1")" = started ] ||
		fail "the killed load is not one 'started' row: $(cat "$tmp/loads1")"
	l1=$(cut -f1 "$tmp/loads1")
	[ "$(rows_of fleet_kill "$u" "$l1")" -gt 0 ] || fail "no rows of the killed load"
	# which a query that keeps to complete loads does not count
	[ "$(rows_of fleet_kill "$u" "$l1" complete)" = 0 ] ||
		fail "a query that keeps to complete loads counts the killed load's rows"
	# the next load completes it
	ld_ok again --database fleet_kill --batch-rows 100000 "$big"
	echo "test_fleet_cluster: after the restart: $(cat "$tmp/again.out")"
	loaded again "$big"
	l2=$ll
	[ "$lu" = "$u" ] && [ "$l2" != "$l1" ] || fail "the second load is not a new load of $u: $lu $l2"
	compare fleet_kill "$u" "$big" complete
	complete_load fleet_kill "$u" "$l2"
	[ "$(chq 1 "SELECT argMax(state, version) FROM fleet_kill.loads WHERE trace_uuid = '$u' AND load_id = $l1")" = replaced ] ||
		fail "the killed load is not marked replaced: $(chq 1 "SELECT * FROM fleet_kill.loads WHERE trace_uuid = '$u'")"
	# its rows removed (an asynchronous mutation: waited for, 60 s at most)
	rt_wait_for 600 mutations_done fleet_kill
	mutations_done fleet_kill ||
		fail "the mutations are not done after 60 s: $(ch_sql $ks "SELECT * FROM system.mutations WHERE is_done = 0")"
	[ "$(rows_of fleet_kill "$u" "$l1")" = 0 ] || fail "rows of the killed load are left"
	compare fleet_kill "$u" "$big"
}

rt_run_cases "$@"
