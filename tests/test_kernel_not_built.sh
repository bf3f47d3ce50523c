#!/bin/sh
# A ringtrace built without libtracefs and libtraceevent (RINGTRACE_KERNEL=OFF,
# or the libraries not found; `make check` builds one among its release
# builds and runs this there): `record -k` in each of its forms refuses at
# once, exit 2, saying what to install, and leaves no directory behind.
# Each is a case (tests/cases.sh).
#   usage: test_kernel_not_built.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
bin=$1
shift
rt="$bin/ringtrace"
tmp=$(mktemp -d /tmp/ringtrace-nokernel-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_kernel_not_built: ${rt_c:-}: $*" >&2; exit 1; }

# refused MODE ARGS...: record -k ARGS into $tmp/MODE is refused as unbuilt.
refused() {
	m=$1
	shift
	rc=0
	"$rt" record -k sched:sched_switch -o "$tmp/$m" "$@" 2>"$tmp/$m.err" || rc=$?
	[ "$rc" -eq 2 ] || fail "$m: exit $rc, not 2: $(cat "$tmp/$m.err")"
	grep -q "built without libtracefs/libtraceevent" "$tmp/$m.err" ||
		fail "$m: not said: $(cat "$tmp/$m.err")"
	grep -q "install libtracefs-dev libtraceevent-dev" "$tmp/$m.err" ||
		fail "$m: what to install not said: $(cat "$tmp/$m.err")"
	[ ! -e "$tmp/$m" ] || fail "$m: an output directory left: $(ls -R "$tmp/$m")"
}

record_k_without_the_libraries_says_what_to_install() { # case
	refused alone --duration 1
	refused cmd -- true
	refused pid -p $$
	refused all -a -- true
}

rt_run_cases "$@"
