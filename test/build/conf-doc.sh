#!/bin/sh
# conf-doc.sh: rpfs.conf(5) keeps up with the config parser and the
# settings table.
#   - every key of [cluster] and [server.NAME]: the parser's own list,
#     which its message for an unknown key prints (common/config.c: a key
#     is accepted if and only if it is in that list), must have an entry
#     (".B key") in that section of man/rpfs.conf.5;
#   - the [transport] section is `rpfs settings --markdown` (params.c's
#     table): one entry per setting, in the table's order, each
#     ".B name", then "TYPE, default DEF, RANGE[, client].", then the help
#     as a sentence ("" written "empty", - as \-); more lines may follow;
#   - a config that rpfs writes names rpfs.conf(5), not a source file.
# Each check also runs on a changed copy of the page, so that it cannot
# pass by finding nothing.
# Run by `make check` from the top build directory (./rpfs, ./rpfsd).
# Each line says PASS or FAIL; the last line is "N passed, N failed".
set -u

RPFS=${RPFS:-./rpfs}
RPFSD=${RPFSD:-$(dirname "$RPFS")/rpfsd}
MAN=${MAN_DIR:-$(cd "$(dirname "$0")/../../man" && pwd)}
TMP=$(mktemp -d /tmp/rpfs-confdoc-XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
passed=0
failed=0
pass() { passed=$((passed + 1)); printf 'PASS  %s\n' "$1"; }
fail() { failed=$((failed + 1)); printf 'FAIL  %s\n' "$1"; }

# parser_keys HEADER: the keys the parser lists for section HEADER, one a
# line (from "... unknown key (a, b, c)").
parser_keys() {
	printf '%s\nno_such_key_x = 1\n' "$1" >"$TMP/probe.conf"
	"$RPFSD" --list-settings --config "$TMP/probe.conf" 2>&1 |
		sed -n 's/.*no_such_key_x: unknown key (\(.*\))$/\1/p' | tr -d ' ' | tr ',' '\n'
}

# page_keys PAGE SECTION: the ".B key" entries of ".SS [SECTION..." up to
# the next .SS or .SH.
page_keys() {
	awk -v sec="$2" '
		/^\.S[SH] / { on = index($0, ".SS [" sec) == 1; next }
		on && /^\.B [a-z_]+$/ { print $2 }' "$1"
}

# check_section PAGE HEADER SECTION: 0 if every parser key is documented;
# the missing ones on stdout.
check_section() {
	parser_keys "$2" >"$TMP/keys"
	page_keys "$1" "$3" >"$TMP/documented"
	[ -s "$TMP/keys" ] || { echo "(the parser listed no keys)"; return 1; }
	rc=0
	while read -r k; do
		grep -qx "$k" "$TMP/documented" || { echo "$k"; rc=1; }
	done <"$TMP/keys"
	return $rc
}

for sec in "cluster:[cluster]" "server.:[server.x]"; do
	name=${sec%%:*}
	header=${sec#*:}
	if check_section "$MAN/rpfs.conf.5" "$header" "$name" >"$TMP/missing"; then
		pass "rpfs.conf.5 documents every key of $header ($(parser_keys "$header" | tr '\n' ' '))"
	else
		fail "rpfs.conf.5 documents every key of $header; missing: $(tr '\n' ' ' <"$TMP/missing")"
	fi
done
sed '/^\.B log_file$/d' "$MAN/rpfs.conf.5" >"$TMP/no-log-file.5"
if ! check_section "$TMP/no-log-file.5" "[server.x]" "server." >"$TMP/missing" &&
	grep -qx log_file "$TMP/missing"; then
	pass "the key check notices a key missing from the page"
else
	fail "the key check notices a key missing from the page"
fi

# The [transport] entries as the table says they must begin: three lines
# each (roff), from `rpfs settings --markdown`.
"$RPFS" settings --markdown >"$TMP/markdown" 2>&1
awk -F' [|] ' '
	/^\| `/ {
		name = $1; sub(/^\| `/, "", name); sub(/`$/, "", name)
		def = $3; gsub(/`/, "", def)
		if (def == "\"\"") def = "empty"
		range = $4; gsub(/""/, "empty", range)
		help = $6; sub(/ \|$/, "", help)
		help = toupper(substr(help, 1, 1)) substr(help, 2)
		if (help !~ /\.$/) help = help "."
		line = $2 ", default " def ", " range ($5 == "yes" ? ", client" : "") "."
		gsub(/-/, "\\-", line); gsub(/-/, "\\-", help)
		print ".B " name; print line; print help
	}' "$TMP/markdown" >"$TMP/want"

# page_transport PAGE: the first three lines of each entry of [transport].
page_transport() {
	awk '
		/^\.S[SH] / { on = index($0, ".SS [transport]") == 1; next }
		on && /^\.TP$/ { n = 3; next }
		on && n > 0 { print; n-- }' "$1"
}

# check_transport PAGE: 0 if its [transport] entries are the table's; the
# first difference on stdout.
check_transport() {
	page_transport "$1" >"$TMP/have"
	[ -s "$TMP/want" ] || { echo "(rpfs settings --markdown printed no table)"; return 1; }
	diff "$TMP/want" "$TMP/have" | grep '^[<>]' | head -n 6 |
		sed 's/^</table:/; s/^>/page: /'
	cmp -s "$TMP/want" "$TMP/have"
}

n=$(grep -c '^\.B ' "$TMP/want")
if [ "$n" -ge 10 ] && check_transport "$MAN/rpfs.conf.5" >"$TMP/diff"; then
	pass "rpfs.conf.5's [transport] entries are rpfs settings --markdown ($n settings)"
else
	fail "rpfs.conf.5's [transport] entries are rpfs settings --markdown ($n settings):"
	sed 's/^/    /' "$TMP/diff"
fi
sed 's/^size, default 4K, /size, default 8K, /' "$MAN/rpfs.conf.5" >"$TMP/changed.5"
if ! check_transport "$TMP/changed.5" >"$TMP/diff" && grep -q "8K" "$TMP/diff"; then
	pass "the transport check notices a changed default"
else
	fail "the transport check notices a changed default"
fi

# A config rpfs writes points its reader at the manual page.
if "$RPFS" genconfig --host 127.0.0.1 --out "$TMP/gen" >/dev/null 2>&1 &&
	head -n 1 "$TMP/gen/rpfs.conf" | grep -q 'rpfs.conf(5)' &&
	! grep -q '\.[ch]\b' "$TMP/gen/rpfs.conf"; then
	pass "a generated config names rpfs.conf(5), not a source file"
else
	fail "a generated config names rpfs.conf(5), not a source file:"
	head -n 3 "$TMP/gen/rpfs.conf" 2>&1 | sed 's/^/    /'
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
