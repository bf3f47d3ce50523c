#!/usr/bin/env python3
"""What libringtrace adds to the start of a process that nobody traces.

Runs ringtrace-startup-plain (no library) against ringtrace-startup-static
and ringtrace-startup-shared (linked, one event defined, none called) in
alternated pairs, each a fresh process (posix_spawn, then wait4 for its
rusage), and prints per program the median CPU (user + system, from the
kernel's accounting of the child) and wall time (spawn to reaped), and the
ratio of each linked program's median to the plain one's. Each pair runs
its two programs in alternating order, so that a drift of the machine
weighs on both. Two environments: the default (no RINGTRACE_ variable) and
RINGTRACE_ATTACH=0 (no attach listener).

Times on a shared machine move with its load; --exact adds what does not:
the user-space instructions of each process (valgrind's callgrind, the
program's threads together), its system calls (strace -f) and its minor
page faults (the median of --pairs runs).

With --compare DIR (another build's bin folder, e.g. of the commit
before a change), each round runs three programs in rotated order: the
plain one, this build's linked one and DIR's; the ratios of both to the
plain one come from the same rounds, and --exact counts both builds.

    bench/startup/startup.py [--bin build/bin] [--pairs 50] [--exact] [--compare DIR]
"""
import re
import shutil
import subprocess
import argparse
import os
import statistics
import sys
import time


def run_once(path, env):
    """One process: (cpu_us, wall_us)."""
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(path, [path], env)
    _, status, ru = os.wait4(pid, 0)
    t1 = time.perf_counter_ns()
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        sys.exit(f"startup.py: {path} failed (status {status:#x})")
    return (ru.ru_utime + ru.ru_stime) * 1e6, (t1 - t0) / 1e3


def measure(plain, linked, env, pairs, other=None):
    """Alternated pairs (rotated triples with other); returns {path: ([cpu], [wall])}."""
    progs = [plain, linked] + ([other] if other else [])
    out = {p: ([], []) for p in progs}
    for i in range(pairs):
        k = i % len(progs)
        order = progs[k:] + progs[:k]
        for p in order:
            cpu, wall = run_once(p, env)
            out[p][0].append(cpu)
            out[p][1].append(wall)
    return out


def exact(path, env, pairs):
    """(instructions, system calls, minor faults) of one program in env."""
    ir = calls = None
    if shutil.which("valgrind"):
        r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", path],
                           env=env, capture_output=True, text=True)
        m = re.search(r"Collected : (\d+)", r.stderr)
        ir = int(m.group(1)) if m else None
    if shutil.which("strace"):
        r = subprocess.run(["strace", "-f", "-qq", path], env=env, capture_output=True, text=True)
        calls = sum(1 for ln in r.stderr.splitlines() if "(" in ln)
    faults = []
    for _ in range(pairs):
        pid = os.posix_spawn(path, [path], env)
        _, _, ru = os.wait4(pid, 0)
        faults.append(ru.ru_minflt)
    return ir, calls, statistics.median(faults)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="build/bin", help="folder of the ringtrace-startup-* programs")
    ap.add_argument("--pairs", type=int, default=50, help="alternated pairs per figure")
    ap.add_argument("--exact", action="store_true",
                    help="also instructions (callgrind), system calls (strace), page faults")
    ap.add_argument("--compare", metavar="DIR",
                    help="another build's bin folder, measured in the same rounds")
    a = ap.parse_args()
    if a.pairs < 1:
        sys.exit("startup.py: --pairs must be at least 1")
    plain = os.path.join(a.bin, "ringtrace-startup-plain")
    kinds = ("static", "shared")
    progs = [os.path.join(a.bin, "ringtrace-startup-" + k) for k in kinds]
    others = [os.path.join(a.compare, "ringtrace-startup-" + k) for k in kinds] \
        if a.compare else [None, None]
    for p in [plain] + progs + [o for o in others if o]:
        if not os.access(p, os.X_OK):
            sys.exit(f"startup.py: {p}: not found (build the ringtrace-startup-* targets)")
    base = {k: v for k, v in os.environ.items() if not k.startswith("RINGTRACE_")}
    envs = [("default", base), ("RINGTRACE_ATTACH=0", dict(base, RINGTRACE_ATTACH="0"))]
    for p in [plain] + progs + [o for o in others if o]:  # (warm the page cache and the loader's)
        run_once(p, base)
    rounds = "rotated triples" if a.compare else "alternated pairs"
    print(f"{a.pairs} {rounds} each; medians; CPU = user + system of the child")
    if a.compare:
        print(f"(program names: this build's; ...-cmp: {a.compare}'s)")
    print(f"{'environment':20} {'program':10} {'cpu us':>8} {'wall us':>8} {'cpu x':>6} {'wall x':>6}")
    for name, env in envs:
        for kind, linked, other in zip(kinds, progs, others):
            r = measure(plain, linked, env, a.pairs, other)
            pc, pw = statistics.median(r[plain][0]), statistics.median(r[plain][1])
            print(f"{name:20} {'plain':10} {pc:8.0f} {pw:8.0f}")
            for label, p in ((kind, linked), (kind + "-cmp", other)):
                if not p:
                    continue
                lc, lw = statistics.median(r[p][0]), statistics.median(r[p][1])
                print(f"{name:20} {label:10} {lc:8.0f} {lw:8.0f} "
                      f"{lc / pc if pc else float('nan'):6.2f} {lw / pw:6.2f}")
    if not a.exact:
        return
    print(f"\n{'environment':20} {'program':10} {'instr':>9} {'syscalls':>8} {'minflt':>6}")
    labelled = [("plain", plain)] + list(zip(kinds, progs)) + \
        [(k + "-cmp", o) for k, o in zip(kinds, others) if o]
    for name, env in envs:
        for label, p in labelled:
            ir, calls, faults = exact(p, env, a.pairs)
            print(f"{name:20} {label:10} {ir if ir is not None else '-':>9} "
                  f"{calls if calls is not None else '-':>8} {faults:6.0f}")


if __name__ == "__main__":
    main()
