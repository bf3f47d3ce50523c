#!/usr/bin/env bash
# bench/count_ops.sh - instructions, loads and stores of recording one
# event, counted exactly (valgrind's cachegrind), for ringtrace (discard
# and overwrite) and DPDK rte_trace, in a table.
#
#   bench/count_ops.sh [BUILD_DIR]
#
# BUILD_DIR holds bench/cmp's programs (default build-compare/, the folder
# bench/compare builds: cmake -DRINGTRACE_BUILD_COMPARE=ON
# -DCMAKE_BUILD_TYPE=RelWithDebInfo; needs libdpdk-dev, liblttng-ust-dev,
# systemtap-sdt-dev). Prints one row per program and mode: Ir, Dr and Dw
# per event.
#
# Method: each program runs its micro loop (--what micro --warmup 1000)
# under `valgrind --tool=cachegrind --cache-sim=yes` twice, at N1 and N2
# events (1M and 3M; COUNT_N1 / COUNT_N2 in the environment change them),
# and the table shows (total at N2 - total at N1) / (N2 - N1): what the
# start, the stop and writing the trace cost is the same in both runs and
# cancels, what is left is what each further event costs the program, all
# its threads together (the consumer's share of writing full pages out
# included, a small part). Counts are exact and repeatable (to a few
# hundredths), unlike timings on a shared machine. The harness's loop
# itself is 3 instructions and no memory access an event. Dr and Dw are
# the data reads and writes cachegrind counts: push and call count as a
# write of the stack, pop and ret as a read; an instruction that reads and
# writes one location (an add to memory) counts as one read only.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-$ROOT/build-compare}
BIN=$BUILD/bin
N1=${COUNT_N1:-1000000}
N2=${COUNT_N2:-3000000}

command -v valgrind >/dev/null || {
	echo "bench/count_ops.sh: valgrind not found (apt-get install valgrind)" >&2
	exit 2
}
for p in cmp-ringtrace cmp-dpdk; do
	[ -x "$BIN/$p" ] || {
		echo "bench/count_ops.sh: $BIN/$p: not found (build bench/cmp: see the header)" >&2
		exit 2
	}
done
[ "$N2" -gt "$N1" ] || {
	echo "bench/count_ops.sh: COUNT_N2 ($N2) must be greater than COUNT_N1 ($N1)" >&2
	exit 2
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/count_ops.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# totals PROG MODE N -> "Ir Dr Dw" of the whole program (summary line)
totals() {
	local prog=$1 mode=$2 n=$3 out=$WORK/cg.$1.$2.$3
	local dir=$WORK/trace.$1.$2.$3 buf=134217728
	[ "$mode" = overwrite ] && buf=4194304
	mkdir -p "$dir"
	if ! valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file="$out" \
		"$BIN/$prog" --what micro --n "$n" --warmup 1000 --mode "$mode" \
		--buffer "$buf" --dir "$dir" >"$WORK/log" 2>&1; then
		echo "bench/count_ops.sh: $prog --mode $mode --n $n failed:" >&2
		grep -v '^==' "$WORK/log" | tail -5 >&2
		exit 1
	fi
	rm -rf "$dir"
	# cachegrind's out file: "events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw
	# DLmw" and "summary: ..." in the same order
	awk '/^events:/ { for (i = 2; i <= NF; i++) col[$i] = i }
	     /^summary:/ { print $col["Ir"], $col["Dr"], $col["Dw"] }' "$out"
}

printf '%-22s %12s %10s %10s\n' "per event" instructions loads stores
for c in ringtrace:discard ringtrace:overwrite dpdk:discard dpdk:overwrite; do
	t=${c%%:*} m=${c#*:}
	read -r i1 r1 w1 < <(totals "cmp-$t" "$m" "$N1")
	read -r i2 r2 w2 < <(totals "cmp-$t" "$m" "$N2")
	awk -v n="$((N2 - N1))" -v name="$t $m" -v i1="$i1" -v i2="$i2" \
		-v r1="$r1" -v r2="$r2" -v w1="$w1" -v w2="$w2" 'BEGIN {
		printf "%-22s %12.2f %10.2f %10.2f\n", name, (i2 - i1) / n, (r2 - r1) / n, (w2 - w1) / n
	}'
done
echo "(cachegrind --cache-sim=yes Ir / Dr / Dw; (total at $N2 - total at $N1 events) / $((N2 - N1)); --what micro --warmup 1000)"
