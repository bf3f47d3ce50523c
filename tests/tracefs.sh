# What the scripts that record kernel events share (test_kernel.sh,
# test_sched.sh, test_kernel_fields.sh): sourced once $rt (the ringtrace
# command), $tmp, fail and skip are set.

tracing=/sys/kernel/tracing

# need_tracefs: root, tracefs mounted (mounted here if it is not), and a
# ringtrace built with libtracefs; else skip (not root) or fail, saying why.
need_tracefs() {
	[ "$(id -u)" = 0 ] || skip "needs root (a tracefs instance)"
	[ -e "$tracing/instances" ] || mount -t tracefs nodev "$tracing" 2>/dev/null || true
	[ -e "$tracing/instances" ] || fail "no tracefs at $tracing (mount -t tracefs nodev $tracing)"
	"$rt" record -k x:y -o "$tmp/probe" -- true 2>&1 | grep -q "built without libtracefs" &&
		fail "ringtrace was built without libtracefs (make deps installs it)"
	rm -rf "$tmp/probe"
}

# drop_instance DIR: a tracefs instance of the test's own, its events off
# and removed, whatever state it is in (nothing if it is not there).
drop_instance() {
	[ -n "$1" ] && [ -d "$1" ] || return 0
	echo 0 >"$1/tracing_on" 2>/dev/null || true
	echo 0 >"$1/events/enable" 2>/dev/null || true
	rmdir "$1" 2>/dev/null || true
}
