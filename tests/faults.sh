# tests/faults.sh - the loop of the fault-injection tests (src/base/fault.h),
# sourced by the test scripts that use it, after tests/cases.sh.
#
#   rt_fault_loop KIND MAX CHECK CMD...
#
# runs CMD once with no fault (the reference: its stdout and status), then
# with RINGTRACE_FAULT=KIND:N for N = 1, 2, ... until a run's fault did not
# fire (N passed the last counted call: every call was failed once), and
# fails the test (exit 1, saying which N and what happened) when, for any N:
#
#   - CMD was killed by a signal, or ran past RT_FAULT_TIMEOUT seconds
#     (default 60: a hang), or a sanitizer reported anything (a leak, a
#     use after free: ASan's own exit status and report);
#   - CMD failed (status not 0) without saying why on stderr, in a line
#     that starts with "ringtrace" (the command's and the library's
#     messages do) and names something: an empty or bare message is not
#     an error message;
#   - CMD succeeded (status 0) with a stdout unlike the reference's: a
#     failure that was swallowed and changed the answer;
#   - CHECK (a shell function, or `:`) fails: called after each run with
#     N, the run's status and the files $RT_FAULT_OUT and $RT_FAULT_ERR,
#     for what the caller needs checked (a trace still readable, the
#     program's own output intact, nothing left in /dev/shm).
#
# MAX bounds N (a loop that never ends is a failed test too). Variables
# around the loop: RINGTRACE_FAULT_ONLY (set by the caller: which program
# of CMD fails), RT_FAULT_EXTRA (appended to the spec, e.g. ":errno=ENOSPC"),
# RT_FAULT_SAME_OUTPUT=0 (stdout may differ on success: a command whose
# output names times), RT_FAULT_FIRST=F and RT_FAULT_STEP=S (N = F, F+S,
# F+2S, ...: S tests with F = 1 .. S share one long loop, run in
# parallel), RT_FAULT_VERBOSE=1 (each run's call and status,
# and its stderr's "ringtrace" lines, on stderr: what a user would read).
# After the loop, RT_FAULT_N holds the last N tried (by default the number
# of calls). Needs
# `timeout` (coreutils).

rt_fault_loop_() {
	rt_fk=$1 rt_fmax=$2 rt_fcheck=$3
	shift 3
	rt_fdir=$(mktemp -d "${TMPDIR:-/tmp}/rt-fault.XXXXXX")
	RT_FAULT_OUT=$rt_fdir/out RT_FAULT_ERR=$rt_fdir/err
	# A sanitizer's report must not be mistaken for a clean failure: exit
	# status 99 for ASan and UBSan, whatever the build's defaults say.
	rt_fsan="${ASAN_OPTIONS:+$ASAN_OPTIONS:}exitcode=99:abort_on_error=0"
	rt_fref=0
	ASAN_OPTIONS=$rt_fsan timeout "${RT_FAULT_TIMEOUT:-60}" "$@" >"$rt_fdir/ref" 2>"$rt_fdir/referr" ||
		rt_fref=$?
	if [ "$rt_fref" -ne 0 ]; then
		echo "fault loop: without a fault, $* exits $rt_fref:" >&2
		cat "$rt_fdir/referr" >&2
		return 1
	fi
	RT_FAULT_N=0
	rt_fn=${RT_FAULT_FIRST:-1}
	while :; do
		if [ "$rt_fn" -gt "$rt_fmax" ]; then
			echo "fault loop: $rt_fk still fires at call $rt_fn (more than $rt_fmax calls)" >&2
			return 1
		fi
		rm -f "$rt_fdir/log"
		rt_fst=0
		RINGTRACE_FAULT="$rt_fk:$rt_fn${RT_FAULT_EXTRA:-}" RINGTRACE_FAULT_LOG="$rt_fdir/log" \
			ASAN_OPTIONS=$rt_fsan UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=99 \
			timeout "${RT_FAULT_TIMEOUT:-60}" "$@" >"$RT_FAULT_OUT" 2>"$RT_FAULT_ERR" || rt_fst=$?
		if [ ! -s "$rt_fdir/log" ]; then
			[ "$rt_fst" -eq 0 ] || {
				echo "fault loop: $rt_fk:$rt_fn did not fire, yet $* exits $rt_fst:" >&2
				cat "$RT_FAULT_ERR" >&2
				return 1
			}
			break
		fi
		rt_fwhat="$rt_fk:$rt_fn ($(head -n 1 "$rt_fdir/log" | cut -d' ' -f2-4))"
		[ "${RT_FAULT_VERBOSE:-0}" = 0 ] || {
			echo "fault loop: $rt_fwhat: exits $rt_fst"
			grep '^ringtrace' "$RT_FAULT_ERR" | head -n 5 | sed 's/^/    /'
		} >&2
		if [ "$rt_fst" -eq 124 ] || [ "$rt_fst" -ge 128 ] || [ "$rt_fst" -eq 99 ] ||
			grep -q 'Sanitizer\|runtime error:' "$RT_FAULT_ERR"; then
			echo "fault loop: $rt_fwhat: $* exits $rt_fst (a crash, a hang or a sanitizer report):" >&2
			cat "$RT_FAULT_ERR" >&2
			return 1
		fi
		if [ "$rt_fst" -ne 0 ] && ! grep -q '^ringtrace[^:]*: ..' "$RT_FAULT_ERR"; then
			echo "fault loop: $rt_fwhat: $* exits $rt_fst and says nothing of why:" >&2
			cat "$RT_FAULT_ERR" >&2
			return 1
		fi
		if [ "$rt_fst" -eq 0 ] && [ "${RT_FAULT_SAME_OUTPUT:-1}" = 1 ] &&
			! cmp -s "$rt_fdir/ref" "$RT_FAULT_OUT"; then
			echo "fault loop: $rt_fwhat: $* succeeds with another output:" >&2
			diff "$rt_fdir/ref" "$RT_FAULT_OUT" | head -n 20 >&2
			return 1
		fi
		"$rt_fcheck" "$rt_fn" "$rt_fst" || {
			echo "fault loop: $rt_fwhat: the check $rt_fcheck fails (status $rt_fst); stderr:" >&2
			cat "$RT_FAULT_ERR" >&2
			return 1
		}
		RT_FAULT_N=$rt_fn
		rt_fn=$((rt_fn + ${RT_FAULT_STEP:-1}))
	done
	return 0
}

# The loop's temporary folder goes whether the loop passes or fails (what
# a failure needs shown is printed before).
rt_fault_loop() {
	rt_fl_st=0
	rt_fault_loop_ "$@" || rt_fl_st=$?
	rm -rf "$rt_fdir"
	return $rt_fl_st
}
