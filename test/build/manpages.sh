#!/bin/sh
# manpages.sh: the manual pages keep up with the programs. Every command
# that `rpfs help` lists must have an entry in man/rpfs.1 that names every
# option `rpfs help COMMAND` lists (short and long), every command with an
# entry there must be one `rpfs help` lists, and every setting that
# `rpfsd --list-settings` prints needs an entry in man/rpfs.conf.5
# (entries are ".B name" or ".BI name ..." lines). Both pages and rpfsd.8
# must format without warnings where man(1) is installed.
# Run by `make check` from the top build directory (./rpfs, ./rpfsd).
# Each line says PASS or FAIL; the last line is "N passed, N failed".
set -u

RPFS=${RPFS:-./rpfs}
RPFSD=${RPFSD:-$(dirname "$RPFS")/rpfsd}
MAN=${MAN_DIR:-$(cd "$(dirname "$0")/../../man" && pwd)}
TMP=$(mktemp -d /tmp/rpfs-man-XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
passed=0
failed=0
pass() { passed=$((passed + 1)); printf 'PASS  %s\n' "$1"; }
fail() { failed=$((failed + 1)); printf 'FAIL  %s\n' "$1"; }

# An entry: a line ".B name", ".BI name ..." or ".B name ..." (roff).
documented() { # page, name
	grep -qE "^\.BI? \"?$2([ \"]|\$)" "$1"
}

# Commands in the usage: the first word of each line indented by two
# spaces (`rpfs help` lists one command a line, then its summary).
"$RPFS" help >"$TMP/help" 2>&1
awk '/^  [a-z]/ { print $1 }' "$TMP/help" | sort -u >"$TMP/commands"
echo help >>"$TMP/commands"
n=$(wc -l <"$TMP/commands")
if [ "$n" -ge 10 ]; then
	pass "rpfs help lists $n commands"
else
	fail "rpfs help lists $n commands (the usage format changed? see $0)"
	cat "$TMP/help"
fi
while read -r cmd; do
	if documented "$MAN/rpfs.1" "$cmd"; then
		pass "rpfs.1 documents rpfs $cmd"
	else
		fail "rpfs.1 documents rpfs $cmd (add a .TP/.B $cmd entry)"
	fi
done <"$TMP/commands"

# A command's entry in rpfs.1: from the ".B name" line that follows a .TP
# to the next command's (entries of options start with \-, not a letter).
awk -v dir="$TMP" '
	prev == ".TP" && /^\.BI? "?[a-z]/ {
		name = $2; gsub(/"/, "", name)
		if (name !~ /^(rpfs|RPFS)/) { cmd = name; print cmd > (dir "/man-commands") }
	}
	/^\.SH/ && $2 != "COMMANDS" { cmd = "" }
	cmd != "" { print > (dir "/entry." cmd) }
	{ prev = $1 }' "$MAN/rpfs.1"
sort -u -o "$TMP/man-commands" "$TMP/man-commands"
while read -r cmd; do
	if grep -qx "$cmd" "$TMP/commands"; then
		pass "rpfs help lists rpfs $cmd of rpfs.1"
	else
		fail "rpfs help lists rpfs $cmd of rpfs.1 (a command the page has and rpfs has not)"
	fi
done <"$TMP/man-commands"

# Options: the lines of `rpfs help CMD` after "Options:", "  -x, --name ARG"
# or "      --name ARG"; in roff each - is written \-.
while read -r cmd; do
	"$RPFS" help "$cmd" | sed -n '/^Options:/,/^$/p' |
		grep -oE '^  +(-[A-Za-z](, )?)?(--[a-z][a-z-]*)?' |
		tr ',' ' ' | tr -s ' ' '\n' | grep . >"$TMP/opts" || true
	while read -r opt; do
		roff=$(printf '%s' "$opt" | sed 's/-/\\-/g')
		re=$(printf '%s' "$opt" | sed 's/-/\\\\-/g') # \- in a regex
		if [ -f "$TMP/entry.$cmd" ] &&
			grep -qE -- "$re([^a-zA-Z\\]|\$)" "$TMP/entry.$cmd"; then
			pass "rpfs.1 documents rpfs $cmd $opt"
		else
			fail "rpfs.1 documents rpfs $cmd $opt (in its entry, as $roff)"
		fi
	done <"$TMP/opts"
done <"$TMP/commands"

# Settings: the first word of each line of the table that starts with a
# lower-case letter (the header says SETTING, help lines are indented).
"$RPFSD" --list-settings 2>&1 | awk '/^[a-z]/ { print $1 }' >"$TMP/settings"
n=$(wc -l <"$TMP/settings")
if [ "$n" -ge 10 ]; then
	pass "rpfsd --list-settings prints $n settings"
else
	fail "rpfsd --list-settings prints $n settings (format changed? see $0)"
fi
while read -r key; do
	if documented "$MAN/rpfs.conf.5" "$key"; then
		pass "rpfs.conf.5 documents setting $key"
	else
		fail "rpfs.conf.5 documents setting $key (add a .TP/.B $key entry)"
	fi
done <"$TMP/settings"

if command -v man >/dev/null 2>&1; then
	for page in rpfs.1 rpfsd.8 rpfs.conf.5; do
		if LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$MAN/$page" \
			>/dev/null 2>"$TMP/warn" && [ ! -s "$TMP/warn" ]; then
			pass "$page formats without warnings"
		else
			fail "$page formats without warnings"
			sed 's/^/    /' "$TMP/warn"
		fi
	done
else
	echo "skipped: formatting check (no man(1) here)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
