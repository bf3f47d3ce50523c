#!/usr/bin/env python3
# tests/kernel_fields_compare.py - the kernel events of a ringtrace
# recording against the kernel's own description and text of them
# (tests/test_kernel_fields.sh).
#
#   kernel_fields_compare.py --metadata META_TXT EVENTS_DIR EVENT...
#   kernel_fields_compare.py BT_TXT TRACE_TXT FIELDS_TXT EVENTS_DIR KALLSYMS EVENT...
#
# EVENTS_DIR: tracefs's events/ (the format files); EVENT...: SYSTEM:NAME
# of every event enabled.
#
# --metadata: META_TXT (babeltrace2 -o ctf-metadata DIR/kernel) describes
# every EVENT, each with the fields of its format file, in order (the
# common_* left out; common_pid allowed), of the kernel's types: char
# arrays and __data_loc char[] as strings (after a _truncated byte),
# scalars as integers of the field's size and signedness, other arrays as
# arrays of their elements.
#
# Else: BT_TXT: babeltrace2 --clock-cycles DIR/kernel. TRACE_TXT and
# FIELDS_TXT: the `trace` file (the text trace_pipe gives) of a second
# tracefs instance that recorded the same events on the same clock (x86-tsc:
# timestamps in counter ticks), read twice with tracing off: as the kernel
# prints them (each event's print fmt, hash-ptr off; syscalls their
# sys_NAME(arg: value, ...) line) and with the `fields` option (every
# field as name=0xHEX (DEC)).
#
# Each of our events is matched to the kernel's record of the same
# occurrence (the two instances each read the counter, so their times
# differ by a few hundred ticks, or more: see "matching" below). Every
# field of ours is compared with both texts (each field with at least one:
# the fields option does not show pointers' values, the print fmt not
# every field), and the CPU (but a syscall's, whose tracepoint is
# preemptible), and common_pid where the trace has it (with the text's pid
# column). Two differences are the kernel's, allowed and counted:
# sched_switch's prev_state of an exiting task, X (dead) in one record and
# Z (zombie) in the other: each probe reads the task's exit_state when it
# runs, and the parent may reap the task in between; and a task's name
# (a *comm field) in an event recorded while that task execs on another
# CPU, the old name in one record and the new one in the other (each
# probe copies the name when it runs; seen in CI with sched_stat_runtime
# of `taskset` becoming `true`), when the kernel has an exec of that pid
# within WINDOW ticks and the two names are the one it gave and the one
# the pid had before it.
#
# Fails, listing them, on any other difference, on a field neither text
# shows, on an event type of which fewer than MIN_MATCH of our events, or
# of the kernel's events within the type's time span in our trace, found
# their counterpart, on a type the kernel has in that span and our trace
# not, and on a type with no event equal in every field. Prints per event
# type: ours, matched, equal, the kernel's, time apart; then the enabled
# events that never occurred.
import bisect
import re
import sys

WINDOW = 200000  # ticks (~80 us at 2.5 GHz)
FAR = 250000000  # (~0.1 s)
SPAN_MARGIN = 5000000  # (~2 ms)
MIN_MATCH = 0.9

if sys.argv[1] == "--metadata":
    meta_path, events_dir = sys.argv[2:4]
    enabled = sys.argv[4:]
else:
    bt_path, text_path, fields_path, events_dir, kallsyms_path = sys.argv[1:6]
    enabled = sys.argv[6:]
errors = []


def err(msg):
    errors.append(msg)


# ---- the kernel's formats ---------------------------------------------------


def split_args(s):
    """Top-level comma-separated C expressions."""
    out, depth, cur, q = [], 0, "", False
    i = 0
    while i < len(s):
        ch = s[i]
        if q:
            cur += ch
            if ch == "\\" and i + 1 < len(s):
                cur += s[i + 1]
                i += 1
            elif ch == '"':
                q = False
        elif ch == '"':
            q = True
            cur += ch
        elif ch in "({[":
            depth += 1
            cur += ch
        elif ch in ")}]":
            depth -= 1
            cur += ch
        elif ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
        i += 1
    if cur.strip():
        out.append(cur.strip())
    return out


