#!/bin/sh
# build-libfabric.sh: libfabric with scripts/libfabric-tcp-unexpected-op.patch,
# built to be embedded in librpfs-common (configure --with-embedded-libfabric).
#
# The tcp provider of Debian's libfabric (1.17.0-3 in bookworm, and upstream
# up to 2.1.0 at least) dereferences NULL when a connected peer sends a
# message it did not expect: a tagged message to an endpoint without a
# shared receive context (ops 1 and 5), an ack that no transfer asked for,
# and in 2.x a cts or data message (ops 6, 7) that no rts or cts asked for.
# One such header from an unauthenticated client kills rpfsd (see
# test/hostile/README.md). The patch turns these, and an rma_iov count that
# does not fit the header, into a protocol error that closes only that
# connection.
#
# Source: Debian bookworm's libfabric source package (1.17.0-3) cannot be
# fetched from the package archive these machines reach (its tarballs
# answer 404), so this takes Debian's libfabric 2.1.0 source (trixie,
# libfabric_2.1.0.orig.tar.xz, checked against the sha256 below and the
# signed Sources index): same soname (libfabric.so.1), same tcp wire
# protocol (version 3) as 1.17, so a patched rpfsd serves stock 1.17
# clients. apt works in a private state directory under the cache, with a
# deb-src entry derived from the machine's own Debian entry (suite changed
# to trixie): the machine's apt configuration is not touched.
#
# Usage: scripts/build-libfabric.sh [--print-key]
#   --print-key   print the cache key of this input and exit (no build)
# Environment:
#   RPFS_CACHE      cache directory (default /var/cache/rpfs)
#   JOBS            make parallelism (default 2)
#   LIBFABRIC_ORIG  a libfabric_2.1.0.orig.tar.xz already at hand (its
#                   sha256 is checked); skips apt for the source
#
# Embedded, not shared: an MPI program already has the system's
# libfabric.so.1 (MPICH's libmpi links it; same soname), so a second shared
# copy cannot be loaded beside it. libfabric's --enable-embedded (as MPICH
# uses it) drops symbol versioning and builds a convenience archive of PIC
# objects; rpfs links that archive into librpfs-common with its symbols
# hidden (-Wl,--exclude-libs), so every rpfs process (rpfsd, MPI clients,
# the Open MPI components, the CLI) runs this library, with only the
# providers rpfs uses, whatever other libfabric the process has. Why it
# matters: the patch (servers), and the first rpfs_init in a process, which
# on Debian's 1.17 takes 0.1-0.4 s in fi_getinfo initialising every
# built-in provider (reading /proc/kallsyms among others) and here ~5 ms.
#
# Installs into ${RPFS_CACHE}/libfabric-<key>, <key> hashing this script, the
# patch, the source tarball's sha256 and the configure flags: include/
# (the 2.1 headers rpfs compiles against), lib/librpfs-fabric.a (the
# archive), lib/librpfs-fabric.libs (the libraries it needs, one line for
# the linker) and bin/fi_info (linked with the same archive). An existing
# complete prefix is reused as is. The build runs under a lock, installs into
# a staging directory and renames it into place only when complete and
# checked (fi_info lists tcp and verbs, the patch is in the archive): a
# half-built prefix is never used. The last line of output is the prefix.
set -eu

say() { printf '[build-libfabric] %s\n' "$*" >&2; }
die() { printf '[build-libfabric] error: %s\n' "$*" >&2; exit 1; }

LF_VERSION=2.1.0
LF_SUITE=trixie
LF_ORIG=libfabric_$LF_VERSION.orig.tar.xz
LF_ORIG_SHA256=1a66369772d5bb151737214af1c478993e969cf298e8f9ed369e7a2ab8d8c6df

REPO=$(cd "$(dirname "$0")/.." && pwd)
SCRIPT="$REPO/scripts/build-libfabric.sh"
PATCH="$REPO/scripts/libfabric-tcp-unexpected-op.patch"
CACHE=${RPFS_CACHE:-/var/cache/rpfs}
JOBS=${JOBS:-2}
PRINT_KEY=0
if [ "${1:-}" = "--print-key" ]; then
    PRINT_KEY=1
    shift
fi
[ $# = 0 ] || die "usage: $0 [--print-key]"
[ -f "$PATCH" ] || die "missing $PATCH"

# Only what rpfs uses: tcp (and rxm over it, cheap) and verbs. --enable-only
# turns every provider not named off; the optional accelerators are pinned
# off so the result does not depend on what else the machine has.
CONFIG_FLAGS="--enable-only --enable-tcp=yes --enable-verbs=yes --enable-rxm=yes \
--enable-embedded --with-pic --with-uring=no --enable-xpmem=no --with-lttng=no"

KEY=$( { echo "$LF_VERSION|$LF_SUITE|$LF_ORIG_SHA256|$CONFIG_FLAGS"; cat "$SCRIPT" "$PATCH"; } |
    sha256sum | cut -c1-16)
if [ "$PRINT_KEY" = 1 ]; then
    echo "$KEY"
    exit 0
fi

PREFIX="$CACHE/libfabric-$KEY"
cached() {
    [ -f "$PREFIX/.rpfs-build-key" ] && [ -e "$PREFIX/lib/librpfs-fabric.a" ] &&
        [ -x "$PREFIX/bin/fi_info" ]
}
if cached; then
    say "cached: $PREFIX (key $KEY)"
    echo "$PREFIX"
    exit 0
fi

run_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo "$@"
    else die "need root or sudo to run: $*"; fi
}

