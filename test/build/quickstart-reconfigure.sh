#!/bin/sh
# quickstart-reconfigure.sh: `./quickstart demo` then `./quickstart test`
# in one clone. The demo configures build/ before the test command
# installs Open MPI; quickstart's build() must then configure again, or the
# Open MPI components (ompi/) stay out of the build and the Open MPI suite
# fails. This runs quickstart's own build() (cut out of the script) in a
# throwaway tree with a stand-in configure and make, on a PATH where
# mpicc.openmpi is first absent, then present (a stand-in wrapper), and
# counts the configure runs; scripts/configure-state.sh is the real one.
# Run by `make check` (any directory). Each line says PASS or FAIL; the
# last line is "N passed, N failed".
set -u

SRC=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d /tmp/rpfs-reconf-XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
passed=0
failed=0
pass() { passed=$((passed + 1)); printf 'PASS  %s\n' "$1"; }
fail() { failed=$((failed + 1)); printf 'FAIL  %s\n' "$1"; }

# A PATH of the tools build() and configure-state.sh use, without Open MPI.
BIN="$TMP/bin"
mkdir -p "$BIN" "$TMP/tree/scripts"
for t in sh bash sed cat cmp diff head rm mkdir dirname pkg-config cc nproc; do
	p=$(command -v "$t") && ln -s "$p" "$BIN/$t"
done
# make: nothing to build here
printf '#!/bin/sh\nexit 0\n' >"$BIN/make"
chmod +x "$BIN/make"

# The tree: the real configure.ac (its probes) and configure-state.sh, a
# configure that counts its runs and says what it leaves out, as the real
# one does.
cp "$SRC/configure.ac" "$TMP/tree/"
cp "$SRC/scripts/configure-state.sh" "$TMP/tree/scripts/"
cat >"$TMP/tree/configure" <<'EOF'
#!/bin/sh
echo "$*" >>../configure.runs
echo 'all:' >Makefile
if command -v mpicc.openmpi >/dev/null; then
	echo "configure: Open MPI components: built"
else
	echo "configure: Open MPI components: not built (no mpicc.openmpi)"
fi
EOF
chmod +x "$TMP/tree/configure"

# quickstart's build() and say(), as they are.
{
	sed -n '/^say() {/p' "$SRC/quickstart"
	sed -n '/^build() {/,/^}/p' "$SRC/quickstart"
} >"$TMP/functions"
if grep -q 'configure-state.sh check' "$TMP/functions"; then
	pass "quickstart's build() asks configure-state.sh whether to configure"
else
	fail "quickstart's build() asks configure-state.sh whether to configure"
fi

# run_build: quickstart's build build --prefix=/p in the tree, on $BIN.
run_build() {
	(cd "$TMP/tree" && PATH="$BIN" bash -c '. "$1"; build build --prefix=/p' \
		build "$TMP/functions") >"$TMP/out" 2>&1
}
runs() { wc -l <"$TMP/tree/configure.runs" 2>/dev/null || echo 0; }

run_build
if [ "$(runs)" -eq 1 ] && grep -q "not built (no mpicc.openmpi)" "$TMP/out"; then
	pass "a new tree is configured, and the output says what is left out"
else
	fail "a new tree is configured, and the output says what is left out"
	cat "$TMP/out"
fi

run_build
if [ "$(runs)" -eq 1 ]; then
	pass "the same machine and options: no second configure"
else
	fail "the same machine and options: no second configure"
	cat "$TMP/out"
fi

# Open MPI appears (what `./quickstart test` installs after a demo).
mkdir -p "$TMP/ompi/include/ompi/mca/fs"
: >"$TMP/ompi/include/ompi/mca/fs/fs.h"
cat >"$BIN/mpicc.openmpi" <<EOF
#!/bin/sh
case \$1 in
--showme:version) echo "mpicc.openmpi: Open MPI 4.1.4 (Language: C)" ;;
--showme:incdirs) echo "$TMP/ompi/include" ;;
esac
EOF
chmod +x "$BIN/mpicc.openmpi"
run_build
if [ "$(runs)" -eq 2 ] && grep -q "now: Open MPI: .*4.1.4" "$TMP/out"; then
	pass "Open MPI installed after the first configure: configured again, saying why"
else
	fail "Open MPI installed after the first configure: configured again, saying why"
	cat "$TMP/out"
fi

run_build
if [ "$(runs)" -eq 2 ]; then
	pass "then no further configure"
else
	fail "then no further configure"
fi

# Other options (another prefix) configure again too.
(cd "$TMP/tree" && PATH="$BIN" bash -c '. "$1"; build build --prefix=/q' \
	build "$TMP/functions") >"$TMP/out" 2>&1
if [ "$(runs)" -eq 3 ] && [ "$(tail -n 1 "$TMP/tree/configure.runs")" = "--enable-werror --prefix=/q" ]; then
	pass "other configure options: configured again with them"
else
	fail "other configure options: configured again with them"
	cat "$TMP/out"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
