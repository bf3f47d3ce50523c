#!/usr/bin/python3
"""Resident memory over time from bench/soak's CSV, drawn as an SVG (written
directly: no plotting library needed).

  bench/soak/soak_plot.py SOAK_CSV OUT_SVG [--title TEXT] [--table]

--table also prints, as a Markdown table, each process's resident memory
(first sample, last, maximum, and its VmHWM at the end) and descriptors
(first and last sample, maximum).

One line per process: the long-lived ones (the overwrite-mode program and
its `ringtrace record`, the program attached to and detached from) as
sampled; the short-lived ones (each attach's `ringtrace record -p`, the
minute's discard-mode program and its `ringtrace record`) as the peak of
their latest run.
"""
import argparse
import csv
import sys

SERIES = (
    ("ow_prog_rss_kb", "overwrite-mode program (recorder thread inside)", "#1f77b4", ""),
    ("ow_rec_rss_kb", "its `ringtrace record -- CMD`", "#1f77b4", "6,4"),
    ("att_prog_rss_kb", "program attached to, detached from", "#d62728", ""),
    ("att_prog_hwm_kb", "  its peak (VmHWM: while attached)", "#d62728", "2,3"),
    ("att_rec_rss_kb", "`ringtrace record -p` (latest run's peak)", "#d62728", "6,4"),
    ("disc_prog_rss_kb", "discard-mode program (latest run's peak)", "#2ca02c", ""),
    ("disc_rec_rss_kb", "its `ringtrace record -- CMD` (latest run's peak)", "#2ca02c", "6,4"),
)


def nice_step(span, target=6):
    raw = span / target
    mag = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1
    for m in (1, 2, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("csv")
    p.add_argument("svg")
    p.add_argument("--table", action="store_true", help="print the Markdown table too")
    p.add_argument("--title", default="ringtrace soak: resident memory (VmRSS) over time")
    a = p.parse_args()
    with open(a.csv) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        print(f"soak_plot: {a.csv}: no rows", file=sys.stderr)
        return 1
    t = [float(r["t_s"]) / 60 for r in rows]
    data = []
    for key, label, color, dash in SERIES:
        pts = [(x, int(r[key]) / 1024) for x, r in zip(t, rows) if r.get(key)]
        if pts:
            data.append((label, color, dash, pts))
    ymax = max(y for *_, pts in data for _, y in pts) * 1.08
    xmax = max(t) if max(t) > 0 else 1
    W, H, L, R, T, B = 900, 540, 70, 20, 40, 200
    pw, ph = W - L - R, H - T - B

    def X(x):
        return L + x / xmax * pw

    def Y(y):
        return T + ph - y / ymax * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="15">{esc(a.title)}</text>']
    ys = nice_step(ymax)
    y = 0.0
    while y <= ymax:
        out.append(f'<line x1="{L}" y1="{Y(y):.1f}" x2="{L + pw}" y2="{Y(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{L - 6}" y="{Y(y) + 4:.1f}" text-anchor="end">{y:g}</text>')
        y += ys
    xs = nice_step(xmax, 8)
    x = 0.0
    while x <= xmax + 1e-9:
        out.append(f'<line x1="{X(x):.1f}" y1="{T + ph}" x2="{X(x):.1f}" y2="{T + ph + 5}" '
                   f'stroke="black"/>')
        out.append(f'<text x="{X(x):.1f}" y="{T + ph + 19}" text-anchor="middle">{x:g}</text>')
        x += xs
    out.append(f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="black"/>')
    out.append(f'<text x="{L + pw / 2}" y="{T + ph + 38}" text-anchor="middle">minutes</text>')
    out.append(f'<text x="18" y="{T + ph / 2}" text-anchor="middle" '
               f'transform="rotate(-90 18 {T + ph / 2})">MiB resident</text>')
    for label, color, dash, pts in data:
        d = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in pts)
        da = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="1.6"{da}/>')
    for i, (label, color, dash, pts) in enumerate(data):
        lx, ly = L, T + ph + 62 + i * 19
        da = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 30}" y2="{ly - 4}" stroke="{color}" '
                   f'stroke-width="1.6"{da}/>')
        last = pts[-1][1]
        out.append(f'<text x="{lx + 36}" y="{ly}">{esc(label)}: {pts[0][1]:.1f} to '
                   f'{last:.1f} MiB, max {max(y for _, y in pts):.1f}</text>')
    out.append("</svg>")
    with open(a.svg, "w") as f:
        f.write("\n".join(out) + "\n")
    if a.table:
        print_table(rows)
    return 0


ROLE_NAMES = (
    ("ow_prog", "overwrite-mode program"),
    ("ow_rec", "its `ringtrace record -- CMD`"),
    ("att_prog", "program attached to and detached from"),
    ("att_rec", "`ringtrace record -p` (peak of each run)"),
    ("disc_prog", "discard-mode program (peak of each run)"),
    ("disc_rec", "its `ringtrace record -- CMD` (peak of each run)"),
)


def print_table(rows):
    print("| process | RSS first | RSS last | RSS max | VmHWM last | descriptors first / last / max |")
    print("| --- | --- | --- | --- | --- | --- |")
    for role, name in ROLE_NAMES:
        vals = [(int(r[f"{role}_rss_kb"]), int(r[f"{role}_hwm_kb"]), int(r[f"{role}_fds"]))
                for r in rows if r.get(f"{role}_rss_kb")]
        if not vals:
            continue
        rss = [v[0] for v in vals]
        fds = [v[2] for v in vals]
        print(f"| {name} | {rss[0]:,} KiB | {rss[-1]:,} KiB | {max(rss):,} KiB | "
              f"{vals[-1][1]:,} KiB | {fds[0]} / {fds[-1]} / {max(fds)} |")


if __name__ == "__main__":
    sys.exit(main())