# ---- 1. build dependencies ------------------------------------------------
# Debian's Build-Depends that matter here (libibverbs-dev, librdmacm-dev for
# verbs; not psm/psm2, disabled), the autotools (the tarball has no
# configure), dpkg-dev for Debian's hardening flags.
DEPS="dpkg-dev autoconf automake libtool make gcc patch xz-utils libibverbs-dev librdmacm-dev"
missing=""
for p in $DEPS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    say "installing build dependencies:$missing"
    # shellcheck disable=SC2086 # one word per package
    run_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing >&2 ||
        die "apt-get install failed for:$missing (run apt-get update first?)"
fi

mkdir -p "$CACHE/src" || die "cannot create cache directory $CACHE (set RPFS_CACHE)"
exec 9>"$CACHE/libfabric-$KEY.lock"
if command -v flock >/dev/null 2>&1; then
    flock 9 || die "cannot lock $CACHE/libfabric-$KEY.lock"
fi
if cached; then
    say "cached: $PREFIX (key $KEY, built meanwhile)"
    echo "$PREFIX"
    exit 0
fi

# ---- 2. source -------------------------------------------------------------
sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$LF_ORIG_SHA256" ]; }

# The URI of the machine's main Debian archive, from its own deb entries
# (deb822 .sources or one-line .list), never written into this script.
debian_uri() {
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk 'BEGIN { RS=""; FS="\n" }
            {
                deb = 0; uri = ""
                for (i = 1; i <= NF; i++) {
                    if ($i ~ /^Types:/ && $i ~ /[[:space:]]deb([[:space:]]|$)/) deb = 1
                    if ($i ~ /^URIs:/) { split($i, a, /[[:space:]]+/); uri = a[2] }
                }
                if (deb && uri ~ /\/debian\/?$/) { print uri; exit }
            }' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        sed -n -e 's/^deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]*\/debian\/\{0,1\}\)[[:space:]].*/\2/p' "$f"
    done
}

SRC_TAR="$CACHE/src/$LF_ORIG"
exec 8>"$CACHE/src/.libfabric.lock"
if command -v flock >/dev/null 2>&1; then
    flock 8 || die "cannot lock $CACHE/src/.libfabric.lock"
fi
if [ -n "${LIBFABRIC_ORIG:-}" ] && ! sha_ok "$SRC_TAR"; then
    sha_ok "$LIBFABRIC_ORIG" || die "LIBFABRIC_ORIG=$LIBFABRIC_ORIG is not $LF_ORIG (sha256 $LF_ORIG_SHA256)"
    cp "$LIBFABRIC_ORIG" "$SRC_TAR.tmp" && mv "$SRC_TAR.tmp" "$SRC_TAR"
fi
if ! sha_ok "$SRC_TAR"; then
    rm -f "$SRC_TAR"
    uri=$(debian_uri | head -1)
    [ -n "$uri" ] || die "no Debian archive entry in /etc/apt to derive a deb-src entry from (or set LIBFABRIC_ORIG)"
    APT="$CACHE/apt-libfabric"
    mkdir -p "$APT/sources.list.d" "$APT/lists/partial" "$APT/cache/archives/partial"
    keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    [ -f "$keyring" ] || die "no $keyring (package debian-archive-keyring)"
    printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n' \
        "$uri" "$LF_SUITE" "$keyring" >"$APT/sources.list.d/libfabric-src.sources"
    set -- -o Dir::Etc::sourcelist=/dev/null -o Dir::Etc::sourceparts="$APT/sources.list.d" \
        -o Dir::State::lists="$APT/lists" -o Dir::Cache="$APT/cache" \
        -o APT::Sandbox::User=root
    say "apt-get update ($LF_SUITE sources, private state in $APT)"
    apt-get "$@" -q update >&2 || die "apt-get update of the $LF_SUITE source index failed"
    say "fetching $LF_ORIG (Debian's libfabric source, $LF_SUITE)"
    (cd "$CACHE/src" && apt-get "$@" -q source --download-only --tar-only "libfabric/$LF_SUITE" >&2) ||
        die "apt-get source libfabric/$LF_SUITE failed"
    sha_ok "$SRC_TAR" || die "$SRC_TAR missing or not sha256 $LF_ORIG_SHA256 (Debian's $LF_SUITE libfabric is no longer $LF_VERSION?)"
fi
exec 8>&-

