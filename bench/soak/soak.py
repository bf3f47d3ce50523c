#!/usr/bin/python3
"""bench/soak: ringtrace recording at full rate for a long time (a benchmark run
by hand, not in CI; docs/reliability.md, section "Soak").

Three programs (ringtrace-soak-prog: THREADS workers emitting sequence
numbers as fast as they can) run at once, one per way of recording:

  overwrite  `ringtrace record --overwrite -- PROG` for the whole run (the
             flight recorder); `ringtrace snapshot PID` every second, each
             snapshot checked (every thread's window gapless but for the
             events counted as overwritten before and inside it, and moving
             forward), then deleted; at the end its trace checked against
             the program's emitted counts.
  attach     PROG running for the whole run, not recorded; every
             --attach-every seconds `ringtrace record -p PID --duration
             --attach-for` attaches, records and detaches (discard mode);
             each trace checked (every gap between two events of a thread
             counted as dropped), then deleted.
  discard    every minute, `ringtrace record -- PROG --seconds --discard-for`
             (discard mode, from the program's first event to its exit);
             each trace checked exactly against the program's emitted counts
             (per thread: in the trace + counted as lost = emitted), then
             deleted.

A discard-mode recording at full rate writes about 1 GB/s: an hour of one
would need terabytes, so discard mode is recorded in short windows (the
attached sessions and the minute's run) while the long-lived processes (the
overwrite program and its recorder, the attached program, in which hundreds
of sessions start and stop) show what memory does over the hour.

Every --sample seconds a CSV row (OUT/soak.csv): per process (its VmRSS,
VmHWM in KiB and open descriptors), the /dev/shm objects of our programs'
pools, the rendezvous directory's socket files, and the accounting so far
(events emitted by the programs, read from checked traces, counted as lost
in them, unexplained). Every minute a line in OUT/soak.log with that
minute's checks. At the end OUT/summary.txt; bench/soak/soak_plot.py draws
the resident memory from the CSV.

  bench/soak/soak.py [--build build] [--duration 3600] [--out DIR] ...
Exit status 0 if nothing was unexplained and every check ran, 1 otherwise.
"""
import argparse
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time

ROLES = ("ow_prog", "ow_rec", "att_prog", "att_rec", "disc_prog", "disc_rec")
SHORT = ("att_rec", "disc_prog", "disc_rec")


def parse_args():
    p = argparse.ArgumentParser(description="ringtrace soak benchmark (see the file's header)")
    p.add_argument("--build", default="build", help="build directory (its bin/ has the programs)")
    p.add_argument("--duration", type=float, default=3600, help="seconds (default 3600)")
    p.add_argument("--out", default=None, help="results directory (default /work/soak-run/soak-TIME)")
    p.add_argument("--traces", default=None,
                   help="where traces go while they are checked (default /dev/shm/ringtrace-soak-PID)")
    p.add_argument("--threads", type=int, default=2, help="writing threads per program (default 2)")
    p.add_argument("--attach-every", type=float, default=10, help="seconds between attaches (10)")
    p.add_argument("--attach-for", type=float, default=1, help="seconds attached (1)")
    p.add_argument("--discard-for", type=float, default=2, help="seconds of the minute's run (2)")
    p.add_argument("--sample", type=float, default=5, help="seconds between CSV rows (5)")
    p.add_argument("--max-backlog", type=int, default=100,
                   help="traces waiting for their check beyond which no new one is made (100)")
    return p.parse_args()


def proc_status(pid):
    """(VmRSS KiB, VmHWM KiB, open descriptors) of a live process, or None."""
    if pid is None:
        return None
    try:
        rss = hwm = None
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
                elif line.startswith("State:") and line.split()[1] == "Z":
                    return None
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        if rss is None:
            return None
        return rss, hwm, fds
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def pool_maps(pid):
    """Ring buffer pools mapped by a process (memfd or /dev/shm objects named
    ringtrace), counted once each."""
    if pid is None:
        return ""
    names = set()
    try:
        with open(f"/proc/{pid}/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and ("memfd:ringtrace" in parts[5] or
                                        "/dev/shm/ringtrace" in parts[5]):
                    names.add((parts[3], parts[4]))  # device, inode
    except (FileNotFoundError, ProcessLookupError):
        return ""
    return str(len(names))


