# tests/stall_lib.sh - what tests/test_stall.sh and tests/test_stall_fault.sh
# share: test_stall_prog run under `ringtrace record`, and the check of
# the trace it leaves. Sourced after tests/cases.sh, with $bin set.
rt="$bin/ringtrace"
prog="$bin/test_stall_prog"
# 4 writers on 2 cores, 30000 events each a phase, in a pool of 32 pages
# of 16 KiB (about 22,000 events): every phase fills the pool many times
# over, so that a recorder that is not there shows as losses.
T=4
Q=30000
TAIL=16
POOL="--buffer-size 512k --page-size 16k"
tmp=$(mktemp -d /tmp/ringtrace-stall-XXXXXX)
chmod 755 "$tmp"
kids=""
cleanup() {
	for p in $kids; do
		kill -CONT "$p" 2>/dev/null || true
		kill -9 "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
# (RT_KEEP=1: the files are kept, to look at a failure)
[ -n "${RT_KEEP:-}" ] || trap cleanup EXIT
command -v babeltrace2 >/dev/null 2>&1 || { echo "${rt_c:-test_stall}: babeltrace2 is not installed (make check installs it)" >&2; exit 1; }
fail() { echo "test_stall: ${rt_c:-}: $*" >&2; exit 1; }


mode_opt() { [ "$1" = overwrite ] && echo --overwrite || true; }

# wait_file PATH: until PATH exists (a phase of the program done), or 60 s.
wait_file() {
	rt_wait_for 600 test -e "$1"
	[ -e "$1" ] || fail "waited 60 s for $1"
}

# state PID: the process's state letter (T: stopped), or "gone".
state() {
	sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null || echo gone
}

# complete DIR: the trace's recorder finished it (final stat lines).
complete() { grep -q "^stat hit " "$1/metadata" 2>/dev/null; }

# pool_of RECORDER_PID: the name of the pool that recorder named ("" if none).
pool_of() {
	ls /dev/shm 2>/dev/null | grep "^ringtrace-rec-$1-" | head -n 1 || true
}

# check_trace DIR CTL MODE PER_THREAD TAIL: every writer's events in the
# trace (report), in order, none twice, and with the losses the trace
# counts for its stream (stat) exactly the PER_THREAD events it wrote;
# TAIL=1: its last $TAIL events (written once the pool had room again)
# are there. babeltrace2 reads the same number of events, and the totals
# add up too. Prints one line of figures.
check_trace() {
	d=$1 ctl=$2 mode=$3 per=$4 tail=$5
	"$rt" stat "$d" > "$d.stat" 2> "$d.stat.err" || fail "stat $d failed: $(cat "$d.stat.err")"
	"$rt" report --raw "$d" > "$d.txt" 2> "$d.rep.err" || fail "report $d failed: $(cat "$d.rep.err")"
	[ ! -s "$d.rep.err" ] || fail "report $d said: $(cat "$d.rep.err")"
	grep -q "^  mode *$([ "$mode" = overwrite ] && echo 1 || echo 0)$" "$d.stat" ||
		fail "not recorded in $mode mode: $(grep mode "$d.stat")"
	awk -v T=$T -v per="$per" -v tail="$tail" -v TAIL=$TAIL '
		FILENAME == ARGV[1] { tidof[$2] = $4; next }
		FILENAME == ARGV[2] {
			# the stream table of stat: stream tid comm events dropped overrun ...
			# (a stream whose every event was dropped has no page,
			# hence no comm and no time span: 6 fields)
			if ($1 ~ /^[0-9]+$/ && NF == 6) { lost[$2] += $4 + $5; ev[$2] += $3 }
			else if ($1 ~ /^[0-9]+$/ && NF >= 7) { lost[$2] += $5 + $6; ev[$2] += $4 }
			# (total, no tid: streams events dropped overrun ...)
			if ($1 == "total") { tev = $3; tlost = $4 + $5 }
			next
		}
		/ stall_ev: / {
			split($1, a, "-"); tid = a[length(a)];
			th = ""; seq = "";
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^thread=/) th = substr($i, 8);
				if ($i ~ /^seq=/) seq = substr($i, 5) + 0;
			}
			if (tidof[th] != tid) { print "thread " th " (tid " tidof[th] ") in the stream of tid " tid > "/dev/stderr"; bad = 1 }
			if ((th in last) && seq <= last[th]) { print "thread " th ": seq " seq " after " last[th] > "/dev/stderr"; bad = 1 }
			if (seq >= per) { print "thread " th ": seq " seq " was never written" > "/dev/stderr"; bad = 1 }
			if (seq >= per - TAIL) ntail[th]++;
			last[th] = seq; n[th]++; total++
		}
		END {
			for (t = 0; t < T; t++) {
				id = tidof[t];
				if (n[t] + 0 != ev[id] + 0) { print "thread " t ": " n[t] " events read, stat says " ev[id] > "/dev/stderr"; bad = 1 }
				if (n[t] + lost[id] != per) { print "thread " t ": " n[t] " read + " lost[id] " lost != " per " written" > "/dev/stderr"; bad = 1 }
				if (tail && ntail[t] != TAIL) { print "thread " t ": " ntail[t] + 0 " of its last " TAIL " events" > "/dev/stderr"; bad = 1 }
				kept = kept " " n[t] + 0 "+" lost[id] + 0
			}
			if (total != tev || total + tlost != T * per) { print "totals: " total " read, stat " tev " + " tlost " lost, " T * per " written" > "/dev/stderr"; bad = 1 }
			if (bad) exit 1;
			print "kept+lost per thread:" kept
		}' "$ctl/tids" "$d.stat" "$d.txt" > "$d.sum" || fail "$d: the accounting does not add up (above; $(cat "$d.sum"))"
	bn=$(babeltrace2 "$d" 2>/dev/null | grep -c " stall_ev: ") || true
	rn=$(grep -c " stall_ev: " "$d.txt") || true
	[ "$bn" = "$rn" ] || fail "babeltrace2 read $bn events, report $rn"
	echo "$rt_c: $(cat "$d.sum"), of $per each; babeltrace2 agrees"
}
