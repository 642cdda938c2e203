#!/usr/bin/env bash
# One prepared run for a lent GPU (issue 52, item 5): the engines on the Go2 and the quadruped at 1,024, 8,192 and
# 65,536 worlds, then the per-step trace. Run from the repository root on the device machine, e.g. through the
# device tool with a timeout that leaves time to rerun:
#
#   bash bench/gpu_session.sh            # results under $OUT (the device tool's folder) or bench/results/gpu-session
#
# Cases in order of what the issue must show, each appended to its results file as it ends, so a run cut short
# keeps what it measured: the Go2 at 1,024 and 8,192 worlds (jaxmor, MJX, MJWarp, MJX and MJWarp at RL users'
# settings), then the quadruped there, then both at 65,536, then bench.tools.gpu_trace at 8,192 (launches per
# step from a profiler trace). MJWarp runs only where `import mujoco_warp` works on the machine; the script says
# so otherwise. Three timed calls per case after the warm-up, 100 steps a call, one vmap over all worlds.
set -u
out=${OUT:-bench/results/gpu-session}
mkdir -p "$out"
stamp=$(date -u +%Y-%m-%d)
engines=jaxmor,mjx
if python -c "import mujoco_warp, warp" 2>/dev/null; then
    engines=jaxmor,mjx,mjwarp
else
    echo "gpu_session: no mujoco_warp on this machine: MJWarp is not run" | tee "$out/mjwarp-missing.txt"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/gpu.csv" 2>&1 || true
common=(--engines "$engines" --jaxmor-chunk 65536 --no-jaxmor-vmap --mjx-max-worlds 0 --repeats 3 --min-repeats 3
    --no-readme --case-timeout 240)
run() {  # scenario, sizes
    local extra=()
    [ "$1" = quadruped ] && extra=(--grad-worlds 0)
    echo "== $1 at $2 worlds ($(date -u +%T))"
    timeout 900 python -m bench "$1" --sizes "$2" "${common[@]}" "${extra[@]}" --out "$out/gpu-$1-$stamp.jsonl"
}
run go2 1024,8192
run quadruped 1024,8192
run go2 65536
run quadruped 65536
echo "== trace ($(date -u +%T))"
timeout 300 python -m bench.tools.gpu_trace --sizes 8192 --out "$out"
echo "== done ($(date -u +%T))"
