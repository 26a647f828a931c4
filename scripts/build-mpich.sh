#!/bin/sh
# build-mpich.sh: MPICH 4.0.2 (Debian's source) with the rpfs ROMIO driver.
#
# ROMIO has no plugin interface, so the driver (adio/ad_rpfs) is compiled
# into MPICH: this script fetches Debian's mpich source package, copies the
# driver into src/mpi/romio/adio/ad_rpfs, applies adio/romio.patch (the
# registration edits), regenerates ROMIO's build files, and builds MPICH
# (ch3:nemesis, no Fortran/C++, yielding waits: see CONFIG_FLAGS) linked
# against librpfs.
#
# Usage: scripts/build-mpich.sh [--print-key] [RPFS_PREFIX]
#   RPFS_PREFIX   where rpfs is installed (lib/librpfs.so, include/rpfs.h
#                 and include/rpfs_mpi.h, the MPI glue the driver shares
#                 with the Open MPI components);
#                 also taken from the environment variable RPFS_PREFIX.
#   --print-key   print the cache key of this input and exit (no build)
# Environment:
#   RPFS_CACHE    cache directory (default /var/cache/rpfs)
#   JOBS          make parallelism (default 2)
#
# The installed prefix is ${RPFS_CACHE}/mpich-<key>, where <key> hashes the
# content of what goes into the build: the patch, the driver sources, the
# installed rpfs.h and rpfs_mpi.h, the configure flags and this script. No path into the
# clone is part of it (the driver compiles against the rpfs install, not
# the clone), so every clone of the same commit shares one MPICH. An
# existing complete prefix for the key is reused as is.
#
# Each configuration key (flags, patch, the driver's Makefile.mk) has its
# own build tree ${RPFS_CACHE}/mpich-build-<conf key>, held under a lock
# while it is used, so an edited driver rebuilds incrementally and two
# builds never share a tree. Installation goes to a staging directory that
# is renamed into place only when complete: a half-finished build is never
# used. The last line of output is the prefix.
set -eu

say() { printf '[build-mpich] %s\n' "$*" >&2; }
die() { printf '[build-mpich] error: %s\n' "$*" >&2; exit 1; }

MPICH_VERSION=4.0.2
REPO=$(cd "$(dirname "$0")/.." && pwd)
SCRIPT="$REPO/scripts/build-mpich.sh"
CACHE=${RPFS_CACHE:-/var/cache/rpfs}
JOBS=${JOBS:-2}
PRINT_KEY=0
if [ "${1:-}" = "--print-key" ]; then
    PRINT_KEY=1
    shift
fi
RPFS_PREFIX=${1:-${RPFS_PREFIX:-}}

[ -n "$RPFS_PREFIX" ] || die "usage: $0 RPFS_PREFIX (where librpfs is installed: ./configure --prefix=P && make install)"
RPFS_PREFIX=$(cd "$RPFS_PREFIX" 2>/dev/null && pwd) || die "rpfs prefix '$1' does not exist"
RPFS_LIBDIR="$RPFS_PREFIX/lib"
[ -e "$RPFS_LIBDIR/librpfs.so" ] || die "no $RPFS_LIBDIR/librpfs.so: build and install rpfs first (./configure --prefix=$RPFS_PREFIX && make install)"
[ -e "$RPFS_LIBDIR/librpfs-common.so" ] || die "no $RPFS_LIBDIR/librpfs-common.so in the rpfs prefix"
RPFS_INCDIR="$RPFS_PREFIX/include"
for h in rpfs.h rpfs_mpi.h; do
    [ -f "$RPFS_INCDIR/$h" ] || die "no $RPFS_INCDIR/$h: install rpfs (make install) into $RPFS_PREFIX"
done
for f in adio/romio.patch adio/ad_rpfs/Makefile.mk adio/ad_rpfs/ad_rpfs.c; do
    [ -f "$REPO/$f" ] || die "missing $REPO/$f"
done

run_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo "$@"
    else die "need root or sudo to run: $*"; fi
}

# ---- 1. build dependencies ------------------------------------------------
DEPS="autoconf automake libtool libhwloc-dev dpkg-dev patch make gcc perl python3"
missing=""
for p in $DEPS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    say "installing build dependencies:$missing"
    run_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing >&2 ||
        die "apt-get install failed for:$missing"
