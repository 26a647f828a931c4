#!/bin/sh
# configure-state.sh: is a configured build directory still what configure
# would make of this machine? quickstart configures build/ once and keeps
# it; but what configure found can change after it ran: `./quickstart
# demo` configures before `./quickstart test` installs Open MPI, and a tree
# configured without Open MPI leaves its components (ompi/) out for good.
# So quickstart records, beside the options, what configure probes (the
# machine's "configure environment") and configures again when either
# differs.
#
#   scripts/configure-state.sh env               the environment, one line a probe
#   scripts/configure-state.sh check DIR [OPT..]  exit 0 if DIR is configured
#                                                 with OPTs for this environment,
#                                                 else 1 and why on stdout
#   scripts/configure-state.sh record DIR [OPT..] remember both (after configure)
#
# The probes are configure.ac's: every pkg-config module it checks (read
# from configure.ac, so a new one is covered), Open MPI's compiler wrapper
# (mpicc.openmpi on PATH: where, which version, whether its OMPIO component
# headers are there) and the C compiler. The records are DIR/.quickstart-opts
# and DIR/.quickstart-env.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)

# One line per probe: "name: what configure would find".
configure_env() {
	mods=$(sed -n 's/^PKG_CHECK_MODULES(\[[A-Z_0-9]*\], *\[\([A-Za-z0-9_.+-]*\).*/\1/p' \
		"$top/configure.ac")
	for m in $mods; do
		printf 'pkg-config %s: %s\n' "$m" \
			"$(pkg-config --modversion "$m" 2>/dev/null || echo none)"
	done
	if mpicc=$(command -v mpicc.openmpi 2>/dev/null); then
		headers=no
		for d in $("$mpicc" --showme:incdirs 2>/dev/null); do
			[ -f "$d/ompi/mca/fs/fs.h" ] && headers=yes
		done
		printf 'Open MPI: %s %s, OMPIO headers %s\n' "$mpicc" \
			"$("$mpicc" --showme:version 2>&1 | head -n 1 | sed "s,^$mpicc: ,,")" "$headers"
	else
		echo "Open MPI: none (no mpicc.openmpi)"
	fi
	printf 'C compiler: %s\n' "$(${CC:-cc} --version 2>/dev/null | head -n 1)"
}

usage() {
	echo "usage: $0 env | check DIR [OPTION...] | record DIR [OPTION...]" >&2
	exit 2
}

[ $# -ge 1 ] || usage
cmd=$1
shift
case $cmd in
env)
	configure_env
	;;
check)
	[ $# -ge 1 ] || usage
	dir=$1
	shift
	if [ ! -f "$dir/Makefile" ]; then
		echo "$dir is not configured"
		exit 1
	fi
	if [ "$top/configure" -nt "$dir/Makefile" ]; then
		echo "configure is newer than $dir/Makefile"
		exit 1
	fi
	if [ "$(cat "$dir/.quickstart-opts" 2>/dev/null)" != "$*" ]; then
		echo "other configure options than last time"
		exit 1
	fi
	if [ ! -f "$dir/.quickstart-env" ]; then
		echo "no record of what configure found in $dir"
		exit 1
	fi
	configure_env >"$dir/.quickstart-env.now"
	if ! cmp -s "$dir/.quickstart-env" "$dir/.quickstart-env.now"; then
		echo "the machine changed since $dir was configured:"
		diff "$dir/.quickstart-env" "$dir/.quickstart-env.now" |
			sed -n 's/^< /  was: /p; s/^> /  now: /p'
		rm -f "$dir/.quickstart-env.now"
		exit 1
	fi
	rm -f "$dir/.quickstart-env.now"
	;;
record)
	[ $# -ge 1 ] || usage
	dir=$1
	shift
	echo "$*" >"$dir/.quickstart-opts"
	configure_env >"$dir/.quickstart-env"
	;;
*)
	usage
	;;
esac
