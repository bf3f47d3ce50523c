#!/bin/sh
# Numbers on the command line and in the environment, at their boundaries:
# every one is parsed strictly, in its range, and a bad one is a usage
# error (exit 2) that names the option and the value, before anything
# runs, records or is signalled. Each is a case (tests/cases.sh).
#   usage: test_cli_args.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
bin=$1
shift
tmp=$(mktemp -d /tmp/ringtrace-args-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_cli_args: $*" >&2; exit 1; }

# `ringtrace ARGS...` must exit 2 and say $1 on stderr.
refused() {
	want=$1
	shift
	rc=0
	"$bin/ringtrace" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	[ "$rc" = 2 ] || fail "ringtrace $*: exit $rc, want 2 (stderr: $(cat "$tmp/err"))"
	grep -qF -- "$want" "$tmp/err" || fail "ringtrace $*: stderr does not say '$want': $(cat "$tmp/err")"
}

cli_snapshot_pid_out_of_range_refused_and_nothing_signalled() { # case
	# strtol once turned 4294967295 and 99999999999999999999 into pid -1
	# and 4294967296 into 0: kill() then signals every process the caller
	# may, or its process group. Run in a PID namespace of its own, beside a
	# process that SIGUSR2 would kill, so that a regression kills only that.
	unshare --user --map-root-user --pid --fork true 2>/dev/null ||
		{ echo "test_cli_args: cannot make a user and PID namespace here (unshare): case not run" >&2; exit 77; }
	for pid in 4294967295 4294967296 99999999999999999999 2147483648 9223372036854775808; do
		out=$(unshare --user --map-root-user --pid --fork sh -c '
			sleep 30 & s=$!
			"$1" snapshot "$2" 2>"$3"; rc=$?
			sleep 0.1
			if kill -0 $s 2>/dev/null; then alive=yes; kill $s; else alive=no; fi
			echo "$rc $alive"' sh "$bin/ringtrace" "$pid" "$tmp/err")
		[ "$out" = "2 yes" ] || fail "snapshot $pid: exit and sentinel '$out', want '2 yes' ($(cat "$tmp/err"))"
		grep -qF "out of range" "$tmp/err" || fail "snapshot $pid: $(cat "$tmp/err")"
	done
	max=$(cat /proc/sys/kernel/pid_max)
	refused "out of range (at most $((max - 1)))" snapshot "$max"
}

cli_snapshot_pid_with_sign_blank_zero_or_junk_refused() { # case
	refused "'-1' is not a decimal number" snapshot -1
	refused "'+1' is not a decimal number" snapshot +1
	refused "' 1' is not a decimal number" snapshot " 1"
	refused "'1x' is not a decimal number ('x' at column 2)" snapshot 1x
	refused "0x10" snapshot 0x10
	refused "leading zero" snapshot 010
	refused "0 is not a process id" snapshot 0
	refused "an empty value" snapshot ""
}

# `ringtrace record OPTS -- touch MARK` must be refused before it runs touch.
record_refused() {
	want=$1
	shift
	rm -f "$tmp/ran"
	refused "$want" record -q -o "$tmp/never" "$@" -- touch "$tmp/ran"
	[ ! -e "$tmp/ran" ] || fail "record $*: ran the command although an option was refused"
	[ ! -e "$tmp/never" ] || fail "record $*: created the output directory"
}

cli_record_size_not_a_number_refused_before_running_the_command() { # case
	record_refused "--buffer-size: '-1' is not a size" --buffer-size -1
	record_refused "--buffer-size: '+16m' is not a size" --buffer-size +16m
	record_refused "--buffer-size: ' 16m' is not a size" --buffer-size " 16m"
	record_refused "--buffer-size: '16mb' is not a size" --buffer-size 16mb
	record_refused "--buffer-size: '0x1000000' is not a size" --buffer-size 0x1000000
	record_refused "--page-size: 'k' is not a size" --page-size k
	record_refused "--page-size: '' is not a size" --page-size ""
	record_refused "--buffer-size: '0' (0 bytes) is out of range" --buffer-size 0
}

cli_record_size_overflowing_refused() { # case
	record_refused "--buffer-size: '18446744073709551616' is not a size" --buffer-size 18446744073709551616
	# 2^34 GiB is 2^64 bytes: the suffix must not wrap it to 0
	record_refused "--buffer-size: '17179869184g' is not a size" --buffer-size 17179869184g
	record_refused "--page-size: '18014398509481984k' is not a size" --page-size 18014398509481984k
}

cli_record_geometry_outside_the_ring_limits_refused() { # case
	record_refused "page size 3072 is not a power of two from 4096 to 1048576" --page-size 3k
	record_refused "page size 2097152 is not a power of two" --page-size 2m
	record_refused "buffer size 100000 is not a multiple of the page size 65536" --buffer-size 100000
	record_refused "holds 1 pages of 4096 (allowed 2 to" --buffer-size 4k --page-size 4k
	record_refused "holds 2097152 pages of 4096 (allowed 2 to 1048576)" --buffer-size 8g --page-size 4k
	# the limits themselves are accepted (the command runs; `true` records nothing)
	"$bin/ringtrace" record -q -o "$tmp/ok" --buffer-size 8k --page-size 4k -- true 2>"$tmp/err" || true
	grep -q "buffer-size\|page-size" "$tmp/err" && fail "8k of 4k pages refused: $(cat "$tmp/err")"
	return 0
}

cli_report_seconds_strict_and_from_after_to_refused() { # case
	mkdir -p "$tmp/empty"
	refused "--from: '1e3' is not a number of seconds" report --from 1e3 "$tmp/empty"
	refused "--from: '-1' is not a number of seconds" report --from -1 "$tmp/empty"
	refused "--to: '1.2.3' is not a number of seconds" report --to 1.2.3 "$tmp/empty"
	refused "--to: '1.1234567891' is not a number of seconds (1 to 9 digits" report --to 1.1234567891 "$tmp/empty"
	refused "--from: '99999999999999999999' is not a number of seconds" report --from 99999999999999999999 "$tmp/empty"
	refused "--from: '18446744073.709551616' is out of range" report --from 18446744073.709551616 "$tmp/empty"
	refused "--from is after --to" report --from 5 --to 4.999999999 "$tmp/empty"
}

env_size_not_a_number_refused_and_nothing_recorded() { # case
	for v in -1 " 64k" 64kb 0x10000 18446744073709551615k ""; do
		rm -rf "$tmp/env"
		RINGTRACE_OUTPUT="$tmp/env" RINGTRACE_PAGE_SIZE="$v" \
			"$bin/ringtrace-demo" --seconds 0.01 --threads 1 >/dev/null 2>"$tmp/err" ||
			fail "the demo failed with RINGTRACE_PAGE_SIZE='$v': $(cat "$tmp/err")"
		grep -qF "RINGTRACE_PAGE_SIZE=\"$v\" is not a size" "$tmp/err" ||
			fail "RINGTRACE_PAGE_SIZE='$v': stderr: $(cat "$tmp/err")"
		[ ! -e "$tmp/env/metadata" ] || fail "RINGTRACE_PAGE_SIZE='$v' recorded a trace"
	done
}

rt_run_cases "$@"
