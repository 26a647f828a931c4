# netns.sh: a cluster of "hosts" on one machine, sourced by
# test/cluster/run-netns-test.sh and bench/netns-scaling.
#
# Each host is a network namespace with one veth link (eth0) to a bridge
# that lives in a namespace of its own, so nothing touches the machine's
# own network: the bridge namespace holds br0 and the peers p0, p1, ...;
# host i has 10.77.0.(10+i)/24 and the client namespace (where the MPI
# processes and the rpfs command run) 10.77.0.2/24. Names carry a prefix
# with the caller's pid (NS_P), so concurrent runs never collide, and
# ns_down removes everything (call it from an EXIT trap): the rpfsd
# processes by their pid files, then the namespaces, which take their
# links with them.
#
# ns_shape RATE puts a token bucket (tc tbf; netem is not in every
# kernel) on both directions of every host's link, so with many servers
# the host links, not the client's, are the bound.

NS_P=${NS_P:-rpfs$$}
NS_BR=${NS_P}br
NS_C=${NS_P}c
NS_HOSTS=0
NS_CLIENT_ADDR=10.77.0.2

ns_host() { echo "${NS_P}h$1"; }
ns_addr() { echo "10.77.0.$((10 + $1))"; }

# Why namespaces cannot be used here, or nothing.
ns_unavailable() {
	[ "$(id -u)" = 0 ] || { echo "not root (ip netns needs CAP_SYS_ADMIN)"; return; }
	command -v ip >/dev/null 2>&1 || { echo "no ip command (iproute2)"; return; }
	command -v tc >/dev/null 2>&1 || { echo "no tc command (iproute2)"; return; }
	ip netns add "${NS_P}probe" 2>/dev/null || { echo "ip netns add is not allowed here"; return; }
	if ! ip -n "${NS_P}probe" link add probe0 type bridge 2>/dev/null; then
		ip netns del "${NS_P}probe" 2>/dev/null
		echo "no bridge support in this kernel"
		return
	fi
	ip netns del "${NS_P}probe" 2>/dev/null
}

# ns_link NS NAME ADDR: a veth from namespace NS (named NAME there) to br0.
ns_link() {
	ip link add "$2" netns "$1" type veth peer name "p$NS_PORTS" netns "$NS_BR" || return 1
	ip -n "$NS_BR" link set "p$NS_PORTS" master br0 up || return 1
	ip -n "$1" addr add "$3/24" dev "$2" || return 1
	ip -n "$1" link set "$2" up || return 1
	ip -n "$1" link set lo up || return 1
	NS_PORTS=$((NS_PORTS + 1))
}

# ns_up N: the bridge, the client namespace (port 0) and N host
# namespaces (host i on port i+1).
ns_up() {
	NS_PORTS=0
	ip netns add "$NS_BR" || return 1
	ip -n "$NS_BR" link add br0 type bridge || return 1
	ip -n "$NS_BR" link set br0 up || return 1
	ip netns add "$NS_C" || return 1
	ns_link "$NS_C" eth0 "$NS_CLIENT_ADDR" || return 1
	i=0
	while [ $i -lt "$1" ]; do
		ip netns add "$(ns_host $i)" || return 1
		NS_HOSTS=$((i + 1))
		ns_link "$(ns_host $i)" eth0 "$(ns_addr $i)" || return 1
		i=$((i + 1))
	done
}

# ns_shape RATE (e.g. 100mbit): both directions of every host link.
ns_shape() {
	i=0
	while [ $i -lt $NS_HOSTS ]; do
		tc -n "$(ns_host $i)" qdisc replace dev eth0 root tbf rate "$1" \
			burst 256kb latency 400ms || return 1
		tc -n "$NS_BR" qdisc replace dev "p$((i + 1))" root tbf rate "$1" \
			burst 256kb latency 400ms || return 1
		i=$((i + 1))
	done
}

# ns_unshape: back to unshaped links.
ns_unshape() {
	i=0
	while [ $i -lt $NS_HOSTS ]; do
		tc -n "$(ns_host $i)" qdisc del dev eth0 root 2>/dev/null
		tc -n "$NS_BR" qdisc del dev "p$((i + 1))" root 2>/dev/null
		i=$((i + 1))
	done
	return 0
}

# ns_servers RPFSD CONFIG DIR: one rpfsd per host namespace, server s<i>
# on host i; I/O-only ones first (a new metadata server asks them about
# its store). Pid files and logs in DIR.
ns_servers() {
	i=$((NS_HOSTS - 1))
	while [ $i -ge 0 ]; do
		ip netns exec "$(ns_host $i)" "$1" --config "$2" --name "s$i" --daemon \
			--pidfile "$3/s$i.pid" --log-file "$3/s$i.log" || {
			echo "rpfsd s$i did not start (log: $3/s$i.log)" >&2
			tail -5 "$3/s$i.log" >&2
			return 1
		}
		i=$((i - 1))
	done
}

# ns_down DIR: stop the servers whose pid files are in DIR, then remove
# the namespaces (their links go with them).
ns_down() {
	for p in "$1"/s*.pid; do
		[ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null
	done
	i=0
	while [ $i -lt 50 ] && ls "$1"/s*.pid >/dev/null 2>&1; do
		sleep 0.1
		i=$((i + 1))
	done
	for p in "$1"/s*.pid; do
		[ -f "$p" ] && kill -9 "$(cat "$p")" 2>/dev/null
	done
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$NS_P"); do
		# anything still in it (an mpiexec left behind) goes first
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -9 "$pid" 2>/dev/null
		done
		ip netns del "$ns" 2>/dev/null
	done
}
