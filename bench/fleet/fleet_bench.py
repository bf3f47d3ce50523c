#!/usr/bin/python3
"""bench/fleet: how fast `ringtrace load` fills ClickHouse (docs/fleet.md,
docs/benchmarks.md, section "Loading into ClickHouse"). A benchmark run by
hand, not in CI.

One run, on one trace and one local clickhouse-server of its own (a
temporary directory, loopback ports, stopped at the end):

  trace    `ringtrace record` of `ringtrace-demo --seconds S --threads T`
           (its events of four kinds with up to nine fields: one row in
           `event`, a slice per begin/end pair, a row in `args` per field),
           S chosen so that it holds about --events events (a first run of
           0.2 s measures the demo's rate), or --seconds.
  save     one `ringtrace load --save DIR` (not timed): the RowBinary body
           of every batch it sends, DIR/<table>.<n>.rowbinary.
  then ROUNDS rounds, the three in turn (each round starts with the next
  one, so that a drift of the machine falls on each alike):
  load     `ringtrace load` of the trace into empty tables of a fresh
           database: the process, start to end (the trace's import, the
           encoding, the INSERTs); rows/s of the rows it loaded;
  client   `clickhouse-client --query 'INSERT INTO db.t FORMAT RowBinary'
           < FILE` for every saved file, one after the other, into empty
           tables of another fresh database made as the loader makes them:
           the same rows, in the same format and batches, from files, as
           ClickHouse's own client sends them; rows/s;
  sqlite   `ringtrace query --db FILE DIR`: the same trace imported into
           SQLite, the process, start to end; rows/s of the rows of FILE's
           tables that hold the trace's rows (its per-event tables counted
           as the fleet's `event`).

Checks: the client's tables hold exactly the rows the loader loaded, table
by table. Prints the medians, the ratios load/client (target >= 0.80: of
the medians, and per round) and load/sqlite, the state of the machine (load average, CPUs, memory) before
and after, and, with --phases, where the loader's time goes (the import
alone, `ringtrace query -v`; the server's share, the client's time).

  bench/fleet/fleet_bench.py [--build build] [--events 3000000 | --seconds S]
                             [--threads 3] [--rounds 3] [--batch-rows N]
                             [--trace DIR] [--work DIR] [--keep] [--phases]
Exit status 0 if every step ran and every check held, 1 otherwise.
"""
import argparse
import os
import re
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

PASSWORD = "fleet-bench"


def parse_args():
    p = argparse.ArgumentParser(description="ringtrace load against clickhouse-client and SQLite (see the file's header)")
    p.add_argument("--build", default="build", help="build directory (its bin/ has ringtrace and ringtrace-demo)")
    p.add_argument("--events", type=int, default=3000000,
                   help="about how many events the trace holds (default 3000000): the demo runs as long as a short "
                        "first run says it takes")
    p.add_argument("--seconds", type=float, default=0, help="the demo's run instead of --events")
    p.add_argument("--threads", type=int, default=3, help="the demo's threads (default 3)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of the three (default 3)")
    p.add_argument("--batch-rows", type=int, default=0, help="ringtrace load --batch-rows (default: its own)")
    p.add_argument("--work", default=None, help="working directory (default: a new one under /tmp)")
    p.add_argument("--trace", default=None, help="a trace to use instead of recording one")
    p.add_argument("--keep", action="store_true", help="keep the working directory")
    p.add_argument("--phases", action="store_true", help="also time the import alone (ringtrace query -v)")
    return p.parse_args()


