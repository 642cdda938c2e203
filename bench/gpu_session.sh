#!/usr/bin/env bash
# The prepared run for a lent GPU (issue 52, item 5), in parts that each fit one device call (at most 10 minutes;
# a session has 15 minutes of device time in all). Run from the repository root on the device machine:
#
#   bash bench/gpu_session.sh 1   # the Go2 at 1,024 and 8,192 worlds: what the issue must show first (~6-8 min)
#   bash bench/gpu_session.sh 2   # the quadruped at 1,024 and 8,192 worlds
#   bash bench/gpu_session.sh 3   # both at 65,536 worlds, then bench.tools.gpu_trace at 8,192
#
# Results go under $OUT (the device tool's folder) or bench/results/gpu-session. Every case is appended to its
# results file as it ends, so a part cut short keeps what it measured. The engines: jaxmor, MJX and, where
# `import mujoco_warp` works on the machine, MJWarp, each at the file's settings and like for like (only the
# Go2's feet colliding, Playground's solver iterations: bench/mujoco_settings.py). Three timed calls per case
# after the warm-up, 100 steps a call, one vmap over all the worlds.
set -u
part=${1:?usage: bash bench/gpu_session.sh 1|2|3}
out=${OUT:-bench/results/gpu-session}
mkdir -p "$out"
stamp=$(date -u +%Y-%m-%d)
engines=jaxmor,mjx
if python -c "import mujoco_warp, warp" 2>/dev/null; then
    engines=jaxmor,mjx,mjwarp
else
    echo "gpu_session: no mujoco_warp on this machine: MJWarp is not run" | tee -a "$out/mjwarp-missing.txt"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/gpu-$part.csv" 2>&1 || true
common=(--engines "$engines" --jaxmor-chunk 65536 --no-jaxmor-vmap --no-jaxmor-cores --mjx-max-worlds 0 --repeats 3 --min-repeats 3
    --no-readme --case-timeout 200)
run() {  # scenario, sizes, seconds
    local extra=()
    [ "$1" = quadruped ] && extra=(--grad-worlds 0)
    echo "== $1 at $2 worlds ($(date -u +%T))"
    timeout "$3" python -m bench "$1" --sizes "$2" "${common[@]}" "${extra[@]}" --out "$out/gpu-$1-$stamp.jsonl"
}
case "$part" in
    1) run go2 1024,8192 540 ;;
    2) run quadruped 1024,8192 540 ;;
    3) run go2 65536 240; run quadruped 65536 180; timeout 120 python -m bench.tools.gpu_trace --sizes 8192 --out "$out" ;;
    *) echo "part must be 1, 2 or 3" >&2; exit 2 ;;
esac
echo "== part $part done ($(date -u +%T))"