def child_pid(pid, timeout=10.0):
    """The child of `ringtrace record -- CMD` (the program), once it exists."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    kids = f.read().split()
                if kids:
                    return int(kids[0])
        except FileNotFoundError:
            return None
        time.sleep(0.02)
    return None


def rendezvous_dir():
    """Where our programs' sockets are (docs/attach.md: root's is /run/ringtrace)."""
    x = os.environ.get("XDG_RUNTIME_DIR")
    uid = os.geteuid()
    cands = ["/run/ringtrace"] if uid == 0 else []
    cands += ([os.path.join(x, "ringtrace")] if x else []) + [f"/run/user/{uid}/ringtrace",
                                                               f"/tmp/ringtrace-{uid}"]
    for d in cands:
        if os.path.isdir(d):
            return d
    return None


def parse_check(out):
    """The checker's key=value line, and its problem lines."""
    vals, problems = {}, []
    for line in out.splitlines():
        if line.startswith("problem: "):
            problems.append(line[9:])
        elif line.startswith("streams="):
            for kv in line.split():
                k, v = kv.split("=", 1)
                vals[k] = int(v)
    return vals, problems


class Soak:
    def __init__(self, a):
        self.a = a
        self.bin = os.path.abspath(os.path.join(a.build, "bin"))
        self.rt = os.path.join(self.bin, "ringtrace")
        self.prog = os.path.join(self.bin, "ringtrace-soak-prog")
        self.check_bin = os.path.join(self.bin, "ringtrace-soak-check")
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        self.out = os.path.abspath(a.out or f"/work/soak-run/soak-{stamp}")
        self.tr = os.path.abspath(a.traces or f"/dev/shm/ringtrace-soak-{os.getpid()}")
        os.makedirs(self.out, exist_ok=True)
        os.makedirs(self.tr, exist_ok=False)
        self.log_f = open(os.path.join(self.out, "soak.log"), "a", buffering=1)
        self.lock = threading.Lock()
        self.pids = dict.fromkeys(ROLES)
        # short-lived processes: the peak of each run, sampled while it runs
        # (every poll), kept for the CSV until the next run ends
        self.peak = {r: None for r in SHORT}
        self.running_peak = {r: None for r in SHORT}
        self.our_prog_pids = set()
        self.our_rec_pids = set()  # pools in /dev/shm are named after the recorder command
        # accounting so far
        self.acc = dict(emitted_disc=0, emitted_ow=0, att_calls=0, read=0, lost=0, dropped=0, overrun=0, unexplained=0,
                        snapshots=0, snapshots_checked=0, attaches=0, attaches_checked=0,
                        phases=0, phases_checked=0, check_failures=0, skipped_behind=0)
        self.minute = dict(snapshots=0, attaches=0, phases=0, unexplained=0, problems=[])
        # per kind of trace: traces checked, events read, counted as lost, unexplained
        self.kinds = {k: dict(traces=0, events=0, dropped=0, overrun=0, tail_lost=0,
                              unexplained=0) for k in ("snapshot", "attach", "phase", "final")}
        self.checks = queue.Queue()
        self.snap_last = {}  # per worker (last_W): its last seq in the latest snapshot
        self.started = time.monotonic()

    def log(self, msg):
        line = f"{time.strftime('%H:%M:%S', time.gmtime())} +{time.monotonic() - self.started:7.1f}s {msg}"
        self.log_f.write(line + "\n")
        print(line, flush=True)

    # ---- the checks (one thread: a trace is checked, then deleted) --------
    def run_check(self, kind, path, extra):
        r = subprocess.run(["nice", "-n", "10", self.check_bin] + extra + [path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        vals, problems = parse_check(r.stdout)
        if r.returncode == 2 or "unexplained" not in vals:
            problems.append(f"checker failed (status {r.returncode}): {r.stderr.strip()}")
        return vals, problems

    def account(self, kind, name, vals, problems):
        with self.lock:
            if "unexplained" in vals:
                kd = self.kinds[kind]
                kd["traces"] += 1
                for k in ("events", "dropped", "overrun", "tail_lost", "unexplained"):
                    kd[k] += vals[k]
            if "unexplained" not in vals:
                self.acc["check_failures"] += 1
            else:
                if kind != "snapshot":  # a snapshot's events are counted again in the next ones
                    for k in ("read", "lost", "dropped", "overrun"):
                        self.acc[k] += vals["events" if k == "read" else k]
                self.acc["unexplained"] += vals["unexplained"]
                self.minute["unexplained"] += vals["unexplained"]
            self.acc[{"snapshot": "snapshots_checked", "attach": "attaches_checked",
                      "phase": "phases_checked"}[kind]] += 1
            self.minute[{"snapshot": "snapshots", "attach": "attaches", "phase": "phases"}[kind]] += 1
            for p in problems:
                self.minute["problems"].append(f"{kind} {name}: {p}")
        if problems or vals.get("unexplained"):
            self.log(f"CHECK {kind} {name}: {vals} {problems[:5]}")

    def checker(self):
        while True:
            item = self.checks.get()
            if item is None:
                return
            kind, path, extra, cleanup = item
            name = os.path.basename(path)
            vals, problems = self.run_check(kind, path, extra)
            if kind == "snapshot":
                # the window never goes back: each thread's last event in a
                # snapshot is no earlier than in the one before (a thread can
                # have no page in a snapshot: the sum over the threads in it
                # is no measure)
                for k, v in vals.items():
                    if k.startswith("last_") and k != "last_sum":
                        if v < self.snap_last.get(k, 0):
                            problems.append(f"window went back: {k} {v} after "
                                            f"{self.snap_last[k]}")
                            vals["unexplained"] = vals.get("unexplained", 0) + 1
                        self.snap_last[k] = max(self.snap_last.get(k, 0), v)
            if kind == "phase":
                with self.lock:
                    self.acc["emitted_disc"] += extra_emitted(extra)
            self.account(kind, name, vals, problems)
            for c in cleanup:
                shutil.rmtree(c, ignore_errors=True) if os.path.isdir(c) else _unlink(c)

    # ---- the three programs -----------------------------------------------
    def start_overwrite(self):
        self.ow_counts = os.path.join(self.out, "ow.counts")
        self.ow_dir = os.path.join(self.tr, "ow")
        self.ow_rec = subprocess.Popen(
            ["nice", "-n", "10", self.rt, "record", "--overwrite", "-o", self.ow_dir, "--",
             self.prog, "--threads", str(self.a.threads), "--counts", self.ow_counts],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.pids["ow_rec"] = self.ow_rec.pid
        self.our_rec_pids.add(self.ow_rec.pid)
        self.pids["ow_prog"] = child_pid(self.ow_rec.pid)
        self.our_prog_pids.add(self.pids["ow_prog"])
        self.ow_stderr = open(os.path.join(self.out, "ow.stderr"), "w", buffering=1)
        threading.Thread(target=self.read_ow_stderr, daemon=True).start()

    def read_ow_stderr(self):
        prefix = "ringtrace: snapshot written to "
        for line in self.ow_rec.stderr:
            if line.startswith(prefix):
                self.checks.put(("snapshot", line[len(prefix):].strip(), ["--head-counted"],
                                 [line[len(prefix):].strip()]))
            else:
                self.ow_stderr.write(line)

    def start_attach_target(self):
        self.att_counts = os.path.join(self.out, "att.counts")
        self.att = subprocess.Popen(["nice", "-n", "10", self.prog, "--threads",
                                     str(self.a.threads), "--counts", self.att_counts])
        self.pids["att_prog"] = self.att.pid
        self.our_prog_pids.add(self.att.pid)
        self.att_rec = None
        self.att_n = 0

    def attach_start(self):
        self.att_n += 1
        d = os.path.join(self.tr, f"att-{self.att_n}")
        self.att_rec_dir = d
        self.att_rec = subprocess.Popen(
            ["nice", "-n", "10", self.rt, "record", "-q", "-p", str(self.att.pid), "--duration",
             str(self.a.attach_for), "-o", d],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.out, "att.stderr"), "a"))
        self.pids["att_rec"] = self.att_rec.pid
        self.our_rec_pids.add(self.att_rec.pid)
        with self.lock:
            self.acc["attaches"] += 1

    def track(self, r):
        """The running peak (RSS, HWM, descriptors) of a short-lived process."""
        st = proc_status(self.pids[r])
        if st:
            p = self.running_peak[r]
            self.running_peak[r] = st if p is None else tuple(max(x, y) for x, y in zip(p, st))

    def ended(self, r):
        self.pids[r] = None
        if self.running_peak[r]:
            self.peak[r] = self.running_peak[r]
        self.running_peak[r] = None

    def attach_poll(self):
        if self.att_rec is None:
            return
        self.track("att_rec")
        if self.att_rec.poll() is None:
            return
        rc = self.att_rec.returncode
        d = self.att_rec_dir
        self.att_rec = None
        self.ended("att_rec")
        traces = [root for root, _, files in os.walk(d) if "metadata" in files]
        if rc != 0 or len(traces) != 1:
            with self.lock:
                self.acc["check_failures"] += 1
                self.minute["problems"].append(f"attach {d}: status {rc}, {len(traces)} traces")
            self.log(f"ATTACH FAILED {d}: status {rc}, traces {traces}")
            shutil.rmtree(d, ignore_errors=True)
            return
        self.checks.put(("attach", traces[0], [], [d]))

    def phase_start(self, n):
        d = os.path.join(self.tr, f"disc-{n}")
        counts = os.path.join(self.out, f"disc-{n}.counts")
        self.disc_dir, self.disc_counts = d, counts
        self.disc_rec = subprocess.Popen(
            ["nice", "-n", "10", self.rt, "record", "-q", "-o", d, "--", self.prog, "--threads",
             str(self.a.threads), "--seconds", str(self.a.discard_for), "--counts", counts],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.out, "disc.stderr"), "a"))
        self.pids["disc_rec"] = self.disc_rec.pid
        self.our_rec_pids.add(self.disc_rec.pid)
        self.pids["disc_prog"] = child_pid(self.disc_rec.pid)
        if self.pids["disc_prog"]:
            self.our_prog_pids.add(self.pids["disc_prog"])
        with self.lock:
            self.acc["phases"] += 1

    def phase_poll(self):
        if self.disc_rec is None:
            return
        self.track("disc_prog")
        self.track("disc_rec")
        if self.disc_rec.poll() is None:
            return
        rc = self.disc_rec.returncode
        self.disc_rec = None
        self.ended("disc_rec")
        self.ended("disc_prog")
        if rc != 0:
            with self.lock:
                self.acc["check_failures"] += 1
                self.minute["problems"].append(f"discard run {self.disc_dir}: status {rc}")
            self.log(f"DISCARD RUN FAILED {self.disc_dir}: status {rc}")
        self.checks.put(("phase", self.disc_dir, ["--head-counted", "--counts", self.disc_counts],
                         [self.disc_dir, self.disc_counts]))

    # ---- sampling ----------------------------------------------------------
    def shm_objects(self):
        """Our pools in /dev/shm: ringtrace-rec-PID-RANDOM, PID the recorder's."""
        ours = self.our_rec_pids | self.our_prog_pids
        n = 0
        for name in os.listdir("/dev/shm"):
            parts = name.split("-")
            if len(parts) >= 3 and parts[0] == "ringtrace" and parts[1] == "rec":
                if parts[2].isdigit() and int(parts[2]) in ours:
                    n += 1
        return n

    def sockets(self):
        d = rendezvous_dir()
        if not d:
            return 0
        ours = {f"{p}.sock" for p in self.our_prog_pids}
        return sum(1 for n in os.listdir(d) if n in ours)

    def sample(self, w):
        row = [f"{time.monotonic() - self.started:.1f}"]
        for r in ROLES:
            st = proc_status(self.pids[r]) if r not in SHORT else self.peak[r]
            row += [str(v) for v in st] if st else ["", "", ""]
        with self.lock:
            acc = dict(self.acc)
        row += [pool_maps(self.pids["ow_prog"]), pool_maps(self.pids["att_prog"]),
                str(self.shm_objects()), str(self.sockets()), str(read_emitted(self.ow_counts)),
                str(acc["emitted_disc"]), str(read_emitted(self.att_counts)), str(acc["read"]), str(acc["lost"]), str(acc["unexplained"]),
                str(acc["snapshots_checked"]), str(acc["attaches_checked"]),
                str(acc["phases_checked"]), str(self.checks.qsize())]
        w.write(",".join(row) + "\n")
        w.flush()

    def minute_report(self, m):
        with self.lock:
            mi, self.minute = self.minute, dict(snapshots=0, attaches=0, phases=0,
                                                unexplained=0, problems=[])
            acc = dict(self.acc)
        self.log(f"minute {m}: checked {mi['snapshots']} snapshots, {mi['attaches']} attached "
                 f"traces, {mi['phases']} discard runs: unexplained {mi['unexplained']}, "
                 f"problems {len(mi['problems'])}; so far read {acc['read']}, lost (counted) "
                 f"{acc['lost']}, unexplained {acc['unexplained']}, failed checks "
                 f"{acc['check_failures']}; {self.checks.qsize()} traces waiting for their check, "
                 f"{acc['skipped_behind']} snapshots skipped while the checks were behind")
        for p in mi["problems"][:10]:
            self.log(f"  {p}")

    # ---- the run -----------------------------------------------------------
    def run(self):
        a = self.a
        self.log(f"soak: {a.duration:.0f} s, {a.threads} threads a program, traces in {self.tr}, "
                 f"results in {self.out}")
        self.checker_thread = threading.Thread(target=self.checker, daemon=True)
        self.checker_thread.start()
        self.start_overwrite()
        self.start_attach_target()
        self.disc_rec = None
        if not self.pids["ow_prog"]:
            self.log("the overwrite-mode program did not start")
            return 1
        csv = open(os.path.join(self.out, "soak.csv"), "w")
        head = ["t_s"]
        for r in ROLES:
            head += [f"{r}_rss_kb", f"{r}_hwm_kb", f"{r}_fds"]
        head += ["ow_prog_pools", "att_prog_pools", "shm_objects", "sockets", "ow_emitted",
                 "disc_emitted", "att_calls", "read", "lost", "unexplained",
                 "snapshots_checked", "attaches_checked", "discard_runs_checked",
                 "checks_waiting"]
        csv.write(",".join(head) + "\n")
        time.sleep(0.5)  # the programs' first events, their pools and sockets
        self.sample(csv)
        t0 = time.monotonic()
        next_snap = t0 + 1
        next_attach = t0 + 2
        next_phase = t0 + 30
        next_sample = t0 + a.sample
        next_minute = t0 + 60
        minute = 0
        phase_n = 0
        while True:
            now = time.monotonic()
            if now - t0 >= a.duration:
                break
            if self.ow_rec.poll() is not None or self.att.poll() is not None:
                self.log("a long-lived program ended before its time")
                break
            # On a loaded machine the checks (niced) can fall behind: the
            # traces waiting for them fill /dev/shm. Beyond --max-backlog no
            # new trace is made (a skipped snapshot is counted) until they
            # catch up.
            behind = self.checks.qsize() > a.max_backlog
            if now >= next_snap:
                if behind:
                    with self.lock:
                        self.acc["skipped_behind"] += 1
                else:
                    subprocess.run([self.rt, "snapshot", str(self.pids["ow_prog"])])
                    with self.lock:
                        self.acc["snapshots"] += 1
                next_snap += 1
            self.attach_poll()
            if now >= next_attach and self.att_rec is None and not behind:
                self.attach_start()
                next_attach = max(next_attach + a.attach_every, now + a.attach_every)
            self.phase_poll()
            if now >= next_phase and self.disc_rec is None and not behind:
                phase_n += 1
                self.phase_start(phase_n)
                next_phase = max(next_phase + 60, now + 60)
            if now >= next_sample:
                self.sample(csv)
                next_sample += a.sample
            if now >= next_minute:
                minute += 1
                self.minute_report(minute)
                next_minute += 60
            time.sleep(max(0.0, min(next_snap, next_sample) - time.monotonic()) if
                       self.att_rec is None and self.disc_rec is None else 0.05)
        return self.finish(csv, minute)

    def finish(self, csv, minute):
        # the last attach and discard run end by themselves
        while self.att_rec is not None or self.disc_rec is not None:
            self.attach_poll()
            self.phase_poll()
            time.sleep(0.1)
        self.sample(csv)
        end_status = {r: proc_status(self.pids[r]) for r in ("ow_prog", "ow_rec", "att_prog")}
        # the overwrite-mode program ends: its session writes the buffer
        os.kill(self.pids["ow_prog"], signal.SIGTERM)
        self.att.send_signal(signal.SIGTERM)
        ow_rc = self.ow_rec.wait()
        att_rc = self.att.wait()
        self.checks.put(None)  # the checker ends after the checks queued before it
        self.checker_thread.join()
        vals, problems = self.run_check("final", self.ow_dir,
                                        ["--head-counted", "--counts", self.ow_counts])
        with self.lock:
            if "unexplained" in vals:
                kd = self.kinds["final"]
                kd["traces"] += 1
                for k in ("events", "dropped", "overrun", "tail_lost", "unexplained"):
                    kd[k] += vals[k]
                for k in ("read", "lost", "dropped", "overrun"):
                    self.acc[k] += vals["events" if k == "read" else k]
                self.acc["unexplained"] += vals["unexplained"]
            else:
                self.acc["check_failures"] += 1
            self.acc["emitted_ow"] = read_emitted(self.ow_counts)
            self.acc["att_calls"] = read_emitted(self.att_counts)
        self.log(f"overwrite-mode recording ended (status {ow_rc}), its trace: {vals} "
                 f"{problems[:5]}")
        self.log(f"attached program ended (status {att_rc})")
        self.minute_report(minute + 1)
        self.sample(csv)
        csv.close()
        shutil.rmtree(self.ow_dir, ignore_errors=True)
        left = os.listdir(self.tr)
        with open(os.path.join(self.out, "summary.txt"), "w") as f:
            for k, v in self.acc.items():
                f.write(f"{k} {v}\n")
            for k, kd in self.kinds.items():
                f.write(f"kind {k} " + " ".join(f"{x}={y}" for x, y in kd.items()) + "\n")
            for r in SHORT:
                f.write(f"peak_last {r} {self.peak[r]}\n")
            for r, st in end_status.items():
                f.write(f"end {r} " + (" ".join(map(str, st)) if st else "gone") + "\n")
            f.write(f"final_overwrite_trace {vals}\n")
            f.write(f"exit ow_rec {ow_rc} att_prog {att_rc}\n")
            f.write(f"traces_left {left}\n")
            f.write(f"shm_objects_after {self.shm_objects()} sockets_after {self.sockets()}\n")
        if not left:
            os.rmdir(self.tr)
        ok = self.acc["unexplained"] == 0 and self.acc["check_failures"] == 0 and \
            ow_rc == 0 and att_rc == 0
        self.log(f"done: {'OK' if ok else 'FAILED'}; {self.acc}")
        return 0 if ok else 1


def read_emitted(path):
    try:
        with open(path) as f:
            return sum(int(l.split()[3]) for l in f if l.startswith("worker "))
    except (FileNotFoundError, ValueError, IndexError):
        return 0


def extra_emitted(extra):
    return read_emitted(extra[extra.index("--counts") + 1]) if "--counts" in extra else 0


def _unlink(p):
    try:
        os.unlink(p)
    except FileNotFoundError:
        pass


def main():
    a = parse_args()
    s = Soak(a)
    try:
        return s.run()
    except KeyboardInterrupt:
        s.log("interrupted")
        return 1


if __name__ == "__main__":
    sys.exit(main())
