#!/bin/sh
# `ringtrace latency` (docs/query.md, "latency") on test_latency_prog:
# two threads, each ROUNDS times a request of each kind (fast: a 2 ms
# sleep between lt_start and lt_stop, mid 5 ms, slow 10 ms), one request
# started in one thread and stopped in the other, a stop never started and
# a start never stopped (tests/latency_prog.c). Checked:
#  - paired by req: the counts exact per kind and unpaired exactly 1 and 1;
#    by thread (no --key): the handoff's halves unpaired instead;
#  - each percentile at least the sleep (a lower bound) and at most the
#    sleep + 50 ms (scheduling on a loaded CI machine), in order; and equal,
#    within report's resolution (1 us), to the nearest-rank percentile
#    computed here from `ringtrace report`'s times of the same events;
#  - the histogram's hitcounts sum to the count, each in the bucket of a
#    latency the group can have (not below its sleep);
#  - the longest pairs' start and stop events shown by `ringtrace report
#    --from START --to STOP`; the unpaired ones listed with their key;
#  - the SQL that --sql prints gives the same pairs in `ringtrace query`,
#    and so does pairs() written by hand there;
#    and by thread, on begin/end events, the same pairs as the `slice`
#    table (test_query_spans_prog: nested spans, one never ended, one end
#    never begun);
#  - a pair with events lost inside it (test_latency_prog lossy, a small
#    buffer) is marked, and the losses are counted as report shows them;
#  - event and field names that are SQL (the trace's metadata edited) pair
#    the same, and never reach the query's text;
#  - usage errors (unknown event or field, missing options): exit 2.
# Each is a case (tests/cases.sh).
#   usage: test_latency.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
bin=$1
shift
rt="$bin/ringtrace"
tmp=$(mktemp -d /tmp/ringtrace-latency-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_latency: ${rt_c:-}: $*" >&2; exit 1; }
rounds=5

# The program's trace in $tmp/t (recorded once per run).
trace() {
	if [ ! -d "$tmp/t" ]; then
		"$rt" record -q -o "$tmp/t" -- "$bin/test_latency_prog" $rounds >/dev/null ||
			fail "record failed"
	fi
	t="$tmp/t"
}

# latency ARGS...: `ringtrace latency $t ARGS` into $tmp/out, which must succeed.
latency() {
	"$rt" latency "$t" "$@" >"$tmp/out" 2>"$tmp/err" ||
		fail "latency $* failed: $(cat "$tmp/err")"
}

# The summary line of group $1: group count p50 p90 p99 p99.9 max.
group_line() { awk -v g="$1" '$1 == g && NF == 7 && $2 ~ /^[0-9]+$/' "$tmp/out"; }

latency_pairs_by_key_counted_exactly_per_kind() { # case
	trace
	latency --from lt_start --to lt_stop --key req --by kind
	n=$((2 * rounds))
	grep -qx "$((6 * rounds + 1)) pairs, 1 start never stopped, 1 stop never started" "$tmp/out" ||
		fail "counts: $(sed -n 2p "$tmp/out")"
	for g in fast:$n mid:$n slow:$n handoff:1; do
		c=$(group_line "${g%:*}" | awk '{ print $2 }')
		[ "$c" = "${g#*:}" ] || fail "group ${g%:*}: count '$c', not ${g#*:}"
	done
	[ "$(awk 'NF == 7 && $2 ~ /^[0-9]+$/' "$tmp/out" | wc -l)" = 4 ] ||
		fail "groups: $(cat "$tmp/out")"
}

latency_by_thread_leaves_the_handoff_unpaired() { # case
	trace
	latency --from lt_start --to lt_stop
	grep -qx "$((6 * rounds)) pairs, 2 starts never stopped, 2 stops never started" "$tmp/out" ||
		fail "counts: $(sed -n 2p "$tmp/out")"
	c=$(group_line all | awk '{ print $2 }')
	[ "$c" = $((6 * rounds)) ] || fail "count '$c'"
}

# Each pair spans a sleep of the group's length, so no percentile is below
# it (how far above depends on the machine's load: no upper bound here;
# latency_percentiles_equal_reports_nearest_rank checks the values exactly).
latency_percentiles_at_least_the_sleep_and_in_order() { # case
	trace
	latency --from lt_start --to lt_stop --key req --by kind
	for g in fast:2000 mid:5000 slow:10000; do
		line=$(group_line "${g%:*}")
		echo "$line" | awk -v lo="${g#*:}" '
			{ for (i = 3; i <= 7; i++) {
				if ($i < lo) { print "column " i " is " $i " us"; bad = 1 }
				if (i > 3 && $i < $(i - 1)) { print "not in order"; bad = 1 } } }
			END { exit bad }' || fail "group ${g%:*}: $line (sleep ${g#*:} us)"
	done
}

latency_percentiles_equal_reports_nearest_rank() { # case
	trace
	latency --from lt_start --to lt_stop --key req --by kind
	# the pairs from report's lines: "COMM-TID [CPU] SEC.MICROS: EVENT: req=N kind=K"
	"$rt" report "$t" --events 'lt_*' | awk '
		{ us = $3; sub(":", "", us); sub("\\.", "", us); req = $5; sub("req=", "", req) }
		$4 == "lt_start:" { start[req] = us; kind[req] = $6; sub("kind=", "", kind[req]) }
		$4 == "lt_stop:" && (req in start) { print kind[req], us - start[req]; delete start[req] }' |
		sort -k1,1 -k2,2n >"$tmp/lat"
	for g in fast mid slow handoff; do
		awk -v g=$g '$1 == g { print $2 }' "$tmp/lat" >"$tmp/lat.$g"
		n=$(wc -l <"$tmp/lat.$g")
		want=$(for pm in 500 900 990 999 1000; do
			r=$(((pm * n + 999) / 1000))
			sed -n "${r}p" "$tmp/lat.$g"
		done | tr '\n' ' ')
		line=$(group_line $g)
		echo "$line $want" | awk '{ for (i = 3; i <= 7; i++) { d = $i - $(i + 5)
				if (d < 0) d = -d
				if (d > 1.001) { print "column " i ": " $i " us, report says " $(i + 5); bad = 1 } } }
			END { exit bad }' || fail "group $g: $line; from report: $want"
	done
}

