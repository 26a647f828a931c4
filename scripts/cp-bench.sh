#!/usr/bin/env bash
# cp-bench.sh: `rpfs cp` of one file into rpfs and back out, against 1, 2
# and 4 I/O servers on loopback, with server storage and the local file on
# tmpfs (/dev/shm) so the disk is not what is measured. Prints a table.
#
# Usage: scripts/cp-bench.sh [SIZE_MIB] [RPFS_BIN_DIR]
#   SIZE_MIB      file size in MiB (default 1024)
#   RPFS_BIN_DIR  directory holding rpfs and rpfsd (default: build/)
set -euo pipefail
size_mib=${1:-1024}
bin=${2:-$(cd "$(dirname "$0")/.." && pwd)/build}
rpfs=$bin/rpfs
[ -x "$rpfs" ] || { echo "no rpfs in $bin (build first)" >&2; exit 2; }
export RPFSD=${RPFSD:-$bin/rpfsd}
work=$(mktemp -d /dev/shm/rpfs-cp-bench.XXXXXX)
cleanup() {
	"$rpfs" down --dir "$work/cluster" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

head -c $((size_mib << 20)) /dev/urandom >"$work/src"
# Seconds of one command, to the millisecond.
timed() {
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
}
printf '%-10s %12s %12s   (%d MiB file, tmpfs, loopback, provider %s)\n' \
	"servers" "in MB/s" "out MB/s" "$size_mib" "${RPFS_PROVIDER:-tcp}"
for n in 1 2 4; do
	rm -rf "$work/cluster"
	"$rpfs" up -n "$n" --dir "$work/cluster" >/dev/null
	export RPFS_CONFIG=$work/cluster/rpfs.conf
	tin=$(timed "$rpfs" cp "$work/src" rpfs:/bench.dat)
	tout=$(timed "$rpfs" cp rpfs:/bench.dat "$work/out")
	cmp -s "$work/src" "$work/out" || { echo "data differs after the round trip ($n servers)" >&2; exit 1; }
	awk -v n="$n" -v mib="$size_mib" -v tin="$tin" -v tout="$tout" \
		'BEGIN { printf "%-10s %12.0f %12.0f\n", n, mib * 1.048576 / tin, mib * 1.048576 / tout }'
	rm -f "$work/out"
	"$rpfs" down --dir "$work/cluster" >/dev/null
done
