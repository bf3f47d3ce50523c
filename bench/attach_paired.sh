#!/bin/sh
# The write path under a session started by attaching (`ringtrace record
# -p`) against one started in-process (as `ringtrace record -- CMD` does,
# from the environment): cmp-ringtrace's microbenchmark (--what micro,
# one thread on CPU 0, helpers on CPU 1), N timed events after a warm-up
# of W, a 128 MiB pool (discard) for both, the two alternated ROUNDS times; ns per event of each, and the
# per-round ratio attached/in-process, sorted.
#   usage: bench/attach_paired.sh [BUILD_DIR (build-compare)] [ROUNDS (7)] [N (10000000)] [W (50000)]
set -eu
b=${1:-build-compare}/bin
rounds=${2:-7}
n=${3:-10000000}
w=${4:-50000}
[ -x "$b/cmp-ringtrace" ] || { echo "no $b/cmp-ringtrace: build with -DRINGTRACE_BUILD_COMPARE=ON (bench/compare does)" >&2; exit 2; }
tmp=$(mktemp -d /dev/shm/rt-attach-paired-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
ns() { sed -n 's/^RESULT .* ns=\([0-9.]*\) .*/\1/p' "$1"; }
r=1
ratios=""
while [ "$r" -le "$rounds" ]; do
	rm -rf "$tmp/own" "$tmp/att"
	taskset -c 1 "$b/cmp-ringtrace" --cpu 0 --what micro --n "$n" --warmup "$w" --buffer $((128 << 20)) --dir "$tmp/own" >"$tmp/own.out"
	CMP_ATTACHED=1 taskset -c 1 "$b/cmp-ringtrace" --cpu 0 --what micro --n "$n" --warmup "$w" >"$tmp/att.out" &
	p=$!
	i=0
	while [ $i -lt 100 ] && ! grep -q WAITING "$tmp/att.out"; do sleep 0.05; i=$((i + 1)); done
	taskset -c 1 "$b/ringtrace" record -q -p "$p" -e cmp_int --buffer-size 128m -o "$tmp/att"
	wait "$p"
	o=$(ns "$tmp/own.out") a=$(ns "$tmp/att.out")
	ratio=$(echo "$a $o" | awk '{printf "%.3f", $1 / $2}')
	echo "round $r: in-process $o ns, attached $a ns, attached/in-process $ratio"
	ratios="$ratios $ratio"
	r=$((r + 1))
done
echo "attached/in-process, sorted:$(for x in $ratios; do echo "$x"; done | sort -n | tr '\n' ' ')"
