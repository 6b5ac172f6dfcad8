# Sourced by the benchmark scripts (bench-http, bench-memory, count-instructions,
# bench-counts, bench-profile)
# from the repository's root: what every one of them measures with.
#
# Needs BENCH_KIT (the benchmark kit's folder). Builds the kit's load generator
# on first use, this build's host and the two sample tools every benchmark
# serves (hash.wasm: `sha256`; deploy.wasm: the MRTR `confirm`), unless given:
#   BENCH_AIRLOCK  an `airlock` binary already built: measured instead of
#                  this build's, and nothing of the host is built
#   BENCH_GUESTS   a folder holding hash.wasm and deploy.wasm already built:
#                  served instead, and no guest is built
# Sets
#   PEERS          where the kit's binaries are built (exported for the kit)
#   loadgen        the load generator
#   target         the cargo target directory
#   airlock        the `airlock` binary measured as `airlock`
#   work           a temporary folder, removed on exit
#   tools          a tools directory in it holding the two components
#   pids           processes to stop on exit: append every server started
#   airlock_unset  `env` options clearing the caller's AIRLOCK_* settings
#                  (every option has one), so that the defaults are measured
: "${BENCH_KIT:?set BENCH_KIT to the benchmark kit folder}"
PEERS=${PEERS:-${XDG_CACHE_HOME:-$HOME/.cache}/airlock-peers}
export PEERS
loadgen=$PEERS/target/release/loadgen
[[ -x $loadgen ]] || "$BENCH_KIT/build.sh" loadgen

target=${CARGO_TARGET_DIR:-target}
guests=${BENCH_GUESTS:-$target/wasm32-wasip2/release}
airlock=${BENCH_AIRLOCK:-$target/release/airlock}
[[ -n ${BENCH_GUESTS:-} ]] || cargo build --release --target wasm32-wasip2 -p hash -p deploy
[[ -n ${BENCH_AIRLOCK:-} ]] || cargo build --release -p airlock
work=$(mktemp -d)
tools="$work/tools"
mkdir "$tools"
cp "$guests/hash.wasm" "$guests/deploy.wasm" "$tools/"
pids=()
# Servers already stopped make `kill` fail: under `set -e` that would be the
# script's exit status although it measured everything.
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT
airlock_unset=()
for variable in $(compgen -e); do
    if [[ $variable == AIRLOCK_* && $variable != AIRLOCK_LOG ]]; then airlock_unset+=(-u "$variable"); fi
done

# wait_for_listening LOG: waits (up to a minute: an interpreter's component
# compiles for seconds on a cold cache) until the server logging to LOG
# listens; fails with its log if it never does.
wait_for_listening() {
    for _ in $(seq 600); do grep -q "listening on" "$1" && return 0; sleep 0.1; done
    cat "$1" >&2
    exit 1
}
