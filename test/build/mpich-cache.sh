#!/bin/sh
# mpich-cache.sh: the MPICH build cache is keyed by content, not by where the
# clone is. From a second copy of this tree at another path,
# scripts/build-mpich.sh must find the MPICH that this tree's build put in
# the cache (a hit: no configure, no make, seconds), and a change in a
# driver file must give a new key.
#
# Usage: test/build/mpich-cache.sh RPFS_PREFIX MPICH_PREFIX
#   RPFS_PREFIX   the rpfs install build-mpich.sh was given
#   MPICH_PREFIX  the prefix it printed
# Environment: RPFS_CACHE as for build-mpich.sh; HIT_SECONDS (default 30).
# Each line says PASS or FAIL; the last line is "N passed, N failed".
set -u

RPFS_PREFIX=${1:?usage: $0 RPFS_PREFIX MPICH_PREFIX}
MPICH_PREFIX=${2:?usage: $0 RPFS_PREFIX MPICH_PREFIX}
HIT_SECONDS=${HIT_SECONDS:-30}
REPO=$(cd "$(dirname "$0")/../.." && pwd)

passed=0
failed=0
pass() { passed=$((passed + 1)); printf 'PASS  %s\n' "$1"; }
fail() {
    failed=$((failed + 1))
    printf 'FAIL  %s\n' "$1"
    [ -n "${2:-}" ] && [ -f "$2" ] && tail -15 "$2" | sed 's/^/    /'
}

WORK=$(mktemp -d /tmp/rpfs-mpich-cache.XXXXXX)
trap 'rm -rf "$WORK"' EXIT INT TERM

# A second copy of the tree as it is now (tracked files, with any edits not
# yet committed), at a path that shares nothing with this one.
COPY="$WORK/another/clone"
mkdir -p "$COPY"
if git -C "$REPO" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$REPO" && git ls-files -z | xargs -0 tar -cf - 2>/dev/null) | tar -xf - -C "$COPY"
else
    (cd "$REPO" && tar -cf - --exclude=./build --exclude=./build-san .) | tar -xf - -C "$COPY"
fi

key_here=$("$REPO/scripts/build-mpich.sh" --print-key "$RPFS_PREFIX" 2>/dev/null)
key_there=$("$COPY/scripts/build-mpich.sh" --print-key "$RPFS_PREFIX" 2>/dev/null)
if [ -n "$key_here" ] && [ "$key_here" = "$key_there" ]; then
    pass "the key does not depend on the clone's path ($key_here at $REPO and $COPY)"
else
    fail "keys differ: '$key_here' at $REPO, '$key_there' at $COPY"
fi

log="$WORK/second.log"
start=$(date +%s)
out=$("$COPY/scripts/build-mpich.sh" "$RPFS_PREFIX" 2>"$log" | tail -n 1)
secs=$(($(date +%s) - start))
if [ "$out" = "$MPICH_PREFIX" ] && grep -q "cached:" "$log" && [ "$secs" -le "$HIT_SECONDS" ]; then
    pass "a second clone reuses the cached MPICH in ${secs}s ($out)"
else
    fail "a second clone did not hit the cache (printed '$out', want '$MPICH_PREFIX', ${secs}s)" "$log"
fi

if grep -rqF "$REPO" "$MPICH_PREFIX/bin/mpicc" "$MPICH_PREFIX/lib/pkgconfig" 2>/dev/null; then
    fail "the cached MPICH refers to the clone $REPO (it must be built against the rpfs install)"
else
    pass "the cached MPICH's mpicc and pkg-config files name no clone path"
fi

printf '\n/* a change */\n' >>"$COPY/adio/ad_rpfs/ad_rpfs_close.c"
key_changed=$("$COPY/scripts/build-mpich.sh" --print-key "$RPFS_PREFIX" 2>/dev/null)
if [ -n "$key_changed" ] && [ "$key_changed" != "$key_here" ]; then
    pass "a change in a driver file gives a new key ($key_changed)"
else
    fail "a changed driver file kept the key '$key_changed'"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