def read_format(system, name):
    fields, fmt = [], None
    with open("%s/%s/%s/format" % (events_dir, system, name)) as f:
        for line in f:
            m = re.match(r"\s*field:(.*);\s*offset:(\d+);\s*size:(\d+);\s*signed:(\d+);", line)
            if m:
                decl = m.group(1).strip()
                fm = re.match(r"(.*?)\s*(\w+)\s*(\[\w*\])?$", decl)
                ctype, fname, arr = fm.group(1), fm.group(2), fm.group(3)
                fields.append({"name": fname, "type": ctype, "array": arr,
                               "size": int(m.group(3)), "signed": m.group(4) == "1"})
            elif line.startswith("print fmt: "):
                fmt = line[len("print fmt: "):].strip()
    return fields, fmt


def finish():
    for e in errors[:40]:
        print("MISMATCH: " + e, file=sys.stderr)
    if len(errors) > 40:
        print("... and %d more" % (len(errors) - 40), file=sys.stderr)
    sys.exit(1 if errors else 0)


def check_metadata():
    """Every enabled event in the metadata, with its format's fields and types."""
    text = open(meta_path).read()
    events = {}
    for m in re.finditer(r'event \{\s*name = "(\w+)";(.*?)fields := struct \{(.*?)\n\t\};', text, re.S):
        decls = []
        for d in m.group(3).strip().split("\n"):
            d = d.strip().rstrip(";")
            im = re.fullmatch(r"integer \{ size = (\d+); align = \d+; signed = (true|false);[^}]*\} (\w+)(?:\[(\d+)\])?", d)
            sm = re.fullmatch(r"string (\w+)", d)
            if im:
                decls.append((im.group(3), "int", int(im.group(1)), im.group(2) == "true", int(im.group(4) or 0)))
            elif sm:
                decls.append((sm.group(1), "string", 0, False, 0))
            else:
                decls.append((d, "other", 0, False, 0))
        events[m.group(1)] = decls
    for spec in enabled:
        system, name = spec.split(":", 1)
        if name not in events:
            err("%s: not in the metadata" % name)
            continue
        want = []
        for x in read_format(system, name)[0]:
            if x["name"].startswith("common_"):
                continue
            if "char" in x["type"] and (x["array"] or "__data_loc" in x["type"]):
                want.append((x["name"], "string", 0, False, 0))
            elif x["array"]:
                n = int(x["array"].strip("[]"))
                want.append((x["name"], "int", 8 * x["size"] // n, x["signed"], n))
            else:
                want.append((x["name"], "int", 8 * x["size"], x["signed"], 0))
        got = [d for d in events[name] if d[0] != "common_pid"]
        if got and got[0][0] == "_truncated":
            got = got[1:]
            if not any(w[1] == "string" for w in want):
                err("%s: a _truncated field without a string" % name)
        elif any(w[1] == "string" for w in want):
            err("%s: strings but no _truncated field" % name)
        if got != want:
            err("%s: metadata fields %s, the kernel's format %s" % (name, got, want))
        for d in events[name]:
            if d[0] == "common_pid" and d[1:] != ("int", 32, True, 0):
                err("%s: common_pid is %s" % (name, d))
    print("in the metadata: %d of the %d events enabled" % (sum(s.split(":")[1] in events for s in enabled), len(enabled)))
    finish()


CONV = re.compile(r"%([-+ #0]*)(\*|\d+)?(?:\.(\d+))?(hh|h|ll|l|L|z)?([diouxXcsp])([a-zA-Z]*)")


def parse_print_fmt(pf):
    """The print fmt as a regex and, per conversion, (conversion, argument)."""
    m = re.match(r'"((?:[^"\\]|\\.)*)"\s*(?:,\s*(.*))?$', pf)
    fmt = m.group(1).encode().decode("unicode_escape")
    args = split_args(m.group(2) or "")
    rx, convs, pos, ai = "^", [], 0, 0
    for c in re.finditer(r"%%|" + CONV.pattern, fmt):
        lit = fmt[pos:c.start()]
        rx += re.escape(lit)
        pos = c.end()
        if c.group(0) == "%%":
            rx += "%"
            continue
        flags, width, prec, length, conv, ext = c.group(1, 2, 3, 4, 5, 6)
        if conv != "p":
            rx += re.escape(ext)  # (letters after a conversion other than %p are text)
            ext = ""
        if width == "*":
            width = args[ai]
            ai += 1
        if convs and not lit and rx.endswith("(.*?)"):
            convs[-1].append(((flags, width, prec, length, conv, ext), args[ai]))  # (%s%s: one capture)
        else:
            convs.append([((flags, width, prec, length, conv, ext), args[ai])])
            rx += "(.*?)"
        ai += 1
    rx += re.escape(fmt[pos:]) + "$"
    return re.compile(rx, re.S), convs


# ---- /proc/kallsyms, for %ps ------------------------------------------------

_syms = None


def symbol(addr):
    global _syms
    if _syms is None:
        pairs = []
        with open(kallsyms_path) as f:
            for line in f:
                p = line.split()
                if len(p) >= 3 and p[1] not in ("a", "A", "U"):
                    pairs.append((int(p[0], 16), p[2]))
        pairs.sort()
        _syms = ([a for a, _ in pairs], [n for _, n in pairs])
    i = bisect.bisect_right(_syms[0], addr) - 1
    if addr == 0 or i < 0 or _syms[0][i] == 0:
        return None
    return _syms[1][i]


# ---- rendering a value as the kernel's print fmt does -----------------------


def cint(v, bits, signed):
    v &= (1 << bits) - 1
    if signed and v >> (bits - 1):
        v -= 1 << bits
    return v


def num_expr(s):
    s = s.strip()
    if not re.fullmatch(r"[0-9a-fA-Fx|&+\-<>~() \t]*", s):
        raise ValueError("not a constant: " + s)
    return eval(s, {"__builtins__": {}})  # (digits and operators only, checked above)


def field_of(arg):
    """The field a plain argument names: REC->x, __get_str(x), casts around them."""
    a = arg.strip()
    m = re.fullmatch(r"__get_str\((\w+)\)", a)
    if m:
        return m.group(1)
    m = re.fullmatch(r"[\s()\w*]*?REC->(\w+)\)*", a)
    if m and a.count("(") == a.count(")"):
        return m.group(1)
    return None


def render(spec, arg, rec):
    """(text the kernel prints for this conversion, the fields it shows)."""
    flags, width, prec, length, conv, ext = spec
    if width is not None and not width.isdigit():
        width = str(num_expr(width))
    a = arg.strip()
    f = field_of(a)
    if conv == "s" and f is not None:
        return str(rec[f]), [f]
    if conv == "p" and f is not None:
        v = rec[f] & (2 ** 64 - 1)
        if ext in ("s", "S", "f", "F"):
            if ext in ("f", "F"):
                raise ValueError("%pF")
            name = symbol(v)
            return (name if name is not None else "0x%x" % v), [f]
        if ext == "":
            return "%016x" % v, [f]
        raise ValueError("%%p%s" % ext)
    if conv in "diouxXc" and f is not None:
        bits = 64 if length in ("l", "ll", "L", "z") else 16 if length == "h" else 8 if length == "hh" else 32
        v = cint(rec[f], bits, conv in "di")
        return ("%" + (flags or "") + (width or "") + ("." + prec if prec else "") + conv) % v, [f]
    # FLAGSEXPR ? __print_flags(FIELD & MASK, "SEP", {v, "s"}...) : "DEFAULT"
    m = re.fullmatch(r'\(REC->(\w+) & (.*?)\) \? __print_flags\(REC->\1 & (.*), "([^"]*)", (\{.*\})\) : "([^"]*)"', a, re.S)
    if m and conv == "s":
        f = m.group(1)
        v = rec[f] & num_expr(m.group(2))
        if not v:
            return m.group(6), [f]
        v &= num_expr(m.group(3))
        out = []
        for mask, name in re.findall(r'\{\s*(0x[0-9a-fA-F]+|\d+)\s*,\s*"([^"]*)"\s*\}', m.group(5)):
            mask = int(mask, 0)
            if mask and (v & mask) == mask:
                out.append(name)
                v &= ~mask
        if v:
            out.append("0x%x" % v)
        return m.group(4).join(out), [f]
    # FIELD [& MASK] ? "A" : "B"
    m = re.fullmatch(r'(\()?REC->(\w+)(?: & (.*))?(?(1)\)) \? "([^"]*)" : "([^"]*)"', a, re.S)
    if m and conv == "s":
        f = m.group(2)
        v = rec[f] & (num_expr(m.group(3)) if m.group(3) else -1)
        return (m.group(4) if v else m.group(5)), [f]
    # __print_symbolic(FIELD, {v, "s"}...)
    m = re.fullmatch(r"__print_symbolic\(REC->(\w+), (.*)\)", a, re.S)
    if m and conv == "s":
        f = m.group(1)
        for val, name in re.findall(r'\{\s*(-?0x[0-9a-fA-F]+|-?\d+)\s*,\s*"([^"]*)"\s*\}', m.group(2)):
            if int(val, 0) == rec[f]:
                return name, [f]
        return "0x%x" % (rec[f] & (2 ** 64 - 1)), [f]
    raise ValueError("an argument this comparer does not read: " + a)


if sys.argv[1] == "--metadata":
    check_metadata()

# ---- babeltrace2's text -----------------------------------------------------


def parse_groups(s):
    """'{ a = 1, b = "x" }, { ... }' into a list of dicts."""
    groups, i = [], 0
    ident = re.compile(r"(\w+) = ")
    while i < len(s):
        if s.startswith("{ ", i):
            i += 2
            g = {}
            while True:
                if s.startswith("}", i):
                    i += 1
                    break
                m = ident.match(s, i)
                if not m:
                    raise ValueError("cannot read: " + s[i:i + 40])
                name = m.group(1)
                i = m.end()
                if s[i] == '"':
                    j = i + 1
                    while True:  # the quote followed by ", name = " or " }"
                        j = s.index('"', j)
                        if re.match(r'"(, \w+ = | \})', s[j:]):
                            break
                        j += 1
                    g[name] = s[i + 1:j]
                    i = j + 1
                elif s[i] == "[":
                    depth, j = 0, i
                    while True:
                        if s[j] == "[":
                            depth += 1
                        elif s[j] == "]":
                            depth -= 1
                            if depth == 0:
                                break
                        j += 1
                    g[name] = s[i:j + 1]
                    i = j + 1
                else:
                    m = re.compile(r"-?\d+|\S+?(?=,| \})").match(s, i)
                    t = m.group(0)
                    g[name] = int(t) if re.fullmatch(r"-?\d+", t) else t
                    i = m.end()
                if s.startswith(", ", i):
                    i += 2
                elif s.startswith(" ", i):
                    i += 1
            groups.append(g)
        elif s.startswith(", ", i):
            i += 2
        else:
            raise ValueError("cannot read: " + s[i:i + 40])
    return groups


ours = []
with open(bt_path, errors="replace") as f:
    for line in f:
        m = re.match(r"\[(\d+)\] \([^)]*\) \S+ (\w+): (.*)$", line.rstrip("\n"))
        if not m:
            err("babeltrace2: a line this comparer cannot read: " + line.strip())
            continue
        groups = parse_groups(m.group(3))
        ev = {"ts": int(m.group(1)), "name": m.group(2), "cpu": groups[0].get("cpu_id"), "fields": {}}
        for g in groups[1:]:
            ev["fields"].update(g)
        ours.append(ev)

# ---- the kernel's text ------------------------------------------------------

HEAD = re.compile(r"^\s*(.*?)-(\d+)\s+\[(\d+)\]\s+(?:\S+\s+)?(\d+): (.*)$", re.S)


def read_text(path):
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#") or not line.strip():
                if "entries-in-buffer/entries-written" in line:
                    m = re.search(r"(\d+)/(\d+)", line)
                    if m.group(1) != m.group(2):
                        err("the test's own instance lost events (%s): its buffer is too small" % m.group(0))
                continue
            if "LOST" in line and "EVENTS" in line:
                err("the test's own instance: " + line.strip())
                continue
            m = HEAD.match(line)
            if not m:
                err("kernel text: a line this comparer cannot read: " + line)
                continue
            out.append({"pid": int(m.group(2)), "cpu": int(m.group(3)), "ts": int(m.group(4)), "rest": m.group(5)})
    return out


text = read_text(text_path)
ftext = read_text(fields_path)
if len(text) != len(ftext):
    err("the two readings of the kernel's text differ in length: %d, %d" % (len(text), len(ftext)))
kern = []
for a, b in zip(text, ftext):
    if (a["ts"], a["cpu"]) != (b["ts"], b["cpu"]):
        err("the two readings of the kernel's text differ: %s / %s" % (a, b))
        break
    m = re.match(r"(\w+): (.*)$", b["rest"], re.S)
    if not m:
        err("kernel text (fields): no event name: " + b["rest"])
        continue
    kern.append({"ts": a["ts"], "cpu": a["cpu"], "pid": a["pid"], "name": m.group(1),
                 "fields_text": m.group(2), "text": a["rest"]})

formats = {}
for spec in enabled:
    system, name = spec.split(":", 1)
    flds, pf = read_format(system, name)
    formats[name] = {"system": system, "fields": [x for x in flds if not x["name"].startswith("common_")], "print_fmt": pf}

# ---- comparing one pair -----------------------------------------------------


def bt_name(kname):
    return kname[1:] if kname.startswith("_") else kname  # (babeltrace2 drops one leading _)


EXIT_DEAD, EXIT_ZOMBIE = 0x10, 0x20  # (sched_switch's prev_state: X, Z)
raced = {}

# The names the kernel gave each pid: pid -> [(ts, name, by an exec)] in
# time order, from its fork (child_comm: the name it starts with) and its
# execs (the file's name, cut to TASK_COMM_LEN - 1), for the name race
# below.
FORK_RX = re.compile(r"child_comm=(.*) child_pid=(?:0x[0-9a-f]+ )?\((-?\d+)\)$", re.S)
EXEC_RX = re.compile(r"^filename=(.*) pid=(?:0x[0-9a-f]+ )?\((-?\d+)\) old_pid=", re.S)
names = {}
for k in kern:
    m = FORK_RX.search(k["fields_text"]) if k["name"] == "sched_process_fork" else None
    if m:
        names.setdefault(int(m.group(2)), []).append((k["ts"], m.group(1), False))
    m = EXEC_RX.match(k["fields_text"]) if k["name"] == "sched_process_exec" else None
    if m:
        names.setdefault(int(m.group(2)), []).append((k["ts"], m.group(1).rsplit("/", 1)[-1][:15], True))
for lst in names.values():
    lst.sort()


def comm_raced_with_exec(k, n, rec, ours, theirs):
    """A task's name read while it execs: each instance's probe copies the
    comm when it runs, and an event about a task running on another CPU
    (sched_stat_runtime from a remote enqueue's update of the current task,
    a wake-up) can be recorded while that task renames itself (exec sets
    its comm to the file's name). Allowed when the kernel has an exec of
    that pid within WINDOW ticks, and the two names are the one the exec
    gave and the one the pid had before it (from its fork or its previous
    exec in the kernel's records)."""
    pid = rec.get(n[:-4] + "pid")
    lst = names.get(pid, []) if isinstance(pid, int) else []
    for j, (ts, new, is_exec) in enumerate(lst):
        if is_exec and j > 0 and abs(ts - k["ts"]) <= WINDOW and {ours, theirs} == {lst[j - 1][1], new}:
            return True
    return False


def compare(ev, k):
    """The differences between our event and the kernel's record of it."""
    fmt = formats[ev["name"]]
    diffs, rec, shown = [], {}, set()
    ourf = dict(ev["fields"])
    if ourf.pop("truncated", 0) not in (0, None):
        diffs.append("truncated = %s" % ev["fields"]["truncated"])
    if ev["cpu"] != k["cpu"] and not ev["name"].startswith("sys_"):  # (syscalls' tracepoints are preemptible)
        diffs.append("cpu: ours %s, kernel %s" % (ev["cpu"], k["cpu"]))
    if "common_pid" in ourf:
        v = ourf.pop("common_pid")
        if v != k["pid"]:
            diffs.append("common_pid: ours %s, kernel %s" % (v, k["pid"]))
    for x in fmt["fields"]:
        n = bt_name(x["name"])
        if n not in ourf:
            diffs.append("field %s: missing from our trace" % x["name"])
            continue
        rec[x["name"]] = ourf.pop(n)
    for n in ourf:
        diffs.append("field %s: in our trace, not in the kernel's format" % n)
    # sched_switch's prev_state of an exiting task: each probe reads the
    # task's exit_state when it runs, and its parent may reap it (zombie,
    # Z, to dead, X) between the two instances' probes
    if ev["name"] == "sched_switch" and "prev_state" in rec:
        m = re.search(r"(?:^| )prev_state=0x[0-9a-f]+ \((-?\d+)\)", k["fields_text"])
        if m and {int(m.group(1)), rec["prev_state"]} == {EXIT_DEAD, EXIT_ZOMBIE}:
            rec["prev_state"] = int(m.group(1))
            raced[id(ev)] = True
    # the fields text: NAME=VALUE for every field, in the format's order
    names = [x["name"] for x in fmt["fields"]]
    rx = "^" + " ".join(re.escape(n) + "=(.*?)" for n in names) + "$"
    m = re.match(rx, k["fields_text"], re.S)
    if not m:
        diffs.append("kernel fields text not read: %s" % k["fields_text"])
    else:
        for x, tv in zip(fmt["fields"], m.groups()):
            n = x["name"]
            if n not in rec:
                continue
            v = rec[n]
            if isinstance(v, str) and (x["array"] and "char" in x["type"] or "__data_loc char" in x["type"]):
                if tv != v and n.endswith("comm") and comm_raced_with_exec(k, n, rec, v, tv):
                    rec[n] = tv  # (the print fmt's text below is compared with the kernel's name)
                    raced[id(ev)] = True
                elif tv != v:
                    diffs.append("%s: ours %r, kernel (fields) %r" % (n, v, tv))
                shown.add(n)
            elif "*" in x["type"] and re.fullmatch(r"\(0x[0-9a-f]+\)", tv):
                pass  # (a pointer: the fields option prints where it points, not its value)
            else:
                # VALUE is the decimal in parentheses, after the value in
                # hex or, for a function pointer, its symbol (wait_rcu_exp_gp+0x0/0x20);
                # the kernel prints that decimal signed, whatever the field's
                # sign: compared as the field's bits
                mm = re.fullmatch(r"(?:0x[0-9a-f]+ |[\w.]+\+0x[0-9a-f]+/0x[0-9a-f]+ )?\((-?\d+)\)", tv)
                if not mm:
                    diffs.append("%s: ours %r, kernel (fields) %r not read" % (n, v, tv))
                elif not isinstance(v, int) or (int(mm.group(1)) - v) % (1 << (8 * x["size"])) != 0:
                    diffs.append("%s: ours %r, kernel (fields) %s" % (n, v, tv))
                shown.add(n)
    # the kernel's own text
    t = k["text"]
    if fmt["system"] == "syscalls" and ev["name"].startswith("sys_enter_"):
        m = re.match(r"sys_(\w+)\((.*)\)$", t, re.S)
        if not m or "sys_enter_" + m.group(1) != ev["name"]:
            diffs.append("kernel text not read: %s" % t)
        else:
            for part in split_args(m.group(2)):
                pm = re.match(r'(\w+): (0x[0-9a-f]+|-?\d+)(?: ".*")?$', part, re.S)
                if not pm or pm.group(1) not in rec:
                    diffs.append("kernel text: argument not read: %s" % part)
                    continue
                tv = int(pm.group(2), 16 if pm.group(2).startswith("0x") else 10)
                n = pm.group(1)
                if not isinstance(rec[n], int) or rec[n] & (2 ** 64 - 1) != tv & (2 ** 64 - 1):
                    diffs.append("%s: ours %r, kernel (text) %s" % (n, rec[n], pm.group(2)))
                shown.add(n)
    elif fmt["parsed"] is None:
        diffs.append("print fmt not read (%s): %s" % (fmt["parse_error"], fmt["print_fmt"]))
    else:
        rx, convs = fmt["parsed"]
        m = rx.match(t[len(ev["name"]) + 2:]) if t.startswith(ev["name"] + ": ") else None
        if not m:
            diffs.append("kernel text does not read as the print fmt: %s" % t)
        else:
            for group, tv in zip(convs, m.groups()):
                want, fs = "", []
                try:
                    for spec, arg in group:
                        w, f = render(spec, arg, rec)
                        want += w
                        fs += f
                except (KeyError, ValueError) as e:
                    diffs.append("print fmt argument %s: %s" % (arg, e))
                    continue
                if want != tv:
                    diffs.append("%s: ours %s -> %r, kernel (text) %r" % ("/".join(fs), [rec[x] for x in fs], want, tv))
                shown.update(fs)
    for n in rec:
        if n not in shown:
            diffs.append("field %s: shown by neither of the kernel's texts (not compared)" % n)
    return diffs


for name, fmt in formats.items():
    try:
        fmt["parsed"] = parse_print_fmt(fmt["print_fmt"])
    except Exception as e:  # (read when an event of it is compared)
        fmt["parsed"] = None
        fmt["parse_error"] = str(e)

# ---- matching ---------------------------------------------------------------
#
# The kernel's records indexed by what cannot differ between the two
# records of one occurrence: name, CPU and pid fields (a syscall: name and
# argument values, its CPU aside). Among the records of our event's key
# within FAR ticks, the nearest equal to it in every field is its
# counterpart (the probes of the two instances may be apart: an interrupt,
# the host taking the virtual CPU, preemption in a syscall's tracepoint;
# another record of the same values taken instead changes nothing that is
# compared). If none is equal, the nearest record of the same name within
# WINDOW (the same CPU, the same pid fields preferred), when clearly nearer
# than the next, and its differences are what is wrong.

KEYS = ("pid", "prev_pid", "next_pid", "parent_pid", "child_pid", "src_pid", "dst_pid", "cpu")
KEY_RX = {n: re.compile(r"(?:^| )" + n + r"=(?:0x[0-9a-f]+ )?\((-?\d+)\)") for n in KEYS}


def kern_key(k):
    if k["name"].startswith("sys_enter_"):
        return (k["name"], syscall_args(k))
    out = [k["name"], k["cpu"]]
    for n in KEYS:
        if n in formats.get(k["name"], {}).get("names", ()):
            m = KEY_RX[n].search(k["fields_text"])
            out.append(int(m.group(1)) if m else None)
    return tuple(out)


def our_key(ev):
    f = ev["fields"]
    if ev["name"].startswith("sys_enter_"):
        return (ev["name"], tuple(f.get(bt_name(x["name"]), -1) & (2 ** 64 - 1)
                                  for x in formats[ev["name"]]["fields"] if x["name"] != "__syscall_nr"))
    return tuple([ev["name"], ev["cpu"]] + [f.get(n) for n in KEYS if n in formats[ev["name"]]["names"]])


def syscall_args(k):
    """A sys_NAME(arg: value, ...) line's values, in order (None if not one)."""
    m = re.match(r"sys_\w+\((.*)\)$", k["text"], re.S)
    if not m:
        return None
    out = []
    for part in split_args(m.group(1)):
        pm = re.match(r'\w+: (0x[0-9a-f]+|-?\d+)(?: ".*")?$', part, re.S)
        if not pm:
            return None
        out.append(int(pm.group(1), 16 if pm.group(1).startswith("0x") else 10) & (2 ** 64 - 1))
    return tuple(out)


for fmt in formats.values():
    fmt["names"] = {x["name"] for x in fmt["fields"]}
by_name, by_key = {}, {}
for i, k in enumerate(kern):  # (in time order per CPU, not overall: sorted below)
    by_name.setdefault(k["name"], []).append(i)
    by_key.setdefault(kern_key(k), []).append(i)
for d in (by_name, by_key):
    for lst in d.values():
        lst.sort(key=lambda i: kern[i]["ts"])
ts_by_name = {n: [kern[i]["ts"] for i in lst] for n, lst in by_name.items()}
ts_by_key = {n: [kern[i]["ts"] for i in lst] for n, lst in by_key.items()}
used = set()


def nearest_unique(ev, cands):
    """The nearest candidate if clearly nearer than the next, else None and why."""
    if not cands:
        return None, "no kernel record within %d ticks" % WINDOW
    cands = sorted(cands, key=lambda i: abs(kern[i]["ts"] - ev["ts"]))
    if len(cands) > 1:
        d0 = abs(kern[cands[0]]["ts"] - ev["ts"])
        d1 = abs(kern[cands[1]]["ts"] - ev["ts"])
        if d1 < 2 * d0 + 50:
            return None, "ambiguous: %d kernel records %d and %d ticks away" % (len(cands), d0, d1)
    return cands[0], None


def match(ev):
    """(the kernel's record of this event or None, the differences or why none)."""
    key = our_key(ev)
    lst, ts = by_key.get(key, []), ts_by_key.get(key, [])
    lo = bisect.bisect_left(ts, ev["ts"] - FAR)
    hi = bisect.bisect_right(ts, ev["ts"] + FAR)
    for i in sorted((i for i in lst[lo:hi] if i not in used), key=lambda i: abs(kern[i]["ts"] - ev["ts"])):
        if not compare(ev, kern[i]):
            return i, []
    lst, ts = by_name.get(ev["name"], []), ts_by_name.get(ev["name"], [])
    lo = bisect.bisect_left(ts, ev["ts"] - WINDOW)
    hi = bisect.bisect_right(ts, ev["ts"] + WINDOW)
    near = [i for i in lst[lo:hi] if i not in used]
    same_cpu = [i for i in near if kern[i]["cpu"] == ev["cpu"]]
    near = same_cpu or near
    i, why = nearest_unique(ev, near)
    if i is None and near:  # (ambiguous: those of the same pid fields, if any)
        keyed = [i for i in near if kern_key(kern[i])[2:] == key[2:]]
        if keyed:
            i, why = nearest_unique(ev, keyed)
    return i, (compare(ev, kern[i]) if i is not None else why)


stats = {}
for ev in ours:
    if ev["name"] not in formats:
        err("an event in our trace that was not enabled: %s" % ev["name"])
        continue
    s = stats.setdefault(ev["name"], {"ours": 0, "matched": 0, "equal": 0, "unmatched": [], "dts": [],
                                      "t0": ev["ts"], "t1": ev["ts"], "othercpu": 0, "raced": 0})
    s["ours"] += 1
    s["t1"] = ev["ts"]
    i, d = match(ev)
    if i is None:
        s["unmatched"].append((ev, d))
        continue
    used.add(i)
    s["matched"] += 1
    s["dts"].append(kern[i]["ts"] - ev["ts"])
    s["othercpu"] += kern[i]["cpu"] != ev["cpu"]
    raced.pop(id(ev), None)
    d = compare(ev, kern[i])  # (again: whether it raced, for this match)
    s["raced"] += raced.pop(id(ev), False)
    if d:
        err("%s at %d (kernel's at %d, cpu %d): %s" % (ev["name"], ev["ts"], kern[i]["ts"], kern[i]["cpu"], "; ".join(d)))
    else:
        s["equal"] += 1

# The kernel's events within our trace's span (of the type; of the whole
# trace for a type it lacks): did each find its counterpart in ours?
t0 = min(e["ts"] for e in ours) if ours else 0
t1 = max(e["ts"] for e in ours) if ours else 0
if not ours:
    err("no kernel event in our trace")
kin = {}
for i, k in enumerate(kern):
    s = stats.get(k["name"])
    a, b = (s["t0"], s["t1"]) if s else (t0, t1)
    if a + SPAN_MARGIN <= k["ts"] <= b - SPAN_MARGIN:
        c = kin.setdefault(k["name"], [0, 0])
        c[0] += 1
        c[1] += i in used

never = []
for spec in enabled:
    name = spec.split(":", 1)[1]
    s = stats.get(name)
    kn, km = kin.get(name, (0, 0))
    if not s:
        if kn:
            err("%s: the kernel has %d within our trace's span, our trace none" % (name, kn))
        never.append(name)
        continue
    dts = sorted(s["dts"])
    med = dts[len(dts) // 2] if dts else 0
    print("%-28s ours %5d, matched %5d, equal %5d; the kernel's in its span %5d (%d in ours); "
          "time apart: median %d ticks, max %d; on another CPU %d%s"
          % (name, s["ours"], s["matched"], s["equal"], kn, km, med, max(abs(x) for x in dts) if dts else 0, s["othercpu"],
             "; raced (prev_state X/Z with the reaping, a name with an exec) %d" % s["raced"] if s["raced"] else ""))
    if s["matched"] < MIN_MATCH * s["ours"]:
        err("%s: only %d of our %d events matched the kernel's text; first unmatched: %s"
            % (name, s["matched"], s["ours"], "; ".join("%d cpu %s %s (%s)" % (e["ts"], e["cpu"], e["fields"], w)
                                                      for e, w in s["unmatched"][:3])))
    if kn and km < MIN_MATCH * kn:
        err("%s: only %d of the kernel's %d events within our trace's span are in our trace" % (name, km, kn))
    if s["equal"] == 0:
        err("%s: no event of ours equal to the kernel's in every field" % name)
print("never occurred: " + (" ".join(never) if never else "(none)"))
finish()
