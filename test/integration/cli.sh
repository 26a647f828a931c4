#!/bin/sh
# CLI smoke test: `rpfs up` a two-server cluster in a temporary directory,
# copy a 20 MiB file in and out, check stat/ls/rm/ping/df and the table of
# settings (`rpfs settings`, `rpfsd --list-settings`), `rpfs down`.
# Run by `make check` from the top build directory (./rpfs, ./rpfsd).
set -u

RPFS=${RPFS:-./rpfs}
RPFSD=${RPFSD:-$(dirname "$RPFS")/rpfsd}
# where the servers listen: loopback, or a verbs device's address (rxe-vm)
ADDR=${RPFS_TEST_ADDR:-127.0.0.1}
TMP=$(mktemp -d /tmp/rpfs-cli-XXXXXX) || exit 1
D=$TMP/cluster
fail=0

cleanup() {
	"$RPFS" down --dir "$D" >/dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

check() { # description, command...
	what=$1
	shift
	if "$@" >"$TMP/out" 2>&1; then
		echo "ok   $what"
	else
		echo "FAIL $what"
		sed 's/^/     /' "$TMP/out"
		fail=1
	fi
}

check "rpfs up -n 2" "$RPFS" up -n 2 --dir "$D" --address "$ADDR" || true
cat "$TMP/out"
grep -q "export RPFS_CONFIG=$D/rpfs.conf" "$TMP/out" || { echo "FAIL no export line"; exit 1; }
export RPFS_CONFIG="$D/rpfs.conf"

check "key file is 32 bytes, mode 0600" \
	sh -c "test \$(stat -c %s '$D/cluster.key') = 32 && test \$(stat -c %a '$D/cluster.key') = 600"
check "rpfs ping" "$RPFS" ping
head -c 20971520 /dev/urandom >"$TMP/in"
check "rpfs mkdir /d" "$RPFS" mkdir rpfs:/d
check "rpfs cp local -> rpfs" "$RPFS" cp "$TMP/in" rpfs:/d/big
grep -q "copied 20971520 bytes" "$TMP/out" || { echo "FAIL cp message"; cat "$TMP/out"; fail=1; }
check "rpfs cp rpfs -> local" "$RPFS" cp rpfs:/d/big "$TMP/back"
check "round trip is identical" cmp "$TMP/in" "$TMP/back"
check "rpfs cp rpfs -> rpfs" "$RPFS" cp rpfs:/d/big rpfs:/d/copy
check "rpfs cat" sh -c "'$RPFS' cat /d/copy | cmp - '$TMP/in'"
check "rpfs stat" "$RPFS" stat /d/big
cat "$TMP/out"
grep -q "size: 20971520" "$TMP/out" || { echo "FAIL stat size"; fail=1; }
grep -q "layout: stripe unit 1048576, stripe count 2" "$TMP/out" || { echo "FAIL stat layout"; fail=1; }
grep -q "io server 1 ($ADDR:" "$TMP/out" || { echo "FAIL stat server list"; fail=1; }
check "rpfs ls -l /d" "$RPFS" ls -l /d
grep -q "20971520.* big" "$TMP/out" || { echo "FAIL ls -l"; cat "$TMP/out"; fail=1; }
check "rpfs ls -l -h" sh -c "'$RPFS' ls -l -h /d | grep -q '20.0 MiB .* big'"
# chown by number and by name
check "rpfs chown numbers" "$RPFS" chown 65534:65534 /d/big
check "rpfs chown: owner changed" sh -c "'$RPFS' stat /d/big | grep -q 'uid 65534  gid 65534'"
check "rpfs chown names" "$RPFS" chown root:root /d/big
check "rpfs chown: back to root" sh -c "'$RPFS' stat /d/big | grep -q 'uid 0  gid 0'"
check "rpfs chown :GROUP" "$RPFS" chown :65534 /d/big
check "rpfs chown: group only" sh -c "'$RPFS' stat /d/big | grep -q 'uid 0  gid 65534'"
check "rpfs chown unknown user fails" sh -c "! '$RPFS' chown no_such_user_x /d/big 2>/dev/null"
# du and find
check "rpfs du -s" sh -c "test \"\$('$RPFS' du -s /d)\" = \"\$(printf '41943040\t/d')\""
check "rpfs du -s -h" sh -c "'$RPFS' du -s -h /d | grep -q '^40.0 MiB'"
check "rpfs du lists directories" sh -c "'$RPFS' du / | grep -q '^41943040	/d$'"
check "rpfs find -type f" sh -c "test \"\$('$RPFS' find /d -type f | tr '\n' ' ')\" = '/d/big /d/copy '"
check "rpfs find -name" sh -c "test \"\$('$RPFS' find / -name 'co*')\" = /d/copy"
check "rpfs find -type d" sh -c "test \"\$('$RPFS' find / -type d | tr '\n' ' ')\" = '/ /d '"
# cp -r: local -> rpfs, rpfs -> rpfs, rpfs -> local
mkdir -p "$TMP/tree/a/b" "$TMP/tree/empty"
echo one >"$TMP/tree/one"
head -c 100000 /dev/urandom >"$TMP/tree/a/b/two"
check "rpfs cp -r local -> rpfs" "$RPFS" cp -r "$TMP/tree" rpfs:/t1
check "rpfs cp -r rpfs -> rpfs" "$RPFS" cp -r rpfs:/t1 rpfs:/t2
check "rpfs cp -r rpfs -> local" "$RPFS" cp -r rpfs:/t2 "$TMP/tree.back"
check "rpfs cp -r round trip is identical" diff -r "$TMP/tree" "$TMP/tree.back"
check "rpfs cp of a directory without -r fails" sh -c "! '$RPFS' cp rpfs:/t1 '$TMP/x' 2>/dev/null"
check "rpfs find after cp -r" sh -c "test \"\$('$RPFS' find /t2 | tr '\n' ' ')\" = '/t2 /t2/a /t2/a/b /t2/a/b/two /t2/empty /t2/one '"
for t in /t1 /t2; do
	"$RPFS" rm $t/one $t/a/b/two && "$RPFS" rmdir $t/a/b $t/a $t/empty $t || { echo "FAIL cleanup $t"; fail=1; }
done
# version and help: every command listed, each with its usage
check "rpfs --version" sh -c "'$RPFS' --version | grep -qx 'rpfs [0-9][0-9.]*'"
check "rpfs help" "$RPFS" help
sed -n 's/^  \([a-z]*\) .*/\1/p' "$TMP/out" >"$TMP/cmds"
for c in up down ls stat mkdir rmdir rm chmod chown mv cp cat du find setstripe getstripe df stats ping settings help; do
	grep -qx "$c" "$TMP/cmds" || { echo "FAIL rpfs help does not list $c"; fail=1; }
done
n=0
while read -r c; do
	"$RPFS" "$c" --help >"$TMP/h" 2>&1 && head -1 "$TMP/h" | grep -q "^usage: rpfs $c" &&
		"$RPFS" help "$c" | cmp -s - "$TMP/h" || { echo "FAIL rpfs $c --help"; cat "$TMP/h"; fail=1; }
	n=$((n + 1))
done <"$TMP/cmds"
echo "ok   rpfs COMMAND --help and rpfs help COMMAND for $n commands"
check "rpfs help nosuch fails" sh -c "! '$RPFS' help nosuch >/dev/null 2>&1"
check "rpfs df" "$RPFS" df
cp "$TMP/out" "$TMP/df"
check "rpfs df: a row per server by its config name, its roles, and a total" sh -c "test \$(grep -c '^server\.[01] ($ADDR:' '$TMP/df') = 2 && grep -q '^total (1 file system) ' '$TMP/df' && grep -q 'meta,io  *[0-9]' '$TMP/df'"
check "rpfs df -h" sh -c "'$RPFS' df -h | grep -q 'iB '"
check "rpfs stats" "$RPFS" stats
cp "$TMP/out" "$TMP/stats"
check "rpfs stats: the copies went through io_write and bulk" sh -c "grep -q '^  req.io_write  *[1-9]' '$TMP/stats' && grep -q '^  bytes.bulk  *[1-9]' '$TMP/stats'"
check "rpfs stats --json" sh -c "'$RPFS' stats --json | grep -q '\"servers\": \\[' "
# mv: rename in place, into a directory, a directory with its tree; errors
check "rpfs cp rpfs -> rpfs (to move)" "$RPFS" cp rpfs:/d/big rpfs:/d/tomove
check "rpfs mv file" "$RPFS" mv /d/tomove /d/moved
check "rpfs mv: old name gone" sh -c "! '$RPFS' stat /d/tomove"
check "rpfs mv: data follows" sh -c "'$RPFS' cat /d/moved | cmp - '$TMP/in'"
check "rpfs mkdir /e" "$RPFS" mkdir /e
check "rpfs mv into a directory" "$RPFS" mv rpfs:/d/moved rpfs:/e
check "rpfs mv: now /e/moved" sh -c "test \"\$('$RPFS' ls /e)\" = moved"
check "rpfs mv a directory with its tree" "$RPFS" mv /e /d/e2
check "rpfs mv: tree reachable" sh -c "'$RPFS' cat /d/e2/moved | cmp - '$TMP/in'"
if "$RPFS" mv /nope /x >"$TMP/out" 2>&1; then
	echo "FAIL mv of a missing file succeeded"; fail=1
elif grep -q "meta server" "$TMP/out"; then
	echo "ok   mv of a missing file fails naming the server"
else
	echo "FAIL mv error names no server: $(cat "$TMP/out")"; fail=1
fi
# setstripe / getstripe: a directory's default, inherited; a new file's layout
check "rpfs setstripe dir" "$RPFS" setstripe -c 1 -S 64K /d/e2
check "rpfs getstripe dir" sh -c "'$RPFS' getstripe /d/e2 | grep -qx '/d/e2: new files: stripe_unit 65536 stripe_count 1'"
check "rpfs mkdir inherits" "$RPFS" mkdir /d/e2/sub
check "rpfs cp into it" "$RPFS" cp /etc/hostname rpfs:/d/e2/sub/h
check "rpfs getstripe new file" sh -c "'$RPFS' getstripe /d/e2/sub/h | grep -q '^/d/e2/sub/h: stripe_unit 65536 stripe_count 1 first_server'"
check "rpfs setstripe new file" "$RPFS" setstripe -c 2 -S 128K /d/e2/sub/new
check "rpfs getstripe it" sh -c "'$RPFS' getstripe /d/e2/sub/new | grep -q 'stripe_unit 131072 stripe_count 2 '"
check "rpfs setstripe on an existing file fails" sh -c "! '$RPFS' setstripe -c 1 /d/e2/sub/new 2>/dev/null"
check "rpfs rm the striped files" "$RPFS" rm /d/e2/sub/h /d/e2/sub/new
check "rpfs rmdir sub" "$RPFS" rmdir /d/e2/sub
check "rpfs rm after mv" "$RPFS" rm /d/e2/moved
check "rpfs rmdir after mv" "$RPFS" rmdir /d/e2
check "rpfs rm" "$RPFS" rm /d/big /d/copy
check "rpfs ls after rm is empty" sh -c "test -z \"\$('$RPFS' ls /d)\""
check "rpfs rmdir" "$RPFS" rmdir /d
if "$RPFS" stat /d >"$TMP/out" 2>&1; then
	echo "FAIL stat of a removed directory succeeded"
	fail=1
else
	echo "ok   stat of a removed directory fails: $(cat "$TMP/out")"
fi
# The table: every setting once, with the value the config in use gives it
# and where that came from.
check "rpfsd --list-settings" "$RPFSD" --list-settings
grep -q "^spin_us  *integer  *200 " "$TMP/out" || { echo "FAIL list-settings: spin_us"; cat "$TMP/out"; fail=1; }
grep -q "^max_conns .* no$" "$TMP/out" || { echo "FAIL list-settings: max_conns is no client's"; fail=1; }
# rpfsd --list-settings for a config and server: values and sources
{ cat "$D/rpfs.conf"; printf '[transport]\ntimeout_ms = 12345\n'; } >"$D/rpfs.conf.test"
check "rpfsd --list-settings --config --name" env RPFS_SPIN_US=70 "$RPFSD" --list-settings --config "$D/rpfs.conf.test" --name 1
grep -q "^config: $D/rpfs.conf.test$" "$TMP/out" || { echo "FAIL list-settings --config: config line"; cat "$TMP/out"; fail=1; }
grep -q "^server: .*(io), $ADDR:" "$TMP/out" || { echo "FAIL list-settings --name: server line"; cat "$TMP/out"; fail=1; }
grep -q "^timeout_ms .* 12345  *config$" "$TMP/out" || { echo "FAIL list-settings: timeout_ms from the config"; cat "$TMP/out"; fail=1; }
grep -q "^spin_us .* 70  *environment$" "$TMP/out" || { echo "FAIL list-settings: spin_us from the environment"; fail=1; }
grep -q "^max_conns .* 1024  *default$" "$TMP/out" || { echo "FAIL list-settings: max_conns default"; fail=1; }
if "$RPFSD" --list-settings --config "$D/rpfs.conf" --name nosuch >"$TMP/out" 2>&1; then
	echo "FAIL list-settings accepted an unknown server"; fail=1
else
	echo "ok   rpfsd --list-settings --name nosuch fails: $(cat "$TMP/out")"
fi
# The server's threads are settings like the others: RPFS_SERVER_WORKERS
# sets server_workers, and a bad value stops rpfsd at its config (exit 2)
# instead of being warned about and replaced by the default.
check "rpfsd --list-settings: server_workers from RPFS_SERVER_WORKERS" env RPFS_SERVER_WORKERS=8 RPFS_SERVER_BULK_PER_CONN=3 "$RPFSD" --list-settings --config "$D/rpfs.conf" --name 1
grep -q "^server_workers .* 8  *environment$" "$TMP/out" || { echo "FAIL list-settings: server_workers from the environment"; cat "$TMP/out"; fail=1; }
grep -q "^server_bulk_per_conn .* 3  *environment$" "$TMP/out" || { echo "FAIL list-settings: server_bulk_per_conn from the environment"; cat "$TMP/out"; fail=1; }
for bad in RPFS_SERVER_WORKERS=0 RPFS_SERVER_BULK_PER_CONN=many; do
	env "$bad" "$RPFSD" --config "$D/rpfs.conf" --name 1 --foreground >"$TMP/out" 2>&1
	st=$?
	if [ "$st" = 2 ] && grep -q "bad value '${bad#*=}' for ${bad%%=*}" "$TMP/out"; then
		echo "ok   rpfsd with $bad refuses to start: $(tail -n 1 "$TMP/out")"
	else
		echo "FAIL rpfsd with $bad: exit $st, want 2 and the variable named"
		sed 's/^/     /' "$TMP/out"
		fail=1
	fi
done
check "rpfs settings" env RPFS_SPIN_US=50 "$RPFS" settings
grep -q "^config: $D/rpfs.conf$" "$TMP/out" || { echo "FAIL settings: config in use"; cat "$TMP/out"; fail=1; }
grep -q "^spin_us .* 50  *environment$" "$TMP/out" || { echo "FAIL settings: spin_us from the environment"; cat "$TMP/out"; fail=1; }
grep -q "^max_conns .* 1024  *default$" "$TMP/out" || { echo "FAIL settings: max_conns default"; cat "$TMP/out"; fail=1; }
"$RPFSD" --list-settings | sed -n 's/^\([a-z_][a-z_]*\) .*/\1/p' >"$TMP/names.d"
"$RPFS" settings | sed -n 's/^\([a-z_][a-z_]*\) .*/\1/p' >"$TMP/names.c"
check "rpfs settings and rpfsd --list-settings list the same settings" cmp "$TMP/names.d" "$TMP/names.c"
check "rpfs down" "$RPFS" down --dir "$D"
cat "$TMP/out"
if ls "$D"/rpfsd.*.pid >/dev/null 2>&1; then
	echo "FAIL pidfiles left after down"
	fail=1
fi
exit $fail
