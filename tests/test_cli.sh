#!/bin/sh
# The ringtrace command end to end, as a user runs it: record a program
# (the demo) with `ringtrace record`, read the trace with `ringtrace stat`,
# `ringtrace report` and babeltrace2 (same event count), export it to
# Chrome/Perfetto JSON (valid, same events), and dump a flight recorder
# with `ringtrace snapshot` while the program runs. Each is a case
# (tests/cases.sh); those reading the demo's trace record it first
# (demo_trace: once per run).
#   usage: test_cli.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
bin=$1
shift
tmp=$(mktemp -d /tmp/ringtrace-cli-XXXXXX)
trap 'rm -rf "$tmp" "$tmp".snap*' EXIT
for tool in babeltrace2 python3; do
	command -v "$tool" >/dev/null 2>&1 || { echo "test_cli: $tool is not installed (make check installs it)" >&2; exit 1; }
done
fail() { echo "test_cli: $*" >&2; exit 1; }

# The demo recorded into $tmp/t (once); total: its events, by stat.
demo_trace() {
	if [ ! -d "$tmp/t" ]; then
		"$bin/ringtrace" record -q -o "$tmp/t" -- "$bin/ringtrace-demo" --seconds 0.1 --threads 3 >/dev/null
		[ -f "$tmp/t/metadata" ] || fail "record wrote no metadata"
	fi
	total=$("$bin/ringtrace" stat "$tmp/t" | awk '$1 == "total" { print $3 }')
}

# record
cli_record_writes_a_trace_and_refuses_bad_targets() { # case
	demo_trace
	"$bin/ringtrace" record -q -o "$tmp/t" -- true 2>/dev/null && fail "record into an existing trace must fail"
	"$bin/ringtrace" record -q -- 2>/dev/null && fail "record without a command must fail"
	return 0
}

# stat, report, babeltrace2 agree
cli_stat_report_and_babeltrace2_agree_on_the_events() { # case
	demo_trace
	report=$("$bin/ringtrace" report "$tmp/t" | wc -l)
	bt=$(babeltrace2 "$tmp/t" 2>/dev/null | wc -l)
	[ "$total" -gt 0 ] || fail "stat: no events"
	[ "$total" = "$report" ] || fail "stat says $total events, report printed $report lines"
	[ "$total" = "$bt" ] || fail "ringtrace reads $total events, babeltrace2 $bt"
	"$bin/ringtrace" report "$tmp/t" | head -1 | grep -Eq '^ *worker-[0-9]+-[0-9]+ +\[[0-9]{3}\] +[0-9]+\.[0-9]{6}: demo_' ||
		fail "report line not in the ftrace shape: $("$bin/ringtrace" report "$tmp/t" | head -1)"
	# the same events at the same raw timestamps (ticks), and the same strings
	"$bin/ringtrace" report --raw "$tmp/t" | awk '{ sub(":", "", $3); print $3, $4 }' | sort > "$tmp/ours"
	babeltrace2 --clock-cycles "$tmp/t" 2>/dev/null |
		awk '{ ts = $1; gsub(/[\[\]]/, "", ts); sub(/^0+/, "", ts)
		       # (the name is the word before "{": "host:procname" may precede it)
		       for (i = 3; i <= NF; i++) if ($i == "{") { print ts, $(i - 1); break } }' |
		sort > "$tmp/theirs"
	[ "$(wc -l < "$tmp/ours")" = "$total" ] || fail "report --raw printed $(wc -l < "$tmp/ours") lines, not $total"
	cmp -s "$tmp/ours" "$tmp/theirs" || fail "ringtrace report --raw and babeltrace2 --clock-cycles differ: $(diff "$tmp/ours" "$tmp/theirs" | head -3)"
	"$bin/ringtrace" report "$tmp/t" --events demo_work_begin | grep -o 'item=[^ ]*' | sed 's/item=//' | sort > "$tmp/items-ours"
	babeltrace2 "$tmp/t" 2>/dev/null | grep 'demo_work_begin:' | grep -o 'item = "[^"]*"' | sed 's/item = "//; s/"$//' | sort > "$tmp/items-theirs"
	cmp -s "$tmp/items-ours" "$tmp/items-theirs" || fail "string fields differ between ringtrace report and babeltrace2"
}

