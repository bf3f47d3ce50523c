#!/bin/sh
# `ringtrace query` end to end on the demo's trace: every output format
# parsed back (CSV with Python's csv module, JSON lines with json, TSV
# unescaped) and equal to the table's values; several statements from
# standard input and from -f; a wrong statement (exit 2, SQLite's
# message); ATTACH, VACUUM INTO and load_extension refused with no file
# written; --db FILE written, reopened by `ringtrace query --db`, the
# sqlite3 shell and Python's sqlite3 (same counts); --db refusing a file
# that is not its own database and a symbolic link; the counts per event
# equal to `ringtrace stat`'s; a damaged trace (exit 1, answered); a
# uint64 field of 2^63 and an int64 field of INT64_MIN read as values, not
# as the NULL the store keeps as INT64_MIN.
# Each is a case (tests/cases.sh).
#   usage: test_query.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
bin=$1
shift
rt="$bin/ringtrace"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ringtrace-query-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
umask 022
for tool in python3 sqlite3; do
	command -v "$tool" >/dev/null 2>&1 || { echo "test_query: $tool is not installed (make check installs it)" >&2; exit 1; }
done
fail() { echo "test_query: $*" >&2; exit 1; }

# The demo recorded into $tmp/t (once per run).
demo_trace() {
	if [ ! -d "$tmp/t" ]; then
		"$rt" record -q -o "$tmp/t" -- "$bin/ringtrace-demo" --seconds 0.1 --threads 3 >/dev/null
		[ -f "$tmp/t/metadata" ] || fail "record wrote no metadata"
	fi
}

# q ARGS...: ringtrace query, its status in $st, stdout in $tmp/out, stderr in $tmp/err.
q() {
	st=0
	"$rt" query "$@" >"$tmp/out" 2>"$tmp/err" || st=$?
}

# The values of each format as Python lists of rows of strings (NULL: the
# string None), printed one row a line, for cmp.
rows_of() { # FORMAT FILE
	python3 - "$1" "$2" <<'PY'
import csv, json, sys
fmt, path = sys.argv[1], sys.argv[2]
rows = []
if fmt == "csv":
    with open(path, newline="") as f:
        data = f.read()
    assert data.endswith("\r\n"), "CSV lines end with CRLF"
    rows = [["None" if v == "" else v for v in r] for r in csv.reader(data.splitlines(True))]
elif fmt == "tsv":
    for line in open(path).read().split("\n")[:-1]:
        out = []
        for v in line.split("\t"):
            v = v.replace("\\\\", "\0").replace("\\t", "\t").replace("\\n", "\n").replace("\\r", "\r").replace("\0", "\\")
            out.append("None" if v == "" else v)
        rows.append(out)
elif fmt == "json":
    lines = open(path).read().split("\n")[:-1]
    objs = [json.loads(l) for l in lines]
    rows = [list(objs[0].keys())]
    for o in objs:
        rows.append([str(v) if not isinstance(v, float) else repr(v) for v in o.values()])
else:  # table: a header, a rule of dashes, then the rows; no blank inside values
    lines = open(path).read().split("\n")[:-1]
    assert set(lines[1].replace(" ", "")) == {"-"}, "no rule under the header: " + lines[1]
    rows = [lines[0].split()] + [["None" if v == "NULL" else v for v in l.split()] for l in lines[2:]]
for r in rows:
    print(repr(r))
PY
}

query_formats_parse_back_to_the_table_values() { # case
	demo_trace
	sql="SELECT name, count(*) AS n, sum(ts % 1000003) AS s, 1.5 AS r, NULL AS z, -7 AS neg
	     FROM slice GROUP BY name ORDER BY name"
	for f in table csv tsv json; do
		q "$tmp/t" --format "$f" "$sql"
		[ "$st" = 0 ] || fail "--format $f: status $st: $(cat "$tmp/err")"
		rows_of "$f" "$tmp/out" >"$tmp/rows.$f" || fail "--format $f: not parsed back: $(head -3 "$tmp/out")"
	done
	[ "$(wc -l <"$tmp/rows.table")" -gt 2 ] || fail "the table has no rows: $(cat "$tmp/rows.table")"
	for f in csv tsv json; do
		cmp -s "$tmp/rows.table" "$tmp/rows.$f" ||
			fail "--format $f differs from the table: $(diff "$tmp/rows.table" "$tmp/rows.$f" | head -5)"
	done
	# an empty text and NULL, told apart in CSV
	q "$tmp/t" --format csv "SELECT '' AS e, NULL AS n"
	printf 'e,n\r\n"",\r\n' | cmp -s - "$tmp/out" || fail "CSV empty text and NULL: $(cat "$tmp/out")"
	q "$tmp/t" --format=bogus "SELECT 1"
	[ "$st" = 2 ] || fail "--format=bogus: status $st"
}

