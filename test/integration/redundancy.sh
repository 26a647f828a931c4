#!/bin/sh
# Choosing a file's redundancy (issue 29), end to end through the CLI on
# four servers (`rpfs up -n 4`), everything but the data of mirror files:
#   - rpfs setstripe -N mirror:2 on a directory: its new files and
#     subdirectories inherit it, getstripe and stat show it, the copies
#     of each slot on distinct I/O servers, a datafile on each;
#   - -N on a new file wins over the directory's; -N none, -N default;
#   - a mirror that can't fit is refused with the numbers, ec:K+P as not
#     supported yet, and nothing is left behind;
#   - [cluster] redundancy = mirror:2 in the config is the default of
#     directories without their own; existing files keep theirs across
#     the restart; rpfs cp within rpfs keeps a file's;
#   - rpfs up --redundancy writes it into a new cluster's config; a spec
#     that does not fit the servers, or is not one, exits 2 and makes
#     nothing; a restart that asks for another is refused.
# Run by `make check` from the top build directory (./rpfs, ./rpfsd).
set -u

RPFS=${RPFS:-./rpfs}
# where the servers listen: loopback, or a verbs device's address (rxe-vm)
ADDR=${RPFS_TEST_ADDR:-127.0.0.1}
TMP=$(mktemp -d /tmp/rpfs-redundancy-XXXXXX) || exit 1
D=$TMP/cluster
D2=$TMP/mirrored # a second cluster, made by rpfs up --redundancy