fi

# ---- 2. configure flags and cache key --------------------------------------
# --enable-yield=sched_yield: ch3:nemesis waits by polling, and on Linux
# MPICH's default is to never yield (MPL picks "nothing"), so a rank
# waiting in a collective holds its core at 100% while the rank it waits
# for, or the rpfsd serving it, waits for a core. With more ranks than
# cores (these machines: 4 ranks and 4 servers on 2 cores) collectives ran
# 10-80x slower (4 KiB collective writes, 4 ranks: 2.2 -> 26.6 MB/s on
# rpfs, 1.5 -> 339 on ufs). A rank now yields after
# MPIR_CVAR_POLLS_BEFORE_YIELD (1000) empty polls; with a core of its own,
# sched_yield returns at once. MPIR_CVAR_POLLS_BEFORE_YIELD=0 turns it off.
CONFIG_FLAGS="--with-device=ch3:nemesis --disable-fortran --disable-cxx --disable-static \
--with-file-system=ufs+nfs+rpfs --enable-fast=O2 --enable-yield=sched_yield"
CPPFLAGS_V="-I$RPFS_INCDIR"
LDFLAGS_V="-L$RPFS_LIBDIR -Wl,-rpath,$RPFS_LIBDIR"
LIBS_V="-lrpfs -lrpfs-common"
# programs built by this mpicc link librpfs too (before libc: its memory
# hooks keep the registration cache right)
WRAP_LDFLAGS_V="-L$RPFS_LIBDIR -Wl,-rpath,$RPFS_LIBDIR"
WRAP_LIBS_V="-Wl,--no-as-needed -lrpfs -lrpfs-common"
ALL_FLAGS="$CONFIG_FLAGS|$CPPFLAGS_V|$LDFLAGS_V|$LIBS_V|$WRAP_LDFLAGS_V|$WRAP_LIBS_V|$MPICH_VERSION"

# What forces a fresh configure: flags, the patch, the driver's Makefile.mk.
CONF_KEY=$( { echo "$ALL_FLAGS"; cat "$REPO/adio/romio.patch" "$REPO/adio/ad_rpfs/Makefile.mk"; } |
    sha256sum | cut -c1-16)
# What names an installed prefix: all of the above, the driver, the rpfs
# headers it compiles against (rpfs_mpi.h has inline functions), this
# script. Contents only, never the clone's path.
KEY=$( { echo "$ALL_FLAGS"; cat "$REPO/adio/romio.patch" "$SCRIPT" "$RPFS_INCDIR/rpfs.h" \
    "$RPFS_INCDIR/rpfs_mpi.h";
    for f in $(cd "$REPO/adio/ad_rpfs" && ls | LC_ALL=C sort); do
        echo "== $f"; cat "$REPO/adio/ad_rpfs/$f"; done; } | sha256sum | cut -c1-16)

if [ "$PRINT_KEY" = 1 ]; then
    echo "$KEY"
    exit 0
fi

PREFIX="$CACHE/mpich-$KEY"
cached() { [ -f "$PREFIX/.rpfs-build-key" ] && [ -x "$PREFIX/bin/mpicc" ]; }
if cached; then
    say "cached: $PREFIX (key $KEY)"
    echo "$PREFIX"
    exit 0
fi

mkdir -p "$CACHE" || die "cannot create cache directory $CACHE (set RPFS_CACHE)"
BUILD="$CACHE/mpich-build-$CONF_KEY"
# One build per tree at a time; a build for another configuration key uses
# another tree and goes on in parallel.
exec 9>"$BUILD.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9 || die "cannot lock $BUILD.lock"
fi
# Another build of the same key may have finished while we waited.
if cached; then
    say "cached: $PREFIX (key $KEY, built meanwhile)"
    echo "$PREFIX"
    exit 0
fi

# ---- 3. source -------------------------------------------------------------
SRC_PRISTINE="$CACHE/src/mpich-$MPICH_VERSION"
mkdir -p "$CACHE/src"
exec 8>"$CACHE/src/.lock"
if command -v flock >/dev/null 2>&1; then
    flock 8 || die "cannot lock $CACHE/src/.lock"