# Quotes, separators, line breaks, control bytes and bytes that are not
# UTF-8, exactly as each format defines them.
query_formats_escape_text_exactly() { # case
	demo_trace
	sql="SELECT 'a,b' AS \"c,1\", 'q\"u' AS q, 'l1' || char(10) || 'l2' AS nl, 'x' || char(9) || 'y\\' AS tab,
	            char(27) || '[31m' AS esc, CAST(x'41ff' AS TEXT) AS bad, char(233) AS e"
	q "$tmp/t" --format csv "$sql"
	python3 - "$tmp/out" <<'PY' || fail "CSV: $(od -c "$tmp/out" | head -5)"
import csv, sys
data = open(sys.argv[1], "rb").read()
assert b'"c,1",q,nl,tab,esc,bad,e\r\n' in data, data
assert b'"a,b","q""u","l1\nl2",x\ty\\,\x1b[31m,A\xff,\xc3\xa9\r\n' in data, data
r = list(csv.reader(data.decode("utf-8", "surrogateescape").splitlines(True)))
assert r[1] == ["a,b", 'q"u', "l1\nl2", "x\ty\\", "\x1b[31m", "A\udcff", "\xe9"], r
PY
	q "$tmp/t" --format tsv "$sql"
	printf 'c,1\tq\tnl\ttab\tesc\tbad\te\na,b\tq"u\tl1\\nl2\tx\\ty\\\\\t\033[31m\tA\377\t\303\251\n' >"$tmp/want"
	cmp -s "$tmp/out" "$tmp/want" || fail "TSV: $(od -c "$tmp/out" | head -5)"
	q "$tmp/t" --format json "$sql"
	printf '{"c,1":"a,b","q":"q\\"u","nl":"l1\\nl2","tab":"x\\ty\\\\","esc":"\\u001b[31m","bad":"A\\u00ff","e":"\303\251"}\n' >"$tmp/want"
	cmp -s "$tmp/out" "$tmp/want" || fail "JSON: $(cat "$tmp/out")"
	python3 -c 'import json, sys; json.loads(open(sys.argv[1], encoding="utf-8").read())' "$tmp/out" ||
		fail "JSON not valid"
	q "$tmp/t" "$sql"
	grep -q 'l1\\x0al2  x\\x09y\\  \\x1b\[31m' "$tmp/out" || fail "table: control bytes not escaped: $(cat "$tmp/out")"
}

query_statements_from_stdin_and_file_each_printed() { # case
	demo_trace
	printf 'SELECT 1 AS a;\n-- a comment\nCREATE TEMP TABLE t (x);\nINSERT INTO t VALUES (5), (6);\n  SELECT 2 AS b, count(*) AS n FROM slice WHERE 0;\nSELECT sum(x) AS s FROM t;\n' >"$tmp/sql"
	printf '{"a":1}\n{"b":2,"n":0}\n{"s":11}\n' >"$tmp/want"
	st=0
	"$rt" query --format json "$tmp/t" <"$tmp/sql" >"$tmp/out" 2>"$tmp/err" || st=$?
	[ "$st" = 0 ] || fail "stdin: status $st: $(cat "$tmp/err")"
	cmp -s "$tmp/out" "$tmp/want" || fail "stdin: $(cat "$tmp/out")"
	q "$tmp/t" --format json -f "$tmp/sql"
	[ "$st" = 0 ] || fail "-f: status $st: $(cat "$tmp/err")"
	cmp -s "$tmp/out" "$tmp/want" || fail "-f: $(cat "$tmp/out")"
	# no rows: nothing; two results in a table: an empty line between them
	q "$tmp/t" "SELECT 1 AS a WHERE 0; SELECT 1 AS a; SELECT 2 AS b"
	printf 'a\n-\n1\n\nb\n-\n2\n' >"$tmp/want"
	cmp -s "$tmp/out" "$tmp/want" || fail "table results: $(cat "$tmp/out")"
	q "$tmp/t" -f "$tmp/sql" "SELECT 1"
	[ "$st" = 2 ] || fail "SQL given twice: status $st"
}

