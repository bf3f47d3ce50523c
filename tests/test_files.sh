#!/bin/sh
# The ringtrace command against hostile trace directories and pools
# (src/base/tdir.c has the rules for files, src/collect/outdir.c and tools/record.c for pools):
#  - readers (stat, report, list, export) open only regular files: a FIFO
#    at stream_1 or at metadata, a symbolic link there, a socket or a
#    device are errors naming the file, and never hang (each command runs
#    under `timeout`: 124 would be a hang);
#  - record: pool names are unpredictable, an object pre-created at the
#    old predictable name does not block the recording, --group shares the
#    trace with a group;
#  - recover: maps only the program's pool (not one open to others, not
#    another user's), is refused while the program still records, and
#    never writes through a symbolic link planted at a stream file or at
#    the metadata's temporary name;
#  - export: never writes through a symbolic link at -o, makes FILE 0600.
# Each is a case (tests/cases.sh).
#   usage: test_files.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
bin=$1
shift
rt="$bin/ringtrace"
tmp=$(mktemp -d /tmp/ringtrace-files-XXXXXX)
shmp="/ringtrace-files-test-$$"
trap 'rm -rf "$tmp"; rm -f /dev/shm"$shmp"-*' EXIT
umask 022
fail() { echo "test_files: $*" >&2; exit 1; }
skip() { echo "${rt_c:-test_files}: SKIPPED: $*"; exit 77; }
PRECIOUS="precious: not to be touched by ringtrace"

# A small trace in $tmp/t (once per run).
trace() {
	if [ ! -d "$tmp/t" ]; then
		"$rt" record -q -o "$tmp/t" -- "$bin/ringtrace-demo" --seconds 0.05 --threads 2 >/dev/null
		[ -f "$tmp/t/stream_1" ] || fail "record wrote no stream_1"
	fi
}

# A copy of the trace in $tmp/$1.
copy() {
	trace
	rm -rf "${tmp:?}/$1"
	cp -r "$tmp/t" "$tmp/$1"
}

# reader_refuses DIR NAME WHAT: stat, report, list and export each fail
# (status 1, not a hang) with a message naming DIR/NAME and WHAT.
reader_refuses() {
	for cmd in stat report list export; do
		case $cmd in
		export) args="export --format=json $1 -o $tmp/out.json" ;;
		*) args="$cmd $1" ;;
		esac
		st=0
		timeout 20 "$rt" $args > "$tmp/r.out" 2> "$tmp/r.err" || st=$?
		[ "$st" != 124 ] || fail "ringtrace $cmd hung on $1/$2 ($3)"
		[ "$st" = 1 ] || fail "ringtrace $cmd on $1/$2 ($3): status $st, expected 1"
		grep -q "$1/$2: $3" "$tmp/r.err" || fail "ringtrace $cmd: the error does not name $1/$2 as $3: $(cat "$tmp/r.err")"
	done
	echo "test_files: $(head -1 "$tmp/r.err")"
}

# ---- readers ----

files_fifo_at_stream_is_an_error_for_the_reader_not_a_hang() { # case
	copy fifo
	rm "$tmp/fifo/stream_1" && mkfifo "$tmp/fifo/stream_1"
	reader_refuses "$tmp/fifo" stream_1 "a FIFO"
}

files_fifo_at_metadata_is_an_error_for_the_reader_not_a_hang() { # case
	copy fifom
	rm "$tmp/fifom/metadata" && mkfifo "$tmp/fifom/metadata"
	reader_refuses "$tmp/fifom" metadata "a FIFO"
}

files_symlink_at_stream_or_metadata_is_an_error_for_the_reader() { # case
	copy links
	mkdir "$tmp/elsewhere"
	mv "$tmp/links/stream_1" "$tmp/elsewhere/stream_1"
	ln -s "$tmp/elsewhere/stream_1" "$tmp/links/stream_1"
	reader_refuses "$tmp/links" stream_1 "a symbolic link"
	copy linkm
	mv "$tmp/linkm/metadata" "$tmp/elsewhere/metadata"
	ln -s "$tmp/elsewhere/metadata" "$tmp/linkm/metadata"
	reader_refuses "$tmp/linkm" metadata "a symbolic link"
}