fi
if [ ! -f "$SRC_PRISTINE/.rpfs-extracted" ]; then
    mkdir -p "$CACHE/src"
    if ! ls "$CACHE"/src/mpich_"$MPICH_VERSION"-*.dsc >/dev/null 2>&1; then
        # a deb-src entry, made from the machine's own deb entries (type
        # changed only), unless one exists already
        if ! grep -rqsE '^(Types:.*deb-src|deb-src[[:space:]])' /etc/apt/sources.list /etc/apt/sources.list.d/; then
            say "adding a deb-src entry derived from the existing deb entries"
            tmp=$(mktemp)
            for f in /etc/apt/sources.list.d/*.sources; do
                [ -f "$f" ] || continue
                sed -e 's/^Types:[[:space:]]*deb[[:space:]]*$/Types: deb-src/' "$f" >>"$tmp"
                echo >>"$tmp"
            done
            if [ -s "$tmp" ]; then
                run_root cp "$tmp" /etc/apt/sources.list.d/rpfs-deb-src.sources
            fi
            : >"$tmp"
            for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
                [ -f "$f" ] || continue
                sed -n -e 's/^deb[[:space:]]\(.*\)$/deb-src \1/p' "$f" >>"$tmp"
            done
            if [ -s "$tmp" ]; then
                run_root cp "$tmp" /etc/apt/sources.list.d/rpfs-deb-src.list
            fi
            rm -f "$tmp"
        fi
        say "apt-get update"
        run_root apt-get update -q >&2 || die "apt-get update failed"
        say "fetching the mpich source package into $CACHE/src"
        (cd "$CACHE/src" && apt-get source -q --download-only mpich >&2) ||
            die "apt-get source mpich failed"
    fi
    dsc=$(ls "$CACHE"/src/mpich_"$MPICH_VERSION"-*.dsc 2>/dev/null | head -1)
    [ -n "$dsc" ] || die "Debian's mpich source is not version $MPICH_VERSION (see $CACHE/src)"
    say "extracting $(basename "$dsc")"
    rm -rf "$SRC_PRISTINE"
    (cd "$CACHE/src" && dpkg-source -q -x "$(basename "$dsc")" "mpich-$MPICH_VERSION" >&2) ||
        die "dpkg-source -x failed"
    touch "$SRC_PRISTINE/.rpfs-extracted"
fi
exec 8>&-

# ---- 4. build tree: pristine copy + driver + patch -------------------------
SRC="$BUILD/src"
OBJ="$BUILD/obj"
# The configured prefix is a placeholder as long as a real one, so that the
# build tree survives driver edits and installation relocates it by a
# same-length byte replacement (binaries included).
PLACEHOLDER="$CACHE/mpich-XXXXXXXXXXXXXXXX"

if [ "$(cat "$BUILD/.conf-key" 2>/dev/null || true)" != "$CONF_KEY" ]; then
    say "new build tree in $BUILD (configuration key $CONF_KEY)"
    rm -rf "$BUILD"
    mkdir -p "$BUILD"
    cp -a "$SRC_PRISTINE" "$SRC"
    mkdir -p "$SRC/src/mpi/romio/adio/ad_rpfs"
    cp -p "$REPO"/adio/ad_rpfs/* "$SRC/src/mpi/romio/adio/ad_rpfs/"
    say "applying adio/romio.patch"
    patch -s -p1 -d "$SRC/src/mpi/romio" <"$REPO/adio/romio.patch" >&2 || die "romio.patch does not apply"
    say "autoreconf in src/mpi/romio"
    (cd "$SRC/src/mpi/romio" && autoreconf -vif -I confdb >"$BUILD/autoreconf.log" 2>&1) ||
        die "autoreconf failed, see $BUILD/autoreconf.log"
    mkdir -p "$OBJ"
    say "configure (about 2 minutes; log: $BUILD/configure.log)"
    (cd "$OBJ" && "$SRC/configure" --prefix="$PLACEHOLDER" $CONFIG_FLAGS \
        CPPFLAGS="$CPPFLAGS_V" LDFLAGS="$LDFLAGS_V" LIBS="$LIBS_V" \
        MPICH_MPICC_LDFLAGS="$WRAP_LDFLAGS_V" MPICH_MPICC_LIBS="$WRAP_LIBS_V" \
        >"$BUILD/configure.log" 2>&1) || {
        tail -20 "$BUILD/configure.log" >&2
        die "configure failed, see $BUILD/configure.log"
    }
    grep -q "ROMIO_RPFS 1" "$OBJ/src/mpi/romio/adio/include/romioconf.h" ||
        die "ROMIO was configured without rpfs (see $OBJ/src/mpi/romio/config.log)"
    echo "$CONF_KEY" >"$BUILD/.conf-key"
else
    say "reusing build tree $BUILD"
    # copy only what changed, so make rebuilds only that
    for f in "$REPO"/adio/ad_rpfs/*; do
        dst="$SRC/src/mpi/romio/adio/ad_rpfs/$(basename "$f")"
        cmp -s "$f" "$dst" || { say "updated driver file $(basename "$f")"; cp "$f" "$dst"; }
    done
fi

say "make -j$JOBS (about 7 minutes from scratch; log: $BUILD/make.log)"
(cd "$OBJ" && make -j"$JOBS" >"$BUILD/make.log" 2>&1) || {
    grep -E "error|Error" "$BUILD/make.log" | tail -20 >&2
    die "make failed, see $BUILD/make.log"
}

# ---- 5. install: stage, relocate, rename ----------------------------------
STAGE="$CACHE/.stage-$KEY.$$"
rm -rf "$STAGE"
trap 'rm -rf "$STAGE"' EXIT
say "installing into a staging directory"
(cd "$OBJ" && make install DESTDIR="$STAGE" >"$BUILD/install.log" 2>&1) ||
    die "make install failed, see $BUILD/install.log"
[ -d "$STAGE$PLACEHOLDER" ] || die "staged install not found at $STAGE$PLACEHOLDER"
# same length, so binaries stay valid
[ "${#PLACEHOLDER}" = "${#PREFIX}" ] || die "internal: placeholder and prefix lengths differ"
grep -rlF "$PLACEHOLDER" "$STAGE$PLACEHOLDER" | while IFS= read -r f; do
    [ -L "$f" ] && continue
    perl -pi -e "s{\Q$PLACEHOLDER\E}{$PREFIX}g" "$f"
done
if grep -rqF "$PLACEHOLDER" "$STAGE$PLACEHOLDER"; then
    die "relocation left the placeholder in: $(grep -rlF "$PLACEHOLDER" "$STAGE$PLACEHOLDER" | head -3)"
fi
# Debian-built MPICH programs (HDF5, ...) look for libmpich.so.12: same ABI
ln -sf libmpi.so.12 "$STAGE$PLACEHOLDER/lib/libmpich.so.12"
echo "$KEY" >"$STAGE$PLACEHOLDER/.rpfs-build-key"
"$STAGE$PLACEHOLDER/bin/mpicc" -show >/dev/null 2>&1 || true
rm -rf "$PREFIX"
mv "$STAGE$PLACEHOLDER" "$PREFIX" || die "cannot move the staged install to $PREFIX"
"$PREFIX/bin/mpicc" -show | grep -q -- "-lrpfs" || die "installed mpicc does not link librpfs"
say "installed MPICH $MPICH_VERSION with rpfs into $PREFIX"
# keep the three newest prefixes (older driver versions) and drop the rest
HEX16=$(printf '[0-9a-f]%.0s' 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
for old in $(ls -1dt "$CACHE"/mpich-$HEX16 2>/dev/null | tail -n +4); do
    [ -f "$old/.rpfs-build-key" ] && [ "$old" != "$PREFIX" ] && {
        say "removing old prefix $old"
        rm -rf "$old"
    }
done
# build trees of other configuration keys: keep the newest other one, and
# remove older ones only when no build holds them
for old in $(ls -1dt "$CACHE"/mpich-build-$HEX16 2>/dev/null | grep -vxF "$BUILD" | tail -n +2); do
    (
        exec 7>"$old.lock"
        if command -v flock >/dev/null 2>&1; then flock -n 7 || exit 0; fi
        say "removing old build tree $old"
        rm -rf "$old"
    )
done
say "use: export PATH=$PREFIX/bin:\$PATH LD_LIBRARY_PATH=$PREFIX/lib:\$LD_LIBRARY_PATH"
echo "$PREFIX"