cleanup() {
	"$RPFS" down --dir "$D" >/dev/null 2>&1
	"$RPFS" down --dir "$D2" >/dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# shellcheck source=test/integration/checks.sh
. "$(dirname "$0")/checks.sh"

# getstripe's line "PATH: WHAT" (WHAT: redundancy, copy 0, ...), the rest
redundancy_of() { "$RPFS" getstripe "$1" | sed -n "s|^$1: \(new files: \)\{0,1\}redundancy ||p"; }
count_of() { "$RPFS" getstripe "$1" | sed -n "s|^$1: .*stripe_count \([0-9a-z]*\).*|\1|p" | head -1; }
# the I/O servers of every copy of every slot, one a line
copy_servers() { "$RPFS" getstripe "$1" | sed -n "s|^$1: copy [0-9]*: io servers ||p" | tr ' ' '\n'; }
# every server of a mirror file's copies is distinct, and holds its datafile
copies_distinct_with_datafiles() {
	handle=$("$RPFS" stat "$1" | sed -n 's/^handle: 0x//p')
	copy_servers "$1" >"$TMP/servers"
	[ "$(wc -l <"$TMP/servers")" = "$2" ] || { echo "want $2 slots:"; cat "$TMP/servers"; return 1; }
	[ "$(sort -u "$TMP/servers" | wc -l)" = "$2" ] || { echo "a server twice:"; cat "$TMP/servers"; return 1; }
	while read -r s; do
		[ -f "$D/s$s/data/$handle" ] || { echo "no datafile $handle on server $s"; return 1; }
	done <"$TMP/servers"
}

"$RPFS" up -n 4 --dir "$D" --address "$ADDR" >"$TMP/up" 2>&1 || {
	cat "$TMP/up"
	exit 1
}
export RPFS_CONFIG="$D/rpfs.conf"

# ---- a directory's default, inherited -------------------------------------
check "mkdir /m" "$RPFS" mkdir /m
check "setstripe -N mirror:2 /m" "$RPFS" setstripe -N mirror:2 /m
check_eq "getstripe /m" "$(redundancy_of /m)" "mirror:2"
check "a new file in /m" "$RPFS" setstripe -S 64K /m/f
check_eq "it inherits mirror:2" "$(redundancy_of /m/f)" "mirror:2"
check_eq "its default count shrinks to fit 4 servers" "$(count_of /m/f)" "2"
check_in "its 2 x 2 slots on distinct servers, each with its datafile" \
	copies_distinct_with_datafiles /m/f 4
check "rpfs stat /m/f" "$RPFS" stat /m/f
if ! grep -qx "redundancy: mirror:2" "$TMP/out" || ! grep -q "^  copy 1 of slot 1: io server" "$TMP/out"; then
	bad "stat shows the redundancy and the copies" "$TMP/out"
fi
check "rpfs stat /m" "$RPFS" stat /m
grep -qx "redundancy: mirror:2 (of new files)" "$TMP/out" || bad "stat shows a directory's default" "$TMP/out"
check "mkdir /m/sub" "$RPFS" mkdir /m/sub
check_eq "a subdirectory inherits it" "$(redundancy_of /m/sub)" "mirror:2"
check "a new file in /m/sub" "$RPFS" setstripe /m/sub/g
check_eq "it is mirror:2 too" "$(redundancy_of /m/sub/g)" "mirror:2"
check "setstripe -c 1 /m keeps the redundancy" "$RPFS" setstripe -c 1 /m
check_eq "/m still mirror:2" "$(redundancy_of /m)" "mirror:2"
check "a file of one slot" "$RPFS" setstripe /m/one
check_in "its 2 copies on distinct servers" copies_distinct_with_datafiles /m/one 2
check "mirror:4 over 1 slot" "$RPFS" setstripe -N mirror:4 -c 1 /m/four
check_in "4 copies on 4 servers" copies_distinct_with_datafiles /m/four 4
check "-c -1 takes as many slots as fit" "$RPFS" setstripe -N mirror:2 -c -1 /m/all
check_eq "2 slots" "$(count_of /m/all)" "2"

# ---- the request wins ----------------------------------------------------------
check "setstripe -N none on a new file in /m" "$RPFS" setstripe -N none /m/plain
check_eq "it is none" "$(redundancy_of /m/plain)" "none"
check_eq "over the directory's count" "$(count_of /m/plain)" "1"
check "--redundancy=mirror:3 on a new file" "$RPFS" setstripe --redundancy=mirror:3 /three
check_eq "it is mirror:3" "$(redundancy_of /three)" "mirror:3"
check_eq "of one slot" "$(count_of /three)" "1"
check "a new file at the root" "$RPFS" setstripe /rootfile
check_eq "it is none (the cluster's)" "$(redundancy_of /rootfile)" "none"
check_eq "over every server" "$(count_of /rootfile)" "4"

# ---- refusals ------------------------------------------------------------------
check_fails "mirror:2 over 3 slots" "mirror:2 over 3 slots needs 6 I/O servers, the cluster has 4" \
	"$RPFS" setstripe -N mirror:2 -c 3 /m/big
check_fails "-c 3 in a mirror:2 directory" "mirror:2 over 3 slots needs 6 I/O servers, the cluster has 4" \
	"$RPFS" setstripe -c 3 /m/big
check_fails "mirror:5 on a directory" "mirror:5 needs 5 I/O servers, the cluster has 4" \
	"$RPFS" setstripe -N mirror:5 /m
check_fails "mirror:2 -c 3 on a directory" "mirror:2 over 3 slots needs 6 I/O servers" \
	"$RPFS" setstripe -N mirror:2 -c 3 /m
check_fails "ec:2+1 on a new file" "ec:K+P is not supported yet" "$RPFS" setstripe -N ec:2+1 /m/ec
check_fails "nothing left behind" "No such file" "$RPFS" stat /m/ec
check_fails "ec:2+1 on a directory" "ec:K+P is not supported yet" "$RPFS" setstripe -N ec:2+1 /m
check_fails "mirror:1" "2 to 8 copies" "$RPFS" setstripe -N mirror:1 /m
check_fails "raid5" "not a redundancy" "$RPFS" setstripe -N raid5 /m
check_eq "/m unchanged" "$(redundancy_of /m)" "mirror:2"

# ---- back to the cluster's -------------------------------------------------------
check "setstripe -N default /m" "$RPFS" setstripe -N default /m
check_eq "/m has none of its own" "$(redundancy_of /m)" ""
check "a new file in /m" "$RPFS" setstripe /m/after
check_eq "it is the cluster's, none" "$(redundancy_of /m/after)" "none"
check "mkdir /n" "$RPFS" mkdir /n
check "setstripe -N none /n" "$RPFS" setstripe -N none /n
check_eq "/n says none" "$(redundancy_of /n)" "none"

# ---- the cluster's default in the config ---------------------------------------
check "rpfs down" "$RPFS" down --dir "$D"
sed -i 's/^\[cluster\]$/[cluster]\nredundancy = mirror:2/' "$D/rpfs.conf"
grep -q "^redundancy = mirror:2" "$D/rpfs.conf" || bad "the config has [cluster] redundancy" "$D/rpfs.conf"
check "rpfs up with [cluster] redundancy = mirror:2" "$RPFS" up -n 4 --dir "$D" --address "$ADDR"
check "a new file at the root" "$RPFS" setstripe /c
check_eq "it is mirror:2" "$(redundancy_of /c)" "mirror:2"
check_in "on 4 distinct servers" copies_distinct_with_datafiles /c 4
check "a new file in /m (no default of its own)" "$RPFS" setstripe /m/c
check_eq "it is mirror:2" "$(redundancy_of /m/c)" "mirror:2"
check "a new file in /n (none of its own)" "$RPFS" setstripe /n/c
check_eq "it is none" "$(redundancy_of /n/c)" "none"
check_eq "an existing file keeps mirror:2" "$(redundancy_of /m/f)" "mirror:2"
check_eq "an existing file keeps none" "$(redundancy_of /m/plain)" "none"
check_eq "and mirror:3" "$(redundancy_of /three)" "mirror:3"

# ---- a copy within rpfs keeps it (the files are empty: no data) ----------------
check "rpfs cp rpfs:/three rpfs:/n/copy" "$RPFS" cp rpfs:/three rpfs:/n/copy
check_eq "the copy is mirror:3 in a 'none' directory" "$(redundancy_of /n/copy)" "mirror:3"

# ---- rpfs up --redundancy: a new cluster's default -----------------------------
# check_status WHAT STATUS PATTERN COMMAND...: exits STATUS, saying PATTERN
check_status() {
	what=$1
	want=$2
	pat=$3
	shift 3
	timeout 120 "$@" >"$TMP/out" 2>&1
	got=$?
	if [ "$got" != "$want" ]; then
		bad "$what: exit status $got, not $want" "$TMP/out"
	elif grep -q -- "$pat" "$TMP/out"; then
		ok "$what"
	else
		bad "$what: no '$pat' in its message" "$TMP/out"
	fi
}
# Ports as the first cluster's: the launcher's scan for a free run.
check "rpfs up --redundancy=mirror:2 (2 servers)" \
	"$RPFS" up --dir "$D2" --address "$ADDR" --redundancy=mirror:2
grep -qx "redundancy = mirror:2" "$D2/rpfs.conf" || bad "its config has [cluster] redundancy = mirror:2" "$D2/rpfs.conf"
export RPFS_CONFIG="$D2/rpfs.conf"
check "a new file at its root" "$RPFS" setstripe /f
check_eq "it is mirror:2" "$(redundancy_of /f)" "mirror:2"
check_eq "of one slot" "$(count_of /f)" "1"
check "rpfs down" "$RPFS" down --dir "$D2"
check_status "a restart asking for none" 1 "has redundancy mirror:2, not none as asked" \
	"$RPFS" up --dir "$D2" --address "$ADDR" --redundancy=none
check "a restart with -N mirror:2" "$RPFS" up --dir "$D2" --address "$ADDR" -N mirror:2
check_eq "the file is still mirror:2" "$(redundancy_of /f)" "mirror:2"
check "rpfs down" "$RPFS" down --dir "$D2"
check_status "mirror:3 over 2 servers" 2 \
	"rpfs up: --redundancy=mirror:3 needs at least 3 I/O servers, the cluster would have 2" \
	"$RPFS" up -n 2 --dir "$TMP/nofit" --address "$ADDR" --redundancy=mirror:3
[ ! -e "$TMP/nofit" ] || bad "it made nothing: $TMP/nofit exists"
check_status "--redundancy=bogus" 2 "not a redundancy" \
	"$RPFS" up --dir "$TMP/nofit" --address "$ADDR" --redundancy=bogus
check_status "--redundancy=ec:2+1" 2 "ec:K+P is not supported yet" \
	"$RPFS" up -n 4 --dir "$TMP/nofit" --address "$ADDR" --redundancy=ec:2+1
check_status "--new over D2 asking for 3 copies of 2 servers" 2 "needs at least 3 I/O servers" \
	"$RPFS" up --new --dir "$D2" --address "$ADDR" -N mirror:3
[ -f "$D2/rpfs.conf" ] || bad "and D2's cluster is still there"

exit $fail
