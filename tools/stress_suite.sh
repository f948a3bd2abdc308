#!/usr/bin/env bash
# tools/stress_suite.sh COMMIT [RUNS]: the whole suite (./dev.sh test) on fresh clones of COMMIT,
# RUNS times in a row (default 3), each with `stress --cpu 2` beside it, stopping at the first
# failure: the "passes on a busy machine" check. Needs ../shared beside this checkout and Debian's
# `stress`. Each run's output is in $STRESS_DIR/<n>/out.txt (default /tmp/tbio-stress); one line
# per run is appended to $STRESS_DIR/runs.log.
set -u
COMMIT=${1:?usage: tools/stress_suite.sh COMMIT [RUNS]}
RUNS=${2:-3}
REPO=$(cd "$(dirname "$0")/.." && pwd)
SHARED=$(cd "$REPO/../shared" && pwd) || { echo "no ../shared beside $REPO" >&2; exit 2; }
OUT=${STRESS_DIR:-/tmp/tbio-stress}
mkdir -p "$OUT"
for n in $(seq 1 "$RUNS"); do
    d="$OUT/$n"
    rm -rf "$d"; mkdir -p "$d"
    ln -s "$SHARED" "$d/shared"
    git clone -q "$REPO" "$d/repo" && git -C "$d/repo" checkout -q "$COMMIT" || exit 2
    stress --cpu 2 > /dev/null 2>&1 &
    sp=$!
    start=$(date +%s)
    (cd "$d/repo" && ./dev.sh test > "$d/out.txt" 2>&1)
    rc=$?
    kill "$sp" 2>/dev/null; pkill -P "$sp" 2>/dev/null
    echo "run=$n commit=$COMMIT rc=$rc secs=$(( $(date +%s) - start ))" | tee -a "$OUT/runs.log"
    [ "$rc" -eq 0 ] || exit "$rc"
done
echo "all $RUNS runs passed on $COMMIT" | tee -a "$OUT/runs.log"
