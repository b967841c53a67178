#!/usr/bin/env bash
# Benchmarks, with the settings the README's tables were measured with: ./run.sh [--update] TARGET.
# Results go to runs/ (ignored by git; $NN_CUDA_BENCH_DIR moves it) as JSON (machine, date and
# command included) and a table on the terminal; `python -m nn_cuda.report` then draws the report
# of them into runs/report/. --update writes into results/ instead, the committed records behind
# every table of README.md, docs/ and report/: afterwards `python -m nn_cuda.report --update`
# redraws report/ and `python -m nn_cuda.report --docs` the tables (git diff shows what changed).
# Alone, ./run.sh prints this list.
#
#   ./run.sh gemm       GEMM kernels: correctness everywhere, GFLOP/s and % of cuBLAS on a GPU
#   ./run.sh resources  every kernel's registers, shared memory and occupancy on sm_80 and sm_90
#                       (NVRTC and ptxas from pip: no GPU needed)
#   ./run.sh train      training-step throughput (NumPy; CuPy on a GPU), with a PyTorch loop if installed
#   ./run.sh scaling    data-parallel MPI scaling, p = 1..4 ranks, one BLAS thread per rank
#   ./run.sh adversarial  asynchronous adversarial training vs serial, P = 2..4 ranks (k = P - 1)
#   ./run.sh roofline   the machine's copy bandwidth and vendor GEMM rate (the report's roofline)
#   ./run.sh diff       float32 against the float64 reference as lr, epochs, H and batch vary
#   ./run.sh curves     one default training run with --history (learning curves) and --profile
#   ./run.sh accuracy   the training runs behind the accuracies of README.md and docs/training.md
#   ./run.sh emulated   the emulated backends: one epoch of the sample through the CUDA C kernels on
#                       the CPU per GEMM kernel, and the Numba simulator example
#   ./run.sh lr         the scans behind the default learning rate and initialisation, on mnist-sample (with
#                       a PyTorch loop if installed) and Fashion-MNIST; the course's init; pixels in [0, 1]
#   ./run.sh gpu-check  the acceptance run on a GPU: the CuPy tests, grading modes 1-4, bench gemm
#                       against cuBLAS and the default training run, summed up in gpu_check.json
#   ./run.sh all        all of the above but gpu-check (afterwards `python -m nn_cuda.report` draws runs/report/ from them)
set -euo pipefail
cd "$(dirname "$0")"
usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}
if [ $# -eq 0 ]; then usage; exit 0; fi
OUT=${NN_CUDA_BENCH_DIR:-runs}
if [ "$1" = "--update" ]; then OUT=results; shift; fi
if [ $# -ne 1 ]; then usage >&2; exit 2; fi
PY=${PYTHON:-python}
mkdir -p "$OUT"

have_gpu() {
    "$PY" - <<'PYEOF' 2>/dev/null
import sys
try:
    import cupy
    sys.exit(0 if cupy.cuda.runtime.getDeviceCount() > 0 else 1)
except Exception:
    sys.exit(1)
PYEOF
}

TARGET=${1:-}
STEP=0
step() {  # one command of a target: say which, and how long the target has run, then run it
    STEP=$((STEP + 1))
    echo "run.sh $TARGET, command $STEP ($SECONDS s so far): $*" >&2
    "$@"
}

bench_gemm() {
    if have_gpu; then
        for dtype in float32 float64; do
            step "$PY" -m nn_cuda.bench gemm --backend cupy --dtype "$dtype" --json "$OUT/gemm_cupy_$dtype.json"
        done
        step "$PY" -m nn_cuda.bench gemm --backend numba --json "$OUT/gemm_numba_float32.json"
    else
        echo "no GPU: checking every GEMM kernel in the Numba simulator at small sizes (timing needs a GPU)"
        step "$PY" -m nn_cuda.bench gemm --backend numba-sim --trans NN,NT,TN,TT --json "$OUT/gemm_numba-sim_float32.json"
        step "$PY" -m nn_cuda.bench gemm --backend numba-sim --dtype float64 --json "$OUT/gemm_numba-sim_float64.json"
    fi
}

bench_resources() {
    step "$PY" -m nn_cuda.kernel_resources --json "$OUT/resources.json"
}

bench_train() {
    step "$PY" -m nn_cuda.bench train --backend numpy --json "$OUT/train_numpy.json"
    if have_gpu; then
        step "$PY" -m nn_cuda.bench train --backend cupy --gemm naive,tiled,regblock,cublas --json "$OUT/train_cupy.json"
    fi
}

bench_scaling() {
    step "$PY" -m nn_cuda.bench scaling --overlap both --epochs 2 --rounds 3 --json "$OUT/scaling.json"
    step "$PY" -m nn_cuda.bench scaling --parallel model --epochs 2 --rounds 3 --json "$OUT/scaling_model.json"
}

bench_adversarial() {
    step "$PY" scripts/bench_adversarial.py --ranks 2,3,4 --epochs 5 --json "$OUT/adversarial.json"
}

bench_roofline() {
    step "$PY" scripts/bench_roofline.py --json "$OUT/roofline.json"
}

bench_diff() {
    step "$PY" scripts/bench_diff.py --dataset mnist-sample --json "$OUT/diff.json"
}

bench_curves() {
    local backend=numpy
    if have_gpu; then backend=cupy; fi
    step "$PY" -m nn_cuda.train --backend "$backend" --quiet \
        --history "$OUT/history_$backend.json" --profile "$OUT/profile_$backend.json"
}

bench_accuracy() {
    # The training runs whose accuracies README.md and docs/training.md show (--history records
    # the loss and accuracies of every epoch, the training time and the machine): the default run
    # on the sample and on Fashion-MNIST for init seeds 0-2 (seed 0 is the default), in parallel,
    # and a single epoch.
    train() { local name=$1; shift; step "$PY" -m nn_cuda.train --quiet "$@" --history "$OUT/accuracy_$name.json"; }
    train sample_e1 --dataset mnist-sample -e 1
    train sample_e20 --dataset mnist-sample
    train sample_e20_seed1 --dataset mnist-sample --seed 1
    train sample_e20_seed2 --dataset mnist-sample --seed 2
    step mpirun -n 4 "$PY" -m nn_cuda.train --quiet --dataset mnist-sample --history "$OUT/accuracy_sample_e20_4ranks.json"
    if "$PY" -m nn_cuda.data info fashion-mnist | grep -q "images from"; then
        train fashion_e20 --dataset fashion-mnist
        train fashion_e20_seed1 --dataset fashion-mnist --seed 1
        train fashion_e20_seed2 --dataset fashion-mnist --seed 2
        step mpirun -n 2 "$PY" -m nn_cuda.train --quiet --dataset fashion-mnist --history "$OUT/accuracy_fashion_e20_2ranks.json"
    else
        echo "no Fashion-MNIST files: skipping its runs (python -m nn_cuda.data fetch fashion-mnist)"
    fi
}

bench_emulated() {
    # The emulated backends on the CPU: one epoch of the sample through the CUDA C kernels
    # (--backend cuda-cpu), per GEMM kernel and in the checking mode, against NumPy, the cost of one
    # launch and one course-sized GEMM per kernel (docs/kernels.md); and the Numba simulator example
    # of docs/training.md.
    local gemm
    for gemm in $("$PY" -c "from nn_cuda.kernel_info import KERNEL_GEMMS; print(*KERNEL_GEMMS)"); do
        step "$PY" -m nn_cuda.train --quiet --backend cuda-cpu --gemm "$gemm" --dataset mnist-sample -e 1 \
            --history "$OUT/emulated_cuda-cpu_$gemm.json"
    done
    step env NN_CUDA_CPU_CHECK=1 "$PY" -m nn_cuda.train --quiet --backend cuda-cpu --gemm regblock \
        --dataset mnist-sample -e 1 --history "$OUT/emulated_cuda-cpu_regblock_checked.json"
    step "$PY" -m nn_cuda.train --quiet --backend numpy --dataset mnist-sample -e 1 --eval-limit 100 \
        --history "$OUT/emulated_numpy.json"
    step env NUMBA_ENABLE_CUDASIM=1 "$PY" -m nn_cuda.train --quiet --backend numba --dataset mnist-sample -n 8 -b 32 \
        --max-steps 2 --history "$OUT/emulated_numba-sim.json"
    step "$PY" scripts/bench_launch.py --json "$OUT/launch_cuda-cpu.json"
    step "$PY" -m nn_cuda.bench gemm --backend cuda-cpu --sizes 800x1000x784 --trans NN \
        --json "$OUT/gemm_cuda-cpu_float32.json"
}

bench_lr() {
    local torch=()
    if "$PY" -c "import torch" 2>/dev/null; then torch=(--torch); fi
    local fashion=no
    if "$PY" -m nn_cuda.data info fashion-mnist | grep -q "images from"; then fashion=yes; fi
    # The default run (raw pixels, W1 ~ 0.003 N(0, 1), W2 ~ 0.01 N(0, 1)) as lr varies: the scan
    # behind the default lr, on the sample and on Fashion-MNIST.
    step "$PY" scripts/bench_lr.py --lr 0.005,0.01,0.02,0.05,0.1 --seeds 0,1,2 ${torch[@]+"${torch[@]}"} \
        --json "$OUT/lr_default.json"
    # The course's initialisation (0.01 N(0, 1) for both) on the course's raw pixels.
    step "$PY" scripts/bench_lr.py --init-scale 0.01 0.01 \
        --lr 0.0005,0.001,0.002,0.005,0.01,0.02,0.05,0.1,0.2,0.3,0.5,1.0 --seeds 0,1,2 \
        ${torch[@]+"${torch[@]}"} --json "$OUT/lr_raw.json"
    if [ "$fashion" = yes ]; then
        step "$PY" scripts/bench_lr.py --dataset fashion-mnist --lr 0.01,0.02,0.05 --seeds 0,1,2 \
            --json "$OUT/lr_default_fashion.json"
        step "$PY" scripts/bench_lr.py --dataset fashion-mnist --init-scale 0.01 0.01 --lr 0.01,0.02,0.05 \
            --seeds 0,1,2 --json "$OUT/lr_raw_fashion.json"
    else
        echo "no Fashion-MNIST files: skipping its scans (python -m nn_cuda.data fetch fashion-mnist)"
    fi
    # Pixels in [0, 1] with the course's initialisation (adversarial training's input), and larger
    # constant rates there.
    step "$PY" scripts/bench_lr.py --pixels unit --init-scale 0.01 0.01 \
        --lr 0.05,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0,1.5,2.0 --seeds 0,1,2 ${torch[@]+"${torch[@]}"} \
        --json "$OUT/lr_unit.json"
    step "$PY" scripts/bench_lr.py --pixels unit --init-scale 0.01 0.01 --lr 5,6,7,8,9,10,11 --seeds 0,1,2 \
        --json "$OUT/lr_unit_large.json"
}

bench_gpu_check() {
    step "$PY" scripts/gpu_check.py --out "$OUT"
}

case "$1" in
    gemm) bench_gemm ;;
    resources) bench_resources ;;
    train) bench_train ;;
    scaling) bench_scaling ;;
    adversarial) bench_adversarial ;;
    roofline) bench_roofline ;;
    diff) bench_diff ;;
    curves) bench_curves ;;
    accuracy) bench_accuracy ;;
    emulated) bench_emulated ;;
    lr) bench_lr ;;
    gpu-check) bench_gpu_check ;;
    -h|--help) usage; exit 0 ;;
    all)
        for TARGET in roofline train scaling adversarial accuracy emulated gemm resources diff curves lr; do
            "bench_${TARGET}"
        done ;;
    *) echo "usage: ./run.sh [--update] gemm|train|scaling|adversarial|roofline|diff|curves|accuracy|emulated|lr|resources|gpu-check|all" >&2; exit 2 ;;
esac
