#!/usr/bin/env bash
# bench/probes/tail_alternate.sh - builds side by side in bench/compare's
# tail harness, alternating, one line per round.
#
# usage: bench/probes/tail_alternate.sh ROUNDS LABEL=BINARY[@VAR=VALUE] ...
#
# Each round runs every case once, in the order given, each a fresh process:
#   taskset -c 1 BINARY --cpu 0 --mode overwrite --buffer 4194304 \
#       --dir DIR --what tail --n 1000000 --warmup 50000 --hist FILE
# (the measured thread on CPU 0, helpers on CPU 1, as bench/compare runs
# them), with VAR=VALUE in its environment if given (CMP_PAGE=262144: the
# page size of a cmp-ringtrace measurement build that reads it).
# BINARY is any cmp-<tracer> of bench/cmp. MODE=discard and BUFFER=BYTES
# in this script's environment change the mode and the buffer.
#
# Prints, per case: p99.99 (ns) and the calls at or above 40 ns and at or
# above 60 ns in the million timed (from the histogram; a call counts
# when within half a counter step of the bound). p99.99 is the 100th
# slowest call: the counts say how near a case is to that edge.
set -euo pipefail

if [ $# -lt 2 ] || ! [[ $1 =~ ^[0-9]+$ ]]; then
	sed -n '4,20p' "$0" >&2
	exit 2
fi
rounds=$1
shift
mode=${MODE:-overwrite}
buffer=${BUFFER:-4194304}
work=$(mktemp -d /dev/shm/tail_alternate.XXXXXX)
trap 'rm -rf "$work"' EXIT

for c in "$@"; do
	label=${c%%=*}
	rest=${c#*=}
	bin=${rest%%@*}
	if [ "$label" = "$c" ] || [ -z "$label" ] || [ ! -x "$bin" ]; then
		echo "tail_alternate: case \"$c\": want LABEL=BINARY[@VAR=VALUE], BINARY executable" >&2
		exit 2
	fi
	if ! [[ $label =~ ^[A-Za-z0-9_.-]+$ ]]; then
		echo "tail_alternate: case \"$c\": the label may hold letters, digits, _ . - only" >&2
		exit 2
	fi
done

for r in $(seq 1 "$rounds"); do
	line="round $r"
	for c in "$@"; do
		label=${c%%=*}
		rest=${c#*=}
		bin=${rest%%@*}
		envs=()
		[ "$rest" != "$bin" ] && envs=("${rest#*@}")
		dir=$work/$label-$r
		hist=$work/$label-$r.hist
		out=$(env "${envs[@]}" taskset -c 1 "$bin" --cpu 0 --mode "$mode" --buffer "$buffer" \
			--dir "$dir" --what tail --n 1000000 --warmup 50000 --hist "$hist" 2>&1 |
			grep '^RESULT' || true)
		if [ -z "$out" ] || [ ! -s "$hist" ]; then
			line="$line | $label FAILED"
			continue
		fi
		p=$(sed -n 's/.* p9999=\([0-9.]*\) .*/\1/p' <<<"$out")
		step=$(sed -n 's/.* step_ns=\([0-9.]*\) .*/\1/p' <<<"$out")
		counts=$(awk -v h="$step" '!/^#/ { if ($1 >= 40 - h / 2) a += $2; if ($1 >= 60 - h / 2) b += $2 }
			END { printf "%d/%d", a, b }' "$hist")
		line="$line | $label ${p%.*} $counts"
		rm -rf "$dir" "$hist"
	done
	echo "$line"
done
echo "(each case: p99.99 ns, then calls >= 40 ns / >= 60 ns of the 1,000,000 timed)"
