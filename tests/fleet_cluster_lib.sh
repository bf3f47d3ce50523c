# tests/fleet_cluster_lib.sh - what the fleet loader's cluster tests
# (test_fleet_cluster.sh, test_fleet_zk.sh) share: the comparison of a
# trace's rows in ClickHouse with `ringtrace query`'s, table by table, the
# `loads` row's check, traces recorded under other host names, the rows
# per trace and shard, the mutations' end. Sourced after tests/cases.sh
# and tests/clickhouse.sh, by a script that sets rt (the ringtrace
# binary), prog (test_fleet_prog), tmp (its temporary directory) and
# defines fail MESSAGE and skip MESSAGE; the servers are 1 and 2 of
# ch_start 2.

# The fleet's data tables (docs/fleet.md), and the leading columns every
# row has besides the query layer's.
tables="process thread slice counter_track counter args event ftrace_event sched_slice thread_state loss stats"
lead="host trace_uuid load_id day"

need_root() {
	[ "$(id -u)" = 0 ] || skip "needs root (unshare --uts: traces of other host names)"
}

# loaded NAME DIR: the uuid and the load id of DIR's "loaded" line in
# $tmp/NAME.out into lu and ll
loaded() {
	l_line=$(grep -F "$2: loaded trace " "$tmp/$1.out" | head -n 1)
	[ -n "$l_line" ] || fail "no \"$2: loaded trace\" line: $(cat "$tmp/$1.out" "$tmp/$1.err")"
	l_ids=$(printf '%s\n' "$l_line" |
		sed -n 's/.*: loaded trace \([0-9a-f-]*\) (host .*) as load \([0-9]*\): [0-9]* rows in .*/\1 \2/p')
	[ -n "$l_ids" ] || fail "the loaded line is not as docs/fleet.md says: $l_line"
	lu=${l_ids% *}
	ll=${l_ids#* }
}

# chq I SQL: SQL on server I, its rows as TSV
chq() {
	ch_sql "$1" "$2" >"$tmp/chq.out" 2>"$tmp/chq.err" || fail "server $1: $2: $(cat "$tmp/chq.err")"
	cat "$tmp/chq.out"
}

# q DIR SQL: SQL by `ringtrace query` on DIR, its rows as TSV (no header)
q() {
	"$rt" query --format tsv "$1" "$2" >"$tmp/q.out" 2>"$tmp/q.err" ||
		fail "ringtrace query $1: $2: $(cat "$tmp/q.err")"
	tail -n +2 "$tmp/q.out"
}

hex() {
	printf '%s' "$1" | od -An -tx1 -v | tr -d ' \n' | tr a-f A-F
}

# host_trace HOST DIR ARG...: test_fleet_prog ARG... recorded into DIR
# with the host name HOST (its UTS namespace's, written as bytes: any
# name), which the trace must hold
host_trace() {
	ht_host=$1 ht_dir=$2
	shift 2
	unshare --uts sh -c 'printf "%s" "$1" >/proc/sys/kernel/hostname && shift && exec "$@"' \
		sh "$ht_host" "$rt" record -q -o "$ht_dir" -- "$prog" "$@" >"$ht_dir.rec" 2>&1 ||
		fail "record as host $ht_host: $(cat "$ht_dir.rec")"
	[ "$(q "$ht_dir" "SELECT hex(hostname) FROM process")" = "$(hex "$ht_host")" ] ||
		fail "the trace's host name is not $ht_host: $(q "$ht_dir" "SELECT hostname FROM process")"
}

# sums DB: what is compared of each data table, from its fleet columns
# (less the leading ones), into $tmp/sums.TABLE: three lines, the labels,
# the expressions for ClickHouse and the same for SQLite. Per column: the
# values not NULL; of an integer the sums of its value modulo 1e9 and
# divided by 1e9 (exact, where a sum of nanosecond times would overflow);
# of a real its sum; of a string the sum of its lengths in bytes.
sums() {
	chq 1 "SELECT table, name, type FROM system.columns WHERE database = '$1'" |
		awk -F '\t' -v lead=" $lead " -v tables=" $tables " -v out="$tmp/sums." '
		!index(tables, " " $1 " ") || index(lead, " " $2 " ") { next }
		{ t = $1; c = $2; ty = $3; b = "`" c "`"; d = "\"" c "\""
		  lab[t] = lab[t] " count(" c ")"; ch[t] = ch[t] ", count(" b ")"; sq[t] = sq[t] ", count(" d ")"
		  if (ty ~ /Int/) {
			lab[t] = lab[t] " sum(" c "%1e9) sum(" c "/1e9)"
			ch[t] = ch[t] ", sum(" b " % 1000000000), sum(intDiv(" b ", 1000000000))"
			sq[t] = sq[t] ", sum(" d " % 1000000000), sum(" d " / 1000000000)"
		  } else if (ty ~ /Float/) {
			lab[t] = lab[t] " sum(" c ")"; ch[t] = ch[t] ", sum(" b ")"; sq[t] = sq[t] ", sum(" d ")"
		  } else if (ty ~ /String/) {
			lab[t] = lab[t] " bytes(" c ")"; ch[t] = ch[t] ", sum(length(" b "))"
			sq[t] = sq[t] ", sum(length(CAST(" d " AS BLOB)))"
		  } else { print t "." c ": a column of type " ty > "/dev/stderr"; exit 1 }
		}
		END { n = split(tables, ts, " ")
		      for (i = 1; i <= n; i++) {
			t = ts[i]
			if (!(t in ch)) { print "no table " t > "/dev/stderr"; exit 1 }
			print "rows" lab[t] > (out t); print "count()" ch[t] > (out t); print "count(*)" sq[t] > (out t)
		      } }' || fail "the tables of $1 are not the fleet tables"
}

# sqlite_from DIR TABLE: TABLE as `ringtrace query` has it; `event` (the
# fleet's union of the per-event tables) made of event_table's tables
sqlite_from() {
	if [ "$2" != event ]; then
		echo "\"$2\""
		return 0
	fi
	q "$1" "SELECT table_name, hex(event) FROM event_table" | awk -F '\t' '
		{ s = s (NR > 1 ? " UNION ALL " : "") "SELECT id, ts, utid, cpu, CAST(X'\''" $2 "'\'' AS TEXT) AS name FROM \"" $1 "\"" }
		END { if (NR == 0) s = "SELECT 0 AS id, 0 AS ts, 0 AS utid, 0 AS cpu, '\'''\'' AS name WHERE 0"
		      print "(" s ")" }'
}

# same_row LABELS A B: two TSV rows of numbers equal (NULL as 0, reals to
# 1e-9 of their size), else the columns that differ
same_row() {
	awk -v lab="$1" -v a="$2" -v b="$3" 'BEGIN {
		n = split(lab, l, " "); split(a, x, "\t"); split(b, y, "\t")
		for (i = 1; i <= n; i++) {
			p = (x[i] == "" || x[i] == "\\N") ? 0 : x[i]; r = (y[i] == "" || y[i] == "\\N") ? 0 : y[i]
			m = (p < 0 ? -p : p) > (r < 0 ? -r : r) ? (p < 0 ? -p : p) : (r < 0 ? -r : r)
			if (p != r && (p - r > m * 1e-9 || r - p > m * 1e-9)) { print l[i] ": " p " != " r; bad = 1 }
		}
		exit bad }'
}

