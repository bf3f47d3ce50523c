#!/usr/bin/env bash
# bench/probes/evict.sh - the eviction probe (evict.c) against a build of
# the library: ringtrace's, DPDK's and the floor's event with the L1 data
# cache evicted before every K-th event, and without.
#
# usage: bench/probes/evict.sh BUILD_DIR [evict options]
#   BUILD_DIR   any CMake build of ringtrace (its lib/libringtrace.a; the
#               headers are taken from the source tree it was configured
#               from, as the inline write path must match the library)
#   options     passed to the probe: --rounds R (200), --every ROW,...
#               (none,1f,10,1: none, an lfence alone before every event,
#               the eviction (read, lfence) before every 10th event, before
#               every event), --bytes N (what is read to evict: twice the
#               L1 data cache), --buffer BYTES (4 MiB), --busy spin|sweep
#               (a thread busy on the other CPU)
#
# The probe is compiled here (gcc -O2, bench/cmp's flags: -falign-loops=32
# and DPDK's pkg-config flags) into a temporary directory, and run with its
# measured thread on CPU 0 and DPDK's and ringtrace's helpers on CPU 1
# (`taskset -c 1`, as bench/compare runs cmp-pair). Needs libdpdk-dev and
# the permissions DPDK's EAL wants (root here). About 20 s with the
# defaults. The table at the end is what to compare between builds.
set -euo pipefail

if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
	sed -n '5,24p' "$0" >&2
	exit 2
fi
build=$(cd "$1" && pwd)
shift
lib=$build/lib/libringtrace.a
[ -f "$lib" ] || { echo "evict.sh: no $lib (build the library first)" >&2; exit 1; }
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
[ -d "$src/include/ringtrace" ] || { echo "evict.sh: no headers under '$src'" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
cmp=$here/../cmp
pkg-config --exists libdpdk || { echo "evict.sh: needs libdpdk-dev (pkg-config libdpdk)" >&2; exit 1; }

work=$(mktemp -d /tmp/evict.XXXXXX)
trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2046  # pkg-config's flags are words
gcc -O2 -g -std=gnu11 -falign-loops=32 -D_GNU_SOURCE -DALLOW_EXPERIMENTAL_API \
	$(pkg-config --cflags libdpdk) -I"$src/include" -I"$cmp" -I"$here" \
	"$here/evict.c" "$here/evict_dpdk.c" "$cmp/cmp_pair_dpdk.c" "$cmp/cmp_rt_events.c" \
	"$cmp/cmp_dpdk_tp.c" "$lib" $(pkg-config --libs libdpdk) -lpthread -lm -o "$work/evict"
mkdir -p "$work/trace"
echo "library: $lib (headers: $src/include, $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?'))"
taskset -c 1 "$work/evict" --cpu 0 --dir "$work/trace" "$@"