latency_histogram_hitcounts_sum_to_count() { # case
	trace
	latency --from lt_start --to lt_stop --key req --by kind
	for g in fast:2000 mid:5000 slow:10000 handoff:0; do
		c=$(group_line "${g%:*}" | awk '{ print $2 }')
		awk -v g="# kind=${g%:*}: latency histogram" -v lo="${g#*:}" -v c="$c" '
			index($0, g) == 1 { on = 1; next }
			on && /^\{ latency: ~ 2\^/ { sub(".*\\^", "", $4)
				b = $4 + 0; if (2 ^ b < lo) { print "bucket 2^" b " below the sleep"; bad = 1 }
				sum += $NF }
			on && $1 == "Hits:" { hits = $2; on = 0 }
			END { if (sum != c || hits != c) { print "hitcounts " sum ", Hits " hits ", count " c; bad = 1 }
			      exit bad }' "$tmp/out" || fail "group ${g%:*}: $(cat "$tmp/out")"
	done
}

latency_longest_pairs_found_by_report_from_to() { # case
	trace
	latency --from lt_start --to lt_stop --key req --by kind --top 3
	# "  N   LAT us  START .. STOP  TID COMM [-> TID COMM]  req=K"
	awk '$3 == "us" && $5 == ".." { print $4, $6, $7, $NF }' "$tmp/out" >"$tmp/top"
	[ "$(wc -l <"$tmp/top")" = 10 ] || fail "longest pairs: $(cat "$tmp/out")"
	while read -r from to tid key; do
		"$rt" report "$t" --from "$from" --to "$to" --events 'lt_*' >"$tmp/zoom"
		k=${key#req=}
		grep -Eq -- "-$tid +\[[0-9]+\] +$from: lt_start: req=$k " "$tmp/zoom" ||
			fail "report --from $from --to $to has no lt_start req=$k of $tid: $(cat "$tmp/zoom")"
		grep -Eq -- ": lt_stop: req=$k\$" "$tmp/zoom" ||
			fail "report --from $from --to $to has no lt_stop req=$k: $(cat "$tmp/zoom")"
	done <"$tmp/top"
}

latency_unpaired_listed_with_key() { # case
	trace
	latency --from lt_start --to lt_stop --key req --by kind
	sed -n '/^starts never stopped: 1$/,/^stops never started/p' "$tmp/out" |
		grep -Eq '^    [0-9]+\.[0-9]{6}  [0-9]+ test_latency_pr  req=9001  kind=orphan$' ||
		fail "start never stopped: $(cat "$tmp/out")"
	sed -n '/^stops never started: 1$/,$p' "$tmp/out" |
		grep -Eq '^    [0-9]+\.[0-9]{6}  [0-9]+ test_latency_pr  req=9002$' ||
		fail "stop never started: $(cat "$tmp/out")"
}

latency_sql_gives_the_same_pairs_in_query() { # case
	trace
	latency --from lt_start --to lt_stop --key req --by kind
	sql=$("$rt" latency "$t" --from lt_start --to lt_stop --key req --by kind --sql) ||
		fail "--sql failed"
	"$rt" query --format csv "$t" "SELECT grp, count(*), printf('%.3f', max(dur) / 1e3)
		FROM ($sql) WHERE dur IS NOT NULL GROUP BY grp ORDER BY grp;
		SELECT 'unpaired', sum(stop_id IS NULL), sum(id IS NULL) FROM ($sql) WHERE dur IS NULL" |
		tr -d '\r' >"$tmp/q" || fail "query failed"
	for g in fast mid slow handoff; do
		want=$(group_line $g | awk '{ print $1 "," $2 "," $7 }')
		grep -qx "$want" "$tmp/q" || fail "group $g: latency says $want, query: $(cat "$tmp/q")"
	done
	grep -qx "unpaired,1,1" "$tmp/q" || fail "unpaired: $(cat "$tmp/q")"
}

latency_pairs_function_in_query_equals_latency() { # case
	trace
	latency --from lt_start --to lt_stop --key req --by kind
	"$rt" query --format tsv "$t" "SELECT count(dur) || ' pairs, ' ||
		sum(stop_id IS NULL) || ' start never stopped, ' || sum(id IS NULL) ||
		' stop never started' FROM pairs('lt_start', 'lt_stop', 'req', NULL, 'kind');
		SELECT grp, count(*), printf('%.3f', max(dur) / 1e3)
		FROM pairs('lt_start', 'lt_stop', 'req', NULL, 'kind') WHERE dur IS NOT NULL
		GROUP BY grp ORDER BY grp" | tr '\t' , >"$tmp/q" || fail "query failed"
	grep -qxF "$(sed -n 2p "$tmp/out")" "$tmp/q" ||
		fail "latency says $(sed -n 2p "$tmp/out"), pairs(): $(cat "$tmp/q")"
	for g in fast mid slow handoff; do
		want=$(group_line $g | awk '{ print $1 "," $2 "," $7 }')
		grep -qx "$want" "$tmp/q" || fail "group $g: latency says $want, pairs(): $(cat "$tmp/q")"
	done
}

latency_by_thread_pairs_equal_the_slices() { # case
	trace
	sp="$tmp/spans"
	[ -d "$sp" ] || "$rt" record -q -o "$sp" -- "$bin/test_query_spans_prog" 5 >/dev/null ||
		fail "record of test_query_spans_prog failed"
	"$rt" latency "$sp" --from span_begin --to span_end >"$tmp/out" 2>"$tmp/err" ||
		fail "latency failed: $(cat "$tmp/err")"
	sql=$("$rt" latency "$sp" --from span_begin --to span_end --sql) || fail "--sql failed"
	"$rt" query --format csv "$sp" "SELECT
		(SELECT count(*) FROM slice WHERE name = 'span_begin' AND dur >= 0),
		(SELECT count(*) FROM slice s JOIN ($sql) p ON p.id = s.arg_set_id AND p.dur = s.dur
			AND p.utid = s.utid),
		(SELECT count(*) FROM slice WHERE name = 'span_begin' AND dur = -1),
		(SELECT value FROM stats WHERE name = 'slice_end_without_begin')" |
		tr -d '\r' | tail -1 >"$tmp/q" || fail "query failed"
	# 2 threads x 5 rounds x 3 nested spans; the main thread's last begin
	# never ended, its first end never begun
	[ "$(cat "$tmp/q")" = "30,30,1,1" ] || fail "slices, equal pairs, unclosed, unopened: $(cat "$tmp/q")"
	grep -qx "30 pairs, 1 start never stopped, 1 stop never started" "$tmp/out" ||
		fail "latency: $(sed -n 2p "$tmp/out")"
}

latency_loss_within_a_pair_marked() { # case
	l="$tmp/lossy"
	rm -rf "$l"
	"$rt" record -q --buffer-size 16k --page-size 4k -o "$l" -- "$bin/test_latency_prog" lossy \
		>/dev/null 2>"$tmp/err" || fail "record of test_latency_prog lossy failed: $(cat "$tmp/err")"
	"$rt" latency "$l" --from lt_start --to lt_stop --key req >"$tmp/out" 2>"$tmp/err" ||
		fail "latency failed: $(cat "$tmp/err")"
	grep -qx "1 pair, 0 starts never stopped, 0 stops never started" "$tmp/out" ||
		fail "counts: $(cat "$tmp/out")"
	grep -q '  req=7000  (events were lost within it)$' "$tmp/out" ||
		fail "the pair is not marked: $(cat "$tmp/out")"
	# the losses as report shows them: "*** N events lost ***", one line a place
	set -- $("$rt" report "$l" | awk '/\*\*\* [0-9]+ events? lost \*\*\*/ {
		for (i = 1; i < NF; i++) if ($i == "***") { n += $(i + 1); break }; p++ }
		END { print n + 0, p + 0 }')
	[ "$1" -gt 0 ] || fail "report shows no loss"
	grep -Eq "^note: the trace lost $1 events? in $2 places?: 1 of the pairs have a loss within them" \
		"$tmp/out" || fail "note (report: $1 lost in $2 places): $(tail -1 "$tmp/out")"
}

latency_hostile_names_pair_the_same() { # case
	trace
	h="$tmp/hostile"
	rm -rf "$h"
	cp -r "$t" "$h"
	# (names are percent-encoded in the metadata's schema block)
	sed -i -e 's/^\(event [0-9]* [0-9]*\) lt_start /\1 x%22%3B%20DROP%20TABLE%20thread%3B%20-- /' \
		-e 's/^field req /field a%22b%3B /' "$h/metadata"
	ev='x"; DROP TABLE thread; --'
	"$rt" latency "$h" --from "$ev" --to lt_stop --key 'a"b;' --by kind >"$tmp/out" 2>"$tmp/err" ||
		fail "latency on hostile names failed: $(cat "$tmp/err")"
	grep -qx "$((6 * rounds + 1)) pairs, 1 start never stopped, 1 stop never started" "$tmp/out" ||
		fail "counts: $(cat "$tmp/out")"
	grep -q ' -> [0-9]* lt_worker  a"b;=500$' "$tmp/out" || fail "threads or key: $(cat "$tmp/out")"
	"$rt" latency "$h" --from "$ev" --to lt_stop --key 'a"b;' --sql >"$tmp/sql" ||
		fail "--sql failed"
	! grep -q 'DROP\|a"b' "$tmp/sql" || fail "a name from the trace in the SQL: $(cat "$tmp/sql")"
}

latency_usage_errors_exit_2() { # case
	trace
	for args in "--from nope --to lt_stop:no event 'nope' in the trace" \
		"--from lt_start --to lt_stop --key nope:event 'lt_start' has no field 'nope'" \
		"--from lt_start --to lt_stop --key kind:event 'lt_stop' has no field 'kind'" \
		"--from lt_start --to lt_stop --by nope:event 'lt_start' has no field 'nope'" \
		"--from lt_start --to lt_start:the same event" \
		"--from lt_start:--from EVENT and --to EVENT are needed" \
		"--from lt_start --to lt_stop --top 1001:--top: '1001' is out of range" \
		"--from lt_start --to lt_stop --bogus:unknown option --bogus"; do
		st=0
		# shellcheck disable=SC2086
		"$rt" latency "$t" ${args%%:*} >"$tmp/out" 2>"$tmp/err" || st=$?
		[ $st = 2 ] || fail "latency ${args%%:*}: exit $st, not 2"
		grep -qF -- "${args#*:}" "$tmp/err" || fail "latency ${args%%:*}: said $(cat "$tmp/err")"
	done
	st=0
	"$rt" latency "$tmp/none" --from a --to b 2>"$tmp/err" || st=$?
	[ $st = 1 ] || fail "a missing directory: exit $st, not 1"
}

rt_run_cases "$@"
