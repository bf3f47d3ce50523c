#!/bin/sh
# An I/O error while recording, made by fault injection (builds with
# RINGTRACE_FAULT_INJECTION: src/base/fault.h): from the Nth write of the
# traced program's recorder on, every write fails with EIO. The pages not
# written are counted as unwritten with the reason EIO, the stream files
# hold whole pages, the metadata is written and says so, the program runs
# on unaffected; the accounting is exact (tests/diskfull_lib.sh). No root
# needed: nothing is mounted.
#   usage: test_diskfull_faults.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
bin=$1
shift
. "$(dirname "$0")/diskfull_lib.sh"
N=200000

eio_injected_pages_counted_unwritten_trace_valid() { # case
	d="$tmp/t"
	# (the program's writes only: the command reads the trace afterwards)
	RINGTRACE_FAULT=write:20:persist:errno=EIO RINGTRACE_FAULT_ONLY=test_fill_prog \
		run_record "$tmp/e" "$d" 2 $N
	check_program "$tmp/e" 2 $N
	grep -q "Input/output error: pages are not written until writing works again" "$tmp/e.err" ||
		{ cat "$tmp/e.err" >&2; fail "no message when the writes failed"; }
	set -- $(check_accounting "$d" "$tmp/e" $N)
	check_trace "$d" "$1"
	uw=$(check_stat "$d" $((2 * N)) EIO)
	[ "$uw" -gt 0 ] || fail "no events counted as unwritten"
	pages=$(awk '$1 == "pages" && NF == 2 { print $2 }' "$tmp/$rt_c.stat")
	[ "$pages" = 19 ] || fail "$pages pages written, want 19 (the 20th write failed)"
	echo "$rt_c: $1 events in the trace, $2 counted lost ($uw not written: EIO) of $((2 * N))"
}

rt_run_cases "$@"
