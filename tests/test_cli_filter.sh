#!/bin/sh
# Filters and triggers end to end, as a user sets them: `ringtrace record
# -e EVENTS -f EXPR --trigger SPEC` on test_filter_prog (N calls of
# ft_value and ft_other with value = 0 .. N-1), the real library reading
# RINGTRACE_FILTERS / RINGTRACE_TRIGGERS in the program, and the trace
# read back with `ringtrace report`, `ringtrace stat` and babeltrace2:
#  - a filter records exactly the matching calls, and stat's rejected count
#    is the calls made minus those recorded;
#  - one filter for several events (a glob, a comma list), a filter per
#    -e, quoted ';' and ':' inside an expression;
#  - an invalid filter or trigger is reported on the program's stderr with
#    its column;
#  - a snapshot trigger in overwrite mode writes DIR.snapshot-1 holding
#    the triggering event and those before it, which babeltrace2 reads;
#    a traceoff trigger with a count stops recording, fired/skipped in stat;
#  - usage errors of record: -f before -e, two -f for one -e, an unquoted
#    ';' or ':', exit 2 without running the program.
# Each is a case (tests/cases.sh), with traces of its own.
#   usage: test_cli_filter.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
bin=$1
shift
rt="$bin/ringtrace"
prog="$bin/test_filter_prog"
N=1000
tmp=$(mktemp -d /tmp/ringtrace-clif-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
command -v babeltrace2 >/dev/null 2>&1 || { echo "test_cli_filter: babeltrace2 is not installed (make check installs it)" >&2; exit 1; }
fail() { echo "test_cli_filter: $*" >&2; exit 1; }

# record DIR ARGS...: ringtrace record -q -o DIR ARGS -- prog N; the
# program's stdout in DIR.out, stderr (record's and the program's) in DIR.err
record() {
	d=$1; shift
	st=0
	"$rt" record -q -o "$d" "$@" -- "$prog" $N >"$d.out" 2>"$d.err" || st=$?
	[ $st = 0 ] || fail "record $*: exit $st ($(cat "$d.err"))"
	grep -q "^test_filter_prog: $N calls of each event$" "$d.out" ||
		fail "record $*: the program did not run to the end: $(cat "$d.out" "$d.err")"
}
# values EVENT DIR: the values of EVENT's records, in trace order, one a line
values() { "$rt" report "$2" --events "$1" | sed -n "s/.*: $1: value=\([0-9]*\).*/\1/p"; }
# stat_row EVENT DIR: "EVENTS REJECTED [filter: EXPR]" from stat's events table
stat_row() {
	"$rt" stat "$2" | awk -v ev="$1" '
		/^events by name:/ { t = 1; next }
		t && /^$/ { t = 0 }
		t && $1 == ev { $1 = ""; sub(/^ +/, ""); print; n++ }
		END { exit n == 1 ? 0 : 1 }' || fail "stat $2: no single row for $1: $("$rt" stat "$2")"
}
# triggers DIR: stat's triggers section
triggers() { "$rt" stat "$1" | sed -n '/^triggers:/,/^$/p'; }
# seq_where FROM TO odd|all: the (odd) numbers in FROM .. TO, one a line
seq_where() { awk -v a="$1" -v b="$2" -v cond="$3" 'BEGIN {
	for (i = a; i <= b; i++)
		if (cond == "all" || i % 2 == 1) print i }'; }

# usage WANT ARGS...: record ARGS is a usage error saying WANT
usage() {
	want=$1; shift
	st=0
	"$rt" record -q -o "$tmp/usage" "$@" -- "$prog" 1 >"$tmp/usage.out" 2>"$tmp/usage.err" || st=$?
	[ $st = 2 ] || fail "record $*: exit $st, expected 2 (usage)"
	grep -qF -- "$want" "$tmp/usage.err" || fail "record $*: message lacks \"$want\": $(cat "$tmp/usage.err")"
	[ ! -s "$tmp/usage.out" ] && [ ! -e "$tmp/usage" ] || fail "record $*: the program ran"
}

# ---- no filter: everything (the baseline the other cases' counts assume)
cli_filter_none_records_every_call() { # case
	record "$tmp/all" -e 'ft_*'
	[ "$(values ft_value "$tmp/all" | wc -l)" = $N ] || fail "no filter: $(values ft_value "$tmp/all" | wc -l) ft_value events, expected $N"
	[ "$(stat_row ft_value "$tmp/all")" = "$N 0" ] || fail "no filter: stat row '$(stat_row ft_value "$tmp/all")', expected '$N 0'"
}

# ---- one event, one filter: only the odd values; the rest counted as rejected
cli_filter_records_matching_calls_stat_counts_the_rest_rejected() { # case
	record "$tmp/odd" -e ft_value -f 'value & 1'
	values ft_value "$tmp/odd" > "$tmp/odd.got"
	seq_where 0 $((N - 1)) odd > "$tmp/odd.want"
	cmp -s "$tmp/odd.got" "$tmp/odd.want" ||
		fail "-f 'value & 1': recorded values differ from the odd ones: $(diff "$tmp/odd.want" "$tmp/odd.got" | head -5)"
	rec=$(wc -l < "$tmp/odd.got")
	[ "$(values ft_other "$tmp/odd" | wc -l)" = 0 ] || fail "-e ft_value also recorded ft_other"
	row=$(stat_row ft_value "$tmp/odd")
	[ "$row" = "$rec $((N - rec)) filter: value & 1" ] ||
		fail "stat after -f 'value & 1': row '$row', expected '$rec $((N - rec)) filter: value & 1'"
	total=$("$rt" stat "$tmp/odd" | awk '$1 == "total" { print $3 }')
	[ "$total" = "$rec" ] || fail "stat total $total != $rec recorded"
	bt=$(babeltrace2 "$tmp/odd" 2>/dev/null | grep -c 'ft_value:' || true)
	[ "$bt" = "$rec" ] || fail "babeltrace2 reads $bt ft_value events, ringtrace $rec"
}

# ---- one filter for several events: a glob, then a comma list
cli_filter_one_expression_for_a_glob_or_a_list_of_events() { # case
	record "$tmp/glob" -e 'ft_*' -f 'value >= 900'
	for ev in ft_value ft_other; do
		[ "$(values $ev "$tmp/glob" | head -1)" = 900 ] && [ "$(values $ev "$tmp/glob" | wc -l)" = 100 ] ||
			fail "-e 'ft_*' -f 'value >= 900': $ev: $(values $ev "$tmp/glob" | wc -l) events from $(values $ev "$tmp/glob" | head -1)"
		[ "$(stat_row $ev "$tmp/glob")" = "100 900 filter: value >= 900" ] ||
			fail "-e 'ft_*': stat row of $ev: '$(stat_row $ev "$tmp/glob")'"
	done
	record "$tmp/list" -e 'ft_value,ft_other' -f 'value < 10 || value == 500'
	for ev in ft_value ft_other; do
		got=$(values $ev "$tmp/list" | tr '\n' ' ')
		[ "$got" = "0 1 2 3 4 5 6 7 8 9 500 " ] || fail "-e 'ft_value,ft_other': $ev values: $got"
		[ "$(stat_row $ev "$tmp/list")" = "11 $((N - 11)) filter: value < 10 || value == 500" ] ||
			fail "-e 'ft_value,ft_other': stat row of $ev: '$(stat_row $ev "$tmp/list")'"
	done
}

# ---- a filter per -e; an -e without -f records everything
cli_filter_per_event_and_event_without_filter_recorded_whole() { # case
	record "$tmp/two" -e ft_value -f 'value == 3' -e ft_other -f 'value > 997'
	[ "$(values ft_value "$tmp/two" | tr '\n' ' ')" = "3 " ] || fail "two -e/-f: ft_value: $(values ft_value "$tmp/two" | tr '\n' ' ')"
	[ "$(values ft_other "$tmp/two" | tr '\n' ' ')" = "998 999 " ] || fail "two -e/-f: ft_other: $(values ft_other "$tmp/two" | tr '\n' ' ')"
	record "$tmp/mixed" -e ft_value -f 'value > 989' -e ft_other
	[ "$(values ft_value "$tmp/mixed" | wc -l)" = 10 ] || fail "-e ft_value -f ... -e ft_other: ft_value filtered wrongly"
	[ "$(values ft_other "$tmp/mixed" | wc -l)" = $N ] || fail "-e ft_other without -f: not every call recorded"
	[ "$(stat_row ft_other "$tmp/mixed")" = "$N 0" ] || fail "unfiltered ft_other: stat row '$(stat_row ft_other "$tmp/mixed")'"
}

# ---- a ';' and a ':' in a quoted string belong to the expression: record
# passes them on, the library splits RINGTRACE_FILTERS around them
cli_filter_quoted_semicolon_and_colon_belong_to_the_expression() { # case
	record "$tmp/quoted" -e ft_other -f 'tag == "a;b:c" && value < 30'
	[ "$(values ft_other "$tmp/quoted" | tr '\n' ' ')" = "0 3 6 9 12 15 18 21 24 27 " ] ||
		fail "-f 'tag == \"a;b:c\" && value < 30': $(values ft_other "$tmp/quoted" | tr '\n' ' ')"
	[ "$(stat_row ft_other "$tmp/quoted")" = "10 $((N - 10)) filter: tag == \"a;b:c\" && value < 30" ] ||
		fail "quoted filter: stat row '$(stat_row ft_other "$tmp/quoted")'"
}

# ---- an invalid filter: the program says what and where, and records none
# of that event's calls (the others are not affected)
cli_filter_invalid_reported_with_column_other_events_recorded() { # case
	st=0
	"$rt" record -q -o "$tmp/bad" -e 'ft_*' -e ft_value -f 'value == 1 && bogus > 2' -- "$prog" $N >/dev/null 2>"$tmp/bad.err" || st=$?
	[ $st = 0 ] || fail "an invalid filter must not stop the program (exit $st): $(cat "$tmp/bad.err")"
	grep -q 'RINGTRACE_FILTERS' "$tmp/bad.err" && grep -q 'unknown field "bogus"' "$tmp/bad.err" &&
		grep -q 'column 15' "$tmp/bad.err" ||
		fail "invalid filter: stderr does not name RINGTRACE_FILTERS, the field and column 15: $(cat "$tmp/bad.err")"
	[ "$(values ft_value "$tmp/bad" | wc -l)" = 0 ] || fail "invalid filter: ft_value was recorded anyway"
	[ "$(values ft_other "$tmp/bad" | wc -l)" = $N ] || fail "invalid filter on ft_value: ft_other lost events"
}

# ---- snapshot trigger (flight recorder): the anomaly and what came before it
cli_filter_snapshot_trigger_dumps_the_events_up_to_it() { # case
	K=700
	st=0
	"$rt" record -q -o "$tmp/fr" --overwrite --buffer-size 4m -e 'ft_*' \
		--trigger "ft_value if value == $K: snapshot" \
		-- "$prog" $N --wait-for "$tmp/fr.snapshot-1/metadata" >/dev/null 2>"$tmp/fr.err" || st=$?
	[ $st = 0 ] || fail "snapshot trigger: record exit $st: $(cat "$tmp/fr.err")"
	[ -f "$tmp/fr.snapshot-1/metadata" ] || fail "snapshot trigger: no $tmp/fr.snapshot-1"
	[ ! -e "$tmp/fr.snapshot-2" ] || fail "snapshot trigger on value == $K fired more than once"
	values ft_value "$tmp/fr.snapshot-1" > "$tmp/fr.got"
	grep -qx $K "$tmp/fr.got" || fail "snapshot: no ft_value with value $K in it"
	# every call before the anomaly is there, in order (the buffer holds them all)
	seq_where 0 $K all > "$tmp/fr.want"
	head -n $((K + 1)) "$tmp/fr.got" | cmp -s - "$tmp/fr.want" ||
		fail "snapshot: ft_value 0 .. $K not all there in order: $(head -n $((K + 1)) "$tmp/fr.got" | diff "$tmp/fr.want" - | head -3)"
	babeltrace2 "$tmp/fr.snapshot-1" > "$tmp/fr.bt" 2>"$tmp/fr.bt.err" ||
		fail "babeltrace2 cannot read the snapshot: $(head -3 "$tmp/fr.bt.err")"
	grep -Eq "ft_value: .*[{ ,]value = $K( |,|\$)" "$tmp/fr.bt" ||
		fail "babeltrace2 does not print ft_value value = $K: $(grep 'ft_value' "$tmp/fr.bt" | head -2)"
	[ "$(wc -l < "$tmp/fr.bt")" = "$("$rt" report "$tmp/fr.snapshot-1" | grep -vc 'events lost' || true)" ] ||
		fail "snapshot: babeltrace2 and ringtrace report disagree on the event count"
	# the trace written at exit has every call, and the trigger's count
	[ "$(values ft_value "$tmp/fr" | wc -l)" = $N ] || fail "flight recorder at exit: $(values ft_value "$tmp/fr" | wc -l) ft_value events"
	triggers "$tmp/fr" | grep -Eq "^ +1 +0  ft_value if value == $K: snapshot\$" ||
		fail "stat: snapshot trigger not shown as fired once: $(triggers "$tmp/fr")"
}

# ---- traceoff with a count: recording stops after the first match (which
# is recorded), the other matches are counted as skipped
cli_filter_traceoff_trigger_with_count_stops_recording() { # case
	record "$tmp/off" -e 'ft_*' --trigger 'ft_other if value >= 990: traceoff:1'
	[ "$(values ft_value "$tmp/off" | tail -1)" = 990 ] && [ "$(values ft_other "$tmp/off" | tail -1)" = 990 ] ||
		fail "traceoff at ft_other 990: last recorded ft_value $(values ft_value "$tmp/off" | tail -1), ft_other $(values ft_other "$tmp/off" | tail -1)"
	triggers "$tmp/off" | grep -Eq "^ +1 +9  ft_other if value >= 990: traceoff:1\$" ||
		fail "stat: traceoff:1 trigger not fired 1, skipped 9: $(triggers "$tmp/off")"
}

# ---- a trigger with a quoted ';' in its filter, next to a filter with ||
cli_filter_trigger_with_quoted_semicolon_next_to_filter() { # case
	record "$tmp/semi" -e 'ft_*' -f 'value == 1 || value == 5' \
		--trigger 'ft_other if tag == "a;b:c" && value > 0: traceoff:1'
	[ "$(values ft_value "$tmp/semi" | tr '\n' ' ')" = "1 " ] ||
		fail "filter with || and traceoff at ft_other 3: ft_value $(values ft_value "$tmp/semi" | tr '\n' ' ')"
	# (matches: value 3, 6, .. 999, so 1 fired and 332 skipped)
	triggers "$tmp/semi" | grep -Eq '^ +1 +332  ft_other if tag == "a;b:c" && value > 0: traceoff:1$' ||
		fail "trigger with a quoted ';': $(triggers "$tmp/semi")"
}

# ---- invalid triggers: reported on the program's stderr with the column
# in the trigger; recording goes on without them
# (one run each: RINGTRACE_TRIGGERS is all or nothing, a syntax error in
# one trigger drops them all before any event is looked at)
cli_filter_invalid_triggers_reported_with_column() { # case
	record "$tmp/badtrig" -e 'ft_*' --trigger 'ft_value if valu == 3: snapshot'
	grep -q 'unknown field "valu"' "$tmp/badtrig.err" && grep -q 'column 13' "$tmp/badtrig.err" ||
		fail "trigger with an unknown field: stderr lacks the field or column 13: $(cat "$tmp/badtrig.err")"
	[ "$(values ft_value "$tmp/badtrig" | wc -l)" = $N ] || fail "invalid trigger: events were lost"
	[ ! -e "$tmp/badtrig.snapshot-1" ] || fail "an invalid trigger took a snapshot"
	record "$tmp/badact" -e 'ft_*' --trigger 'ft_other if value == 1: traceoff' --trigger 'ft_other: explode'
	grep 'RINGTRACE_TRIGGERS' "$tmp/badact.err" | grep 'ft_other: explode' | grep -q 'column 11' ||
		fail "trigger with an unknown action: stderr lacks RINGTRACE_TRIGGERS, the trigger or column 11: $(cat "$tmp/badact.err")"
	[ "$(values ft_other "$tmp/badact" | wc -l)" = $N ] || fail "triggers refused as a whole: the valid one still ran"
}

# ---- usage errors: exit 2, a message, the program not run
cli_filter_record_usage_errors_exit_2_without_running() { # case
	usage "must follow the -e EVENTS" -f 'value & 1' -e ft_value
	usage "a second -f for -e 'ft_value'" -e ft_value -f 'value & 1' -f 'value > 2'
	usage "';' at column 11 outside a quoted string" -e ft_value -f 'value == 1; value == 2'
	usage "':' at column 6 outside a quoted string" -e ft_value -f 'value:1'
	usage "unterminated string" -e ft_value -f 'value == "abc'
	usage "';' at column 9 outside" -e 'ft_value;x'
	usage "which disables events" -e 'ft_*,-ft_other' -f 'value & 1'
	usage "';' at column 19 outside" --trigger 'ft_value: snapshot; ft_other: traceoff'
	usage "empty argument" -e ft_value -f ''
}

rt_run_cases "$@"