# the demo's completeness check: demo_tick seq has no gap per thread
cli_recorded_demo_tick_sequence_has_no_gap() { # case
	demo_trace
	"$bin/ringtrace" report "$tmp/t" --events demo_tick | awk '
		{ split($1, a, "-"); tid = a[length(a)]; for (i = 1; i <= NF; i++) if ($i ~ /^seq=/) { s = substr($i, 5) + 0 } }
		(tid in last) && s != last[tid] + 1 { print "gap in thread " tid ": " last[tid] " -> " s; bad = 1 }
		{ last[tid] = s }
		END { exit bad }' || fail "demo_tick sequence has a gap"
}

# export
cli_export_json_is_valid_with_the_same_events() { # case
	demo_trace
	"$bin/ringtrace" export --format=json "$tmp/t" -o "$tmp/t.json"
	python3 - "$tmp/t.json" "$total" <<'PY' || fail "exported JSON is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
real = [e for e in ev if e["ph"] != "M"]
assert len(real) == int(sys.argv[2]), (len(real), sys.argv[2])
assert {e["ph"] for e in real} <= {"i", "B", "E", "C"}
assert any(e["ph"] == "M" and e["name"] == "thread_name" for e in ev)
assert all(isinstance(e["ts"], (int, float)) for e in real)
assert any(e["name"] == "demo_work_begin" and e["ph"] == "B" and "item" in e["args"] for e in real)
PY
}

# record's closing summary is the reader's accounting, as stat prints it,
# also for the events a writer dropped after its last page (which no page
# header reports: only the metadata's `dropped` line)
cli_record_summary_equals_stat_with_drops_after_the_last_page() { # case
	"$bin/ringtrace" record -o "$tmp/td" --buffer-size 16k --page-size 4k -- \
		"$bin/test_tail_drops_prog" 2>"$tmp/td.err" </dev/null ||
		fail "record of test_tail_drops_prog failed: $(cat "$tmp/td.err")"
	grep -q '^dropped ' "$tmp/td/metadata" ||
		fail "the trace has no drops after a thread's last page (no 'dropped' line in its metadata)"
	"$bin/ringtrace" stat "$tmp/td" > "$tmp/td.stat"
	# the stream table: from its heading to its total line
	sed -n '/^stream /,/^total /p' "$tmp/td.err" > "$tmp/td.summary"
	sed -n '/^stream /,/^total /p' "$tmp/td.stat" > "$tmp/td.table"
	[ -s "$tmp/td.table" ] || fail "stat printed no stream table"
	cmp -s "$tmp/td.summary" "$tmp/td.table" ||
		fail "record's summary and stat differ: $(diff "$tmp/td.summary" "$tmp/td.table")"
	# the headline: the totals of the same table
	set -- $(awk '$1 == "total" { print $3, $4, $5 }' "$tmp/td.table")
	[ "$2" -gt 0 ] || fail "stat counts no dropped events"
	grep -q ": $1 events recorded, $2 dropped, $3 overwritten;" "$tmp/td.err" ||
		fail "record's headline is not stat's totals ($1 events, $2 dropped, $3 overrun): $(grep 'events recorded' "$tmp/td.err")"
}

# list -- CMD: the program's events, as the metadata of its trace has them,
# read in the command's own process; its temporary directory removed
cli_list_program_shows_its_events_and_leaves_nothing() { # case
	demo_trace
	mkdir "$tmp/lt"
	TMPDIR="$tmp/lt" "$bin/ringtrace" list -- "$bin/ringtrace-demo" --seconds 0.01 --threads 1 \
		>"$tmp/list.cmd" 2>"$tmp/list.err" || fail "list -- CMD failed: $(cat "$tmp/list.err")"
	"$bin/ringtrace" list "$tmp/t" >"$tmp/list.dir"
	sed -n '/^events (/,/^printf sites (/{/^printf sites/!p}' "$tmp/list.cmd" >"$tmp/list.cmd.ev"
	sed -n '/^events (/,/^printf sites (/{/^printf sites/!p}' "$tmp/list.dir" >"$tmp/list.dir.ev"
	grep -q '^events ([1-9]' "$tmp/list.cmd.ev" || fail "list -- CMD listed no events: $(cat "$tmp/list.cmd")"
	cmp -s "$tmp/list.cmd.ev" "$tmp/list.dir.ev" ||
		fail "list -- CMD and list DIR differ: $(diff "$tmp/list.cmd.ev" "$tmp/list.dir.ev" | head -5)"
	[ -z "$(ls -A "$tmp/lt")" ] || fail "list -- CMD left $(ls -A "$tmp/lt") behind"
}