files_socket_or_device_at_stream_is_an_error_naming_it() { # case
	copy sock
	rm "$tmp/sock/stream_1"
	python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$tmp/sock/stream_1"
	reader_refuses "$tmp/sock" stream_1 "a socket"
	if [ "$(id -u)" = 0 ]; then
		copy dev
		rm "$tmp/dev/stream_1" && mknod "$tmp/dev/stream_1" c 1 3
		reader_refuses "$tmp/dev" stream_1 "a character device"
	else
		echo "test_files: (not root: no device node made, the socket checked alone)"
	fi
}

# ---- record: pool names ----

# The pool name a program started by `ringtrace record` is given (sh is
# not linked with libringtrace: it records nothing, and prints the name).
pool_name() {
	"$rt" record -q -o "$tmp/$1" -- sh -c 'echo "$RINGTRACE_SHM"' 2>/dev/null || true
}

files_record_pool_names_are_unpredictable() { # case
	a=$(pool_name n1)
	b=$(pool_name n2)
	for n in "$a" "$b"; do
		echo "$n" | grep -Eq '^/ringtrace-rec-[0-9]+-[0-9a-f]{16}$' ||
			fail "pool name '$n' has no random part (/ringtrace-rec-PID-<16 hex digits>)"
	done
	[ "${a##*-}" != "${b##*-}" ] || fail "two runs drew the same random part: $a, $b"
	echo "test_files: pool names $a, $b"
}

# An object made at the name record used to give its pool (its own pid:
# known to anyone before it runs) blocked the recording.
files_record_pool_precreated_at_the_old_name_cannot_block() { # case
	st=0
	sh -c 'o="/dev/shm/ringtrace-rec-$$"; touch "$o"; chmod 666 "$o"; echo "$o" > "$3";
		exec "$0" record -q -o "$1" -- "$2" --seconds 0.05 --threads 1' \
		"$rt" "$tmp/pre" "$bin/ringtrace-demo" "$tmp/pre.name" > /dev/null 2> "$tmp/pre.err" || st=$?
	rm -f "$(cat "$tmp/pre.name")"
	[ "$st" = 0 ] || fail "a pre-created object blocked the recording (status $st): $(cat "$tmp/pre.err")"
	n=$("$rt" stat "$tmp/pre" | awk '$1 == "total" { print $3 }')
	[ "$n" -gt 0 ] || fail "no events recorded"
}