# compare DB UUID DIR [complete]: table by table, the fleet's rows of the
# trace UUID (through the Distributed tables; with "complete", of its
# complete loads only) equal `ringtrace query DIR`'s; each table's row
# count (ringtrace query's) in $tmp/rows.TABLE
compare() {
	c_where="trace_uuid = '$2'"
	[ "${4:-}" != complete ] || c_where="$c_where AND (trace_uuid, load_id) GLOBAL IN
		(SELECT trace_uuid, load_id FROM \`$1\`.loads FINAL WHERE state = 'complete')"
	sums "$1"
	# every table's sums in one run of ringtrace query: its header and row each
	: >"$tmp/sq.sql"
	for t in $tables; do
		echo "SELECT $(sed -n 3p "$tmp/sums.$t") FROM $(sqlite_from "$3" "$t");" >>"$tmp/sq.sql"
	done
	"$rt" query --format tsv -f "$tmp/sq.sql" "$3" >"$tmp/sq.out" 2>"$tmp/q.err" ||
		fail "ringtrace query $3: $(cat "$tmp/q.err")"
	grep -v '^count(\*)' "$tmp/sq.out" | grep -v '^$' >"$tmp/sq.rows"
	[ "$(wc -l <"$tmp/sq.rows")" = "$(echo $tables | wc -w)" ] ||
		fail "ringtrace query did not print a row per table: $(cat "$tmp/sq.out")"
	c_bad=
	c_i=0
	for t in $tables; do
		c_i=$((c_i + 1))
		c_lab=$(sed -n 1p "$tmp/sums.$t")
		c_ch=$(chq 1 "SELECT $(sed -n 2p "$tmp/sums.$t") FROM \`$1\`.\`$t\` WHERE $c_where")
		c_sq=$(sed -n ${c_i}p "$tmp/sq.rows")
		printf '%s\n' "$c_sq" | cut -f1 >"$tmp/rows.$t"
		same_row "$c_lab" "$c_ch" "$c_sq" >"$tmp/diff" ||
			c_bad="$c_bad
  $t: $(tr '\n' ';' <"$tmp/diff")"
	done
	[ -z "$c_bad" ] || fail "$3 (trace $2) in $1 differs from ringtrace query:$c_bad"
}

# complete_load DB UUID LOADID: the load's `loads` row says complete, with
# the rows per table ringtrace query has ($tmp/rows.TABLE, from compare)
complete_load() {
	[ "$(chq 1 "SELECT argMax(state, version) FROM \`$1\`.loads
		WHERE trace_uuid = '$2' AND load_id = $3")" = complete ] ||
		fail "load $3 of $2 is not complete: $(chq 1 "SELECT * FROM \`$1\`.loads WHERE trace_uuid = '$2'")"
	chq 1 "SELECT t, r FROM \`$1\`.loads FINAL ARRAY JOIN tables AS t, rows AS r
		WHERE trace_uuid = '$2' AND load_id = $3" >"$tmp/loads.rows"
	for t in $tables; do
		cl_r=$(awk -F '\t' -v t="$t" '$1 == t { print $2 }' "$tmp/loads.rows")
		[ "$cl_r" = "$(cat "$tmp/rows.$t")" ] ||
			fail "load $3 of $2: the loads row says ${cl_r:-nothing} rows of $t, ringtrace query has $(cat "$tmp/rows.$t")"
	done
}

# final TABLE: FINAL after `loads` (a ReplacingMergeTree: its rows merge
# when they will, FINAL counts what they merge into)
final() {
	case $1 in loads*) echo FINAL ;; esac
}

# counts DB UUID: the trace's row count in each table, and its loads
counts() {
	for t in $tables loads; do
		printf '%s %s\n' "$t" "$(chq 1 "SELECT count() FROM \`$1\`.\`$t\` $(final $t) WHERE trace_uuid = '$2'")"
	done
}

# shard_of UUID: the shard (1 or 2) the Distributed tables put UUID's rows
# on: cityHash64(trace_uuid) modulo the two shards' weights (1 each)
shard_of() {
	echo $(($(chq 1 "SELECT cityHash64('$1') % 2") + 1))
}

# per_trace DB SUFFIX [I]: "table, trace_uuid, rows, I" of every trace in
# every table (and loads), from the tables <table>SUFFIX of server I (1)
per_trace() {
	pt_q=
	for t in $tables loads; do
		pt_q="$pt_q${pt_q:+ UNION ALL }SELECT '$t', trace_uuid, count(), ${3:-1}
			FROM \`$1\`.\`$t$2\` $(final $t) GROUP BY trace_uuid"
	done
	chq "${3:-1}" "$pt_q"
}

# rows_of DB UUID LOADID [complete]: the rows of that load in every data
# table (with "complete": as a query that keeps to complete loads sees them)
rows_of() {
	ro_w=
	[ "${4:-}" != complete ] || ro_w="AND (trace_uuid, load_id) GLOBAL IN
		(SELECT trace_uuid, load_id FROM \`$1\`.loads FINAL WHERE state = 'complete')"
	ro_n=0
	for t in $tables; do
		ro_n=$((ro_n + $(chq 1 "SELECT count() FROM \`$1\`.\`$t\` WHERE trace_uuid = '$2' AND load_id = $3 $ro_w")))
	done
	echo $ro_n
}

# mutations_done DB: no mutation of DB left on either server
mutations_done() {
	for md_s in 1 2; do
		[ "$(ch_sql $md_s "SELECT count() FROM system.mutations WHERE database = '$1' AND is_done = 0" 2>/dev/null)" = 0 ] ||
			return 1
	done
}
