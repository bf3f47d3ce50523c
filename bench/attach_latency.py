#!/usr/bin/env python3
"""Attach and detach latency of `ringtrace record -p` (its targets: under 50 ms each).

    bench/attach_latency.py [--bin build/bin] [--rounds 20]

Starts the demo (build/bin/ringtrace-demo, 2 threads, a real workload, 60 s at most) and
attaches to it ROUNDS times, each for 0.2 s, after a first attach that is
reported on its own (a process's first session pays once-only costs). For
each round:

  first event  the command's start (CLOCK_MONOTONIC, taken here just before
               running it) to the first event in the trace (the earliest
               stream's first timestamp, `ringtrace stat`: the trace clock
               is CLOCK_MONOTONIC's, docs/format.md)
  attached     what the command says: its start to the program's OK
  detached     what the command says: STOP sent to the last STOPPED
               (the program has flushed, drained and written the trace)

and prints median and max of each in ms.
"""
import argparse, os, re, shutil, statistics, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin"))
ap.add_argument("--rounds", type=int, default=20)
a = ap.parse_args()
rt = os.path.join(a.bin, "ringtrace")
demo = subprocess.Popen([os.path.join(a.bin, "ringtrace-demo"), "--seconds", "60", "--threads", "2"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
tmp = tempfile.mkdtemp(prefix="rt-attach-lat-")
try:
    # its socket, where the library makes it for this user (docs/attach.md)
    uid = os.geteuid()
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    dirs = ["/run/ringtrace"] if uid == 0 else \
        ([xdg + "/ringtrace"] if xdg else []) + ["/run/user/%d/ringtrace" % uid, "/tmp/ringtrace-%d" % uid]
    for _ in range(100):
        if any(os.path.exists("%s/%d.sock" % (d, demo.pid)) for d in dirs):
            break
        time.sleep(0.05)
    time.sleep(0.2)
    if demo.poll() is not None:
        sys.exit("the demo exited (status %d)" % demo.returncode)
    rows = []
    for i in range(a.rounds + 1):
        out = os.path.join(tmp, "t%d" % i)
        t0 = time.monotonic()
        r = subprocess.run([rt, "record", "-p", str(demo.pid), "--duration", "0.2", "-o", out],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("record -p failed: " + r.stderr)
        att = float(re.search(r"attached in ([0-9.]+) ms", r.stderr).group(1))
        det = float(re.search(r"detached in ([0-9.]+) ms", r.stderr).group(1))
        sub = os.path.join(out, os.listdir(out)[0])
        st = subprocess.run([rt, "stat", sub], capture_output=True, text=True).stdout
        firsts = [float(m.group(1)) for m in re.finditer(r"\s([0-9]+\.[0-9]+) \.\. ", st)]
        if not firsts:
            sys.exit("no time span in: " + st)
        rows.append(((min(firsts) - t0) * 1e3, att, det))
        shutil.rmtree(out)
    first, rest = rows[0], rows[1:]
    print("first attach of the process: first event %.1f ms, attached %.1f ms, detached %.1f ms"
          % first)
    for k, name in enumerate(["first event", "attached", "detached"]):
        v = [r[k] for r in rest]
        print("%-12s median %6.1f ms  max %6.1f ms  (%d rounds)"
              % (name, statistics.median(v), max(v), len(v)))
finally:
    demo.kill()
    demo.wait()
    shutil.rmtree(tmp, ignore_errors=True)
