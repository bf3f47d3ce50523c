#!/bin/sh
# tests/clickhouse.sh, the fleet tests' servers: two started as the
# cluster rt_two (each answers, each is its own shard, a Distributed table
# over them reaches both), a killed one restarted on its ports, and none
# left running or on disk when the script exits, even by a failure; with
# CH_ZK=1 the same of their ZooKeeper (tests/zookeeper.sh).
# Each is a case (tests/cases.sh).
#   usage: test_clickhouse.sh [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
. "$(dirname "$0")/clickhouse.sh"
fail() { printf "test_clickhouse: %s\n" "$*" >&2; exit 1; }

# Two servers, once per run of the script.
two() {
	[ -n "${CH_DIR:-}" ] || ch_start 2
}

ch_two_servers_answer_as_cluster_rt_two() { # case
	two
	[ "$CH_HTTP_1" != "$CH_HTTP_2" ] || fail "both servers on port $CH_HTTP_1"
	for i in 1 2; do
		v=$(ch_sql $i "SELECT $i + 40")
		[ "$v" = $((i + 40)) ] || fail "server $i answered \"$v\""
		got=$(ch_sql $i "SELECT shard_num, port FROM system.clusters WHERE cluster = 'rt_two' ORDER BY shard_num")
		want=$(printf '1\t%s\n2\t%s' "$CH_TCP_1" "$CH_TCP_2")
		[ "$got" = "$want" ] || fail "server $i: rt_two is \"$got\", not \"$want\""
	done
	# a Distributed table over rt_two reaches both shards (the cluster's
	# user and password are the servers')
	for i in 1 2; do
		ch_sql $i "CREATE TABLE default.t (x UInt32) ENGINE = MergeTree() ORDER BY x"
		ch_sql $i "INSERT INTO default.t VALUES ($i)"
	done
	ch_sql 1 "CREATE TABLE default.d (x UInt32) ENGINE = Distributed(rt_two, default, t)"
	got=$(ch_sql 1 "SELECT groupArray(x) FROM (SELECT x FROM default.d ORDER BY x)")
	[ "$got" = "[1,2]" ] || fail "the Distributed table over rt_two read \"$got\", not [1,2]"
}

ch_password_file_holds_the_password_and_is_private() { # case
	two
	[ "$(cat "$CH_PASSWORD_FILE")" = "$CH_PASSWORD" ] || fail "the password file differs"
	[ "$(stat -c %a "$CH_PASSWORD_FILE")" = 600 ] || fail "the password file's mode is $(stat -c %a "$CH_PASSWORD_FILE")"
	# the servers refuse another password
	code=$(curl -s -o /dev/null -w '%{http_code}' -H 'X-ClickHouse-User: default' \
		-H 'X-ClickHouse-Key: wrong' --data-binary 'SELECT 1' "$(ch_url 1)/")
	[ "$code" != 200 ] || fail "server 1 answered a wrong password"
}

ch_killed_server_restarts_on_its_ports() { # case
	two
	ch_sql 2 "CREATE TABLE default.k (x UInt32) ENGINE = MergeTree() ORDER BY x"
	ch_sql 2 "INSERT INTO default.k VALUES (7)"
	port=$CH_HTTP_2
	ch_kill 2
	! ch_sql 2 "SELECT 1" 2>/dev/null || fail "server 2 answered after ch_kill"
	ch_restart 2
	[ "$CH_HTTP_2" = "$port" ] || fail "server 2 came back on port $CH_HTTP_2, not $port"
	[ "$(ch_sql 2 "SELECT sum(x) FROM default.k")" = 7 ] || fail "server 2 lost its table"
}

ch_servers_and_dir_gone_after_a_failing_script() { # case
	# a script that fails after ch_start leaves no server and no directory
	out=$(mktemp)
	st=0
	sh -c '. "$1/cases.sh"; . "$1/clickhouse.sh"; ch_start 2
		echo "$CH_DIR $CH_PID_1 $CH_PID_2"; false' sh "$(dirname "$0")" >"$out" 2>&1 || st=$?
	read -r dir p1 p2 <"$out" || true
	rm -f "$out"
	[ "$st" = 1 ] || fail "the failing script exited $st"
	[ -n "$dir" ] && [ ! -e "$dir" ] || fail "$dir is left"
	for p in $p1 $p2; do
		! kill -0 "$p" 2>/dev/null || fail "server pid $p is still running"
	done
}

ch_zookeeper_and_servers_gone_after_a_failing_script() { # case
	# with CH_ZK=1 (tests/zookeeper.sh): the servers read their ZooKeeper,
	# and a script that fails after ch_start leaves no ZooKeeper either
	out=$(mktemp)
	st=0
	sh -c '. "$1/cases.sh"; . "$1/clickhouse.sh"; . "$1/zookeeper.sh"; CH_ZK=1; ch_start 2
		echo "$CH_DIR $CH_PID_1 $CH_PID_2 $ZK_PID $(ch_sql 2 "SELECT count() > 0 FROM system.zookeeper
			WHERE path = '\''/'\''")"; false' \
		sh "$(dirname "$0")" >"$out" 2>&1 || st=$?
	[ "$st" != 77 ] || { cat "$out"; rm -f "$out"; exit 77; }
	read -r dir p1 p2 pz zk <"$out" || true
	msg=$(cat "$out")
	rm -f "$out"
	[ "$st" = 1 ] || fail "the failing script exited $st: $msg"
	[ "$zk" = 1 ] || fail "server 2 does not read ZooKeeper: $msg"
	[ -n "$dir" ] && [ ! -e "$dir" ] || fail "$dir is left"
	for p in $p1 $p2 $pz; do
		! kill -0 "$p" 2>/dev/null || fail "pid $p (servers $p1 $p2, ZooKeeper $pz) is still running"
	done
}

rt_run_cases "$@"
