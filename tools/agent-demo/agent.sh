#!/bin/sh
# The live agent on this machine (issue 22, docs/agent.md): tlbhog alone, then with
# `hugemm agent` (HawkEye, then khugepaged's order) collapsing its memory from t=2 s; then
# the fairness runs: two tlbhogs started 3 s apart, under each order.
# Needs root or CAP_SYS_NICE. Run on an otherwise idle machine.
# usage: tools/agent-demo/agent.sh [SIZE_MIB SECONDS HOT(high|low)]
set -eu
size=${1:-2048}; secs=${2:-60}; where=${3:-high}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/tlbhog" "$here/tlbhog.c"
cargo build --release --quiet -p hugemm-cli --manifest-path "$root/Cargo.toml"
hugemm="${CARGO_TARGET_DIR:-$root/target}/release/hugemm"

start_hog() { # SIZE SECONDS OUT -> pid once ready
    "$tmp/tlbhog" "$1" 50 "$2" "$where" > "$3" &
    echo $! > "$3.pid"
    while ! grep -q ready "$3" 2>/dev/null; do sleep 0.1; done
}
loads() { # OUT: mean loads/s over the run, and the last second's at 5 s steps
    awk -F'[= ]' '/^t=/{t=int($2); if (t%5==0 && t>0) s=s sprintf(" %d:%.2f", t, $4/1e6)}
                  /^done/{m=$7} END{printf "mean %.2fM loads/s; M loads/s at t (s) =%s\n", m/1e6, s}' "$1"
}

echo "== tlbhog $size MiB, hot half $where, alone"
start_hog "$size" "$secs" "$tmp/alone"; wait "$(cat "$tmp/alone.pid")"; loads "$tmp/alone"
for policy in hawkeye linux; do
    echo "== tlbhog with hugemm agent --policy $policy"
    start_hog "$size" "$secs" "$tmp/$policy"
    pid=$(cat "$tmp/$policy.pid")
    sleep 2
    "$hugemm" agent --config "$here/agent.toml" --policy "$policy" --pid "$pid" \
        --log-format json 2> "$tmp/$policy.log"
    wait "$pid"; loads "$tmp/$policy"
done

half=$((size / 2))
for policy in hawkeye linux; do
    echo "== fairness, $policy: two tlbhogs of $half MiB, the second started 3 s after the first"
    start_hog "$half" "$secs" "$tmp/first"; sleep 3
    start_hog "$half" "$((secs - 3))" "$tmp/second"
    "$hugemm" agent --config "$here/agent.toml" --policy "$policy" \
        --pid "$(cat "$tmp/first.pid")" --pid "$(cat "$tmp/second.pid")" --log-format json 2> "$tmp/fair.log"
    wait
    printf 'first:  '; loads "$tmp/first"
    printf 'second: '; loads "$tmp/second"
done
