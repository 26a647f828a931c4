#!/usr/bin/env bash
# run-fuzz.sh: build rpfs's libFuzzer targets with clang and run each one
# for a while on its seed corpus.
#
# Usage: test/fuzz/run-fuzz.sh [SECONDS_PER_TARGET] [--runs N] [TARGET...]
#        test/fuzz/run-fuzz.sh --gen-corpus DIR
#   SECONDS_PER_TARGET  how long each target runs (default 5)
#   --runs N            stop each target after N inputs (whichever first)
#   TARGET              only these (msg handshake rpc config meta_attr; default all)
#   --gen-corpus DIR    build test/fuzz/gen_corpus.c and write fresh seed
#                       corpora into DIR (the committed ones are in
#                       test/fuzz/corpus/<target>)
# Environment:
#   FUZZ_WORK   scratch directory (default: a new one under ${TMPDIR:-/tmp},
#               removed at the end unless a target failed; kept when given)
#
# Targets (test/fuzz/fuzz_<target>.c), each built with
# -fsanitize=fuzzer,address,undefined -g -O1, linking the common/*.c sources
# it needs directly:
#   msg        message header, inline/fast data placement, bulk descriptors
#   handshake  CM request/accept/reject, HELLO/HELLO_REP, the file
#              service's hello request and answer
#   rpc        request bodies (list I/O segment lists included) and the
#              reply decoders
#   config     the cluster config parser
#   meta_attr  the stored form of a namespace entry (server/meta_attr.c)
# Each runs on a copy of its corpus in the scratch directory (the clone is
# never written). A target passes when libFuzzer exits 0 and reported no
# crash, leak, timeout or broken invariant; a failing input is kept in the
# scratch directory and printed as hex. Each line says PASS or FAIL with the
# executions; the last line is "N passed, N failed".
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
COMMON=$REPO/common
ALL_TARGETS=(msg handshake rpc config meta_attr)

secs=5
runs=""
gen=""
targets=()
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2; shift 2 ;;
	--gen-corpus) gen=$2; shift 2 ;;
	-h|--help) sed -n '2,31p' "$0"; exit 0 ;;
	[0-9]*) secs=$1; shift ;;
	*) targets+=("$1"); shift ;;
	esac
done
[ ${#targets[@]} -gt 0 ] || targets=("${ALL_TARGETS[@]}")

# clang with libFuzzer (Debian: clang, libclang-rt-14-dev)
have_fuzzer() {
	command -v clang >/dev/null 2>&1 || return 1
	echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){return 0;}' |
		clang -x c -fsanitize=fuzzer - -o "$WORK/.probe" >/dev/null 2>&1
}

WORK=${FUZZ_WORK:-}
keep=0
if [ -z "$WORK" ]; then
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/rpfs-fuzz.XXXXXX") || exit 1
else
	mkdir -p "$WORK" || exit 1
	keep=1
fi
cleanup() { [ "$keep" = 1 ] || rm -rf "$WORK"; }
trap cleanup EXIT

if ! have_fuzzer; then
	echo "installing clang and libclang-rt-14-dev (libFuzzer)"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update -qq >/dev/null 2>&1
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clang libclang-rt-14-dev \
		>/dev/null 2>&1
	if ! have_fuzzer; then
		echo "FAIL  no clang with libFuzzer (apt-get install clang libclang-rt-14-dev)"
		echo "0 passed, 1 failed"
		exit 1
	fi
fi

LIBS_CFG=$(pkg-config --libs libsodium inih 2>/dev/null || echo "-lsodium -linih")

sources() {
	case $1 in
	msg) echo "proto.c" ;;
	handshake) echo "proto.c hello.c config.c redundancy.c params.c cpulist.c auth.c log.c" ;;
	rpc) echo "rpc.c layout.c layout_stripe.c layout_mirror.c layout_ec.c redundancy.c" ;;
	config) echo "config.c redundancy.c placement.c params.c cpulist.c auth.c log.c" ;;
	meta_attr) echo "../server/meta_attr.c layout.c layout_stripe.c layout_mirror.c layout_ec.c redundancy.c" ;;
	gen) echo "proto.c hello.c rpc.c layout.c layout_stripe.c layout_mirror.c layout_ec.c redundancy.c config.c params.c cpulist.c auth.c log.c ../server/meta_attr.c" ;;
	esac
}

extra_libs() {
	case $1 in
	handshake | config | gen | rpc) echo "$LIBS_CFG" ;;
	esac
}

# build NAME MAIN_C OUT [flags...]
build() {
	local name=$1 main=$2 out=$3 src=()
	shift 3
	for f in $(sources "$name"); do src+=("$COMMON/$f"); done
	# shellcheck disable=SC2046 # one word per library flag
	clang -std=gnu11 "$@" -I"$COMMON" -I"$HERE" "$main" "${src[@]}" -o "$out" \
		$(extra_libs "$name") >"$WORK/build-$name.log" 2>&1
}

if [ -n "$gen" ]; then
	build gen "$HERE/gen_corpus.c" "$WORK/gen_corpus" -O1 -g || {
		cat "$WORK/build-gen.log"
		exit 1
	}
	"$WORK/gen_corpus" "$gen" && echo "seed corpora written to $gen"
	exit $?
fi

passed=0
failed=0
total=0
for t in "${targets[@]}"; do
	main=$HERE/fuzz_$t.c
	bin=$WORK/fuzz_$t
	if [ ! -f "$main" ]; then
		echo "FAIL  $t: no $main"
		failed=$((failed + 1))
		continue
	fi
	if ! build "$t" "$main" "$bin" -g -O1 -fno-omit-frame-pointer \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined; then
		echo "FAIL  $t: build failed"
		sed 's/^/    /' "$WORK/build-$t.log" | head -20
		failed=$((failed + 1))
		continue
	fi
	corpus=$WORK/corpus-$t
	rm -rf "$corpus"
	mkdir -p "$corpus" "$WORK/crashes-$t"
	cp "$HERE/corpus/$t/"* "$corpus/" 2>/dev/null
	seeds=$(find "$corpus" -type f | wc -l)
	opts=(-max_total_time="$secs" -timeout=10 -print_final_stats=1
		-artifact_prefix="$WORK/crashes-$t/")
	[ -n "$runs" ] && opts+=(-runs="$runs")
	log=$WORK/fuzz-$t.log
	(cd "$WORK" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
		"$bin" "${opts[@]}" "$corpus" >"$log" 2>&1)
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	execs=${execs:-0}
	total=$((total + execs))
	grown=$(find "$corpus" -type f | wc -l)
	crash=$(find "$WORK/crashes-$t" -type f | head -1)
	if [ $rc -eq 0 ] && [ -z "$crash" ] &&
		! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error:|invariant broken' "$log"; then
		echo "PASS  $t: $execs executions in ${secs} s (corpus $seeds -> $grown inputs)"
		passed=$((passed + 1))
	else
		keep=1
		echo "FAIL  $t: libFuzzer exit $rc after $execs executions (log: $log)"
		grep -E 'ERROR:|runtime error:|invariant broken|SUMMARY:|^    #[0-9] ' "$log" |
			head -20 | sed 's/^/    /'
		if [ -n "$crash" ]; then
			echo "    input $crash: $(od -An -tx1 -v "$crash" | tr -d ' \n' | cut -c1-400)"
		fi
		failed=$((failed + 1))
	fi
done
echo "total: $total executions"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
