#!/bin/sh
# rpfsd-doc.sh: rpfsd(8) documents every option rpfsd takes, and nothing
# else. The options come from `rpfsd --help`, which prints rpfsd's one
# option table (server/main.c: getopt_long's table and short options are
# made from it), so an option added to the program without its entry in
# man/rpfsd.8 fails here; an entry is the line after a ".TP" in OPTIONS,
# ".B" or ".BI" with "\-x, \-\-name" or "\-\-name". The check is also run
# on a copy of the page without one entry, so that it cannot pass by
# finding nothing. The systemd unit must name pages man/ has.
# Run by `make check` from the top build directory (./rpfsd).
# Each line says PASS or FAIL; the last line is "N passed, N failed".
set -u

RPFSD=${RPFSD:-./rpfsd}
MAN=${MAN_DIR:-$(cd "$(dirname "$0")/../../man" && pwd)}
TMP=$(mktemp -d /tmp/rpfsd-doc-XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
passed=0
failed=0
pass() { passed=$((passed + 1)); printf 'PASS  %s\n' "$1"; }
fail() { failed=$((failed + 1)); printf 'FAIL  %s\n' "$1"; }

# The options of `rpfsd --help`: its "Options:" lines start with two
# spaces, then "-x, --name" or "    --name"; one "x name" or "- name" a line.
"$RPFSD" --help >"$TMP/help" 2>&1
sed -n 's/^  -\([a-z]\), --\([a-z][a-z-]*\).*/\1 \2/p; s/^      --\([a-z][a-z-]*\).*/- \1/p' \
	"$TMP/help" >"$TMP/options"

# The options a page documents: the line after each ".TP" between
# ".SH OPTIONS" and the next ".SH" that is ".B" or ".BI" with "\-x, \-\-name"
# or "\-\-name" (quoted or not); the same form as above.
page_options() { # page
	sed -n '/^\.SH OPTIONS/,/^\.SH [^O]/p' "$1" | sed 's/\\-/-/g; s/"//g' |
		awk '{ if (tp && /^\.BI? /) print; tp = /^\.TP$/ }' |
		sed -n 's/^\.BI* -\([a-z]\), --\([a-z][a-z-]*\).*/\1 \2/p
			s/^\.BI* --\([a-z][a-z-]*\).*/- \1/p'
}

# "c config" as "-c, --config", "- log-file" as "--log-file".
spell() {
	sed 's/^- \(.*\)/--\1/; s/^\([a-z]\) \(.*\)/-\1, --\2/'
}

# 0 when every option of the help has an entry in the page (with its short
# form) and the page has no entry of an option the program lacks; the
# differences on stdout.
compare() { # page
	page_options "$1" | sort -u >"$TMP/documented"
	sort -u "$TMP/options" >"$TMP/have"
	comm -23 "$TMP/have" "$TMP/documented" | spell | sed 's/^/undocumented: /'
	comm -13 "$TMP/have" "$TMP/documented" | spell | sed 's/^/no such option: /'
	cmp -s "$TMP/have" "$TMP/documented"
}

n=$(wc -l <"$TMP/options")
if [ "$n" -ge 10 ]; then
	pass "rpfsd --help lists $n options"
else
	fail "rpfsd --help lists $n options (its format changed? see $0)"
	cat "$TMP/help"
fi

if compare "$MAN/rpfsd.8" >"$TMP/diff"; then
	pass "rpfsd.8 documents every option of rpfsd --help, and only those"
else
	fail "rpfsd.8 documents every option of rpfsd --help, and only those:"
	sed 's/^/    /' "$TMP/diff"
fi

# The same check on a page that lost its --log-file entry must fail, and
# name that option.
sed '/^\.BI \\-\\-log\\-file /d' "$MAN/rpfsd.8" >"$TMP/rpfsd.8"
if ! compare "$TMP/rpfsd.8" >"$TMP/diff" && grep -q -- 'undocumented: --log-file' "$TMP/diff"; then
	pass "the check notices an option missing from the page"
else
	fail "the check notices an option missing from the page"
fi

# The option table is getopt's too: each option --help lists is accepted,
# in its long and short forms (then --help ends the run: nothing starts),
# an unlisted one is refused.
sed -n 's/^  \(-\([a-z]\),\|    \) --\([a-z][a-z-]*\)\( [A-Z]\)\{0,1\}.*/\2 \3\4/p' \
	"$TMP/help" | sed 's/^ /- /' >"$TMP/usage"
bad=""
while read -r short opt arg; do
	for o in "--$opt" ${short#-}; do
		[ "$o" = "${o#-}" ] && o="-$o"
		if ! "$RPFSD" "$o" ${arg:+warn} --help >"$TMP/out" 2>&1 ||
			grep -q "unrecognized option\|invalid option" "$TMP/out"; then
			bad="$bad $o"
		fi
	done
done <"$TMP/usage"
if [ -z "$bad" ]; then
	pass "rpfsd takes every option its help lists"
else
	fail "rpfsd takes every option its help lists: not$bad"
fi
if ! "$RPFSD" --no-such-option >"$TMP/out" 2>&1 &&
	grep -q "unrecognized option" "$TMP/out"; then
	pass "rpfsd refuses an option its help does not list"
else
	fail "rpfsd refuses an option its help does not list"
fi

# The systemd unit's Documentation= names pages that man/ has (and so
# make install installs): man:NAME(S) is man/NAME.S.
UNIT=$(dirname "$MAN")/dist/systemd/rpfsd@.service.in
docs=$(sed -n 's/^Documentation=//p' "$UNIT")
missing=""
for d in $docs; do
	case $d in
	man:*\(*\)) page=$(echo "$d" | sed 's/^man:\(.*\)(\(.*\))$/\1.\2/') ;;
	*) page="" ;;
	esac
	[ -n "$page" ] && [ -f "$MAN/$page" ] || missing="$missing $d"
done
if [ -n "$docs" ] && [ -z "$missing" ]; then
	pass "rpfsd@.service's Documentation= names installed pages ($docs)"
else
	fail "rpfsd@.service's Documentation= names installed pages:${missing:- none}"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