# Tables of results one after the other, of different widths and
# lengths: each aligned on its own widths (every line of a result as long
# as its rule: the last column is a number, right-aligned).
query_table_results_each_aligned() { # case
	demo_trace
	q "$tmp/t" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
		SELECT i FROM n;
		SELECT id, name, ts, utid, cpu, depth, id * 1000 AS wide FROM slice ORDER BY id LIMIT 2000;
		SELECT 'x' AS a, 7 AS b"
	[ "$st" = 0 ] || fail "status $st: $(cat "$tmp/err")"
	awk 'BEGIN { r = 0 } NF == 0 { r++; next } { n[r]++ }
	     /^[- ]+$/ { w[r] = length($0) }
	     { len[r, n[r]] = length($0) }
	     END { if (r != 2) { print "results: " r + 1; exit 1 }
		   for (k = 0; k <= r; k++) for (i = 1; i <= n[k]; i++)
			if (len[k, i] != w[k]) { print "result " k " line " i ": " len[k, i] " wide, its rule " w[k]; exit 1 } }' "$tmp/out" ||
		fail "not aligned"
	[ "$(wc -l <"$tmp/out")" = $((2 + 300 + 1 + 2 + 2000 + 1 + 2 + 1)) ] || fail "$(wc -l <"$tmp/out") lines"
}

query_wrong_statement_exits_2_with_sqlites_message() { # case
	demo_trace
	q "$tmp/t" --format csv "SELECT 1 AS a;
  SELECT nosuch FROM slice; SELECT 3"
	[ "$st" = 2 ] || fail "status $st"
	grep -q 'SQL error at line 2, column 10 of the command line: no such column: nosuch' "$tmp/err" ||
		fail "message: $(cat "$tmp/err")"
	printf 'a\r\n1\r\n' | cmp -s - "$tmp/out" || fail "the statement before the error: $(cat "$tmp/out")"
	printf 'SELEC 1' | { "$rt" query "$tmp/t" >"$tmp/out" 2>"$tmp/err" && st=0 || st=$?; }
	[ "$st" = 2 ] || fail "syntax error: status $st"
	grep -q 'line 1, column 1 of standard input: near "SELEC": syntax error' "$tmp/err" ||
		fail "message: $(cat "$tmp/err")"
}

# The SQL reaches no file but the database: ATTACH (which creates a
# file), VACUUM INTO and load_extension are refused, in memory and on a
# --db file, and no file appears.
query_attach_vacuum_into_and_load_extension_refused() { # case
	demo_trace
	mkdir "$tmp/w"
	"$rt" query --db "$tmp/w/q.db" "$tmp/t" >/dev/null 2>"$tmp/err" || fail "--db: $(cat "$tmp/err")"
	for target in "$tmp/t" "--db $tmp/w/q.db"; do
		for sql in "ATTACH '$tmp/w/a.db' AS a" "VACUUM INTO '$tmp/w/v.db'" \
			"SELECT load_extension('$tmp/w/x.so')" "SELECT 1; ATTACH DATABASE '$tmp/w/b.db' AS b"; do
			q $target "$sql"
			[ "$st" = 2 ] || fail "$sql ($target): status $st"
			grep -q 'not authorized\|authorization denied\|not allowed' "$tmp/err" ||
				fail "$sql ($target): $(cat "$tmp/err")"
		done
	done
	[ "$(ls "$tmp/w")" = q.db ] || fail "files written: $(ls "$tmp/w")"
}

