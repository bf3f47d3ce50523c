#!/bin/sh
# A disk that fills while recording (a tmpfs of a few MiB, mounted by each
# case: root). The recorder cuts a page it could not write off the file,
# counts it and its events as unwritten (the metadata's `unwritten` lines,
# with the reason), keeps taking pages from the buffer (the program never
# waits: its exit status and output are its own), tries again every
# 100 ms and resumes when space is freed; the metadata is written into the
# room kept for it. Each case checks the accounting exactly by sequence
# number (tests/diskfull_lib.sh) and that report, stat and babeltrace2
# read the trace.
#   usage: test_diskfull.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
bin=$1
shift
. "$(dirname "$0")/diskfull_lib.sh"
N=500000

discard_full_disk_counts_every_event_unwritten_enospc() { # case
	small_disk 8m
	d="$mnt/t"
	run_record "$tmp/a" "$d" 2 $N
	check_program "$tmp/a" 2 $N
	grep -q "No space left on device: pages are not written until writing works again" "$tmp/a.err" ||
		{ cat "$tmp/a.err" >&2; fail "no message when the disk filled"; }
	grep -q "^ringtrace: writing $d/stream_[0-9]*: No space left on device: [0-9]* events in [0-9]* pages not written (ENOSPC); the trace is valid without them" "$tmp/a.err" ||
		{ cat "$tmp/a.err" >&2; fail "the end's message does not say what was not written"; }
	set -- $(check_accounting "$d" "$tmp/a" $N)
	check_trace "$d" "$1"
	uw=$(check_stat "$d" $((2 * N)) ENOSPC)
	[ "$uw" -gt 0 ] || fail "no events counted as unwritten on a full disk"
	grep -q "^unwritten [0-9]* [0-9]* [0-9]* [0-9]* [0-9]* ENOSPC\$" "$d/metadata" || fail "no unwritten line in the metadata"
	echo "$rt_c: $1 events in the trace, $2 counted lost ($uw not written: ENOSPC) of $((2 * N))"
}

overwrite_full_disk_at_stop_counts_unwritten_metadata_valid() { # case
	small_disk 4m
	d="$mnt/t"
	RECORD_OPTS=--overwrite run_record "$tmp/o" "$d" 2 $N
	check_program "$tmp/o" 2 $N
	set -- $(check_accounting "$d" "$tmp/o" $N)
	check_trace "$d" "$1"
	uw=$(check_stat "$d" $((2 * N)) ENOSPC)
	[ "$uw" -gt 0 ] || fail "no events counted as unwritten"
	# the rest was overwritten in the buffer: counted as overrun, not unwritten
	ov=$(awk '$1 == "total" { print $5 }' "$tmp/$rt_c.stat")
	[ "$ov" -gt 0 ] || fail "overwrite mode with a buffer smaller than the run: no overrun"
	echo "$rt_c: $1 events in the trace, $ov overwritten, $uw not written (ENOSPC) of $((2 * N))"
}

space_freed_recording_resumes_gap_counted() { # case
	small_disk 8m
	d="$mnt/t"
	# 6 MiB of the 8 taken: the first half of the run fills the rest
	head -c 6291456 /dev/zero > "$mnt/filler"
	run_record "$tmp/r" "$d" 2 $N "$d" "$mnt/filler" free
	check_program "$tmp/r" 2 $N
	grep -q "writing to $d resumed" "$tmp/r.err" || { cat "$tmp/r.err" >&2; fail "no resume announced"; }
	set -- $(check_accounting "$d" "$tmp/r" $N)
	check_trace "$d" "$1"
	uw=$(check_stat "$d" $((2 * N)) ENOSPC)
	# a gap between pages written: a thread's events on both sides of a loss
	awk '/ fill_ev: / { k = split($1, a, "-"); if (lost[a[k]]) after[a[k]] = 1; seen[a[k]] = 1 }
	     /events lost/ { k = split($1, a, "-"); if (seen[a[k]]) lost[a[k]] = 1 }
	     END { for (t in after) exit 0; exit 1 }' "$tmp/r.txt" || fail "no thread has events after a gap"
	echo "$rt_c: $1 events in the trace, $2 counted lost ($uw not written: ENOSPC), writing resumed"
}

disk_full_to_the_last_byte_final_metadata_written_in_reserved_room() { # case
	small_disk 8m
	d="$mnt/t"
	# once the recorder has met the full disk, the program takes every
	# byte a page write left free: only the room the recorder kept is left
	# for the metadata at the end
	run_record "$tmp/f" "$d" 2 $N "$d" "$mnt/filler" fill
	grep -q "^disk full: 0 bytes free\$" "$tmp/f.err" || { cat "$tmp/f.err" >&2; fail "the disk was not filled to the last byte"; }
	sed -i '/^disk full: /d' "$tmp/f.err"
	check_program "$tmp/f" 2 $N
	set -- $(check_accounting "$d" "$tmp/f" $N)
	check_trace "$d" "$1"
	check_stat "$d" $((2 * N)) ENOSPC > /dev/null
}

snapshot_into_full_disk_fails_clearly_recording_goes_on() { # case
	small_disk 8m
	d="$mnt/t"
	st=0
	"$rt" record -q --trigger "fill_ev if seq == $((N - 1000)): snapshot:1" -o "$d" -- "$prog" $N 2 > "$tmp/s.out" 2> "$tmp/s.err" || st=$?
	check_program "$tmp/s" 2 $N
	grep -q "ringtrace: snapshot: .*No space left on device (no snapshot is kept; the recording goes on)" "$tmp/s.err" ||
		{ cat "$tmp/s.err" >&2; fail "no clear message for the snapshot that did not fit"; }
	[ ! -e "$d.snapshot-1" ] || fail "a partial snapshot is left: $(ls -la "$d.snapshot-1")"
	set -- $(check_accounting "$d" "$tmp/s" $N)
	check_trace "$d" "$1"
	check_stat "$d" $((2 * N)) ENOSPC > /dev/null
}

rt_run_cases "$@"