# ---- 3. build tree: source + patch ----------------------------------------
BUILD="$CACHE/libfabric-build-$KEY"
rm -rf "$BUILD"
mkdir -p "$BUILD"
say "extracting $LF_ORIG into $BUILD"
tar -xJf "$SRC_TAR" -C "$BUILD" || die "cannot extract $SRC_TAR"
SRC="$BUILD/libfabric-$LF_VERSION"
[ -f "$SRC/configure.ac" ] || die "unexpected layout in $SRC_TAR"
say "applying $(basename "$PATCH")"
patch -s -p1 -d "$SRC" <"$PATCH" >&2 || die "the patch does not apply to libfabric $LF_VERSION"
say "autoreconf (log: $BUILD/autoreconf.log)"
(cd "$SRC" && autoreconf -ivf >"$BUILD/autoreconf.log" 2>&1) ||
    die "autoreconf failed, see $BUILD/autoreconf.log"

# Debian's compiler flags (hardening), as Debian's own build uses.
CFLAGS_V=$(dpkg-buildflags --get CFLAGS)
CPPFLAGS_V=$(dpkg-buildflags --get CPPFLAGS)
LDFLAGS_V=$(dpkg-buildflags --get LDFLAGS)
say "configure (log: $BUILD/configure.log)"
# shellcheck disable=SC2086 # one word per flag
(cd "$SRC" && ./configure --prefix="$PREFIX" $CONFIG_FLAGS \
    CFLAGS="$CFLAGS_V" CPPFLAGS="$CPPFLAGS_V" LDFLAGS="$LDFLAGS_V" \
    >"$BUILD/configure.log" 2>&1) || {
    tail -20 "$BUILD/configure.log" >&2
    die "configure failed, see $BUILD/configure.log"
}
for p in tcp verbs; do
    grep -q "^\*\*\* Built-in providers:.*[[:space:]]$p\([[:space:]]\|$\)" "$BUILD/configure.log" ||
        die "configure did not enable $p, see $BUILD/configure.log"
done

say "make -j$JOBS (log: $BUILD/make.log)"
(cd "$SRC" && make -j"$JOBS" >"$BUILD/make.log" 2>&1) || {
    grep -E "error|Error" "$BUILD/make.log" | tail -20 >&2
    die "make failed, see $BUILD/make.log"
}

# ---- 4. install: stage, check, rename -------------------------------------
STAGE="$CACHE/.stage-libfabric-$KEY.$$"
rm -rf "$STAGE"
trap 'rm -rf "$STAGE"' EXIT
say "installing into a staging directory"
(cd "$SRC" && make install DESTDIR="$STAGE" >"$BUILD/install.log" 2>&1) ||
    die "make install failed, see $BUILD/install.log"
S="$STAGE$PREFIX"
# Embedded, make install leaves the library out (a convenience archive):
# take it from the build tree, with the libraries it needs from the
# pkg-config file configure wrote.
ar=$SRC/src/.libs/libfabric.a
[ -f "$ar" ] || die "no $ar after the build"
mkdir -p "$S/lib"
cp "$ar" "$S/lib/librpfs-fabric.a"
libs=$(sed -n 's/^Libs.private:[[:space:]]*//p' "$SRC/libfabric.pc")
echo "$libs" >"$S/lib/librpfs-fabric.libs"
rm -rf "$S/lib/pkgconfig"
grep -q "Received a tagged message, but the endpoint has no" "$S/lib/librpfs-fabric.a" ||
    die "the archive does not contain the patch"
[ -x "$S/bin/fi_info" ] || die "staged install has no bin/fi_info"
! ldd "$S/bin/fi_info" | grep -q 'libfabric\.so' ||
    die "the staged fi_info loads a shared libfabric, not the archive"
providers=$(FI_PROVIDER_PATH='' "$S/bin/fi_info" -l 2>/dev/null |
    sed -n 's/^\([a-z_]*\):$/\1/p' | tr '\n' ' ')
case " $providers " in *" tcp "*) ;; *) die "staged fi_info -l lists no tcp ($providers)" ;; esac
case " $providers " in *" verbs "*) ;; *) die "staged fi_info -l lists no verbs ($providers)" ;; esac
echo "$KEY" >"$S/.rpfs-build-key"
rm -rf "$PREFIX"
mv "$S" "$PREFIX" || die "cannot move the staged install to $PREFIX"
say "installed libfabric $LF_VERSION (patched; providers: $providers) into $PREFIX"
rm -rf "$BUILD"

# keep the three newest prefixes and drop older ones nobody is building
HEX16=$(printf '[0-9a-f]%.0s' 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
# shellcheck disable=SC2012,SC2086 # our own names; $HEX16 is a glob
for old in $(ls -1dt "$CACHE"/libfabric-$HEX16 2>/dev/null | tail -n +4); do
    [ -f "$old/.rpfs-build-key" ] && [ "$old" != "$PREFIX" ] && (
        exec 7>"$old.lock"
        if command -v flock >/dev/null 2>&1; then flock -n 7 || exit 0; fi
        say "removing old prefix $old"
        rm -rf "$old"
        rm -f "$old.lock"
    )
done
say "use: configure --with-embedded-libfabric=$PREFIX"
echo "$PREFIX"