# flight recorder: snapshot a running program
cli_snapshot_of_a_running_flight_recorder_is_readable() { # case
	RINGTRACE_OUTPUT="$tmp/fr" RINGTRACE_MODE=overwrite RINGTRACE_BUFFER_SIZE=1m \
		"$bin/ringtrace-demo" --seconds 1.5 --threads 2 >/dev/null &
	pid=$!
	# the session exists once its directory does (slow under sanitizers)
	i=0; while [ ! -d "$tmp/fr" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	sleep 0.3
	"$bin/ringtrace" snapshot "$pid"
	wait "$pid"
	[ -f "$tmp/fr.snapshot-1/metadata" ] || fail "no snapshot written"
	snap=$("$bin/ringtrace" report "$tmp/fr.snapshot-1" | grep -vc 'events lost' || true)
	[ "$snap" -gt 0 ] || fail "empty snapshot"
	btsnap=$(babeltrace2 "$tmp/fr.snapshot-1" 2>/dev/null | wc -l)
	[ "$btsnap" = "$snap" ] || fail "snapshot: ringtrace $snap events, babeltrace2 $btsnap"
	final=$("$bin/ringtrace" stat "$tmp/fr" | awk '$1 == "total" { print $3 }')
	[ "$final" -gt 0 ] || fail "flight recorder: nothing written at exit"
	# the session's one wall-clock offset, in the snapshot as at the end
	[ "$(grep '^realtime_offset ' "$tmp/fr.snapshot-1/metadata")" = "$(grep '^realtime_offset ' "$tmp/fr/metadata")" ] ||
		fail "snapshot and trace differ in realtime_offset: $(grep -h '^realtime_offset ' "$tmp/fr.snapshot-1/metadata" "$tmp/fr/metadata")"
	"$bin/ringtrace" snapshot 999999999 2>/dev/null && fail "snapshot of a missing process must fail"
	echo "test_cli: snapshot of a running flight recorder: $snap events"
}

# The wall clock: the metadata's realtime_offset is CLOCK_REALTIME -
# CLOCK_MONOTONIC as the system has it (read by python3 after the
# recording, within a second: the two clocks do not drift apart by that
# unless the clock is stepped), the TSDL's clock offset makes babeltrace2
# show each event between the wall-clock times read before and after
# the recording, and stat shows the same span as dates.
wall_trace() {
	before=$(date +%s)
	"$bin/ringtrace" record -q -o "$tmp/wc" -- "$bin/ringtrace-demo" --seconds 0.05 --threads 1 >/dev/null
	after=$(date +%s)
	[ -f "$tmp/wc/metadata" ] || fail "record wrote no metadata"
}

cli_recorded_trace_says_its_realtime_offset() { # case
	wall_trace
	off=$(sed -n 's/^realtime_offset \(-\{0,1\}[0-9]*\)$/\1/p' "$tmp/wc/metadata")
	[ -n "$off" ] || fail "no realtime_offset line in the metadata"
	now=$(python3 -c 'import time; print(time.time_ns() - time.clock_gettime_ns(time.CLOCK_MONOTONIC))')
	d=$((now - off))
	[ "$d" -gt -1000000000 ] && [ "$d" -lt 1000000000 ] ||
		fail "realtime_offset $off, the system's $now: $d ns apart"
}

cli_babeltrace2_shows_recorded_events_at_their_wall_clock_time() { # case
	wall_trace
	babeltrace2 --clock-seconds "$tmp/wc" 2>/dev/null | sed -n 's/^\[\([0-9]*\)\.[0-9]*\].*/\1/p' >"$tmp/wc.secs"
	[ -s "$tmp/wc.secs" ] || fail "babeltrace2 --clock-seconds printed no event"
	awk -v b="$before" -v a="$after" '$1 < b || $1 > a { print; bad = 1; exit } END { exit bad }' \
		"$tmp/wc.secs" >"$tmp/wc.bad" ||
		fail "babeltrace2 shows an event at $(cat "$tmp/wc.bad") s, not within $before .. $after (the recording)"
	day=$(date -u -d "@$before" +%Y-%m-%d)
	babeltrace2 --clock-date --clock-gmt "$tmp/wc" 2>/dev/null | head -1 | grep -q "^\[$day " ||
		fail "babeltrace2 --clock-date: $(babeltrace2 --clock-date --clock-gmt "$tmp/wc" 2>/dev/null | head -1 | cut -c1-40), not $day"
}

cli_stat_shows_the_time_span_as_wall_clock_dates() { # case
	wall_trace
	line=$("$bin/ringtrace" stat "$tmp/wc" | grep '^wall clock: ') || fail "stat: no wall clock line"
	# "wall clock: DATE TIME.us .. DATE TIME.us UTC"
	set -- $line
	[ $# = 8 ] && [ "$8" = UTC ] || fail "stat: wall clock line not in its shape: $line"
	for t in "$3 $4" "$6 $7"; do
		s=$(date -u -d "${t%.*}" +%s) || fail "stat: $t is not a date"
		[ "$s" -ge "$before" ] && [ "$s" -le "$after" ] ||
			fail "stat: $t is not within the recording ($before .. $after)"
	done
}

# a program killed while recording still leaves a complete trace, and dies by the signal
cli_program_killed_while_recording_leaves_a_trace() { # case
	RINGTRACE_OUTPUT="$tmp/killed" "$bin/ringtrace-demo" --seconds 5 --threads 2 >/dev/null &
	pid=$!
	i=0; while ! ls "$tmp/killed"/stream_* >/dev/null 2>&1 && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	kill -TERM "$pid"
	st=0
	wait "$pid" || st=$?
	[ "$st" = 143 ] || fail "killed program: exit status $st, expected 143 (SIGTERM)"
	killed=$("$bin/ringtrace" stat "$tmp/killed" | awk '$1 == "total" { print $3 }')
	[ "$killed" -gt 0 ] || fail "killed program: no events in its trace"
}

# a trace is only written into an empty or new directory
cli_recording_into_a_non_empty_directory_refused() { # case
	mkdir "$tmp/busy" && touch "$tmp/busy/x"
	RINGTRACE_OUTPUT="$tmp/busy" "$bin/ringtrace-demo" --seconds 0.01 2>"$tmp/busy.err" >/dev/null
	grep -q "not empty" "$tmp/busy.err" || fail "recording into a non-empty directory was not refused"
	[ ! -e "$tmp/busy/metadata" ] || fail "a trace was written into a non-empty directory"
}

# The command carries the reader, never the tracing runtime: run where
# RINGTRACE_OUTPUT is set (as in a shell that records programs), it records
# nothing of its own, and it holds none of the session's code.
cli_never_records_itself() { # case
	demo_trace
	shm=/ringtrace-cli-self-$$
	for args in "--help" "report $tmp/t" "stat $tmp/t" "list $tmp/t"; do
		RINGTRACE_OUTPUT="$tmp/self" RINGTRACE_SHM="$shm" "$bin/ringtrace" $args >/dev/null ||
			fail "ringtrace $args failed"
		[ ! -e "$tmp/self" ] || fail "ringtrace $args with RINGTRACE_OUTPUT set created $tmp/self: it traced itself"
		[ ! -e "/dev/shm$shm" ] || fail "ringtrace $args created the pool $shm: it traced itself"
	done
	if nm "$bin/ringtrace" | grep -q "ringtrace_session_"; then
		fail "the ringtrace binary holds ringtrace_session_* symbols"
	fi
}

rt_run_cases "$@"
