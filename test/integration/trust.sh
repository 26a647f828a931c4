#!/bin/sh
# trust.sh: rpfs tried as a hostile or unlucky user would, through the rpfs
# command: every case must end in an error that names the cause, never in
# data. Run by `make check` from the top build directory (./rpfs, ./rpfsd).
#
#   - a client without a key, or with another cluster's key, is refused;
#   - a config that lists the servers in another order (without ids), at
#     other ports, or of another cluster gets an error naming the
#     difference; with ids (what rpfs up writes) the order in the file
#     does not matter;
#   - a server started on another server's storage directory, or from a
#     config that gives it other indexes, refuses;
#   - user nobody (its own copy of the key) can neither read nor remove
#     root's 0600 file, nor remove root's file through root's directory,
#     nor change its mode, nor write or create where the modes say no, nor
#     reach a file below root's 0700 directory, and can do what they allow
#     (needs root: skipped otherwise, and said so).
set -u

RPFS=${RPFS:-./rpfs}
RPFSD=${RPFSD:-./rpfsd}
ADDR=${RPFS_TEST_ADDR:-127.0.0.1}
TMP=$(mktemp -d /tmp/rpfs-trust-XXXXXX) || exit 1
D=$TMP/cluster
passed=0
failed=0

cleanup() {
	"$RPFS" down --dir "$D" >/dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() {
	failed=$((failed + 1))
	echo "FAIL $1"
	[ -f "$TMP/out" ] && sed 's/^/     /' "$TMP/out"
}

# refused WHAT PATTERN COMMAND...: the command must fail and say PATTERN
refused() {
	what=$1 pattern=$2
	shift 2
	if "$@" >"$TMP/out" 2>&1; then
		bad "$what: succeeded"
	elif grep -q -- "$pattern" "$TMP/out"; then
		ok "$what: $(grep -- "$pattern" "$TMP/out" | tail -1 | cut -c1-160)"
	else
		bad "$what: failed without saying '$pattern'"
	fi
}

"$RPFS" up -n 2 --dir "$D" --address "$ADDR" >"$TMP/out" 2>&1 || { bad "rpfs up"; exit 1; }
C=$D/rpfs.conf
export RPFS_CONFIG=$C
head -c 100000 /dev/urandom >"$TMP/data"
"$RPFS" cp "$TMP/data" rpfs:/data >"$TMP/out" 2>&1 || bad "rpfs cp"

# configs that disagree with the servers', made from the real one
python3 - "$C" "$TMP" <<'EOF'
import re, sys
conf, tmp = sys.argv[1], sys.argv[2]
s = open(conf).read()
s0, s1 = s.index('[server.0]'), s.index('[server.1]')
head, a, b = s[:s0], s[s0:s1], s[s1:]
open(tmp + '/reordered.conf', 'w').write(head + b.rstrip() + '\n\n' + a)
noid = lambda t: re.sub(r'\nid = \d+\n', '\n', t)
open(tmp + '/reordered-noid.conf', 'w').write(noid(head + b.rstrip() + '\n\n' + a))
p0 = re.search(r'\[server\.0\][^\[]*?port = (\d+)', s).group(1)
p1 = re.search(r'\[server\.1\][^\[]*?port = (\d+)', s).group(1)
sw = s.replace('port = ' + p0, 'port = X').replace('port = ' + p1, 'port = ' + p0).replace('port = X', 'port = ' + p1)
open(tmp + '/ports.conf', 'w').write(sw)
open(tmp + '/cluster.conf', 'w').write(re.sub(r'\nid = [0-9a-f]{32}\n', '\nid = 00112233445566778899aabbccddeeff\n', s))
open(tmp + '/nokey.conf', 'w').write(re.sub(r'key_file = .*\n', '', s))
open(tmp + '/otherkey.conf', 'w').write(re.sub(r'key_file = .*\n', 'key_file = ' + tmp + '/other.key\n', s))
open(tmp + '/openkey.conf', 'w').write(re.sub(r'key_file = .*\n', 'key_file = ' + tmp + '/open.key\n', s))
EOF
head -c 32 /dev/urandom >"$TMP/other.key"
chmod 600 "$TMP/other.key"
cp "$D/cluster.key" "$TMP/open.key"
chmod 644 "$TMP/open.key"

refused "no key" "names no cluster key" "$RPFS" --config "$TMP/nokey.conf" stat /data
refused "a key other users can read" "chmod 600" "$RPFS" --config "$TMP/openkey.conf" stat /data
refused "another cluster's key" "did not accept our cluster key" \
	"$RPFS" --config "$TMP/otherkey.conf" cat /data
refused "servers listed in another order, without ids" "another order" \
	"$RPFS" --config "$TMP/reordered-noid.conf" cat /data
if "$RPFS" --config "$TMP/reordered.conf" cat /data 2>"$TMP/out" | cmp -s - "$TMP/data"; then
	ok "servers listed in another order with their ids: the same bytes"
else
	bad "servers listed in another order with their ids did not read the same bytes"
fi
refused "servers at other ports" "other ports" "$RPFS" --config "$TMP/ports.conf" cat /data
refused "another cluster's config" "belongs to cluster" \
	"$RPFS" --config "$TMP/cluster.conf" cat /data

# a server started on another server's storage directory
sed "s|dir = $D/s0|dir = $D/s1|" "$C" >"$TMP/swapdir.conf"
refused "a server on another server's storage" "belongs to another server" \
	"$RPFSD" --config "$TMP/swapdir.conf" --name 0 --foreground

# a server whose config numbers it otherwise (its storage records its indexes)
refused "a server given other indexes by its config" "belongs to another server" \
	"$RPFSD" --config "$TMP/reordered-noid.conf" --name 1 --foreground

# Another user: nobody, with its own copy of the key (a key holder states
# its uid like an NFS AUTH_SYS client; the servers check the modes for it).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 && id nobody >/dev/null 2>&1; then
	U=$(mktemp -d /tmp/rpfs-trust-nobody-XXXXXX) || exit 1
	cp "$D/cluster.key" "$U/key"
	cp "$TMP/data" "$U/data"
	sed "s|key_file = .*|key_file = $U/key|" "$C" >"$U/rpfs.conf"
	chown -R nobody "$U"
	chmod 755 "$U"
	chmod 600 "$U/key"
	"$RPFS" chmod 0600 /data >"$TMP/out" 2>&1 || bad "chmod 0600 /data as root"
	"$RPFS" mkdir /home >"$TMP/out" 2>&1 || bad "mkdir /home as root"
	"$RPFS" cp "$TMP/data" rpfs:/home/f >"$TMP/out" 2>&1 || bad "cp to /home/f as root"
	nobody() {
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
			env RPFS_CONFIG="$U/rpfs.conf" "$RPFS" "$@"
	}
	refused "nobody reads root's 0600 file" "Permission denied" nobody cat /data
	refused "nobody removes root's file from / (sticky, like /tmp)" \
		"Operation not permitted" nobody rm /data
	refused "nobody removes root's file from root's 0755 directory" \
		"Permission denied" nobody rm /home/f
	refused "nobody changes the mode of root's file" "Operation not permitted" \
		nobody chmod 0666 /data
	refused "nobody overwrites root's 0644 file" "Permission denied" \
		nobody cp "$U/data" rpfs:/home/f
	refused "nobody creates in root's 0755 directory" "Permission denied" \
		nobody cp "$U/data" rpfs:/home/g
	if nobody cat /home/f 2>"$TMP/out" | cmp -s - "$U/data"; then
		ok "nobody reads root's 0644 file"
	else
		bad "nobody could not read root's 0644 file"
	fi
	# A directory guards everything below it: search permission on every
	# ancestor, checked by the metadata servers.
	"$RPFS" mkdir /priv >"$TMP/out" 2>&1 || bad "mkdir /priv as root"
	"$RPFS" mkdir /priv/sub >"$TMP/out" 2>&1 || bad "mkdir /priv/sub as root"
	"$RPFS" cp "$TMP/data" rpfs:/priv/sub/pre.dat >"$TMP/out" 2>&1 ||
		bad "cp to /priv/sub/pre.dat as root"
	"$RPFS" chmod 0644 /priv/sub/pre.dat >"$TMP/out" 2>&1 || bad "chmod 0644 pre.dat"
	"$RPFS" chmod 0700 /priv >"$TMP/out" 2>&1 || bad "chmod 0700 /priv as root"
	refused "nobody reads a 0644 file below root's 0700 directory" \
		"Permission denied" nobody cat /priv/sub/pre.dat
	refused "nobody lists a 0755 directory below root's 0700 one" \
		"Permission denied" nobody ls /priv/sub
	"$RPFS" chmod 0755 /priv >"$TMP/out" 2>&1 || bad "chmod 0755 /priv as root"
	if nobody cat /priv/sub/pre.dat 2>"$TMP/out" | cmp -s - "$U/data"; then
		ok "nobody reads it once the directory is 0755"
	else
		bad "nobody could not read it once the directory is 0755"
	fi
	if nobody cp "$U/data" rpfs:/nobodys >"$TMP/out" 2>&1 &&
		nobody rm /nobodys >"$TMP/out" 2>&1; then
		ok "nobody creates and removes its own file in /"
	else
		bad "nobody could not create and remove its own file in /"
	fi
	rm -rf "$U"
else
	echo "skip another user's tests: need root, setpriv and user nobody"
fi

# the data is still right for the real config
if "$RPFS" cat /data 2>"$TMP/out" | cmp -s - "$TMP/data"; then
	ok "the real config still reads the right bytes"
else
	bad "the real config no longer reads the right bytes"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
