#!/bin/sh
# The rpfs command's POSIX habits, one behaviour per check: each command
# parses its own options (unknown ones, missing and extra operands are
# usage errors, exit 2; options may follow operands unless after --),
# coreutils' options (mkdir -p -m, rmdir -p, rm -r -f, ls -R -d -l and
# several paths, chmod with symbolic modes and -R, chown -R, cp and mv
# SRC... DIR, truncate), commands with several operands go on after an
# error and exit 1, setstripe says the cluster's limits, and a failed cp
# leaves no partial file of its own. Starts a two-server set on loopback.
# Run by `make check` from the top build directory (./rpfs, ./rpfsd).
set -u
umask 022

RPFS=${RPFS:-./rpfs}
case $RPFS in /*) ;; *) RPFS=$(pwd)/$RPFS ;; esac
ADDR=${RPFS_TEST_ADDR:-127.0.0.1}
TMP=$(mktemp -d /tmp/rpfs-cli-posix-XXXXXX) || exit 1
D=$TMP/cluster
fail=0

cleanup() {
	"$RPFS" down --dir "$D" >/dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

ok() { echo "ok   $1"; }
bad() {
	echo "FAIL $1"
	sed 's/^/     /' "$TMP/out"
	fail=1
}
# exits STATUS description command...: the command exits with STATUS; its
# output (stdout and stderr) is in $TMP/out for the checks that follow.
exits() {
	want=$1 what=$2
	shift 2
	"$@" >"$TMP/out" 2>&1
	got=$?
	if [ "$got" = "$want" ]; then ok "$what"; else echo "     (exit $got, not $want)"; bad "$what"; fi
}
# says description pattern: $TMP/out has a line matching pattern (grep -E).
says() {
	if grep -qE -- "$2" "$TMP/out"; then ok "$1"; else echo "     (no line matches $2)"; bad "$1"; fi
}
# prints description expected command...: the command's stdout is exactly expected.
prints() {
	what=$1 want=$2
	shift 2
	"$@" >"$TMP/out" 2>&1
	if [ "$(cat "$TMP/out")" = "$want" ]; then ok "$what"; else printf '     expected:\n%s\n' "$want" | sed '2,$s/^/     /'; bad "$what"; fi
}
mode_of() { "$RPFS" stat "$1" | awk '$1 == "mode:" { print $2 }'; }

"$RPFS" up -n 2 --dir "$D" --address "$ADDR" >"$TMP/out" 2>&1 || { bad "rpfs up -n 2"; exit 1; }
export RPFS_CONFIG="$D/rpfs.conf"

# ---- options are each command's own ----------------------------------------
exits 0 "mkdir -p makes the parents" "$RPFS" mkdir -p /a/b/c
exits 0 "mkdir -p: /a/b/c is there" "$RPFS" stat /a/b/c
exits 0 "mkdir -p of an existing directory is no error" "$RPFS" mkdir -p /a/b
exits 1 "mkdir of an existing directory without -p fails" "$RPFS" mkdir /a/b
says "mkdir says which path exists" "^rpfs mkdir: /a/b: File exists"
exits 0 "mkdir -p 9150 /zz: 9150 is a path, not a port" "$RPFS" mkdir -p 9150 /zz
exits 0 "mkdir -p 9150 made /9150" "$RPFS" stat /9150
"$RPFS" truncate -s 0 /file >/dev/null 2>&1
exits 1 "mkdir -p through a file fails" "$RPFS" mkdir -p /file/x
says "mkdir -p says the file is no directory" "^rpfs mkdir: /file: exists and is not a directory"
exits 0 "mkdir -m 0700" "$RPFS" mkdir -m 0700 /m1
prints "mkdir -m 0700 gives 0700" 0700 mode_of /m1
exits 0 "mkdir -m with a symbolic mode" "$RPFS" mkdir -m u=rwx,g=rx,o= /m2
prints "mkdir -m u=rwx,g=rx,o= gives 0750" 0750 mode_of /m2
exits 2 "mkdir -m with a bad mode is a usage error" "$RPFS" mkdir -m 0999 /m3
says "mkdir -m names the bad mode" "^rpfs mkdir: invalid mode '0999'"
exits 2 "an unknown option is a usage error" "$RPFS" rm -x /a
says "the unknown option is named" "^rpfs rm: unknown option '-x'"
says "the command's usage follows" "^usage: rpfs rm "
exits 2 "an unknown long option is a usage error" "$RPFS" ls --bogus /
says "the unknown long option is named" "^rpfs ls: unknown option '--bogus'"
exits 2 "a missing operand is a usage error" "$RPFS" mkdir
says "the missing operand is said" "^rpfs mkdir: missing operand"
exits 2 "an extra operand is a usage error" "$RPFS" setstripe -c 1 /a /b
says "the extra operand is named" "^rpfs setstripe: extra operand '/b'"
exits 2 "a command without operands refuses one" "$RPFS" ping now
exits 2 "an option without its argument is a usage error" "$RPFS" truncate /f -s
says "the option is named" "^rpfs truncate: option '-s' needs an argument"
exits 2 "an unknown command is a usage error" "$RPFS" lsx /
exits 0 "options may follow operands" "$RPFS" ls /a -l
says "ls / -l is the long format" "^drwx.* b/$"
exits 0 "-- ends the options" "$RPFS" mkdir -- -dash
prints "-- : the operand after it is a path" "/-dash" "$RPFS" ls -d /-dash
exits 0 "--config before the command word" "$RPFS" --config "$D/rpfs.conf" stat /a
exits 0 "--config after the command word" "$RPFS" stat --config "$D/rpfs.conf" /a
exits 0 "--dir before the command word" env -u RPFS_CONFIG "$RPFS" --dir "$D" stat /a
exits 0 "--help after a command's operands" "$RPFS" rm /nosuch --help
says "rm --help is rm's usage and options" "^  -f, --force "
exits 0 "-h is human sizes in du" "$RPFS" du -h -s /a
says "du -h says bytes in units" "^0 B	/a$"

# ---- rm, rmdir ---------------------------------------------------------------
exits 1 "rm of a directory without -r fails" "$RPFS" rm /a
says "rm says it is a directory" "^rpfs rm: /a: Is a directory"
"$RPFS" truncate -s 100 /a/b/c/f1 /a/f2 >/dev/null 2>&1
exits 0 "rm -r removes a tree" "$RPFS" rm -r /a
exits 1 "rm -r: the tree is gone" "$RPFS" stat /a
"$RPFS" mkdir -p /a2/b >/dev/null 2>&1
exits 0 "rm -R is rm -r" "$RPFS" rm -R /a2
exits 1 "rm -r / is refused" "$RPFS" rm -r /
says "rm says it refuses /" "^rpfs rm: refusing to remove '/' recursively"
exits 1 "rm -r / (with -f too) is refused" "$RPFS" rm -rf / /nosuch
exits 0 "rm -f of a missing path is no error" "$RPFS" rm -f /nosuch
prints "rm -f of a missing path says nothing" "" "$RPFS" rm -f /nosuch
exits 0 "rm -f without operands is no error" "$RPFS" rm -f
printf real >"$TMP/real"
"$RPFS" cp "$TMP/real" rpfs:/real >/dev/null 2>&1
exits 0 "/real is there before rm" "$RPFS" stat /real
exits 1 "rm /missing /real exits 1" "$RPFS" rm /missing /real
says "rm says which path is missing, and the server" "^rpfs rm: /missing: No such file or directory \(meta server"
exits 1 "rm /missing /real went on to /real" "$RPFS" stat /real
"$RPFS" mkdir -p /p/q/r >/dev/null 2>&1
exits 0 "rmdir -p removes the parents" "$RPFS" rmdir -p /p/q/r
exits 1 "rmdir -p: /p is gone" "$RPFS" stat /p

# ---- ls ----------------------------------------------------------------------
"$RPFS" mkdir -p /r/s >/dev/null 2>&1
"$RPFS" truncate -s 1 /r/s/f /r/g >/dev/null 2>&1
prints "ls -R lists the tree, a header per directory" "$(printf '/r:\ng\ns\n\n/r/s:\nf')" "$RPFS" ls -R /r
prints "ls of several directories: a header each" "$(printf '/r:\ng\ns\n\n/r/s:\nf')" "$RPFS" ls /r /r/s
prints "ls of a file lists it by name" /r/s/f "$RPFS" ls /r/s/f
prints "ls lists files first, then directories" "$(printf '/r/s/f\n\n/r:\ng\ns')" "$RPFS" ls /r /r/s/f
prints "ls -d lists a directory itself" /r "$RPFS" ls -d /r
exits 1 "ls of a missing path among others exits 1" "$RPFS" ls /nosuch /r/s
says "ls said which path is missing" "^rpfs ls: /nosuch: No such file or directory"
says "ls went on to the others" "^f$"
"$RPFS" chown 65534:65534 /r/g >/dev/null 2>&1
user=$(getent passwd 65534 | cut -d: -f1)
group=$(getent group 65534 | cut -d: -f1)
prints "ls -l shows the owner and group by name" \
	"-rw-r--r-- ${user:-65534} ${group:-65534} 1" \
	sh -c "'$RPFS' ls -l /r/g | awk '{ print \$1, \$2, \$3, \$4 }'"

# ---- chmod, chown ------------------------------------------------------------
"$RPFS" truncate -s 0 /c >/dev/null 2>&1
exits 0 "chmod u+x" "$RPFS" chmod u+x /c
prints "chmod u+x gives 0744" 0744 mode_of /c
exits 0 "chmod go-w,a-x" "$RPFS" chmod g+w,go-w,a-x /c
prints "chmod go-w gives 0644" 0644 mode_of /c
exits 0 "chmod a=r" "$RPFS" chmod a=r /c
prints "chmod a=r gives 0444" 0444 mode_of /c
exits 0 "chmod +t" "$RPFS" chmod +t /c
prints "chmod +t gives 1444" 1444 mode_of /c
exits 0 "chmod u=rw,g=u,o=" "$RPFS" chmod u=rw,g=u,o= /c
prints "chmod g=u copies the owner's bits" 0660 mode_of /c
exits 0 "chmod -w: a mode, not an option" "$RPFS" chmod -w /c
prints "chmod -w gives 0460" 0460 mode_of /c
exits 2 "chmod with a bad mode is a usage error" "$RPFS" chmod u+y /c
says "chmod names the bad mode" "^rpfs chmod: invalid mode 'u\+y'"
exits 0 "chmod -R applies to the tree" "$RPFS" chmod -R go-rx /r
prints "chmod -R: a file below" 0600 mode_of /r/s/f
prints "chmod -R: a directory below" 0700 mode_of /r/s
exits 0 "chmod -R a+rX" "$RPFS" chmod -R a+rX /r
prints "chmod a+rX: x for directories" 0755 mode_of /r/s
prints "chmod a+rX: no x for files" 0644 mode_of /r/s/f
exits 1 "chmod goes on after a missing path" "$RPFS" chmod 0600 /nosuch /c
prints "chmod went on to /c" 0600 mode_of /c
exits 0 "chown -R" "$RPFS" chown -R 65534 /r
exits 0 "chown -R: a file below" sh -c "'$RPFS' stat /r/s/f | grep -q 'uid 65534 '"

# ---- mv, cp, cat -------------------------------------------------------------
printf one >"$TMP/one"
printf two >"$TMP/two"
"$RPFS" cp "$TMP/one" rpfs:/one >/dev/null 2>&1
"$RPFS" cp "$TMP/two" rpfs:/two >/dev/null 2>&1
"$RPFS" mkdir /into /into2 >/dev/null 2>&1
exits 0 "cp SRC... DIR" "$RPFS" cp rpfs:/one rpfs:/two rpfs:/into
prints "cp SRC... DIR copies each into DIR" "$(printf 'one\ntwo')" "$RPFS" ls /into
exits 1 "cp SRC... FILE fails" "$RPFS" cp rpfs:/one rpfs:/two rpfs:/c
says "cp says the target is no directory" "^rpfs cp: target /c is not a directory"
exits 0 "mv SRC... DIR" "$RPFS" mv /into/one /into/two /into2
prints "mv SRC... DIR moves each into DIR" "$(printf 'one\ntwo')" "$RPFS" ls /into2
exits 1 "mv SRC... FILE fails" "$RPFS" mv /one /two /c
exits 1 "cat goes on after a missing file, exits 1" sh -c "'$RPFS' cat /one /nosuch /two >'$TMP/cat'"
prints "cat wrote the others" onetwo cat "$TMP/cat"
# A copy that fails half way: a file size limit stops the local write.
head -c 3000000 /dev/urandom >"$TMP/big"
"$RPFS" cp "$TMP/big" rpfs:/big >/dev/null 2>&1
exits 1 "cp that fails writing a new local file" \
	sh -c "trap '' XFSZ; ulimit -f 1000; exec '$RPFS' cp rpfs:/big '$TMP/part'"
says "cp says why" "^rpfs cp: $TMP/part: File too large"
exits 1 "cp removed the partial file it created" test -e "$TMP/part"
echo old >"$TMP/part"
exits 1 "cp that fails writing an existing local file" \
	sh -c "trap '' XFSZ; ulimit -f 1000; exec '$RPFS' cp rpfs:/big '$TMP/part'"
says "cp says the existing file is partly overwritten" "^rpfs cp: $TMP/part: existed and is now partly overwritten"
# A local file shorter than its size (sysfs says 4096) fails the read.
short=/sys/kernel/uevent_seqnum
if [ -r $short ] && [ "$(stat -c %s $short)" -gt "$(wc -c <$short)" ]; then
	exits 1 "cp that fails into a new rpfs file" "$RPFS" cp $short rpfs:/short
	says "cp says the source changed" "^rpfs cp: $short: fewer bytes than its size"
	exits 1 "cp removed the rpfs file it created" "$RPFS" stat /short
else
	echo "skip cp into rpfs that fails (no sysfs file shorter than its size)"
fi

# ---- truncate ----------------------------------------------------------------
exits 0 "truncate -s creates a file of that size" "$RPFS" truncate -s 10K /t
exits 0 "truncate -s 10K: 10240 bytes" sh -c "'$RPFS' stat /t | grep -q 'size: 10240$'"
exits 0 "truncate -s +1K extends" "$RPFS" truncate -s +1K /t
exits 0 "truncate -s +1K: 11264 bytes" sh -c "'$RPFS' stat /t | grep -q 'size: 11264$'"
exits 0 "truncate -s %4K rounds up" "$RPFS" truncate -s %4K /t
exits 0 "truncate -s %4K: 12288 bytes" sh -c "'$RPFS' stat /t | grep -q 'size: 12288$'"
exits 0 "truncate -s -12K shrinks" "$RPFS" truncate -s -12K /t
exits 0 "truncate -s -12K: 0 bytes" sh -c "'$RPFS' stat /t | grep -q 'size: 0$'"
exits 0 "truncate -c of a missing file" "$RPFS" truncate -c -s 1 /nocreate
exits 1 "truncate -c created nothing" "$RPFS" stat /nocreate
exits 2 "truncate without -s is a usage error" "$RPFS" truncate /t
exits 2 "truncate with a bad size is a usage error" "$RPFS" truncate -s 1Q /t

# ---- setstripe: the limits in words, never clamped ---------------------------
"$RPFS" mkdir /st >/dev/null 2>&1
exits 2 "setstripe -c 8 on 2 servers (a directory) fails" "$RPFS" setstripe -c 8 /st
says "setstripe says the cluster's limits" "^rpfs setstripe: stripe count 8: the cluster has 2 I/O servers \(1..2, -1 for all"
exits 2 "setstripe -c 8 on 2 servers (a new file) fails" "$RPFS" setstripe -c 8 /st/new
exits 1 "setstripe -c 8 made no file" "$RPFS" stat /st/new
exits 0 "setstripe -c -1 is every I/O server" "$RPFS" setstripe -c -1 /st
prints "setstripe -c -1: stripe count 2" "/st: new files: stripe_unit default stripe_count 2" "$RPFS" getstripe /st
exits 0 "setstripe -c 0 is the default" "$RPFS" setstripe -c 0 -S 64K /st
prints "setstripe -c 0: the default count" "/st: new files: stripe_unit 65536 stripe_count default" "$RPFS" getstripe /st
exits 0 "setstripe -i 1 for a new file" "$RPFS" setstripe -c 1 -i 1 /st/one
exits 0 "getstripe: first_server 1" sh -c "'$RPFS' getstripe /st/one | grep -q 'stripe_count 1 first_server 1$'"
exits 1 "setstripe -i on a directory fails" "$RPFS" setstripe -i 1 /st
says "setstripe says -i is for a new file" "^rpfs setstripe: /st: -i is for a new file"
exits 2 "setstripe -i past the servers fails" "$RPFS" setstripe -i 2 /st/two
says "setstripe says the servers' numbers" "stripe index 2: the cluster's I/O servers are 0..1"
exits 2 "setstripe -S over 4G is a usage error" "$RPFS" setstripe -S 5G /st
exits 2 "setstripe -c x is a usage error" "$RPFS" setstripe -c x /st

exit $fail
