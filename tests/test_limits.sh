#!/bin/sh
# Limits (docs/reliability.md, "Limits"), with test_limits_prog, whose
# every event is lim_seq(unit, seq), numbered per unit (thread, child,
# program) so that a trace shows exactly which it holds:
#  - a traced program with few descriptors (RLIMIT_NOFILE from the lowest
#    it runs with at all), recorded by `record -- CMD` and by `record -p`:
#    a complete trace, or a clear error naming what ran out; the program
#    runs to its end either way;
#  - the reading commands (report, stat, query, recover) with few
#    descriptors on a trace of 200 streams: the whole trace, or a clear
#    error naming what ran out;
#  - record -a -- CMD with 200 programs at once: every program's trace
#    complete, the collection read by report and stat, the command's
#    descriptors and memory bounded;
#  - 10,000 short-lived threads while record -p attaches and detaches in
#    a loop: every event of a thread that ran while attached in that
#    attachment's trace, nothing growing in the program;
#  - 1,000 forks while recorded: the parent's events exact, every child's
#    events in a stream of its own, no descriptor left in the parent.
# And in every case: no shared memory object left in /dev/shm by the
# recording, nothing in the trace directories but the traces.
# The sanitizer builds scale the counts down (their programs are slower
# to start, fork and make threads); the normal build runs the full ones.
#   usage: test_limits.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
bin=$1
shift
rt="$bin/ringtrace"
prog="$bin/test_limits_prog"
tmp=$(mktemp -d /tmp/ringtrace-limits-XXXXXX)
kids=""
cleanup() {
	touch "$tmp/stop" 2>/dev/null || true
	for p in $kids; do kill -9 "$p" 2>/dev/null || true; done
	[ -n "${RT_KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "test_limits: ${rt_c:-}: $*" >&2; exit 1; }

sanitized=0
if grep -qa -e __tsan_init -e __asan_init "$prog"; then
	sanitized=1
fi


# fds PID: the number of descriptors PID has open.
fds() { ls "/proc/$1/fd" | wc -l; }
# rss PID / hwm PID: its resident set now / at most so far, in KiB.
rss() { awk '$1 == "VmRSS:" {print $2}' "/proc/$1/status"; }
hwm() { awk '$1 == "VmHWM:" {print $2}' "/proc/$1/status"; }

# The shared memory objects of `ringtrace record` (named after the
# command's pid: another test's are not ours).
shm_of() { ls /dev/shm | grep "^ringtrace-rec-$1-" || true; }

# check_units DIR UNITS EVENTS: DIR (a trace or a collection) holds
# exactly lim_seq(u, 0..EVENTS-1) for u in 0..UNITS-1, each unit's events
# in order, nothing more; with UNITS 0 (a collection of programs, whose
# units are not unique), exactly EVENTS events per thread and unit. And
# `stat` agrees: every event read, none lost.
check_units() {
	"$rt" report "$1" >"$tmp/report" 2>"$tmp/report.err" ||
		fail "report $1: $(cat "$tmp/report.err")"
	"$rt" stat "$1" >"$tmp/stat" 2>&1 || fail "stat $1: $(cat "$tmp/stat")"
	awk -v units="$2" -v events="$3" '
	/ lim_seq: / {
		n1 = split($1, a, "-"); t = a[n1]
		for (i = 1; i <= NF; i++) {
			if ($i ~ /^unit=/) u = substr($i, 6) + 0
			if ($i ~ /^seq=/) s = substr($i, 5) + 0
		}
		k = units > 0 ? u : t " " u
		if (s != n[k] + 0) { print "unit " k ": seq " s ", expected " n[k] + 0; bad = 1 }
		n[k] = s + 1
		next
	}
	{ print "not an event of the program: " $0; bad = 1 }
	END {
		for (k in n) {
			if (n[k] != events) { print "unit " k ": " n[k] " events, expected " events; bad = 1 }
			c++
		}
		if (units > 0 && c != units) { print c " units, expected " units; bad = 1 }
		exit bad
	}' "$tmp/report" >"$tmp/check" ||
		fail "$1: $(head -5 "$tmp/check"); stat: $(grep -E '^ *(hit|missed|overrun|read) ' "$tmp/stat" | tr -s ' \n' ' ')"
	cu_lost=$(awk '$1 == "missed" || $1 == "overrun" {n += $2} END {print n + 0}' "$tmp/stat")
	[ "$cu_lost" = 0 ] || fail "$1: $cu_lost events lost"
	cu_n=$(wc -l <"$tmp/report")
	cu_read=$(awk '$1 == "read" {n += $2} END {print n + 0}' "$tmp/stat")
	[ "$cu_n" = "$cu_read" ] || fail "$1: report shows $cu_n events, stat says $cu_read"
}

# only_traces DIR: nothing in DIR but trace files (metadata, stream_N).
only_traces() {
	extra=$(find "$1" -mindepth 1 ! -type d ! -name metadata ! -name 'stream_[0-9]*' | head -3)
	[ -z "$extra" ] || fail "left in $1: $extra"
}

# rec_cmd_with_limit N: record test_limits_prog (200 threads of 5 events)
# with RLIMIT_NOFILE N in the program only; sets rst (record's status).
rec_cmd_with_limit() {
	rm -rf "$tmp/t$1"
	rst=0
	"$rt" record -q -o "$tmp/t$1" -- sh -c "ulimit -n $1 && exec \"\$0\" threads 200 5" "$prog" \
		>"$tmp/out$1" 2>"$tmp/err$1" &
	rpid=$!
	wait "$rpid" || rst=$?
	[ -z "$(shm_of "$rpid")" ] || fail "limit $1: left in /dev/shm: $(shm_of "$rpid")"
}

# The lowest descriptor limit test_limits_prog runs with at all, untraced.
lowest_limit() {
	n=3
	while [ $n -lt 64 ] &&
		! RINGTRACE_ATTACH=0 sh -c "ulimit -n $n && exec \"\$0\" threads 1 1" "$prog" \
			>/dev/null 2>&1; do
		n=$((n + 1))
	done
	echo $n
}

program_with_few_descriptors_records_or_says_what_ran_out() { # case
	low=$(lowest_limit)
	[ "$low" -lt 64 ] || fail "the program does not run with up to 64 descriptors"
	ok=0
	limits="$low $((low + 1)) $((low + 2)) $((low + 3)) $((low + 4)) $((low + 5)) $((low + 6))"
	limits="$limits $((low + 8)) 16 32"
	# (fewer in the sanitizer builds, whose programs start slowly)
	[ $sanitized = 0 ] || limits="$low $((low + 2)) $((low + 3)) $((low + 6)) 32"
	for n in $limits; do
		rec_cmd_with_limit $n
		# (the program ran to its end: its last line)
		grep -q '^fds ' "$tmp/out$n" || fail "limit $n: the program did not finish: $(cat "$tmp/err$n")"
		# (a stream file that could not be made even after the recorder
		# gave up its own descriptors, the program or a sanitizer's
		# runtime having taken them meanwhile: said at once, its pages
		# counted as not written; the program's status is record's)
		if [ "$rst" = 0 ] && ! grep -q "pages are not written" "$tmp/err$n"; then
			check_units "$tmp/t$n" 200 5
			only_traces "$tmp/t$n"
			ok=$((ok + 1))
			echo "record -- CMD, limit $n: recorded"
		else
			echo "record -- CMD, limit $n: refused: $(head -1 "$tmp/err$n")"
			grep -q "Too many open files" "$tmp/err$n" ||
				fail "limit $n: failed without naming what ran out: $(cat "$tmp/err$n")"
		fi
		# (from 4 above the lowest every limit records: the library
		# needs 6 descriptors, the recorder its first stream file; a
		# sanitizer's runtime takes some of its own, there from 16)
		[ $sanitized = 0 ] && must=$((low + 4)) || must=16
		[ "$rst" = 0 ] && ! grep -q "pages are not written" "$tmp/err$n" || [ $n -lt $must ] ||
			fail "limit $n: not recorded: $(cat "$tmp/err$n")"
	done
	[ $ok -ge 2 ] || fail "recorded with only $ok of the limits"
}

attached_program_with_few_descriptors_records_or_says_what_ran_out() { # case
	low=$(lowest_limit)
	# (a sanitizer's runtime needs descriptors of its own, at the
	# program's exit: there the lowest limits fail in it, not in us)
	[ $sanitized = 0 ] || low=$((low + 8))
	ok=0
	limits="$low $((low + 2)) $((low + 4)) $((low + 6)) $((low + 8)) 16 32"
	[ $sanitized = 0 ] || limits="$low $((low + 4)) 32"
	for n in $limits; do
		rm -f "$tmp/stop"
		RINGTRACE_ATTACH=1 sh -c "ulimit -n $n && exec \"\$0\" wait 50 5 \"\$1\"" "$prog" \
			"$tmp/stop" >"$tmp/pout$n" 2>"$tmp/perr$n" &
		pid=$!
		kids="$kids $pid"
		# (the listener needs two descriptors: without them the program is
		# not attachable, says why (RINGTRACE_ATTACH=1), and record -p says
		# it cannot find it)
		rt_wait_for 50 sh -c "test -S \"$(rt_own_dir)/$pid.sock\" || test -s \"$tmp/perr$n\""
		rst=0
		"$rt" record -q -p "$pid" -o "$tmp/a$n" >"$tmp/rout$n" 2>"$tmp/rerr$n" &
		rpid=$!
		kids="$kids $rpid"
		# (until the program has written its events, or record gave up)
		rt_wait_for 300 sh -c "grep -q emitted \"$tmp/pout$n\" || ! kill -0 $rpid 2>/dev/null"
		touch "$tmp/stop"
		wait "$pid" || fail "limit $n: the program failed: $(cat "$tmp/pout$n")"
		wait "$rpid" || rst=$?
		if [ "$rst" = 0 ]; then
			check_units "$tmp/a$n" 50 5
			only_traces "$tmp/a$n"
			ok=$((ok + 1))
			echo "record -p, limit $n: recorded"
		else
			echo "record -p, limit $n: refused: $(cat "$tmp/rerr$n")"
			[ $n -lt 16 ] || fail "limit $n: not recorded"
			grep -q -e "Too many open files" -e "not attachable" "$tmp/rerr$n" ||
				fail "limit $n: failed without saying why: $(cat "$tmp/rerr$n")"
			grep -q "Too many open files" "$tmp/rerr$n" "$tmp/perr$n" ||
				fail "limit $n: nothing names what ran out: $(cat "$tmp/rerr$n" "$tmp/perr$n")"
		fi
	done
	[ $ok -ge 2 ] || fail "attached with only $ok of the limits"
}

# with_limit N CMD...: CMD with RLIMIT_NOFILE N; its output in $tmp/cout,
# its messages in $tmp/cerr; sets cst (its status).
with_limit() {
	wl_n=$1
	shift
	cst=0
	sh -c "ulimit -n $wl_n && exec \"\$@\"" sh "$@" >"$tmp/cout" 2>"$tmp/cerr" || cst=$?
}

# said_out_of_descriptors WHAT: the command failed (status 1) saying so.
said_out_of_descriptors() {
	[ "$n" -lt 16 ] || fail "$1: failed: $(cat "$tmp/cerr")"
	[ "$cst" = 1 ] || fail "$1: status $cst (a crash?): $(cat "$tmp/cerr")"
	grep -q "Too many open files" "$tmp/cerr" ||
		fail "$1: failed without naming what ran out: $(cat "$tmp/cerr")"
}

commands_with_few_descriptors_read_a_trace_of_many_streams() { # case
	"$rt" record -q -o "$tmp/t" -- "$prog" threads 200 5 >/dev/null || fail "record failed"
	[ "$(find "$tmp/t" -name 'stream_*' | wc -l)" = 200 ] || fail "not 200 stream files"
	# (the lowest limit the command starts with at all: the loader needs
	# a descriptor for each shared library; below it, status 127)
	low=3
	while with_limit $low "$rt" stat "$tmp/none" && [ "$cst" = 127 ] && [ $low -lt 64 ]; do
		low=$((low + 1))
	done
	ok=0
	limits="$low $((low + 1)) $((low + 2)) $((low + 3)) $((low + 4)) 16"
	[ $sanitized = 0 ] || limits="$low $((low + 2)) 16"
	for n in $limits; do
		with_limit $n "$rt" report "$tmp/t"
		if [ "$cst" = 0 ]; then
			[ "$(grep -c ' lim_seq: ' "$tmp/cout")" = 1000 ] || fail "report, limit $n: not 1000 events"
			ok=$((ok + 1))
		else
			said_out_of_descriptors "report, limit $n"
		fi
		with_limit $n "$rt" stat "$tmp/t"
		if [ "$cst" = 0 ]; then
			awk '$1 == "total" && $2 == 200 && $3 == 1000 {f = 1} END {exit !f}' "$tmp/cout" ||
				fail "stat, limit $n: $(grep '^total' "$tmp/cout")"
			ok=$((ok + 1))
		else
			said_out_of_descriptors "stat, limit $n"
		fi
		with_limit $n "$rt" query "$tmp/t" "select count(*), count(distinct unit) from lim_seq"
		if [ "$cst" = 0 ]; then
			grep -q '^ *1000 *200 *$' "$tmp/cout" || fail "query, limit $n: $(cat "$tmp/cout")"
			ok=$((ok + 1))
		else
			said_out_of_descriptors "query, limit $n"
		fi
		# recover: from the pool of a program killed with 100 threads
		# (fewer than the pool's 128 writer slots), each holding a page
		# of 5 events (4 KiB pages: the pool has room for all)
		shm=/ringtrace-test-limits-$$-$n
		RINGTRACE_OUTPUT="$tmp/k$n" RINGTRACE_SHM=$shm RINGTRACE_PAGE_SIZE=4096 \
			"$prog" threads-kill 100 5 >/dev/null 2>&1 || true
		with_limit $n "$rt" recover $shm "$tmp/k$n"
		if [ "$cst" = 0 ]; then
			check_units "$tmp/k$n" 100 5
			only_traces "$tmp/k$n"
			ok=$((ok + 1))
		else
			said_out_of_descriptors "recover, limit $n"
			# (the pool is kept for a recover with more descriptors)
			[ -e /dev/shm$shm ] || fail "recover, limit $n: the pool was removed"
			"$rt" recover $shm "$tmp/k$n" >/dev/null 2>&1 || fail "recover, limit $n: not again"
		fi
		[ ! -e /dev/shm$shm ] || fail "recover, limit $n: the pool is left"
	done
	# (each works from a few descriptors above the lowest on: a file at
	# a time; and every one with 16)
	[ $ok -ge 4 ] || fail "only $ok worked"
}

# programs_emitted FILE N: N programs said "emitted" in FILE.
programs_emitted() { [ "$(cat "$1" 2>/dev/null | grep -c emitted)" -ge "$2" ]; }

record_a_200_programs_every_trace_complete() { # case
	np=200
	[ $sanitized = 0 ] || np=40
	rm -f "$tmp/stop"
	t0=$(date +%s%N)
	# (each program waits until it is recorded, writes 20 events, says so
	# and waits for the stop file; a pool of 256 KiB each: 200 of them
	# at once are 50 MiB of shared memory. In overwrite mode, whose
	# recorder thread wakes every 10 ms: in discard mode a pool this small
	# is polled every millisecond, and 200 idle recorder threads doing so
	# take both of this machine's cores: docs/reliability.md, "Limits".
	# 20 events fit: none is overwritten, which the check below sees.)
	"$rt" record -q -a --overwrite --buffer-size 256k --page-size 4k -o "$tmp/coll" -- sh -c '
		i=0
		while [ $i -lt "$1" ]; do "$0" wait 1 20 "$2" >>"$3" & i=$((i + 1)); done
		wait' "$prog" $np "$tmp/stop" "$tmp/emitted" 2>"$tmp/rec.err" &
	rpid=$!
	kids="$kids $rpid"
	rt_wait_for 1200 programs_emitted "$tmp/emitted" $np
	programs_emitted "$tmp/emitted" $np ||
		fail "$(grep -c emitted "$tmp/emitted") of $np programs recorded: $(tail -3 "$tmp/rec.err")"
	t1=$(date +%s%N)
	# the command, with every program attached: one connection each
	rfds=$(fds "$rpid")
	rkib=$(hwm "$rpid")
	touch "$tmp/stop"
	wait "$rpid" || fail "record -a failed: $(tail -3 "$tmp/rec.err")"
	t2=$(date +%s%N)
	[ "$(find "$tmp/coll" -mindepth 1 -maxdepth 1 -type d | wc -l)" = $np ] ||
		fail "not $np traces in the collection"
	check_units "$tmp/coll" 0 20
	[ "$(wc -l <"$tmp/report")" = $((np * 20)) ] || fail "not $np x 20 events"
	awk '$1 == "total" {t++} END {exit t < 1}' "$tmp/stat" || fail "stat: no totals"
	only_traces "$tmp/coll"
	[ -z "$(shm_of "$rpid")" ] || fail "left in /dev/shm: $(shm_of "$rpid")"
	for d in "$tmp"/coll/*; do
		[ ! -e "$(rt_own_dir)/${d##*-}.sock" ] || fail "a socket left: $(rt_own_dir)/${d##*-}.sock"
	done
	# (bounds: a connection per program and a few of its own; its memory
	# a few KiB per program beside the command's own, which reads no pool)
	[ "$rfds" -le $((np + 16)) ] || fail "record -a holds $rfds descriptors for $np programs"
	[ "$rkib" -le $((32 * 1024)) ] || fail "record -a grew to $rkib KiB"
	echo "record -a, $np programs: all attached and written in $(((t1 - t0) / 1000000)) ms," \
		"stopped in $(((t2 - t1) / 1000000)) ms; the command: $rfds descriptors, peak RSS $rkib KiB"
}

# check_attachment DIR EVENTS BATCH: the trace of one attachment to the
# churning program (its threads numbered in order, BATCH at a time, each
# batch joined before the next starts): each thread's events in sequence;
# the events missing no more than those counted as lost: the gaps in a
# thread, the events before a thread's first unless it may have started
# before the attach (the first batch seen), after its last unless it may
# have gone on after the detach (the last batch seen), and the threads of
# the batches between that are not there at all. `stat` agrees with the
# report. (Each thread's events take a page of their own: a burst of
# threads can fill the pool with nearly empty pages, and what comes then
# is dropped, and counted.)
check_attachment() {
	"$rt" report "$1" >"$tmp/report" 2>"$tmp/report.err" ||
		fail "report $1: $(cat "$tmp/report.err")"
	"$rt" stat "$1" >"$tmp/stat" 2>&1 || fail "stat $1: $(cat "$tmp/stat")"
	ca_lost=$(awk '$1 == "missed" || $1 == "overrun" {n += $2} END {print n + 0}' "$tmp/stat")
	ca_read=$(awk '$1 == "read" {n += $2} END {print n + 0}' "$tmp/stat")
	ca_n=$(grep -c ' lim_seq: ' "$tmp/report" || true)
	if [ "$ca_n" != "$ca_read" ]; then
		cp -r "$1" "/tmp/limits-disagree-$$" 2>/dev/null || true
		fail "$1: report shows $ca_n lines, stat says $ca_read events read (kept in /tmp/limits-disagree-$$): $(grep -v ' lim_seq: ' "$tmp/report" | head -3)"
	fi
	awk -v events="$2" -v batch="$3" -v lost="$ca_lost" '
	/ lim_seq: / {
		for (i = 1; i <= NF; i++) {
			if ($i ~ /^unit=/) u = substr($i, 6) + 0
			if ($i ~ /^seq=/) s = substr($i, 5) + 0
		}
		if (u in last) {
			if (s <= last[u]) { print "unit " u ": seq " s " after " last[u]; bad = 1 }
			gaps += s - last[u] - 1
		} else
			first[u] = s
		last[u] = s
		n[u]++
		if (lo == "" || u < lo) lo = u
		if (hi == "" || u > hi) hi = u
		next
	}
	/\*\*\* [0-9]+ events lost \*\*\*/ { next }
	{ print "not an event of the program: " $0; bad = 1 }
	END {
		# (an attachment during which no thread of it ran: the machine
		# busy with other things; stat said what was lost, if anything)
		if (lo == "") { print "units none"; exit 0 }
		bl = int(lo / batch); bh = int(hi / batch)
		# (the gaps: in a thread; before its first event, unless it may
		# have started before the attach (the first batch seen); after
		# its last, unless it may have gone on after the detach (the
		# last batch seen); the threads of the batches between not seen)
		for (u = (bl + 1) * batch; u < bh * batch; u++)
			if (!(u in last)) gaps += events
		for (u in last) {
			b = int(u / batch)
			if (b != bl) gaps += first[u]
			if (b != bh) gaps += events - 1 - last[u]
		}
		if (gaps > lost) { print gaps " events missing, " lost " counted"; bad = 1 }
		print "units " lo ".." hi
		exit bad
	}' "$tmp/report" >"$tmp/check" || fail "$1: $(head -5 "$tmp/check")"
}

threads_10000_short_lived_under_attach_detach_cycles() { # case
	nt=10000
	[ $sanitized = 0 ] || nt=2000
	rm -f "$tmp/stop"
	# (16 threads at a time, 1 ms between batches: the churn lasts a few
	# seconds, over several attach/detach cycles)
	rt_mark
	"$prog" churn $nt 4 16 1000 "$tmp/stop" >"$tmp/prog.out" 2>&1 &
	pid=$!
	kids="$kids $pid"
	rt_wait_socket "$(rt_own_dir)/$pid.sock"
	fd0=$(fds "$pid")
	rss0=$(rss "$pid")
	i=0
	t0=$(date +%s%N)
	idle=""
	while ! grep -q churned "$tmp/prog.out" || [ $i -lt 3 ]; do
		# (a cycle that starts after the churn records nothing)
		! grep -q churned "$tmp/prog.out" || idle="$idle $i"
		"$rt" record -q -p "$pid" --duration 0.1 -o "$tmp/c$i" 2>"$tmp/rec.err" ||
			fail "cycle $i: $(cat "$tmp/rec.err")"
		[ $i -gt 0 ] || rss1=$(rss "$pid")
		i=$((i + 1))
	done
	t1=$(date +%s%N)
	fd1=$(fds "$pid")
	rss2=$(rss "$pid")
	touch "$tmp/stop"
	wait "$pid" || fail "the program failed: $(cat "$tmp/prog.out")"
	seen=0
	j=0
	while [ $j -lt $i ]; do
		d=$(echo "$tmp/c$j"/*)
		only_traces "$d"
		case " $idle " in
		*" $j "*)
			[ "$("$rt" stat "$d" | awk '$1 == "hit" {print $2}')" = 0 ] ||
				fail "cycle $j, after the churn: events"
			;;
		*)
			check_attachment "$d" 4 16
			seen=$((seen + $(sed -n 's/^units \([0-9]*\)\.\.\([0-9]*\)$/\2 - \1 + 1/p' "$tmp/check") + 0))
			;;
		esac
		j=$((j + 1))
	done
	[ "$seen" -gt 0 ] || fail "no thread recorded"
	[ "$fd1" = "$fd0" ] || fail "descriptors: $fd0 before the first attach, $fd1 after $i cycles"
	# (bound: the threads' stacks glibc keeps for reuse and the read-side
	# nodes, both bounded by the threads alive at once (16), not by the
	# 10,000; 4 MiB)
	# (not under a sanitizer: its allocator keeps freed memory in
	# quarantine, and the sanitizer checks for leaks itself at the exit)
	[ $sanitized = 1 ] || [ $((rss2 - rss1)) -le 4096 ] ||
		fail "RSS grew from $rss1 KiB after the first cycle to $rss2 KiB after $i"
	echo "$nt threads, $i attach/detach cycles in $(((t1 - t0) / 1000000)) ms;" \
		"$seen threads seen while attached;" \
		"RSS $rss0 KiB before, $rss1 after the first cycle, $rss2 after the last"
}

fork_1000_times_while_recorded_every_child_in_its_stream() { # case
	nf=1000
	[ $sanitized = 0 ] || nf=200
	t0=$(date +%s%N)
	"$rt" record -q -o "$tmp/t" -- "$prog" fork $nf 3 >"$tmp/prog.out" 2>"$tmp/rec.err" &
	rpid=$!
	kids="$kids $rpid"
	wait "$rpid" || fail "record failed: $(cat "$tmp/rec.err")"
	t1=$(date +%s%N)
	[ -z "$(shm_of "$rpid")" ] || fail "left in /dev/shm: $(shm_of "$rpid")"
	# The parent's events (unit 0) are 0..nf-1 in order; each child's
	# (units 1..nf) its 3, in a stream of its own (docs/reliability.md):
	# the children write into the parent's pool, which its recorder reads.
	"$rt" report "$tmp/t" >"$tmp/report" || fail "report failed"
	"$rt" stat "$tmp/t" >"$tmp/stat" || fail "stat failed"
	awk -v nf=$nf '
	/ lim_seq: / {
		n1 = split($1, a, "-"); t = a[n1]
		for (i = 1; i <= NF; i++) {
			if ($i ~ /^unit=/) u = substr($i, 6) + 0
			if ($i ~ /^seq=/) s = substr($i, 5) + 0
		}
		if (s != n[u] + 0) { print "unit " u ": seq " s ", expected " n[u] + 0; bad = 1 }
		n[u] = s + 1
		if (u in tid && tid[u] != t) { print "unit " u ": two threads"; bad = 1 }
		tid[u] = t
		next
	}
	{ print "not an event of the program: " $0; bad = 1 }
	END {
		if (n[0] != nf) { print "parent: " n[0] " events of " nf; bad = 1 }
		for (u = 1; u <= nf; u++) {
			if (n[u] != 3) { print "child " u ": " n[u] + 0 " events"; bad = 1 }
			if (tid[u] == tid[0]) { print "child " u ": in the parent stream"; bad = 1 }
		}
		exit bad
	}' "$tmp/report" >"$tmp/check" || fail "$(head -5 "$tmp/check")"
	awk '$1 == "missed" || $1 == "overrun" {n += $2} END {exit n != 0}' "$tmp/stat" ||
		fail "events lost: $(grep -E '^ *(missed|overrun) ' "$tmp/stat")"
	only_traces "$tmp/t"
	[ "$(find "$tmp/t" -name 'stream_*' | wc -l)" = $((nf + 1)) ] || fail "not $((nf + 1)) streams"
	# (the parent's descriptors after the last child, against after the
	# first: none per child. The recorder's stream files are an LRU of
	# at most 63: a child's is closed with its last page, or, for a
	# child that exec'd or _exit'ed (whose writer ended without a last
	# page), when the LRU needs the slot, and all at the stop; so some
	# may be open at the end, at most 63, never one per child.)
	set -- $(grep '^fds ' "$tmp/prog.out")
	[ "$#" = 3 ] && [ "$3" -le $(($2 + 63)) ] || fail "the parent's descriptors: $*"
	echo "$nf forks recorded in $(((t1 - t0) / 1000000)) ms; the parent's descriptors: $2, then $3"
}

rt_run_cases "$@"