files_record_group_option_shares_the_trace() { # case
	if [ "$(id -u)" = 0 ]; then g=nogroup; gid=$(getent group nogroup | cut -d: -f3); else gid=$(id -g); g=$gid; fi
	"$rt" record -q --group "$g" -o "$tmp/grp" -- "$bin/ringtrace-demo" --seconds 0.05 --threads 1 >/dev/null
	[ "$(stat -c '%a %g' "$tmp/grp")" = "750 $gid" ] || fail "--group $g: directory $(stat -c '%a %g' "$tmp/grp")"
	for f in "$tmp/grp"/*; do
		[ "$(stat -c '%a %g' "$f")" = "640 $gid" ] || fail "--group $g: $f is $(stat -c '%a %g' "$f")"
	done
	"$rt" record -q --group no-such-group-here -o "$tmp/grp2" -- true 2> "$tmp/grp2.err" && fail "an unknown group was accepted"
	grep -q "no-such-group-here" "$tmp/grp2.err" || fail "the unknown group is not named: $(cat "$tmp/grp2.err")"
	[ ! -e "$tmp/grp2" ] || fail "a directory was made for an unknown group"
}

# ---- recover ----

# crashed NAME [MODE]: a program traced with a named pool, killed: $d, $shm.
crashed() {
	d="$tmp/$1"
	shm="$shmp-$1"
	st=0
	RINGTRACE_OUTPUT="$d" RINGTRACE_SHM="$shm" RINGTRACE_MODE="${2:-discard}" \
		"$bin/test_crash_prog" 20000 "$d" kill > /dev/null 2>&1 || st=$?
	[ "$st" = 137 ] || fail "$1: the program exited $st, not killed"
	[ -e "/dev/shm$shm" ] || fail "$1: no pool left"
}

files_recover_refuses_a_pool_open_to_others() { # case
	crashed open
	chmod 644 "/dev/shm$shm"
	before=$(cat "$d"/stream_* | cksum)
	st=0
	"$rt" recover "$shm" "$d" 2> "$tmp/open.err" || st=$?
	[ "$st" = 1 ] || fail "a pool open to others was recovered (status $st)"
	grep -q "open to other users" "$tmp/open.err" || fail "no reason given: $(cat "$tmp/open.err")"
	[ "$(cat "$d"/stream_* | cksum)" = "$before" ] || fail "the trace was changed"
	chmod 600 "/dev/shm$shm"
	"$rt" recover "$shm" "$d" 2>/dev/null || fail "the program's pool (0600) was not recovered"
}

files_recover_refuses_a_pool_of_another_user() { # case
	[ "$(id -u)" = 0 ] || skip "needs root: a pool of another user (chown to nobody)"
	crashed theirs
	chown nobody "/dev/shm$shm"
	st=0
	"$rt" recover "$shm" "$d" 2> "$tmp/theirs.err" || st=$?
	[ "$st" = 1 ] || fail "another user's pool was recovered (status $st)"
	grep -q "owned by another user" "$tmp/theirs.err" || fail "no reason given: $(cat "$tmp/theirs.err")"
}

files_recover_refused_while_the_program_records() { # case
	d="$tmp/live"
	shm="$shmp-live"
	RINGTRACE_OUTPUT="$d" RINGTRACE_SHM="$shm" "$bin/ringtrace-demo" --seconds 5 --threads 1 > /dev/null 2>&1 &
	pid=$!
	i=0; while [ ! -f "$d/metadata" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	st=0
	"$rt" recover "$shm" "$d" 2> "$tmp/live.err" || st=$?
	kill -TERM $pid 2>/dev/null || true
	wait $pid || true
	[ "$st" = 1 ] || fail "recover ran while the program recorded (status $st)"
	grep -q "in use by another recorder (process $pid" "$tmp/live.err" || fail "the holder is not named: $(cat "$tmp/live.err")"
	"$rt" stat "$d" > /dev/null || fail "the program's trace is damaged"
}

# (overwrite mode: every page is still in the pool, none in a file, so
# recover must make both stream files, where the links are)
files_recover_does_not_follow_symlink_at_stream() { # case
	crashed slink overwrite
	[ -z "$(ls "$d" | grep stream_)" ] || fail "overwrite mode wrote stream files while running"
	echo "$PRECIOUS" > "$tmp/target"
	ln -s "$tmp/target" "$d/stream_1"
	ln -s "$tmp/target" "$d/stream_2"
	st=0
	"$rt" recover "$shm" "$d" 2> "$tmp/slink.err" || st=$?
	[ "$(cat "$tmp/target")" = "$PRECIOUS" ] || fail "recover wrote through a link at a stream file"
	[ "$st" = 1 ] || fail "recover did not report the link (status $st)"
	grep -q "stream_[12] is a symbolic link" "$tmp/slink.err" || fail "not named: $(cat "$tmp/slink.err")"
}

files_recover_does_not_follow_symlink_at_metadata_tmp() { # case
	crashed mlink
	echo "$PRECIOUS" > "$tmp/target"
	ln -s "$tmp/target" "$d/.metadata.tmp"
	"$rt" recover "$shm" "$d" 2> "$tmp/mlink.err" || fail "recover failed: $(cat "$tmp/mlink.err")"
	[ "$(cat "$tmp/target")" = "$PRECIOUS" ] || fail "recover wrote through $d/.metadata.tmp"
	[ ! -e "$d/.metadata.tmp" ] && [ ! -L "$d/.metadata.tmp" ] || fail "$d/.metadata.tmp left"
	grep -q "^stat recovered" "$d/metadata" || fail "the metadata was not written"
}

# ---- export ----

files_export_does_not_write_through_a_symlink() { # case
	trace
	echo "$PRECIOUS" > "$tmp/target"
	ln -s "$tmp/target" "$tmp/link.json"
	st=0
	"$rt" export --format=json "$tmp/t" -o "$tmp/link.json" 2> "$tmp/exp.err" || st=$?
	[ "$(cat "$tmp/target")" = "$PRECIOUS" ] || fail "export wrote through the symbolic link"
	[ "$st" = 1 ] || fail "export to a symbolic link: status $st"
	grep -q "a symbolic link" "$tmp/exp.err" || fail "not named: $(cat "$tmp/exp.err")"
	[ -z "$(ls "$tmp"/link.json.* 2>/dev/null)" ] || fail "a temporary file was left"
}

files_export_output_is_0600() { # case
	trace
	"$rt" export --format=json "$tmp/t" -o "$tmp/mode.json"
	[ "$(stat -c %a "$tmp/mode.json")" = 600 ] || fail "export made $(stat -c %a "$tmp/mode.json")"
	# an existing regular file is replaced
	"$rt" export --format=json "$tmp/t" -o "$tmp/mode.json"
	python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/mode.json" || fail "not JSON"
}

rt_run_cases "$@"
