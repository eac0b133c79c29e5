#!/usr/bin/env bash
# Everything warpsim owes a GPU, in stages that each fit one 10-minute command:
#   benchmarks/gpu_session.sh OUT_DIR STAGE...
# Stages: first (what a session lent a GPU runs first, in one command of about 7 minutes: the GPU
# tests, then train-ref's train tier with the gradients' kernels, and with the loss computed in them, and their
# table),
# tests (pytest -m gpu over 8 pytest-xdist workers; it includes `warpsim check` at
# scale), bench (the targets of docs/benchmarks.md), bf16 (headline with bfloat16 observations, to
# set beside bench's headline), train-speed (the train tier, fused and eager, the cost model of
# benchmarks/iteration_cost.py and the fused iteration's kernels from the profiler, then one table of them all,
# benchmarks/train_speed_table.py), profiles (torch's profiler on train-ref's fused iteration, without and with
# gradient kernels, in about 3 minutes: to follow first on a short loan of a GPU), train-speed-autotune
# (train-ref's fused train tier with inductor's autotuned matrix products), gradient-kernels (the update's networks
# and gradients as warpsim's kernels: their GPU tests, their time against autograd's, the train tier and the profile
# of an iteration with them), loss-kernels (PPO's loss computed in those kernels too: its GPU tests, train-ref's train
# tier with it and without, its profile) and loss-kernels-configs (headline's and grid's, with it and without),
# neighbour-search (each search forced: sweep-N, and the headline with each grid search),
# placement, fused-forward (the networks as kernels: their GPU tests and their times against the
# eager forward's and autograd's), many-runs (an experiment of 16 runs batched against the 16 in turn), evaluation-speed (10 runs evaluated
# side by side against one alone), mpe and mpe-roles (the MPE scenarios against MPE2), mpe-scale (MPE's grid
# searches at N = 1000 and 4096), simple-spread-1k and simple-tag-1k (those presets trained for at most 270 s and
# evaluated), profile (Nsight Compute),
# and the reference learning tasks: grid-chase, tag-chase, tag-chase-one-epoch (one pass over each rollout),
# tag-chase-continuous, tag-evade (needs tag-chase's run, in the same
# OUT_DIR) and self-play (train-ref, both roles learn), each one call of at most 10 minutes;
# learning runs all four in turn; peers-mpe (simple_spread beside VMAS on CUDA and JaxMARL), peers-jaxmarl and
# peers-jaxmarl-headline (JaxMARL's simple_tag at train-ref's and at headline's E x N); profile-networks (Nsight
# Compute on the networks' kernels of train-ref's update with gradient kernels).
# mpe, mpe-roles, mpe-scale's speed and the peers' stages need packages the image lacks (MPE2 and the peers,
# which benchmarks/mpe_speed.py times beside warpsim): carry the wheels that
# benchmarks/peers/gpu_wheels.sh DIR downloads and name their folder in PEER_WHEELS (benchmarks/peers/README.md).
# Stages given to one call run in turn; separate calls may run at once.
# Each stage writes under OUT_DIR: logs, bench records (bench/*.json), run metrics and plots.
# Run it from the repository root with warpsim installed; every command is also usable alone.
set -uo pipefail
out=$(realpath -m "$1"); shift
mkdir -p "$out"
export PYTHONUNBUFFERED=1

step() {  # step NAME SECONDS COMMAND...: run with a time limit, log its output and its wall time. At the limit
    # the command gets an interrupt, as Ctrl-C: pytest then prints the failures so far, and training saves its
    # checkpoint; what still runs 30 s later is killed
    local name=$1 limit=$2; shift 2
    local start=$SECONDS
    echo "=== $name: $*"
    timeout -s INT -k 30 "$limit" "$@" 2>&1 | tee "$out/$name.log"
    local rc=${PIPESTATUS[0]}
    echo "=== $name: exit $rc after $((SECONDS - start)) s" | tee -a "$out/summary.txt"
}

bench() {  # bench NAME SECONDS ARGS...: one warpsim bench call, its records in OUT_DIR/bench
    local name=$1 limit=$2; shift 2
    step "bench-$name" "$limit" warpsim bench --no-baseline --results-dir "$out/bench" "$@"
}

