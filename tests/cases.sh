# tests/cases.sh - the case runner of the shell tests (check.h's, for sh).
#
# A test script defines each case as a function named after what it proves,
# on a line of its own: `NAME() { # case`, and ends with rt_run_cases "$@":
#
#   test_x.sh ARG...           runs every case, in the script's order
#   test_x.sh ARG... CASE...   runs the cases named, in the order given
#   test_x.sh --list           prints the case names
#
# A name that is not a case is a usage error (exit 2). tests/CMakeLists.txt
# reads the same lines and registers a CTest test per case; the test
# rt_cases_registered compares them with --list.

# rt_wait_for TENTHS CMD...: run CMD every 0.1 s until it succeeds or
# TENTHS tries have failed; the caller checks what it needs afterwards.
rt_wait_for() {
	rt_wf_n=$1
	shift
	rt_wf_i=0
	while [ $rt_wf_i -lt "$rt_wf_n" ] && ! "$@"; do
		sleep 0.1
		rt_wf_i=$((rt_wf_i + 1))
	done
}

# rt_mark: the time now, before a program is started whose socket
# rt_wait_socket will wait for. A program killed earlier leaves its socket
# file, and a new program may get its pid: until the new one's listener
# replaces that file, a stale socket of the right name is there. After
# rt_mark, rt_wait_socket waits for a socket made since.
rt_mark() {
	rt_mark_t=$(date +%s.%N)
}

# rt_fresh_socket PATH: PATH is a socket, made after the last rt_mark.
rt_fresh_socket() {
	[ -S "$1" ] || return 1
	[ -n "${rt_mark_t:-}" ] || return 0
	awk -v a="$(stat -c %.9Y "$1" 2>/dev/null || echo 0)" -v b="$rt_mark_t" \
		'BEGIN { exit !(a + 0 >= b + 0) }'
}

# rt_wait_socket PATH: until PATH is a socket (a recorded program's
# rendezvous socket; made since the last rt_mark, if any), or 5 s have
# passed.
rt_wait_socket() {
	rt_wait_for 50 rt_fresh_socket "$1"
}

# rt_own_dir: the caller's rendezvous directory, where a program linked
# with libringtrace makes its attach socket (as the library chooses it).
rt_own_dir() {
	if [ "$(id -u)" = 0 ]; then
		echo /run/ringtrace
	elif [ -n "${XDG_RUNTIME_DIR:-}" ] && [ -O "$XDG_RUNTIME_DIR" ]; then
		echo "$XDG_RUNTIME_DIR/ringtrace"
	elif [ -O "/run/user/$(id -u)" ]; then
		echo "/run/user/$(id -u)/ringtrace"
	else
		echo "/tmp/ringtrace-$(id -u)"
	fi
}

# The ```sql blocks of the Markdown document DOC, one file each:
# DIR/001.sql, ...; n: how many (the docs tests run every worked query).
rt_sql_blocks() {
	mkdir -p "$2"
	awk -v dir="$2" '
		/^```sql[ \t]*$/ { n++; f = sprintf("%s/%03d.sql", dir, n); inq = 1; next }
		/^```/ && inq { inq = 0; close(f); next }
		inq { print > f }' "$1"
	n=$(ls "$2" | wc -l)
}

# The case names, in the script's order.
rt_cases() {
	sed -n 's/^\([a-z0-9_]*\)() { # case$/\1/p' "$0"
}

# --list, when asked for, before the script looks at its arguments.
if [ "${1:-}" = --list ]; then
	rt_cases
	exit 0
fi

rt_run_cases() {
	[ $# -gt 0 ] || set -- $(rt_cases)
	for rt_c in "$@"; do
		rt_cases | grep -qx -- "$rt_c" ||
			{ echo "$0: no case \"$rt_c\" ($0 --list prints them)" >&2; exit 2; }
	done
	for rt_c in "$@"; do
		"$rt_c"
		echo "$rt_c: OK"
	done
}
