#!/bin/sh
# docs/query.md against the tables: every ```sql block of the document
# run on the demo's trace with `ringtrace query`, and every table's
# columns as the document lists them, so that the reference cannot drift
# from the tables (a renamed column, a dropped table fails here). The
# kernel tables are empty in a trace without kernel events, and a query
# on them must still succeed.
#   usage: test_query_docs.sh SOURCE_DIR BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
src=$1
bin=$2
shift 2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ringtrace-query-docs-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_query_docs: $*" >&2; exit 1; }
doc=$src/docs/query.md

demo_trace() {
	if [ ! -d "$tmp/t" ]; then
		"$bin/ringtrace" record -q -o "$tmp/t" -- "$bin/ringtrace-demo" --seconds 0.1 --threads 3 >/dev/null
		[ -f "$tmp/t/metadata" ] || fail "record wrote no metadata"
	fi
}

query_docs_hold_the_worked_queries() { # case
	rt_sql_blocks "$doc" "$tmp/q"
	# the overview, completeness, and the five common questions at least
	[ "$n" -ge 7 ] || fail "docs/query.md has $n sql blocks; the worked queries are missing or not fenced as \`\`\`sql"
}

query_docs_every_worked_query_runs_on_the_demo_trace() { # case
	rt_sql_blocks "$doc" "$tmp/q"
	demo_trace
	for q in "$tmp"/q/*.sql; do
		if ! "$bin/ringtrace" query --format csv -f "$q" "$tmp/t" >"$tmp/out" 2>"$tmp/err"; then
			echo "--- $q:" >&2
			cat "$q" >&2
			cat "$tmp/err" >&2
			fail "a worked query of docs/query.md failed (above)"
		fi
	done
}

# Every table the reference describes lists its columns in the order
# the tables have them: `| column |` rows under "### `T`" (the first
# table of that section), or `| T.column |` rows for sections of several.
query_docs_list_every_column_of_every_table() { # case
	demo_trace
	# imported once, into a file the loop queries
	"$bin/ringtrace" query --db "$tmp/t.db" "$tmp/t" || fail "query --db could not write $tmp/t.db"
	for t in process thread slice counter_track counter args event_table event_column \
		ftrace_event sched_slice thread_state loss stats; do
		real=$("$bin/ringtrace" query --format csv --db "$tmp/t.db" \
			"SELECT group_concat(name, ' ') FROM pragma_table_info('$t')" | tail -n 1 | tr -d '\r')
		documented=$(python3 - "$doc" "$t" <<'PY'
import re, sys
doc, t = open(sys.argv[1]).read(), sys.argv[2]
cols = re.findall(r"^\| %s\.([a-z_]+) \|" % t, doc, re.M)
if not cols:
    m = re.search(r"^### `%s`\n\n(?:.*\n)*?\| column \|.*\n\| --- .*\n((?:\|.*\n)+)" % t, doc, re.M)
    cols = re.findall(r"^\| ([a-z_]+) \|", m.group(1), re.M) if m else []
print(" ".join(cols))
PY
)
		[ "$documented" = "$real" ] ||
			fail "docs/query.md lists the columns of $t as '$documented'; the table has '$real'"
	done
}

rt_run_cases "$@"
