# tests/diskfull_lib.sh - what the full-disk tests share (sourced by
# tests/test_diskfull.sh and tests/test_diskfull_faults.sh after
# tests/cases.sh; $bin is the build's bin directory).
#
# Every case records test_fill_prog (THREADS threads, each fill_ev(thread,
# seq) for seq 0 .. N-1, then "thread T tid TID emitted N" on stdout) and
# checks the accounting exactly, per thread, by sequence number: in
# `ringtrace report`, each thread's events come in order and every seq
# missing before one is covered by the lost records before it, the lost
# records after its last event cover the rest up to N, so that for each
# thread events + lost = N (and `ringtrace stat` agrees).

rt="$bin/ringtrace"
prog="$bin/test_fill_prog"
tmp=$(mktemp -d /tmp/ringtrace-diskfull-XXXXXX)
mnt=""
df_cleanup() {
	if [ -n "$mnt" ] && mountpoint -q "$mnt"; then umount "$mnt"; fi
	rm -rf "$tmp"
}
trap df_cleanup EXIT
trap 'exit 1' HUP INT TERM
command -v babeltrace2 >/dev/null 2>&1 || { echo "$0: babeltrace2 is not installed (make check installs it)" >&2; exit 1; }
fail() { echo "${rt_c:-$0}: $*" >&2; exit 1; }
skip() { echo "${rt_c:-$0}: SKIPPED: $*"; exit 77; }

# small_disk SIZE: a tmpfs of SIZE (e.g. 8m) of this case's own at $mnt
# (unmounted at exit, whatever happens); needs root.
small_disk() {
	[ "$(id -u)" = 0 ] || skip "needs root (mounts a small tmpfs)"
	if [ -n "$mnt" ] && mountpoint -q "$mnt"; then umount "$mnt"; fi
	mnt="$tmp/fs"
	mkdir -p "$mnt"
	mount -t tmpfs -o "size=$1,mode=0755" tmpfs "$mnt" 2>"$tmp/mount.err" ||
		skip "cannot mount a tmpfs here: $(cat "$tmp/mount.err")"
}

# run_record OUT DIR THREADS N [PROG ARGS...] [-- RECORD OPTIONS before]:
# record test_fill_prog into DIR; its exit status in $st, its stdout in
# OUT.out, the command's stderr in OUT.err. RECORD_OPTS: options for record.
run_record() {
	out=$1 d=$2 nt=$3 n=$4
	shift 4
	st=0
	"$rt" record -q ${RECORD_OPTS:-} -o "$d" -- "$prog" "$n" "$nt" "$@" > "$out.out" 2> "$out.err" || st=$?
}

# check_program OUT THREADS N: the program ran as it would untraced: exit
# status 0 (in $st), one "emitted N" line per thread on its stdout, and
# the command did not take it for a crash.
check_program() {
	[ "$st" = 0 ] || { cat "$1.err" >&2; fail "record exited $st, want 0 (the program's status)"; }
	k=$(grep -c "^thread [0-9]* tid [0-9]* emitted $3\$" "$1.out") || true
	[ "$k" = "$2" ] || { cat "$1.out" >&2; fail "the program's output: $k emitted lines, want $2"; }
	[ "$(wc -l < "$1.out")" = "$2" ] || { cat "$1.out" >&2; fail "the program's output has other lines"; }
	if grep -q -e "recovering" -e "linked with libringtrace" -e "cannot map" "$1.err"; then
		cat "$1.err" >&2
		fail "the command took a normal exit for a crash"
	fi
}

# check_accounting DIR OUT N: every thread's sequence in the report (OUT.txt),
# exact (see the top); prints "EVENTS LOST".
check_accounting() {
	"$rt" report --raw "$1" > "$2.txt" 2> "$2.rerr" || { cat "$2.rerr" >&2; fail "report $1 failed"; }
	[ -s "$2.rerr" ] && { cat "$2.rerr" >&2; fail "report $1 found damage"; }
	sed -n 's/^thread [0-9]* tid \([0-9]*\) emitted [0-9]*$/\1/p' "$2.out" > "$2.tids"
	awk -v N="$3" -v tidfile="$2.tids" '
		BEGIN { while ((getline t < tidfile) > 0) want[t] = 1 }
		{
			k = split($1, a, "-"); tid = a[k]
			if ($0 ~ /\*\*\* [0-9]+ events lost \*\*\*$/) {
				n = $(NF - 3); next_seq[tid] += n; lost += n; next
			}
			if ($0 !~ / fill_ev: /) next
			seq = ""
			for (i = 1; i <= NF; i++) if ($i ~ /^seq=/) seq = substr($i, 5)
			if (seq != next_seq[tid] + 0) {
				print "thread " tid ": seq " seq " where " next_seq[tid] + 0 " was due (a loss not counted, or counted twice)" > "/dev/stderr"; bad = 1
			}
			next_seq[tid] = seq + 1; events++
		}
		END {
			for (t in want)
				if (next_seq[t] + 0 != N) { print "thread " t ": " next_seq[t] + 0 " of " N " accounted for" > "/dev/stderr"; bad = 1 }
			for (t in next_seq)
				if (!(t in want)) { print "thread " t " is not one of the program'"'"'s" > "/dev/stderr"; bad = 1 }
			if (bad) exit 1
			print events + 0, lost + 0
		}' "$2.txt" || fail "$1: the accounting is not exact (see above)"
}

# check_trace DIR EVENTS: a valid trace: stream files of whole pages
# (64 KiB), no room kept for the metadata left behind, babeltrace2 reads
# EVENTS events (the same as report), the final metadata's stat lines.
check_trace() {
	for f in "$1"/stream_*; do
		[ -e "$f" ] || continue
		sz=$(stat -c %s "$f")
		[ $((sz % 65536)) = 0 ] || fail "$f: $sz bytes, not whole 64 KiB pages"
	done
	[ ! -e "$1/.ringtrace-reserve" ] || fail "$1/.ringtrace-reserve left behind"
	grep -q "^stat duration_ns " "$1/metadata" || fail "$1/metadata: no final stat lines"
	bn=$(babeltrace2 "$1" 2> "$tmp/bt.err" | grep -c " fill_ev: ") || { cat "$tmp/bt.err" >&2; fail "babeltrace2 cannot read $1"; }
	[ "$bn" = "$2" ] || fail "babeltrace2 read $bn events, report $2"
}

# check_stat DIR TOTAL REASON: stat's total line adds up to TOTAL (events +
# dropped + overrun + unwritten) and its unwritten line gives REASON.
check_stat() {
	"$rt" stat "$1" > "$tmp/$rt_c.stat" 2>&1 || { cat "$tmp/$rt_c.stat" >&2; fail "stat $1 failed"; }
	sum=$(awk '$1 == "total" { print $3 + $4 + $5 + $6 }' "$tmp/$rt_c.stat")
	[ "$sum" = "$2" ] || { cat "$tmp/$rt_c.stat" >&2; fail "stat accounts for $sum events, want $2"; }
	grep -q "^unwritten: [0-9]* events in [0-9]* pages of [0-9]* streams* not written by the recorder: $3 (" "$tmp/$rt_c.stat" ||
		{ cat "$tmp/$rt_c.stat" >&2; fail "stat does not say the events not written and why ($3)"; }
	awk '$1 == "unwritten" && NF == 2 { print $2 }' "$tmp/$rt_c.stat"
}