query_db_file_reopened_by_ringtrace_sqlite3_and_python() { # case
	demo_trace
	q "$tmp/t" --format csv "SELECT count(*) FROM slice; SELECT count(*) FROM thread; SELECT count(*) FROM args"
	[ "$st" = 0 ] || fail "in memory: $(cat "$tmp/err")"
	mem=$(tr -d '\r' <"$tmp/out" | grep -v -e count -e '^$' | tr '\n' ' ')
	q --db "$tmp/q.db" "$tmp/t" --format csv "SELECT count(*) FROM slice; SELECT count(*) FROM thread; SELECT count(*) FROM args"
	[ "$st" = 0 ] || fail "--db FILE DIR SQL: status $st: $(cat "$tmp/err")"
	[ "$(tr -d '\r' <"$tmp/out" | grep -v -e count -e '^$' | tr '\n' ' ')" = "$mem" ] || fail "--db FILE DIR SQL: $(cat "$tmp/out"), in memory $mem"
	[ -z "$(ls -a "$tmp" | grep '\.q\.db\.tmp')" ] || fail "a temporary file is left: $(ls -a "$tmp")"
	q --db "$tmp/q.db" --format csv "SELECT count(*) FROM slice; SELECT count(*) FROM thread; SELECT count(*) FROM args"
	[ "$st" = 0 ] || fail "--db FILE SQL: status $st: $(cat "$tmp/err")"
	[ "$(tr -d '\r' <"$tmp/out" | grep -v -e count -e '^$' | tr '\n' ' ')" = "$mem" ] || fail "--db FILE SQL: $(cat "$tmp/out"), in memory $mem"
	shell=$(sqlite3 "$tmp/q.db" "SELECT count(*) FROM slice; SELECT count(*) FROM thread; SELECT count(*) FROM args" | tr '\n' ' ')
	[ "$shell" = "$mem" ] || fail "sqlite3 shell: $shell, ringtrace $mem"
	py=$(python3 -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for t in ("slice", "thread", "args"):
    print(db.execute("SELECT count(*) FROM " + t).fetchone()[0], end=" ")
' "$tmp/q.db")
	[ "$py" = "$mem" ] || fail "python sqlite3: $py, ringtrace $mem"
	# ours: marked, and the marks read by a plain SQLite
	[ "$(sqlite3 "$tmp/q.db" 'PRAGMA application_id')" = 1381257548 ] || fail "application_id not ringtrace's"
	[ "$(sqlite3 "$tmp/q.db" "SELECT value FROM ringtrace_meta WHERE key = 'trace'")" = "$tmp/t" ] ||
		fail "ringtrace_meta: $(sqlite3 "$tmp/q.db" 'SELECT * FROM ringtrace_meta')"
	# read-only: the SQL cannot change it
	q --db "$tmp/q.db" "DELETE FROM slice"
	[ "$st" = 2 ] || fail "DELETE on --db FILE: status $st"
	[ "$(sqlite3 "$tmp/q.db" 'SELECT count(*) FROM slice')" = "${mem%% *}" ] || fail "DELETE changed the file"
	# its own database is replaced; with no SQL, nothing printed
	q --db "$tmp/q.db" "$tmp/t" </dev/null
	[ "$st" = 0 ] && [ ! -s "$tmp/out" ] || fail "--db over its own file: status $st: $(cat "$tmp/err")"
}

# --db a chunk at a time (--chunk: records between two copies into the
# file; the spans still open at a chunk's end given their duration
# afterwards): the file holds what the import in memory holds, with the
# default chunk and with chunks of 1000 records.
query_db_in_chunks_holds_what_memory_holds() { # case
	demo_trace
	sql="SELECT count(*), sum(dur), sum(dur = -1), max(depth), sum(parent_id IS NOT NULL) FROM slice;
	     SELECT count(*), sum(start_ts), sum(end_ts) FROM thread; SELECT count(*), sum(int_value % 1000003), count(string_value) FROM args;
	     SELECT event, table_name, count FROM event_table ORDER BY event;
	     SELECT count(*), sum(dur) FROM demo_work_begin JOIN slice USING (id);
	     SELECT name, idx, value FROM stats ORDER BY name, idx"
	q "$tmp/t" --format csv "$sql"
	[ "$st" = 0 ] || fail "in memory: status $st: $(cat "$tmp/err")"
	mv "$tmp/out" "$tmp/mem"
	[ "$(sed -n 2p "$tmp/mem" | cut -d, -f1)" -gt 10000 ] || fail "too few slices: $(cat "$tmp/mem")"
	for chunk in "" "--chunk 1000"; do
		rm -f "$tmp/c.db"
		q --db "$tmp/c.db" $chunk "$tmp/t" --format csv "$sql"
		[ "$st" = 0 ] || fail "--db $chunk: status $st: $(cat "$tmp/err")"
		cmp -s "$tmp/mem" "$tmp/out" || fail "--db $chunk and memory differ: $(diff "$tmp/mem" "$tmp/out" | head -5)"
	done
	# (the spans that ended in a later chunk than they began: the index
	# made to update them)
	[ "$(sqlite3 "$tmp/c.db" "SELECT count(*) FROM sqlite_schema WHERE name = 'ringtrace-slice-id'")" = 1 ] ||
		fail "--chunk 1000: no span was given its duration after its chunk"
	q --db "$tmp/c.db" --chunk 10 "SELECT 1"
	[ "$st" = 2 ] || fail "--chunk without DIR: status $st"
}

# --db stopped by a signal while it writes: its temporary file removed,
# FILE neither made nor half written (chunks of one record: an import
# that lasts until the signal comes).
query_db_interrupted_leaves_no_file() { # case
	demo_trace
	mkdir "$tmp/i"
	"$rt" query --db "$tmp/i/q.db" --chunk 1 "$tmp/t" 2>"$tmp/err" &
	pid=$!
	rt_wait_for 100 sh -c "ls -A '$tmp/i' | grep -q '^\.q\.db\.tmp-'"
	ls -A "$tmp/i" | grep -q '^\.q\.db\.tmp-' || { kill $pid; fail "no temporary file appeared: $(ls -A "$tmp/i")"; }
	kill -TERM $pid
	st=0
	wait $pid 2>/dev/null || st=$? # (not the shell's "Terminated")
	[ "$st" = 143 ] || fail "status $st, not killed by SIGTERM (143): $(cat "$tmp/err")"
	[ -z "$(ls -A "$tmp/i")" ] || fail "left behind: $(ls -A "$tmp/i")"
}

# --db never overwrites a file that is not a database it wrote, nor
# follows a symbolic link (not even to one of its own).
query_db_refuses_other_files_and_symbolic_links() { # case
	demo_trace
	mkdir "$tmp/r"
	echo precious >"$tmp/r/text"
	sqlite3 "$tmp/r/theirs.db" "CREATE TABLE x (a); INSERT INTO x VALUES (1)"
	"$rt" query --db "$tmp/r/ours.db" "$tmp/t" </dev/null 2>"$tmp/err" || fail "--db: $(cat "$tmp/err")"
	ln -s ours.db "$tmp/r/link.db"
	ln -s nowhere.db "$tmp/r/dangling.db"
	mkdir "$tmp/r/dir.db"
	cp "$tmp/r/theirs.db" "$tmp/theirs.copy"
	cp "$tmp/r/ours.db" "$tmp/ours.copy"
	for f in text theirs.db link.db dangling.db dir.db; do
		q --db "$tmp/r/$f" "$tmp/t" "SELECT 1"
		[ "$st" = 2 ] || fail "--db $f: status $st"
		grep -q "refusing" "$tmp/err" || fail "--db $f: $(cat "$tmp/err")"
	done
	[ "$(cat "$tmp/r/text")" = precious ] || fail "text file changed"
	cmp -s "$tmp/r/theirs.db" "$tmp/theirs.copy" || fail "someone else's database changed"
	cmp -s "$tmp/r/ours.db" "$tmp/ours.copy" || fail "the link's target changed"
	[ ! -e "$tmp/r/nowhere.db" ] || fail "a file was made through the dangling link"
	[ "$(readlink "$tmp/r/link.db")" = ours.db ] || fail "the link was replaced"
	q --db "$tmp/r/link.db" "SELECT 1"
	[ "$st" = 2 ] && grep -q "symbolic link" "$tmp/err" || fail "reading through a link: status $st: $(cat "$tmp/err")"
	[ "$(ls -a "$tmp/r" | grep -c tmp)" = 0 ] || fail "a temporary file is left: $(ls -a "$tmp/r")"
}

# The events per name, as the SQL tables count them, equal stat's.
query_counts_per_event_equal_stat() { # case
	demo_trace
	"$rt" stat "$tmp/t" | awk '/^events by name:/ { on = 1; next } on && NF == 0 { exit } on && $2 > 0 { print $1, $2 }' |
		sort >"$tmp/stat"
	[ -s "$tmp/stat" ] || fail "stat printed no events"
	q "$tmp/t" --format tsv "SELECT event, count FROM event_table WHERE count > 0 ORDER BY event"
	[ "$st" = 0 ] || fail "event_table: $(cat "$tmp/err")"
	tail -n +2 "$tmp/out" | tr '\t' ' ' | sort >"$tmp/sql"
	cmp -s "$tmp/stat" "$tmp/sql" || fail "event_table and stat differ: $(diff "$tmp/stat" "$tmp/sql")"
	# and each event's own table holds as many rows
	q "$tmp/t" --format tsv "SELECT table_name, count FROM event_table WHERE count > 0"
	tail -n +2 "$tmp/out" | while IFS="$(printf '\t')" read -r name count; do
		n=$("$rt" query "$tmp/t" --format tsv "SELECT count(*) FROM \"$name\"" | tail -1)
		[ "$n" = "$count" ] || fail "table $name: $n rows, event_table says $count"
	done
}

# A collection (a directory of traces): each trace's events, a process
# row per trace named after its directory.
query_collection_holds_each_traces_events() { # case
	demo_trace
	mkdir "$tmp/c"
	cp -r "$tmp/t" "$tmp/c/a"
	cp -r "$tmp/t" "$tmp/c/b"
	one=$("$rt" query "$tmp/t" --format tsv "SELECT count(*) FROM slice" | tail -1)
	q "$tmp/c" --format tsv "SELECT count(*) FROM slice; SELECT trace FROM process ORDER BY trace"
	[ "$st" = 0 ] || fail "status $st: $(cat "$tmp/err")"
	printf 'count(*)\n%s\n\ntrace\na\nb\n' $((one * 2)) | cmp -s - "$tmp/out" ||
		fail "a collection of two copies ($one slices each): $(cat "$tmp/out")"
}

# -v: the import's time and rate, and each table's rows, on stderr.
query_verbose_says_time_and_rows() { # case
	demo_trace
	q -v "$tmp/t" --format tsv "SELECT count(*) FROM slice; SELECT count(*) FROM args"
	[ "$st" = 0 ] || fail "status $st: $(cat "$tmp/err")"
	grep -Eq "^ringtrace query: $tmp/t: [0-9]+ records, [0-9]+ events imported in [0-9.]+ s" "$tmp/err" ||
		fail "no time: $(cat "$tmp/err")"
	for t in slice args; do
		n=$(awk -v t=$t '$3 == t { print $4 }' "$tmp/err")
		[ -n "$n" ] && grep -qx "$n" "$tmp/out" || fail "-v says $t has $n rows: $(cat "$tmp/out")"
	done
}

query_damaged_trace_exits_1_and_answers() { # case
	demo_trace
	cp -r "$tmp/t" "$tmp/d"
	s=$(ls "$tmp/d" | grep '^stream_' | head -1)
	printf 'XXXXXXXX' | dd of="$tmp/d/$s" bs=1 seek=0 conv=notrunc 2>/dev/null
	q "$tmp/d" --format csv "SELECT count(*) > 0 FROM slice"
	[ "$st" = 1 ] || fail "status $st"
	printf 'count(*) > 0\r\n1\r\n' | cmp -s - "$tmp/out" || fail "no answer: $(cat "$tmp/out")"
	grep -q "bad magic" "$tmp/err" && grep -q "the trace is damaged" "$tmp/err" || fail "damage not said: $(cat "$tmp/err")"
	q "$tmp/d" --format csv "SELECT sum(value) > 0 FROM stats WHERE severity = 'error'"
	printf 'sum(value) > 0\r\n1\r\n' | cmp -s - "$tmp/out" || fail "damage not in stats: $(cat "$tmp/out")"
	# a wrong statement is still 2
	q "$tmp/d" "SELECT nosuch"
	[ "$st" = 2 ] || fail "wrong statement on a damaged trace: status $st"
}

# test_query_spans_prog minval recorded into $tmp/m (once per run): span_flags
# (bits, low, ratio) = (2^63, INT64_MIN, 0.5), (2^63 + 1, INT64_MIN + 1, 1.5), (4, -3, 2.5).
minval_trace() {
	if [ ! -d "$tmp/m" ]; then
		"$rt" record -q -o "$tmp/m" -- "$bin/test_query_spans_prog" minval >/dev/null
		[ -f "$tmp/m/metadata" ] || fail "record wrote no metadata"
	fi
}

# qcsv SQL EXPECTED: the CSV answer (rows joined by spaces, CRLF dropped) on $tmp/m.
qcsv() {
	q "$tmp/m" --format csv "$1"
	[ "$st" = 0 ] || fail "$1: status $st: $(cat "$tmp/err")"
	got=$(tr -d '\r' <"$tmp/out" | tr '\n' ' ')
	[ "$got" = "$2 " ] || fail "$1: got '$got', want '$2'"
}

query_uint64_2p63_and_int64_min_read_as_values() { # case
	minval_trace
	# the uint64 as its two's complement, as every value above INT64_MAX
	qcsv "SELECT bits, typeof(bits), low, typeof(low) FROM span_flags ORDER BY id" \
		"bits,typeof(bits),low,typeof(low) -9223372036854775808,integer,-9223372036854775808,integer -9223372036854775807,integer,-9223372036854775807,integer 4,integer,-3,integer"
	qcsv "SELECT count(*) FROM span_flags WHERE bits IS NULL OR low IS NULL" "count(*) 0"
	qcsv "SELECT count(bits), count(low) FROM span_flags" "count(bits),count(low) 3,3"
}

query_args_int64_min_is_value_not_null() { # case
	minval_trace
	qcsv "SELECT key, int_value, int_value IS NULL FROM args WHERE arg_set_id = (SELECT min(id) FROM span_flags)" \
		"key,int_value,int_value IS NULL bits,-9223372036854775808,0 low,-9223372036854775808,0 ratio,,1"
}

query_order_by_puts_nulls_first_then_int64_min() { # case
	minval_trace
	# args: the ratios' NULLs, then the two INT64_MINs, then the values
	qcsv "SELECT coalesce(int_value, 'NULL') AS v FROM args WHERE arg_set_id IN (SELECT id FROM span_flags) ORDER BY int_value, key" \
		"v NULL NULL NULL -9223372036854775808 -9223372036854775808 -9223372036854775807 -9223372036854775807 -3 4"
	qcsv "SELECT low FROM span_flags ORDER BY low DESC" "low -3 -9223372036854775807 -9223372036854775808"
}

query_equality_and_ranges_find_int64_min() { # case
	minval_trace
	qcsv "SELECT count(*) FROM span_flags WHERE bits = -9223372036854775808" "count(*) 1"
	qcsv "SELECT count(*) FROM span_flags WHERE low = -9223372036854775808" "count(*) 1"
	qcsv "SELECT count(*) FROM span_flags WHERE low <= -9223372036854775808" "count(*) 1"
	qcsv "SELECT count(*) FROM span_flags WHERE low < -9223372036854775807" "count(*) 1"
	qcsv "SELECT count(*) FROM span_flags WHERE bits < 0" "count(*) 2"
	qcsv "SELECT count(*) FROM span_flags WHERE low BETWEEN -9223372036854775808 AND -4" "count(*) 2"
	qcsv "SELECT count(*) FROM span_flags WHERE low > -9223372036854775808" "count(*) 2"
	qcsv "SELECT count(*) FROM args WHERE int_value = -9223372036854775808" "count(*) 2"
}

query_usage() { # case
	"$rt" query -h >"$tmp/h" || fail "-h failed"
	grep -q '^usage: ringtrace query \[options\] DIR \[SQL\]' "$tmp/h" || fail "-h: $(cat "$tmp/h")"
	"$rt" --help | grep -q '^  query DIR' || fail "ringtrace --help does not list query"
	for args in "" "--bogus x" "--format" "--db" "-f" "a b c"; do
		q $args
		[ "$st" = 2 ] || fail "query $args: status $st"
		grep -q "Try 'ringtrace query --help'" "$tmp/err" || fail "query $args: $(cat "$tmp/err")"
	done
	q "$tmp/nonexistent" "SELECT 1"
	[ "$st" = 1 ] || fail "a missing trace: status $st"
}

rt_run_cases "$@"
