#!/bin/sh
# abi.sh: librpfs's binary interface as packaged. The shared library has the
# soname of libtool's -version-info (librpfs.so.1), exports only rpfs_*
# (the rpfsc_* internals stay private), and exports every function that
# rpfs.h, rpfs_admin.h and rpfs_mpi.h declare; rpfs.pc is a valid pkg-config file
# whose version is the package's.
# Run by `make check` from the top build directory (.libs/librpfs.so, rpfs.pc).
# Each line says PASS or FAIL; the last line is "N passed, N failed".
set -u

LIB=${LIB:-.libs/librpfs.so}
PC=${PC:-./rpfs.pc}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d /tmp/rpfs-abi-XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
passed=0
failed=0
pass() { passed=$((passed + 1)); printf 'PASS  %s\n' "$1"; }
fail() { failed=$((failed + 1)); printf 'FAIL  %s\n' "$1"; }

soname=$(objdump -p "$LIB" | awk '$1 == "SONAME" { print $2 }')
if [ "$soname" = librpfs.so.1 ]; then
	pass "soname is librpfs.so.1"
else
	fail "soname is librpfs.so.1 (got '$soname')"
fi

nm -D --defined-only "$LIB" | awk '$2 ~ /^[TDBRVWi]$/ { print $3 }' | sort >"$TMP/exported"
grep -v '^rpfs_' "$TMP/exported" >"$TMP/other"
if [ -s "$TMP/exported" ] && [ ! -s "$TMP/other" ]; then
	pass "only rpfs_* exported ($(wc -l <"$TMP/exported") symbols)"
else
	fail "only rpfs_* exported; also: $(head -5 "$TMP/other" | tr '\n' ' ')"
fi

# Every function the public headers declare: "rpfs_name(" at the start of a
# line or after the return type (comment lines start with " *"); not the
# static inline ones of rpfs_mpi.h, compiled by its includer.
grep -hv '^static' "$SRC/client/rpfs.h" "$SRC/client/rpfs_admin.h" "$SRC/client/rpfs_mpi.h" |
	sed -En 's/^([a-z][^(]*[ *])?(rpfs_[a-z0-9_]+)\(.*/\2/p' | sort -u >"$TMP/declared"
missing=$(comm -23 "$TMP/declared" "$TMP/exported" | tr '\n' ' ')
if [ -s "$TMP/declared" ] && [ -z "$missing" ]; then
	pass "every declared function exported ($(wc -l <"$TMP/declared"))"
else
	fail "every declared function exported; missing: $missing"
fi

if pkg-config --validate "$PC"; then
	pass "rpfs.pc is valid"
else
	fail "rpfs.pc is valid"
fi
version=$(PKG_CONFIG_PATH=$(dirname "$PC") pkg-config --modversion rpfs)
want=$(sed -n 's/^AC_INIT(\[rpfs\], \[\([^]]*\)\].*/\1/p' "$SRC/configure.ac")
if [ -n "$version" ] && [ "$version" = "$want" ]; then
	pass "rpfs.pc version $version"
else
	fail "rpfs.pc version '$version' (configure.ac says '$want')"
fi
libs=$(PKG_CONFIG_PATH=$(dirname "$PC") pkg-config --libs rpfs)
case " $libs " in
*" -lrpfs "*) pass "pkg-config --libs rpfs gives -lrpfs" ;;
*) fail "pkg-config --libs rpfs gives -lrpfs (got '$libs')" ;;
esac

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
