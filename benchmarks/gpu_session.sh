#!/usr/bin/env bash
# Everything warpsim owes a GPU, in stages that each fit one 10-minute command:
#   benchmarks/gpu_session.sh OUT_DIR STAGE...
# Stages: tests (pytest -m gpu over 4 pytest-xdist workers; it includes `warpsim check` at
# scale), bench (the targets of docs/benchmarks.md), train-speed (the train tier with the update
# captured, against its targets), grid-chase and tag-chase (the reference learning tasks),
# neighbour-search, placement, profile (Nsight Compute). Stages given to one call run in turn; separate calls may run at once.
# Each stage writes under OUT_DIR: logs, bench records (bench/*.json), run metrics and plots.
# Run it from the repository root with warpsim installed; every command is also usable alone.
set -uo pipefail
out=$(realpath -m "$1"); shift
mkdir -p "$out"
export PYTHONUNBUFFERED=1

step() {  # step NAME SECONDS COMMAND...: run with a time limit, log its output and its wall time
    local name=$1 limit=$2; shift 2
    local start=$SECONDS
    echo "=== $name: $*"
    timeout "$limit" "$@" 2>&1 | tee "$out/$name.log"
    local rc=${PIPESTATUS[0]}
    echo "=== $name: exit $rc after $((SECONDS - start)) s" | tee -a "$out/summary.txt"
}

bench() {  # bench NAME SECONDS ARGS...: one warpsim bench call, its records in OUT_DIR/bench
    local name=$1 limit=$2; shift 2
    step "bench-$name" "$limit" warpsim bench --no-baseline --results-dir "$out/bench" "$@"
}

learn() {  # learn PRESET SECONDS: train, then evaluate against random play and plot episode length
    local preset=$1 limit=$2 run=$out/runs/$1
    step "train-$preset" "$limit" warpsim train --config "$preset" --run-dir "$run"
    step "evaluate-$preset" 240 warpsim evaluate "$run" --compare-random --episodes 2000 --num-envs 2000
    step "plot-$preset" 120 warpsim plot "$run" --metric episode_length --out "$out/${preset//-/_}.png"
}

for stage in "$@"; do
    case $stage in
        tests)
            step pytest-gpu 420 python3 -m pytest -m gpu -q -p no:cacheprovider -n 4 -rfEs ;;
        bench)
            bench headline 90 --config headline --graphs both
            bench sweep-E 120 --config sweep-E --values 1,16,256,1024,4096,16384 --graphs both
            bench train-ref-train 120 --config train-ref --tier train --precision fp32 --precision bf16 --graphs both
            bench grid-train 90 --config grid --tier sim --tier train --graphs both
            bench train-ref-sim 60 --config train-ref --tier sim --tier sim+policy --graphs both
            bench sweep-N 120 --config sweep-N
            bench headline-train 90 --config headline --tier sim+policy --tier train ;;
        train-speed)  # rollout and update as graphs; each train record has rollout_ms and update_ms
            bench train-ref-speed 150 --config train-ref --tier sim+policy --tier train --precision bf16 \
                --graphs on --compile-loss
            bench train-ref-eager-loss 100 --config train-ref --tier train --precision bf16 --graphs on
            bench grid-speed 100 --config grid --tier train --graphs on --compile-loss
            bench headline-speed 150 --config headline --tier train --graphs on --compile-loss
            step update-ops 90 python3 benchmarks/update_ops.py ;;
        grid-chase)
            learn grid-chase 300 ;;
        tag-chase)
            learn tag-chase 470 ;;
        neighbour-search)
            step neighbour-search 180 python3 benchmarks/neighbour_search.py --results-dir "$out/bench" ;;
        placement)
            step placement-tag-small 200 python3 benchmarks/placement.py --sizes tag-small --results-dir "$out/bench"
            step placement-train-ref 200 python3 benchmarks/placement.py --sizes train-ref --results-dir "$out/bench" ;;
        profile)
            step ncu-observe-partial-grid 180 ncu --clock-control none --kernel-name regex:observe_partial --launch-count 2 \
                --section SpeedOfLight --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis \
                warpsim bench --config headline --steps 5 --repeats 1 --warmup 1 --no-save --no-baseline ;;
        *)
            echo "unknown stage $stage (tests, bench, train-speed, grid-chase, tag-chase, neighbour-search, placement, profile)" >&2; exit 2 ;;
    esac
done
cat "$out/summary.txt"
