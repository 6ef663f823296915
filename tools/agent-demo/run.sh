#!/bin/sh
# Measure what collapsing does to tlbhog (issue 22): a run without the agent's action,
# then runs where collapse_all collapses the program's regions from second 5 on, in
# address order and highest address first. Prints tlbhog's per-second loads and the
# collapser's summary. Needs root or CAP_SYS_NICE (process_madvise on another process).
# usage: tools/agent-demo/run.sh [SIZE_MIB HOT_PERCENT SECONDS RATE]
set -eu
size=${1:-2048}; hot=${2:-50}; secs=${3:-40}; rate=${4:-50}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${TMPDIR:-/tmp}/tlbhog
cc -O2 -o "$bin" "$here/tlbhog.c"
cargo build --release --quiet -p hugemm-agent --example collapse_all --manifest-path "$root/Cargo.toml"
collapse="${CARGO_TARGET_DIR:-$root/target}/release/examples/collapse_all"
echo "== no collapse"
"$bin" "$size" "$hot" "$secs" | tail -1
for order in address high-first; do
    echo "== collapse from t=5 s, $order, $rate/s"
    "$bin" "$size" "$hot" "$secs" > /tmp/tlbhog.$$ &
    pid=$!
    while ! grep -q ready /tmp/tlbhog.$$ 2>/dev/null; do sleep 0.1; done
    sleep 5
    "$collapse" "$pid" "$rate" "$order"
    wait "$pid"
    grep -E "^t=(5|10|15|20|25|30|35)\.|^done" /tmp/tlbhog.$$
    rm -f /tmp/tlbhog.$$
done
