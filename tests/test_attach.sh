#!/bin/sh
# Attaching, its first part (docs/attach.md): a program linked with
# libringtrace listens on <pid>.sock in its user's rendezvous directory
# and `ringtrace ps` finds it:
#  - ps lists a running program (pid, user, command, its events, whether a
#    session records it), and says "yes" under `ringtrace record`;
#  - RINGTRACE_ATTACH=0: no socket, no listener thread, not listed;
#  - the socket file goes when the program exits; one left by a program
#    killed with SIGKILL is removed by the next ps;
#  - another user's program: root's ps lists it, the user's own ps too;
#    a third user who reaches its socket (a directory loosened by hand) is
#    refused by the program, which says why;
#  - a listener that is not a ringtrace program (an oversized message, a
#    wrong hello, a refusal with a terminal escape in it, silence) gets an
#    error naming it from ps, escaped, never a crash or a hang;
#  - a rendezvous directory that is not the user's (or open to others)
#    is refused: the program is not attachable, and says so when asked
#    (RINGTRACE_ATTACH=1).
# Each is a case (tests/cases.sh).
#   usage: test_attach.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
bin=$1
shift
rt="$bin/ringtrace"
demo="$bin/ringtrace-demo"
tmp=$(mktemp -d /tmp/ringtrace-attach-XXXXXX)
chmod 755 "$tmp"
kids=""
cleanup() {
	for p in $kids; do kill -9 "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "test_attach: ${rt_c:-}: $*" >&2; exit 1; }
skip() { echo "${rt_c:-test_attach}: SKIPPED: $*"; exit 77; }

# The rendezvous directory of the caller (as the library chooses it).
own_dir() {
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

# wait_socket PATH: until PATH is a socket, or 5 s have passed.
wait_socket() {
	i=0
	while [ $i -lt 50 ] && [ ! -S "$1" ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

# start_demo SECONDS [ENV...]: the demo in the background; its pid in $pid
# once its socket (if any) is there or 5 s have passed.
start_demo() {
	secs=$1
	shift
	env "$@" "$demo" --seconds "$secs" --threads 1 >/dev/null 2>"$tmp/demo.err" &
	pid=$!
	kids="$kids $pid"
	wait_socket "$(own_dir)/$pid.sock"
}

# as_user UID CMD...: run CMD with that uid and gid, no groups.
as_user() {
	u=$1
	shift
	setpriv --reuid="$u" --regid="$u" --clear-groups -- "$@"
}

need_root() {
	[ "$(id -u)" = 0 ] || skip "needs root (runs programs as other users)"
	command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
}

ps_lists_running_program_with_its_events() { # case
	start_demo 5
	[ -S "$(own_dir)/$pid.sock" ] || fail "no socket $(own_dir)/$pid.sock"
	out=$("$rt" ps)
	line=$(echo "$out" | awk -v p="$pid" '$1 == p')
	[ -n "$line" ] || fail "pid $pid not listed: $out"
	echo "$line" | grep -q "ringtrace-demo" || fail "no command: $line"
	# the demo defines 4 events (demo_tick, demo_work_begin/end, ringtrace_printf)
	echo "$line" | awk '{ exit !($4 == 4 && $5 == "no") }' || fail "events/recording: $line"
	echo "$line" | grep -q "$demo" || fail "no executable path: $line"
	kill "$pid"
}

ps_says_recording_under_ringtrace_record() { # case
	"$rt" record -q -o "$tmp/rec" -- "$demo" --seconds 3 --threads 1 >/dev/null 2>&1 &
	rpid=$!
	kids="$kids $rpid"
	i=0
	line=""
	while [ $i -lt 50 ] && [ -z "$line" ]; do
		sleep 0.1
		line=$("$rt" ps | awk '$3 == "ringtrace-demo" && $5 == "yes"')
		i=$((i + 1))
	done
	[ -n "$line" ] || fail "no recording ringtrace-demo in: $("$rt" ps)"
	wait "$rpid" || fail "record failed"
}

attach_zero_means_no_socket_no_thread() { # case
	start_demo 3 RINGTRACE_ATTACH=0
	sleep 0.3
	[ ! -e "$(own_dir)/$pid.sock" ] || fail "a socket with RINGTRACE_ATTACH=0"
	! grep -qx "ringtrace-att" /proc/"$pid"/task/*/comm || fail "a listener thread"
	"$rt" ps | awk -v p="$pid" '$1 == p { exit 1 }' || fail "listed"
	# and by default there is one listener thread
	start_demo 3
	grep -qx "ringtrace-att" /proc/"$pid"/task/*/comm || fail "no listener thread"
}

socket_removed_at_exit() { # case
	start_demo 0.3
	[ -S "$(own_dir)/$pid.sock" ] || fail "no socket"
	wait "$pid" || fail "demo failed"
	[ ! -e "$(own_dir)/$pid.sock" ] || fail "socket left after exit"
}

stale_socket_of_killed_program_removed_by_ps() { # case
	start_demo 10
	[ -S "$(own_dir)/$pid.sock" ] || fail "no socket"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	[ -e "$(own_dir)/$pid.sock" ] || fail "the killed program's socket is already gone?"
	"$rt" ps >/dev/null
	[ ! -e "$(own_dir)/$pid.sock" ] || fail "ps left the stale socket"
}

other_users_program_listed_for_root_and_owner() { # case
	need_root
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$demo" --seconds 5 --threads 1 >/dev/null 2>&1 &
	npid=$!
	kids="$kids $npid"
	wait_socket "/tmp/ringtrace-65534/$npid.sock"
	[ -S "/tmp/ringtrace-65534/$npid.sock" ] || fail "no socket for uid 65534's program"
	"$rt" ps | awk -v p="$npid" '$1 == p && $2 == "nobody"' | grep -q . ||
		fail "root's ps does not list it: $("$rt" ps)"
	as_user 65534 "$rt" ps | awk -v p="$npid" '$1 == p' | grep -q . ||
		fail "its owner's ps does not list it"
	# a third user sees nothing of it
	as_user 1 "$rt" ps | awk -v p="$npid" '$1 == p { exit 1 }' || fail "uid 1 lists it"
}

third_user_refused_by_the_program() { # case
	need_root
	py=/usr/bin/python3
	[ -x "$py" ] || skip "needs /usr/bin/python3 (a client that is neither ringtrace nor root)"
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$demo" --seconds 5 --threads 1 >/dev/null 2>&1 &
	npid=$!
	kids="$kids $npid"
	d=/tmp/ringtrace-65534
	wait_socket "$d/$npid.sock"
	[ -S "$d/$npid.sock" ] || fail "no socket"
	# loosened by hand: what the program's own check of the peer is for
	chmod 711 "$d"
	chmod 666 "$d/$npid.sock"
	out=$(as_user 1 "$py" -c '
import socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(3)
s.connect(sys.argv[1])
h = b""
while len(h) < 8:
    c = s.recv(8 - len(h))
    if not c: break
    h += c
n, t = struct.unpack("II", h)
b = b""
while len(b) < n:
    c = s.recv(n - len(b))
    if not c: break
    b += c
print(t, b.rstrip(b"\0").decode())
' "$d/$npid.sock") || { chmod 700 "$d"; fail "client failed"; }
	chmod 700 "$d"
	case "$out" in
	"2 refused: uid 1 may not attach to a program of uid 65534") ;;
	*) fail "answer: $out" ;;
	esac
}

ps_survives_hostile_listeners() { # case
	py=/usr/bin/python3
	[ -x "$py" ] || skip "needs /usr/bin/python3 (a fake listener)"
	d=$(own_dir)
	mkdir -p "$d"
	chmod 700 "$d"
	# each fake binds <its pid>.sock and answers every connection its way
	for how in big wrong deny silent; do
		"$py" -c '
import os, socket, struct, sys, time
d, how = sys.argv[1], sys.argv[2]
p = "%s/%d.sock" % (d, os.getpid())
s = socket.socket(socket.AF_UNIX)
s.bind(p)
s.listen(4)
open(sys.argv[3], "w").write(str(os.getpid()))
try:
    while True:
        c, _ = s.accept()
        if how == "big":
            c.sendall(struct.pack("II", 100000, 1) + b"x" * 64)
        elif how == "wrong":
            c.sendall(struct.pack("II", 8, 1) + b"abcdefgh")
        elif how == "deny":
            c.sendall(struct.pack("II", 7, 2) + b"\x1b[2Jno\0")
        else:
            time.sleep(5)
        c.close()
finally:
    os.unlink(p)
' "$d" "$how" "$tmp/fake-$how" &
		kids="$kids $!"
	done
	for how in big wrong deny silent; do
		i=0
		while [ $i -lt 50 ] && [ ! -s "$tmp/fake-$how" ]; do
			sleep 0.1
			i=$((i + 1))
		done
		wait_socket "$d/$(cat "$tmp/fake-$how").sock"
	done
	start=$(date +%s)
	timeout 20 "$rt" ps >"$tmp/ps.out" 2>"$tmp/ps.err" || fail "ps failed ($?): $(cat "$tmp/ps.err")"
	[ $(($(date +%s) - start)) -lt 10 ] || fail "ps took too long"
	big=$(cat "$tmp/fake-big") wrong=$(cat "$tmp/fake-wrong")
	deny=$(cat "$tmp/fake-deny") silent=$(cat "$tmp/fake-silent")
	grep -q "$big.sock: attach: message of type 1 says 100000 bytes" "$tmp/ps.err" ||
		fail "no error for the oversized message: $(cat "$tmp/ps.err")"
	grep -q "$wrong.sock: an answer of type 1 and 8 bytes, not a hello" "$tmp/ps.err" ||
		fail "no error for the wrong hello: $(cat "$tmp/ps.err")"
	grep -qF "$deny.sock: \\x1b[2Jno" "$tmp/ps.err" ||
		fail "the refusal text not shown escaped: $(cat "$tmp/ps.err")"
	grep -q "$silent.sock: attach: reading a message header" "$tmp/ps.err" ||
		fail "no error for the silent listener: $(cat "$tmp/ps.err")"
	! grep -q "$(printf '\033')" "$tmp/ps.err" "$tmp/ps.out" || fail "an escape byte reached the output"
	for f in $big $wrong $deny $silent; do
		awk -v p="$f" '$1 == p { exit 1 }' "$tmp/ps.out" || fail "fake $f listed"
	done
}

directory_not_ours_makes_program_unattachable() { # case
	need_root
	d=/tmp/ringtrace-65534
	as_user 65534 "$rt" ps >/dev/null # (its stale sockets cleared)
	[ ! -e "$d" ] || rm -rf "$d"
	mkdir -m 0777 "$d" # root's, open to all: not the user's
	out=$(as_user 65534 env RINGTRACE_ATTACH=1 "$demo" --seconds 0.2 --threads 1 2>&1 >/dev/null) ||
		{ rm -rf "$d"; fail "the demo failed: $out"; }
	n=$(find "$d" -name '*.sock' | wc -l)
	rm -rf "$d"
	[ "$n" = 0 ] || fail "a socket in a directory that is not the user's"
	echo "$out" | grep -q "not attachable: attach directory $d: not a directory of uid 65534" ||
		fail "no message saying why: $out"
}

rt_run_cases "$@"
