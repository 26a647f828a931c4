#!/bin/sh
# config-order.sh: the README, rpfs(1) and rpfs.conf(5) give the order in
# which the config is looked for as the programs do. Two orders exist:
#   - the rpfs command's, which `rpfs help` prints (tools/rpfs.c, from its
#     config_path()): --config, --dir, $RPFS_CONFIG, $RPFS_DIR/rpfs.conf,
#     /etc/rpfs/rpfs.conf, ~/.rpfs/rpfs.conf;
#   - librpfs's (rpfs_config_search, common/config.c), which its message
#     names when it finds nothing: $RPFS_CONFIG, /etc/..., ~/.rpfs/...
# Every sentence of the documents that says "in this order:" must list one
# of the two (the places in it are picked out in order), the README both,
# rpfs.1 the command's and rpfs.conf.5 librpfs's. The check also runs on a
# README with two places swapped, so that it cannot pass by finding nothing.
# Run by `make check` from the top build directory (./rpfs, ./rpfsd).
# Each line says PASS or FAIL; the last line is "N passed, N failed".
set -u

RPFS=${RPFS:-./rpfs}
RPFSD=${RPFSD:-$(dirname "$RPFS")/rpfsd}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d /tmp/rpfs-order-XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
passed=0
failed=0
pass() { passed=$((passed + 1)); printf 'PASS  %s\n' "$1"; }
fail() { failed=$((failed + 1)); printf 'FAIL  %s\n' "$1"; }

# places: the places of the config named in text on stdin, in order, on
# one line ($ and markup dropped).
places() {
	tr -d '`$' | grep -oE -- '--config|--dir|RPFS_CONFIG|RPFS_DIR/rpfs\.conf|/etc/rpfs/rpfs\.conf|~/\.rpfs/rpfs\.conf' |
		tr '\n' ' ' | sed 's/ $//'
}

# sentences FILE: each sentence that says "in this order:", one a line
# (roff and markdown joined into plain lines first).
sentences() {
	sed -e 's/^\.[A-Z][A-Z]* //' -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e 's/"//g' "$1" |
		awk '{ printf "%s ", $0 } END { print "" }' | sed 's/in this order:/\n&/g' | sed -n 's/^in this order:\(.*\)/\1/p' |
		sed 's/\.\([[:space:]]\).*//'
}

# The command's order, from its help.
"$RPFS" help >"$TMP/help" 2>&1
CLI=$(sentences "$TMP/help" | places)
# librpfs's, from its message when none of its places has a config (the
# system directory and home made empty, then named as the documents do).
mkdir -p "$TMP/etc" "$TMP/home"
env -u RPFS_CONFIG -u RPFS_DIR HOME="$TMP/home" RPFS_SYSCONFDIR="$TMP/etc" \
	"$RPFSD" --name x >"$TMP/lib" 2>&1
LIB=$(sed -e "s|$TMP/etc|/etc|g" -e "s|$TMP/home|~|g" "$TMP/lib" | places)

if [ "$CLI" = "--config --dir RPFS_CONFIG RPFS_DIR/rpfs.conf /etc/rpfs/rpfs.conf ~/.rpfs/rpfs.conf" ]; then
	pass "rpfs help gives the command's order: $CLI"
else
	fail "rpfs help gives the command's order (got '$CLI'; see $0)"
fi
if [ "$LIB" = "RPFS_CONFIG /etc/rpfs/rpfs.conf ~/.rpfs/rpfs.conf" ]; then
	pass "librpfs names its order when it finds no config: $LIB"
else
	fail "librpfs names its order when it finds no config (got '$LIB'):"
	sed 's/^/    /' "$TMP/lib"
fi

# check FILE WANT...: every "in this order:" sentence of FILE is CLI or
# LIB, and each WANT (CLI, LIB) is among them; problems on stdout.
check() {
	file=$1
	shift
	rc=0
	sentences "$file" >"$TMP/sentences"
	: >"$TMP/found"
	while read -r line; do
		got=$(echo "$line" | places)
		echo "$got" >>"$TMP/found"
		if [ "$got" != "$CLI" ] && [ "$got" != "$LIB" ]; then
			echo "lists '$got'"
			rc=1
		fi
	done <"$TMP/sentences"
	for w in "$@"; do
		eval "want=\$$w"
		grep -qxF -- "$want" "$TMP/found" || {
			echo "no sentence lists the order of the $w ('$want')"
			rc=1
		}
	done
	return $rc
}

for doc in "README.md CLI LIB" "man/rpfs.1 CLI" "man/rpfs.conf.5 LIB"; do
	set -- $doc
	doc=$1
	shift
	if check "$SRC/$doc" "$@" >"$TMP/why"; then
		pass "$doc gives the order as the programs do ($*)"
	else
		fail "$doc gives the order as the programs do ($*):"
		sed 's/^/    /' "$TMP/why"
	fi
done

# A README with /etc and ~/.rpfs swapped in its rpfs command section.
sed 's|then `/etc/rpfs/rpfs.conf`,$|then `~/.rpfs/rpfs.conf`,|' "$SRC/README.md" >"$TMP/README.md"
if ! check "$TMP/README.md" CLI LIB >/dev/null; then
	pass "the check notices a wrong order"
else
	fail "the check notices a wrong order"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
