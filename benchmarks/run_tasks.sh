#!/usr/bin/env bash
# Run the benchmark task by task (each with its own time limit, so one slow
# tuning run cannot take the others with it) and gather the tables.
# usage: [IMPLS=ntsym,triton,...] [BENCH_ARGS=--precompile] benchmarks/run_tasks.sh OUT task:seconds [task:seconds ...]
set -u
out=$1; shift
mkdir -p "$out"
for spec in "$@"; do
  task=${spec%%:*}; limit=${spec##*:}
  echo "=== $task (limit ${limit}s)"
  timeout "$limit" python3 -m benchmarks.bench --tasks "$task" ${IMPLS:+--impls "$IMPLS"} ${BENCH_ARGS:-} --out "$out/$task" > "$out/$task.log" 2>&1
  echo "exit $?"
  if [ -f "$out/$task/results.md" ]; then sed -n '/^|/p' "$out/$task/results.md"; else tail -5 "$out/$task.log"; fi
done
cat "$out"/*/results.json > "$out/all_results.json" 2>/dev/null || true
