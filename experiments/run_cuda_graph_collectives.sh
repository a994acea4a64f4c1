#!/usr/bin/env bash
# Run every scenario of experiments/cuda_graph_collectives.py on 2 GPUs of this host, each in
# its own torchrun, each bounded by `timeout`, and collect the outputs in the directory $1:
#   OUTDIR/scenario-<name>.jsonl   one JSON line per rank (stdout of both ranks)
#   OUTDIR/scenario-<name>.log     stderr (progress notes, NCCL/torch errors, tracebacks)
#   OUTDIR/scenario-<name>.rc      torchrun's exit status (124/137: killed by timeout)
#   OUTDIR/summary.txt             one line per scenario
# Usage: experiments/run_cuda_graph_collectives.sh OUTDIR [extra args for the script]
set -u
if [ $# -lt 1 ]; then
    echo "usage: $0 OUTDIR [script args]" >&2
    exit 64
fi
out=$1
shift
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export TORCH_NCCL_BLOCKING_WAIT=1 TORCH_NCCL_ASYNC_ERROR_HANDLING=0
outer=${OUTER_TIMEOUT:-120}

run() {
    local name=$1
    shift
    echo "== scenario $name" >&2
    timeout -k 10 "$outer" "$python" -m torch.distributed.run --nproc-per-node 2 \
        --master-port "${MASTER_PORT:-29533}" \
        "$here/cuda_graph_collectives.py" "$@" \
        >"$out/scenario-$name.jsonl" 2>"$out/scenario-$name.log"
    local rc=$?
    echo "$rc" >"$out/scenario-$name.rc"
    echo "scenario $name: rc=$rc $(grep -c '^{' "$out/scenario-$name.jsonl") result line(s)" \
        | tee -a "$out/summary.txt"
}

: >"$out/summary.txt"
run 1 --scenario 1 "$@"
run 2 --scenario 2 "$@"
run 3 --scenario 3 "$@"
run 3-diff-shapes --scenario 3 --diff-shapes "$@"
run 4 --scenario 4 "$@"
exit 0