learn_as() {  # learn_as NAME PRESET SECONDS METRIC [TRAIN ARGS...]: train PRESET as the run NAME, evaluate it
            # (sampled and greedy, against random play, as JSON) and plot METRIC; all of it under OUT_DIR
    local name=$1 preset=$2 limit=$3 metric=$4 run=$out/runs/$1
    shift 4
    step "train-$name" "$limit" warpsim train --config "$preset" --run-dir "$run" "$@"
    step "evaluate-$name" 150 warpsim evaluate "$run" --episodes 2000 --num-envs 2000 \
        --json "$out/evaluate-$name.json"
    step "plot-$name" 60 warpsim plot "$run" --metric "$metric" --out "$out/${name//-/_}.png"
}

learn() {  # learn PRESET SECONDS METRIC [TRAIN ARGS...]: learn_as the run named PRESET
    learn_as "$1" "$@"
}

peer_site=${PEER_SITE:-/tmp/warpsim-peers}  # where they are installed
peer_packages() {  # the peers' packages the image lacks (MPE2, PettingZoo, VMAS, JaxMARL, ...), from the wheels
    # carried to the machine (it has no network) in the folder PEER_WHEELS (benchmarks/peers/gpu_wheels.sh)
    if [ ! -d "$peer_site" ]; then
        if [ -z "${PEER_WHEELS:-}" ]; then
            echo "=== peers: set PEER_WHEELS to the folder of carried wheels (benchmarks/peers/README.md)" \
                | tee -a "$out/summary.txt"
            return 1
        fi
        step peer-packages 120 python3 -m pip install --no-index --no-deps --target "$peer_site" "$PEER_WHEELS"/*.whl
        [ -d "$peer_site" ] || return 1
    fi
    case ":${PYTHONPATH:-}:" in *":$peer_site:"*) ;; *) export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$peer_site ;; esac
}

for stage in "$@"; do
    case $stage in
        first)  # whether the kernels compute right on this GPU, then which update path is the faster: the gradient
            # kernels (the default on an H100 or H200) or those computing the loss too
            step pytest-gpu 300 python3 -m pytest -m gpu -v -p no:cacheprovider -n 8 --maxprocesses 8 -rfEs --durations=15
            bench train-ref-gradient-kernels 110 --config train-ref --tier train --precision bf16 --graphs on \
                --compile on --gradient-kernels on --repeats 2
            bench train-ref-loss-kernels 110 --config train-ref --tier train --precision bf16 --graphs on \
                --compile on --gradient-kernels loss --repeats 2
            step train-speed-table 15 python3 benchmarks/train_speed_table.py "$out" ;;
        tests)
            # each test's result on a line of its own, as it ends: a stage cut short still names them
            step pytest-gpu 420 python3 -m pytest -m gpu -v -p no:cacheprovider -n 8 --maxprocesses 8 -rfEs --durations=15 ;;
        bench)
            bench headline 90 --config headline --graphs both
            bench sweep-E 120 --config sweep-E --values 1,16,256,1024,4096,16384 --graphs both
            bench train-ref-train 120 --config train-ref --tier train --precision fp32 --precision bf16 --graphs both
            bench grid-train 90 --config grid --tier sim --tier train --graphs both
            bench train-ref-sim 60 --config train-ref --tier sim --tier sim+policy --graphs both
            bench sweep-N 120 --config sweep-N
            bench headline-train 90 --config headline --tier sim+policy --tier train ;;
        bf16)
            bench headline-bf16 90 --config headline-bf16 --graphs both ;;
        train-speed)  # graphs; fused (gradient kernels as auto makes them) against eager; each train record has
            # rollout_ms and update_ms
            bench train-ref-fused 120 --config train-ref --tier sim+policy --tier train --precision bf16 \
                --graphs on --compile on --repeats 3
            bench train-ref-eager 60 --config train-ref --tier train --precision bf16 --graphs on --compile off \
                --repeats 3
            bench grid-fused 80 --config grid --tier train --graphs on --compile on --repeats 3
            bench headline-fused 100 --config headline --tier train --graphs on --compile on --repeats 3
            step iteration-cost 100 python3 benchmarks/iteration_cost.py --config train-ref \
                --json "$out/iteration-cost.json"
            step profile-fused 90 python3 benchmarks/iteration_profile.py --config train-ref --compile on \
                --json "$out/profile-fused.json"
            step train-speed-table 15 python3 benchmarks/train_speed_table.py "$out" ;;
        profiles)  # where train-ref's fused iteration spends its GPU time, without and with gradient kernels (torch's
            # profiler): about 3 minutes, to follow first on a short loan of a GPU
            step profile-fused 90 python3 benchmarks/iteration_profile.py --config train-ref --compile on \
                --gradient-kernels off --json "$out/profile-fused.json"
            step profile-gradient-kernels 95 python3 benchmarks/iteration_profile.py --config train-ref --compile on \
                --gradient-kernels on --json "$out/profile-gradient-kernels.json" ;;
        train-speed-autotune)  # the fused update's matrix products chosen by inductor's autotuning, against train-speed's
            TORCHINDUCTOR_MAX_AUTOTUNE_GEMM=1 bench train-ref-fused-autotune 420 --config train-ref --tier train \
                --precision bf16 --graphs on --compile on --gradient-kernels off --repeats 3 ;;
        gradient-kernels)  # the update's networks and gradients as kernels: checked, timed alone, then in training
            # beside the fused train tier without them, on the same machine
            step gradient-kernels-tests 60 python3 -m pytest -m gpu -q -p no:cacheprovider -n 0 \
                tests/test_fused_forward.py -k gradients
            step gradient-kernels-train-ref 150 python3 benchmarks/fused_forward.py --config train-ref \
                --results-dir "$out/fused_forward"
            bench train-ref-gradient-kernels 140 --config train-ref --tier train --precision bf16 --graphs on \
                --compile on --gradient-kernels on --repeats 3
            bench train-ref-fused 90 --config train-ref --tier train --precision bf16 --graphs on --compile on \
                --gradient-kernels off --repeats 3
            step profile-gradient-kernels 95 python3 benchmarks/iteration_profile.py --config train-ref --compile on \
                --gradient-kernels on --json "$out/profile-gradient-kernels.json"
            step train-speed-table 15 python3 benchmarks/train_speed_table.py "$out" ;;
        loss-kernels)  # PPO's loss computed in the gradients' kernels (gradient_kernels='loss'): checked on this GPU,
            # then train-ref's train tier with it beside the gradient kernels without it, and its profile
            step loss-kernels-tests 120 python3 -m pytest -m gpu -q -p no:cacheprovider -n 0 tests/test_fused_loss.py \
                tests/test_compiled.py -k loss
            bench train-ref-loss-kernels 110 --config train-ref --tier train --precision bf16 --graphs on \
                --compile on --gradient-kernels loss --repeats 2
            bench train-ref-gradient-kernels 110 --config train-ref --tier train --precision bf16 --graphs on \
                --compile on --gradient-kernels on --repeats 2
            step profile-loss-kernels 95 python3 benchmarks/iteration_profile.py --config train-ref --compile on \
                --gradient-kernels loss --json "$out/profile-loss-kernels.json"
            step train-speed-table 15 python3 benchmarks/train_speed_table.py "$out" ;;
        loss-kernels-configs)  # headline's and grid's train tier with the loss in the gradients' kernels and without
            for config in headline grid; do
                for kernels in loss on; do
                    bench "$config-kernels-$kernels" 110 --config "$config" --tier train --precision bf16 \
                        --graphs on --compile on --gradient-kernels "$kernels" --repeats 2
                done
            done
            step train-speed-table 15 python3 benchmarks/train_speed_table.py "$out" ;;
        grid-chase)
            learn grid-chase 300 episode_length ;;
        tag-chase)
            learn tag-chase 390 episode_length ;;
        tag-chase-one-epoch)  # tag-chase with one pass over each rollout against tag-chase's four
            # (docs/training.md, "How often each sample is used"), at about equal wall time: twice the
            # iterations, one pass making each shorter
            learn_as tag-chase-one-epoch tag-chase 390 episode_length --epochs 1 --iterations 2400 ;;
        tag-chase-continuous)  # tag-chase with continuous actions (a Gaussian policy): the same bar
            learn tag-chase-continuous 390 episode_length ;;
        tag-evade)
            learn tag-evade 390 return_runner --opponent "tagger=checkpoint:$out/runs/tag-chase"
            step evaluate-tag-evade-random-runners 150 warpsim evaluate "$out/runs/tag-evade" --random runner \
                --no-compare-random --episodes 2000 --num-envs 2000 --json "$out/evaluate-tag-evade-random-runners.json"
            step runners-kept 30 python3 benchmarks/runners_kept.py "$out/evaluate-tag-evade.json" \
                "$out/evaluate-tag-evade-random-runners.json" --out "$out/runners-kept.json" ;;
        self-play)
            learn train-ref 390 return_tagger
            step plot-train-ref-runner 60 warpsim plot "$out/runs/train-ref" --metric return_runner \
                --out "$out/train_ref_runner.png" ;;
        learning)
            "$0" "$out" grid-chase tag-chase tag-evade self-play ;;
        many-runs)  # 16 tag-chase-small runs batched against 16 processes in turn (target: 10x), start-ups included
            step many-runs 520 python3 benchmarks/many_runs.py --config tag-chase-small --runs 16 --iterations 40 \
                --results-dir "$out/many_runs"
            step stacked-networks 60 python3 benchmarks/stacked_networks.py --runs 16 --batch 4096 --hidden 128 \
                --device cuda ;;
        mpe)  # simple_spread against MPE2 (MPE2's default N = 3, and nearest-10 at N = 100 and 1000)
            peer_packages || continue
            step mpe-N3 120 python3 benchmarks/mpe_speed.py --agents 3 --num-envs 1 --num-envs 4096 \
                --num-envs 65536 --results-dir "$out/mpe_speed"
            step mpe-N100 150 python3 benchmarks/mpe_speed.py --agents 100 --neighbours 10 --num-envs 1 \
                --num-envs 1024 --results-dir "$out/mpe_speed"
            step mpe-N1000 180 python3 benchmarks/mpe_speed.py --agents 1000 --neighbours 10 --seconds 10 \
                --num-envs 64 --results-dir "$out/mpe_speed" ;;
        mpe-roles)  # simple_tag, simple_adversary and simple_speaker_listener against MPE2, at MPE2's defaults
            # and simple_tag's nearest-10 at N = 100
            peer_packages || continue
            step mpe-tag 150 python3 benchmarks/mpe_speed.py --scenario simple_tag --agents 4 --num-envs 1 \
                --num-envs 4096 --num-envs 65536 --results-dir "$out/mpe_speed"
            step mpe-tag-N100 150 python3 benchmarks/mpe_speed.py --scenario simple_tag --agents 100 --neighbours 10 \
                --num-envs 1024 --results-dir "$out/mpe_speed"
            step mpe-adversary 150 python3 benchmarks/mpe_speed.py --scenario simple_adversary --agents 3 \
                --num-envs 1 --num-envs 4096 --num-envs 65536 --results-dir "$out/mpe_speed"
            step mpe-speaker-listener 30 python3 benchmarks/mpe_speed.py --scenario simple_speaker_listener \
                --seconds 1 --num-envs 65536 --results-dir "$out/mpe_speed" ;;
        mpe-scale)  # simple_spread's and simple_tag's grid searches: exact at N = 1000 and 4096, and simple_tag's
            # speed at N = 1000 with the 10 nearest (simple_spread's is mpe's mpe-N1000)
            step mpe-grid-tests 150 python3 -m pytest -m gpu -q tests/test_mpe_grids.py
            peer_packages && step mpe-tag-N1000 180 python3 benchmarks/mpe_speed.py --scenario simple_tag --agents 1000 \
                --neighbours 10 --seconds 10 --num-envs 64 --num-envs 256 --results-dir "$out/mpe_speed" ;;
        simple-spread-1k)  # MPE at 2000 x 1000 agents, the 10 nearest observed: trained for at most 270 s (a run
            # the limit stops keeps the checkpoint of its last iteration), then evaluated against random play
            learn simple-spread-1k 270 return_agent ;;
        simple-tag-1k)  # as simple-spread-1k: 750 adversaries learn against 250 good agents at random
            learn simple-tag-1k 270 tags_per_episode ;;
        fused-forward)  # the rollout's networks as one Triton kernel: its GPU tests, then its time against eager's
            step fused-forward-tests 240 python3 -m pytest -m gpu -q -p no:cacheprovider -n 0 \
                tests/test_fused_forward.py tests/test_discounted_scan.py tests/test_compiled.py
            step fused-forward-train-ref 75 python3 benchmarks/fused_forward.py --config train-ref \
                --results-dir "$out/fused_forward"
            step fused-forward-train-ref-128 75 python3 benchmarks/fused_forward.py --config train-ref \
                --hidden-size 128 --results-dir "$out/fused_forward"
            step fused-forward-headline 75 python3 benchmarks/fused_forward.py --config headline \
                --results-dir "$out/fused_forward" ;;
        evaluation-speed)  # 10 tag-small runs evaluated side by side against one alone (target: 2x)
            step evaluation-speed 300 python3 benchmarks/evaluation_speed.py --config tag-small --runs 10 \
                --results-dir "$out/evaluation_speed" ;;
        neighbour-search)
            step neighbour-search 300 python3 benchmarks/neighbour_search.py --results-dir "$out/bench" ;;
        placement)
            step placement-tag-small 200 python3 benchmarks/placement.py --sizes tag-small --results-dir "$out/bench"
            step placement-train-ref 200 python3 benchmarks/placement.py --sizes train-ref --results-dir "$out/bench" ;;
        peers-mpe)  # simple_spread at full observation beside VMAS on CUDA and JaxMARL on the GPU (and MPE2)
            peer_packages || continue
            step peers-mpe-N3 150 python3 benchmarks/mpe_speed.py --agents 3 --num-envs 4096 --num-envs 65536 \
                --peer vmas=python3 --peer jaxmarl=python3 --peer-seconds 40 --results-dir "$out/mpe_speed"
            step peers-mpe-N100 300 python3 benchmarks/mpe_speed.py --agents 100 --num-envs 4096 \
                --peer vmas=python3 --peer jaxmarl=python3 --peer-seconds 60 --results-dir "$out/mpe_speed" ;;
        peers-jaxmarl)  # train-ref's E x N; headline's (N=1000 compiles for minutes) is a stage of its own
            peer_packages && step peers-jaxmarl 420 python3 benchmarks/gpu_peers.py --peer jaxmarl=python3 \
                --config train-ref --max-seconds 60 --timeout 400 --results-dir "$out/bench" ;;
        peers-jaxmarl-headline)
            peer_packages && step peers-jaxmarl-headline 540 python3 benchmarks/gpu_peers.py --peer jaxmarl=python3 \
                --config headline --max-seconds 60 --timeout 520 --results-dir "$out/bench" ;;
        profile)  # the fused step kernel, after a warm-up launch: both grid searches at the headline
            for run in headline:grid headline:grid_tiles train-ref:auto; do
                config=${run%:*} search=${run#*:}
                step "ncu-step-$config-$search" 180 ncu --clock-control none --kernel-name regex:step_environments \
                    --launch-skip 2 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
                    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats \
                    warpsim bench --config "$config" --set "neighbour_search=$search" --steps 5 --repeats 1 \
                    --warmup 1 --no-baseline
            done ;;
        profile-networks)  # Nsight Compute on the networks' kernels of train-ref's first iteration with gradient
            # kernels: the gradients' programs of the second minibatch step (a role's actor's, then its critic's); then
            # from the rollout's last sampling kernels on, the forward kernels and the loss's kernels (a launch's grid
            # tells which). Their occupancy, issue slots and warps' stalls
            for kernels in gradients,fused_trunk_backward,4,2 'networks,regex:fused_actor_critic|categorical_terms,8,12'; do
                IFS=, read -r name pattern skip count <<< "$kernels"
                step "ncu-$name-train-ref" 240 ncu --clock-control none --kernel-name "$pattern" --launch-skip "$skip" \
                    --launch-count "$count" --section SpeedOfLight --section Occupancy --section LaunchStats \
                    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats \
                    --section SchedulerStats warpsim bench --config train-ref --tier train --precision bf16 \
                    --graphs off --compile on --gradient-kernels on --steps 5 --repeats 1 --warmup 1 --no-baseline
            done ;;
        *)
            echo "unknown stage $stage (first, tests, bench, bf16, train-speed, profiles, train-speed-autotune," \
                "gradient-kernels, loss-kernels, loss-kernels-configs, grid-chase, tag-chase, tag-chase-one-epoch, tag-chase-continuous, tag-evade," \
                "self-play, learning," \
                "many-runs, mpe, mpe-roles, mpe-scale," \
                "simple-spread-1k, simple-tag-1k," \
                "fused-forward, evaluation-speed, neighbour-search, placement, peers-mpe, peers-jaxmarl," \
                "peers-jaxmarl-headline, profile, profile-networks)" >&2; exit 2 ;;
    esac
done
cat "$out/summary.txt"