def machine_state():
    with open("/proc/loadavg") as f:
        la = " ".join(f.read().split()[:3])
    mem = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":", 1)
            mem[k] = int(v.split()[0])
    model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return "load average %s; %d CPUs (%s); memory available %.1f of %.1f GiB" % (
        la, os.cpu_count(), model, mem.get("MemAvailable", 0) / 2**20, mem.get("MemTotal", 0) / 2**20)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    """One clickhouse-server of our own in DIR, on free loopback ports."""

    def __init__(self, d):
        self.dir = d
        self.http = free_port()
        self.tcp = free_port()
        for sub in ("data", "tmp", "log", "user_files"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        with open(os.path.join(d, "config.xml"), "w") as f:
            f.write("""<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{d}/log/server.log</log><errorlog>{d}/log/error.log</errorlog></logger>
  <http_port>{h}</http_port>
  <tcp_port>{t}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>{d}/data/</path>
  <tmp_path>{d}/tmp/</tmp_path>
  <user_files_path>{d}/user_files/</user_files_path>
  <users_config>{d}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>536870912</mark_cache_size>
</yandex>
""".format(d=d, h=self.http, t=self.tcp))
        with open(os.path.join(d, "users.xml"), "w") as f:
            f.write("""<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>10000000000</max_memory_usage></default></profiles>
  <users><default><password>{p}</password><networks><ip>127.0.0.1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
    <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
""".format(p=PASSWORD))
        # clickhouse-client reads the password from its configuration file, not argv
        self.client_conf = os.path.join(d, "client.xml")
        with open(self.client_conf, "w") as f:
            f.write("<config><user>default</user><password>%s</password></config>\n" % PASSWORD)
        os.chmod(self.client_conf, 0o600)
        self.proc = subprocess.Popen(["clickhouse-server", "--config-file=" + os.path.join(d, "config.xml")],
                                     stdin=subprocess.DEVNULL, stdout=open(os.path.join(d, "log", "stdout"), "w"),
                                     stderr=subprocess.STDOUT)
        self.url = "http://127.0.0.1:%d" % self.http
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise SystemExit("clickhouse-server exited at start (%s/log)" % d)
            try:
                if urllib.request.urlopen(self.url + "/ping", timeout=1).read().strip() == b"Ok.":
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("clickhouse-server did not answer /ping in 60 s (%s/log)" % d)
            time.sleep(0.1)

    def sql(self, q):
        req = urllib.request.Request(self.url + "/", data=q.encode(),
                                     headers={"X-ClickHouse-User": "default", "X-ClickHouse-Key": PASSWORD})
        try:
            return urllib.request.urlopen(req, timeout=600).read().decode()
        except urllib.error.HTTPError as e:
            raise SystemExit("clickhouse-server: %s: %s" % (q[:80], e.read().decode()[:400]))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def run_timed(cmd, env=None, stdin=None):
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, stdin=stdin if stdin is not None else subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit("%s: exit %d: %s" % (" ".join(cmd[:3]), p.returncode, p.stderr.decode()[-600:]))
    return t, p.stdout.decode(), p.stderr.decode()


def table_counts(srv, db, tables):
    out = {}
    for t in tables:
        out[t] = int(srv.sql("SELECT count() FROM `%s`.`%s`" % (db, t)).strip())
    return out


def copy_tables(srv, src, dst, tables):
    """Empty tables in dst made exactly as the loader made src's."""
    srv.sql("CREATE DATABASE `%s`" % dst)
    for t in tables:
        ddl = srv.sql("SHOW CREATE TABLE `%s`.`%s` FORMAT TSVRaw" % (src, t)).strip()
        ddl = ddl.replace("CREATE TABLE %s.%s " % (src, t), "CREATE TABLE %s.%s " % (dst, t), 1)
        if not ddl.startswith("CREATE TABLE %s.%s " % (dst, t)):
            raise SystemExit("unexpected SHOW CREATE TABLE answer: %s" % ddl[:120])
        srv.sql(ddl)


def sqlite_rows(path):
    """Rows of FILE's tables that hold the trace's rows (the fleet's tables'
    counterparts; the per-event tables stand for `event`)."""
    db = sqlite3.connect(path)
    names = ["process", "thread", "slice", "counter_track", "counter", "args", "ftrace_event",
             "sched_slice", "thread_state", "loss", "stats"]
    names += [r[0] for r in db.execute("SELECT table_name FROM event_table")]
    total = 0
    for n in names:
        total += db.execute('SELECT count(*) FROM "%s"' % n.replace('"', '""')).fetchone()[0]
    db.close()
    return total


def main():
    a = parse_args()
    rt = os.path.join(a.build, "bin", "ringtrace")
    demo = os.path.join(a.build, "bin", "ringtrace-demo")
    work = a.work or tempfile.mkdtemp(prefix="rt-fleet-bench-")
    os.makedirs(work, exist_ok=True)
    print("machine before: " + machine_state())
    srv = Server(os.path.join(work, "server"))
    ok = True
    try:
        print("server: %s (HTTP %d, TCP %d)" % (srv.sql("SELECT version()").strip(), srv.http, srv.tcp))
        trace = a.trace
        if not trace:
            trace = os.path.join(work, "trace")
            shutil.rmtree(trace, ignore_errors=True)
            seconds = a.seconds
            if not seconds:
                # the demo's rate on this machine now, from 0.2 s of it
                probe = os.path.join(work, "probe")
                shutil.rmtree(probe, ignore_errors=True)
                run_timed([rt, "record", "-q", "-o", probe, "--", demo, "--seconds", "0.2",
                           "--threads", str(a.threads)])
                _, pe, _ = run_timed([rt, "query", "--format", "csv", probe,
                                      "SELECT sum(value) FROM stats WHERE name = 'events'"])
                shutil.rmtree(probe, ignore_errors=True)
                seconds = min(30.0, max(0.2, 0.2 * a.events / max(1, int(pe.split()[-1]))))
            run_timed([rt, "record", "-q", "-o", trace, "--", demo, "--seconds", "%.2f" % seconds,
                       "--threads", str(a.threads)])
        _, ev, _ = run_timed([rt, "query", "--format", "csv", trace,
                              "SELECT sum(value) FROM stats WHERE name = 'events'"])
        events = int(ev.split()[-1])
        print("trace: %s, %d events, %.1f MB" % (trace, events, sum(
            os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(trace) for f in fs) / 1e6))

        env = dict(os.environ, RINGTRACE_CLICKHOUSE_PASSWORD=PASSWORD)
        env.pop("RINGTRACE_CLICKHOUSE_USER", None)
        base = [rt, "load", "--clickhouse", srv.url]
        if a.batch_rows:
            base += ["--batch-rows", str(a.batch_rows)]
        save = os.path.join(work, "save")
        shutil.rmtree(save, ignore_errors=True)
        os.makedirs(save)
        _, out, _ = run_timed(base + ["--database", "fb_save", "--create", "--save", save, trace], env=env)
        print("save run: " + out.strip())
        tables = [l for l in srv.sql("SELECT name FROM system.tables WHERE database = 'fb_save' ORDER BY name").split()]
        data_tables = [t for t in tables if t != "loads"]
        want = table_counts(srv, "fb_save", data_tables)
        rows = sum(want.values())
        files = sorted(f for f in os.listdir(save) if f.endswith(".rowbinary") and not f.startswith("loads."))
        fbytes = sum(os.path.getsize(os.path.join(save, f)) for f in files)
        print("rows: %d in %d tables (%s); %d files, %.1f MB of RowBinary" % (
            rows, len(data_tables), ", ".join("%s %d" % (t, n) for t, n in want.items() if n), len(files), fbytes / 1e6))

        res = {"load": [], "client": [], "sqlite": []}
        sq_rows = None

        def do_load(r):
            db = "fb_l%d" % r
            copy_tables(srv, "fb_save", db, tables)
            t, out, _ = run_timed(base + ["--database", db, trace], env=env)
            got = table_counts(srv, db, data_tables)
            if got != want:
                raise SystemExit("round %d: the loader's rows %s, the saved run's %s" % (r, got, want))
            m = re.search(r"in ([0-9.]+) s", out)
            res["load"].append(rows / t)
            print("  load    %.2f s, %.0f rows/s (its own line: %s)" % (t, rows / t, m.group(0) if m else out.strip()))
            srv.sql("DROP DATABASE `%s`" % db)

        def do_client(r):
            db = "fb_c%d" % r
            copy_tables(srv, "fb_save", db, tables)
            t = 0.0
            for f in files:
                table = f.split(".")[0]
                with open(os.path.join(save, f), "rb") as fh:
                    dt, _, _ = run_timed(["clickhouse-client", "--config-file", srv.client_conf, "--port", str(srv.tcp),
                                          "--query", "INSERT INTO %s.%s FORMAT RowBinary" % (db, table)], stdin=fh)
                t += dt
            got = table_counts(srv, db, data_tables)
            if got != want:
                raise SystemExit("round %d: clickhouse-client's rows %s, the loader's %s" % (r, got, want))
            res["client"].append(rows / t)
            print("  client  %.2f s, %.0f rows/s" % (t, rows / t))
            srv.sql("DROP DATABASE `%s`" % db)

        def do_sqlite(r):
            nonlocal sq_rows
            f = os.path.join(work, "r%d.db" % r)
            t, _, _ = run_timed([rt, "query", "--db", f, trace])
            n = sqlite_rows(f)
            sq_rows = n
            res["sqlite"].append(n / t)
            print("  sqlite  %.2f s, %.0f rows/s (%d rows)" % (t, n / t, n))
            os.unlink(f)

        steps = [do_load, do_client, do_sqlite]
        for r in range(a.rounds):
            print("round %d (%s)" % (r + 1, time.strftime("%H:%M:%S")))
            for i in range(3):
                steps[(r + i) % 3](r)

        med = {k: statistics.median(v) for k, v in res.items()}
        print()
        print("rows: fleet %d, SQLite %d; %d events" % (rows, sq_rows, events))
        for k in ("load", "client", "sqlite"):
            print("%-7s median %10.0f rows/s  (rounds: %s)" % (k, med[k], ", ".join("%.0f" % v for v in res[k])))
        ratio = med["load"] / med["client"]
        # the same ratio round by round: the two ran a minute apart, not
        # hours, so a round's ratio is less at the mercy of the machine's drift
        per = [l / c for l, c in zip(res["load"], res["client"])]
        print("load / client: %.3f of the medians (target >= 0.80) %s; per round %s, median %.3f" % (
            ratio, "ok" if ratio >= 0.80 else "MISSED", ", ".join("%.3f" % r for r in per), statistics.median(per)))
        print("load / sqlite: %.3f" % (med["load"] / med["sqlite"]))
        if a.phases:
            t, _, err = run_timed([rt, "query", "-v", trace, "SELECT 1"])
            print("phases: the import alone (ringtrace query -v): %.2f s; %s" % (t, err.strip().splitlines()[0] if err.strip() else ""))
            print("        clickhouse-client with the same rows: %.2f s; the loader: %.2f s (medians)" % (
                rows / med["client"], rows / med["load"]))
    except SystemExit as e:
        print("fleet_bench: %s" % e, file=sys.stderr)
        ok = False
    finally:
        srv.stop()
        print("machine after: " + machine_state())
        if not a.keep and not a.work:
            shutil.rmtree(work, ignore_errors=True)
        elif a.keep:
            print("kept: " + work)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
