#!/bin/sh
# code-tree.sh: docs/code-tree.md is true of the tree.
#   - every path it names exists: a path of the repository (common/rpc.c,
#     test/unit/, proto.[ch] for proto.c and proto.h, ad_rpfs_<op>.c or
#     cli_*.c for at least one file), a bare file name (listio.c: some file
#     of the tree has that name), a Markdown link (design/transport.md,
#     relative to docs/);
#   - every file git tracks under the source directories (adio bench client
#     common examples fuse ompi scripts server tools) is named by its own
#     path or a link (a pattern names none), so a file added, moved or
#     removed cannot leave the document behind.
# The check also runs on changed copies of the document (a path that does
# not exist, a bare name that does not exist, a source file's row removed),
# so that it cannot pass by finding nothing. Needs git: the tree of a
# tarball is not the repository's. Run by `make check`; each line says
# PASS or FAIL, the last line is "N passed, N failed".
set -u

SRC=$(cd "$(dirname "$0")/../.." && pwd)
DOC=$SRC/docs/code-tree.md
DIRS="adio bench client common examples fuse ompi scripts server tools"
TOPS="adio|bench|client|common|dist|docs|examples|fuse|man|ompi|scripts|server|test|tools"
if ! git -C "$SRC" rev-parse --show-toplevel >/dev/null 2>&1; then
	echo "SKIP  $SRC is not a git checkout (the tree of a tarball is not the repository's)"
	exit 77
fi
TMP=$(mktemp -d /tmp/rpfs-code-tree-XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
passed=0
failed=0
pass() { passed=$((passed + 1)); printf 'PASS  %s\n' "$1"; }
fail() { failed=$((failed + 1)); printf 'FAIL  %s\n' "$1"; }

# The files of the tree, one path a line; their names alone.
(cd "$SRC" && git ls-files) | sort >"$TMP/tracked"
sed 's|.*/||' "$TMP/tracked" | sort -u >"$TMP/basenames"
# shellcheck disable=SC2086 # DIRS is a list
(cd "$SRC" && git ls-files -- $DIRS) | sort >"$TMP/sources"

# names FILE: what FILE names, one a line: "PATH p", "BASE name" or
# "LINK target" (the target relative to docs/, made a path of the tree).
names() {
	perl -ne '
		while (m{(?<![\w./-])((?:'"$TOPS"')/[\w.@/<>*+-]*(?:\[ch\])?)}g) {
			my $p = $1; $p =~ s/\.+$//; print "PATH $p\n";
		}
		while (m{(?<![\w./<>-])([\w+-]+\.(?:\[ch\]|c|h|sh|py|awk))(?![\w/])}g) {
			print "BASE $1\n";
		}
		while (m{\]\(([^)#\s]+)}g) {
			my $t = $1; next if $t =~ m{^[a-z]+:}; print "LINK $t\n";
		}' "$1"
}

# expand NAME: NAME with .[ch] made .c and .h, one a line.
expand() {
	case $1 in
	*.\[ch\]) echo "${1%.\[ch\]}.c"; echo "${1%.\[ch\]}.h" ;;
	*) echo "$1" ;;
	esac
}

# check FILE: problems of FILE on stdout, status 1 if any; the paths it
# names in $TMP/named.
check() {
	rc=0
	: >"$TMP/named"
	names "$1" >"$TMP/names"
	while read -r kind name; do
		case $kind in
		LINK)
			p=$(cd "$SRC/docs" && realpath -m --relative-to="$SRC" "$name")
			if [ -e "$SRC/$p" ]; then
				echo "$p" >>"$TMP/named"
			else
				echo "links to $name, which does not exist"
				rc=1
			fi
			;;
		BASE)
			for b in $(expand "$name"); do
				grep -qxF -- "$b" "$TMP/basenames" || {
					echo "names $b, which no file of the tree is called"
					rc=1
				}
			done
			;;
		PATH)
			for p in $(expand "$name"); do
				case $p in
				*'<'*'>'* | *'*'*)
					pat=$(echo "$p" | sed 's/<[^>]*>/*/g')
					# shellcheck disable=SC2046,SC2086 # a glob on purpose
					set -- $(cd "$SRC" && echo $pat)
					if [ ! -e "$SRC/$1" ]; then
						echo "names $p, which matches no file"
						rc=1
					fi
					;;
				*)
					if [ -e "$SRC/$p" ]; then
						echo "${p%/}" >>"$TMP/named"
					else
						echo "names $p, which does not exist"
						rc=1
					fi
					;;
				esac
			done
			;;
		esac
	done <"$TMP/names"
	sort -u "$TMP/named" -o "$TMP/named"
	comm -23 "$TMP/sources" "$TMP/named" >"$TMP/unnamed"
	if [ -s "$TMP/unnamed" ]; then
		sed 's/^/does not name /' "$TMP/unnamed"
		rc=1
	fi
	return $rc
}

if check "$DOC" >"$TMP/why"; then
	pass "docs/code-tree.md names only what exists and every source file ($(wc -l <"$TMP/sources") files)"
else
	fail "docs/code-tree.md names only what exists and every source file:"
	sed 's/^/    /' "$TMP/why"
fi

# The check on changed copies (links resolve from docs/ all the same).
COPY=$TMP/copy.md
expect_problem() {
	what=$1
	shift
	"$@" <"$DOC" >"$COPY"
	if ! check "$COPY" >"$TMP/why" && grep -q . "$TMP/why"; then
		pass "the check notices $what"
	else
		fail "the check notices $what"
	fi
	rm -f "$COPY"
}
# shellcheck disable=SC2016 # backquotes are Markdown
expect_problem "a path that does not exist" \
	sed 's|`common/layout.\[ch\]`|`common/layout.[ch]`, `common/no_such_file.c`|'
expect_problem "a bare name that does not exist" \
	sed 's|   listio.c          rpfsc_io_start|   listoi.c          rpfsc_io_start|'
# shellcheck disable=SC2016
expect_problem "a source file left unnamed" \
	sed '/`server\/peer.c`/d'
expect_problem "a link that leads nowhere" \
	sed 's|(design/transport.md)|(design/no-such-page.md)|'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
