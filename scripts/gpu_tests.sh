#!/usr/bin/env bash
# Every generated test file on a GPU host, the files in parallel (the tests are mostly Triton
# compilation on the CPU; one pytest process per file, JOBS at a time), each file's log kept and
# a summary printed.  Exit status: 0 when every file passed.
#
#     PYTHONPATH=. bash scripts/gpu_tests.sh [FILE ...]     (default: generated/test_*.py)
#
# Environment: JOBS (default 6: with 12 at once on one H200 some big-shape tests ran out of its
# memory, each process's cache holding up to 17 GB), FILE_TIMEOUT seconds per file (default
# 540), LOGS (a folder, default $OUT or build/gpu-tests): one log per file plus summary.txt
# (its first line: the python, torch and triton versions).
set -uo pipefail
JOBS=${JOBS:-6}
FILE_TIMEOUT=${FILE_TIMEOUT:-540}
LOGS=${LOGS:-${OUT:-build/gpu-tests}}
mkdir -p "$LOGS"
files=("$@")
[ ${#files[@]} -eq 0 ] && files=(generated/test_*.py)
run_one() {
    local f=$1 name
    name=$(basename "$f" .py)
    timeout "$FILE_TIMEOUT" python -m pytest -q -p no:cacheprovider "$f" >"$LOGS/$name.log" 2>&1
    echo "$? $name" >"$LOGS/$name.rc"
}
export -f run_one
export LOGS FILE_TIMEOUT
printf '%s\n' "${files[@]}" | xargs -P "$JOBS" -I{} bash -c 'run_one "$1"' _ {}
status=0
# first line: what the files ran with (a log read later says which Triton it came from)
python -c "import sys, torch, triton; print(f'# python {sys.version.split()[0]}, torch {torch.__version__}, triton {triton.__version__}')" \
    >"$LOGS/summary.txt" 2>/dev/null || echo "# python, torch or triton not importable" >"$LOGS/summary.txt"
for f in "${files[@]}"; do
    name=$(basename "$f" .py)
    rc=$(cut -d' ' -f1 "$LOGS/$name.rc" 2>/dev/null) || rc=none  # none: pytest never ended
    [ "$rc" = 0 ] || status=1
    printf '%-50s rc=%s  %s\n' "$name" "$rc" "$(tail -n 1 "$LOGS/$name.log" 2>/dev/null)" >>"$LOGS/summary.txt"
    grep -E '^(FAILED|ERROR) ' "$LOGS/$name.log" 2>/dev/null | head -n 20 | sed 's/^/    /' >>"$LOGS/summary.txt"
done
cat "$LOGS/summary.txt"
exit $status
