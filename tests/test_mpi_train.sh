# test_mpi_train.sh - data-parallel training over MPI (docs/SCALE.md): SFT with 2 ranks equals 1 process at the
# same global batch (fp32 tolerance), the ordered reduction gives the same bits on every transport and every run,
# rank 0 alone writes, kill -9 of a rank leaves a checkpoint the job resumes from exactly; GRPO and RLOO with 2
# ranks equal 1 process; a judge cache file per rank; clear refusals.
. "$JR_ROOT/tests/lib.sh"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3

# refusals that need no launcher: another command started as several ranks
expect_error other_command_refused 'only `judgerl train` runs over MPI' env OMPI_COMM_WORLD_SIZE=2 "$JR_BIN" version

if ! command -v mpirun >/dev/null 2>&1; then
  skip mpi_runs "mpirun is absent (tools/deps.sh test installs openmpi-bin)"; exit 0
fi
if ! "$JR_BIN" version | grep -q '^mpi: compiled in'; then
  skip mpi_runs "this judgerl was built without MPI (libopenmpi-dev was absent at build time)"; exit 0
fi
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# containers often forbid the cross-memory attach of the shared-memory transport: plain copies instead
# Under the ASan build the ranks run without LeakSanitizer: OpenMPI's plugins (dlopen'ed, then closed) leave
# allocations whose stacks name no module, so no suppression can match them. Memory errors and UBSan stay on;
# the one-process run below is leak-checked and takes the same training path.
MPI="env ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1}:detect_leaks=0 mpirun -np 2 --oversubscribe --bind-to none
  --mca btl_vader_single_copy_mechanism none"

tiny_llama_json >"$JR_TMP/model.json"
# float32 matmuls (bf16 roundings would widen the 1-process vs 2-rank gap) and one thread per rank
cat >"$JR_TMP/sft.yaml" <<Y
run: {seed: 5}
data: {train: $JR_ROOT/data/sft_demo.jsonl}
model: {init: $JR_TMP/model.json, compute: float32}
trainer: {steps: 20, batch_size: 4, grad_accum: 2, max_seq_len: 32, lr: 1e-2, warmup_steps: 5, weight_decay: 0.1,
          save_every: 2, keep_checkpoints: 2, tensorboard: true, threads: 1}
Y
losses() { sed -n 's/.*"step":\([0-9]*\),.*"loss":\([^,]*\),.*/\1 \2/p' "$1"; }

# 1. one process, the reference
if "$JR_BIN" train "$JR_TMP/sft.yaml" run.out_dir="$JR_TMP/one" >"$JR_TMP/one.out" 2>"$JR_TMP/one.err"; then ok one_process
else fail one_process "$(tail -c 300 "$JR_TMP/one.err")"; fi
losses "$JR_TMP/one/metrics.jsonl" >"$JR_TMP/one.loss"

# 2. two ranks over shared memory: the same losses and weights within the fp32 tolerance; rank 0 alone writes
if $MPI "$JR_BIN" train "$JR_TMP/sft.yaml" run.out_dir="$JR_TMP/two" >"$JR_TMP/two.out" 2>"$JR_TMP/two.err"; then
  ok two_ranks_run
else fail two_ranks_run "$(tail -c 600 "$JR_TMP/two.err")"; fi
losses "$JR_TMP/two/metrics.jsonl" >"$JR_TMP/two.loss"
# measured here: relative loss gap <= 2e-8 and weight gap ~1e-7 over 20 steps (the gradient sums associate
# differently: (g0 + g1) on two ranks, (0 + g0) + g1 accumulated in one process); asserted with 50x margin
if [ "$(wc -l <"$JR_TMP/two.loss")" -eq 20 ] &&
   paste "$JR_TMP/one.loss" "$JR_TMP/two.loss" | awk '{ if ($1 != $3) bad = 1; d = ($2 - $4) / $2; if (d < 0) d = -d;
     if (d > 1e-6) bad = 1 } END { exit bad }'; then ok two_ranks_losses_equal_one_process
else fail two_ranks_losses_equal_one_process "$(paste "$JR_TMP/one.loss" "$JR_TMP/two.loss" | tail -5)"; fi
d=$(maxdiff "$JR_TMP/one/model/model.safetensors" "$JR_TMP/two/model/model.safetensors" 2>&1)
if awk "BEGIN{exit !($d <= 1e-5)}" 2>/dev/null; then ok two_ranks_weights_equal_one_process
else fail two_ranks_weights_equal_one_process "max |w1 - w2| = $d"; fi
# the losses did move (a run that learns nothing would pass the comparison trivially)
if awk "BEGIN{exit !($(tail -1 "$JR_TMP/two.loss" | cut -d' ' -f2) < $(head -1 "$JR_TMP/two.loss" | cut -d' ' -f2) - 1.0)}"; then
  ok two_ranks_learn
else fail two_ranks_learn "$(head -1 "$JR_TMP/two.loss") -> $(tail -1 "$JR_TMP/two.loss")"; fi
if [ "$(grep -c '^trained steps' "$JR_TMP/two.out")" -eq 1 ] && [ "$(ls "$JR_TMP/two" | grep -c '^events.out.tfevents')" -eq 1 ] &&
   [ "$(grep -c '"step":' "$JR_TMP/two/metrics.jsonl")" -eq 20 ] && grep -q '"comm_frac"' "$JR_TMP/two/metrics.jsonl"; then
  ok rank0_alone_writes
else fail rank0_alone_writes "$(cat "$JR_TMP/two.out"; ls "$JR_TMP/two")"; fi

# LoRA: only the adapters' gradients are summed; the same losses as one process
"$JR_BIN" train "$JR_TMP/sft.yaml" run.out_dir="$JR_TMP/l1" lora.enabled=true lora.rank=4 >/dev/null 2>&1
$MPI "$JR_BIN" train "$JR_TMP/sft.yaml" run.out_dir="$JR_TMP/l2" lora.enabled=true lora.rank=4 >/dev/null 2>"$JR_TMP/l2.err"
losses "$JR_TMP/l1/metrics.jsonl" >"$JR_TMP/l1.loss"; losses "$JR_TMP/l2/metrics.jsonl" >"$JR_TMP/l2.loss"
if [ -f "$JR_TMP/l2/adapter/adapter_model.safetensors" ] && [ "$(wc -l <"$JR_TMP/l2.loss")" -eq 20 ] &&
   paste "$JR_TMP/l1.loss" "$JR_TMP/l2.loss" | awk '{ if ($1 != $3) bad = 1; d = ($2 - $4) / $2; if (d < 0) d = -d;
     if (d > 1e-6) bad = 1 } END { exit bad }'; then ok lora_two_ranks_equal_one_process
else fail lora_two_ranks_equal_one_process "$(tail -c 300 "$JR_TMP/l2.err"; paste "$JR_TMP/l1.loss" "$JR_TMP/l2.loss" | tail -3)"; fi

# 3. the TCP transport (over loopback, present on every machine): the ordered reduction gives the very same bits
if $MPI --mca btl tcp,self --mca btl_tcp_if_include lo "$JR_BIN" train "$JR_TMP/sft.yaml" run.out_dir="$JR_TMP/tcp" >/dev/null 2>"$JR_TMP/tcp.err"; then
  ok tcp_runs
else fail tcp_runs "$(tail -c 600 "$JR_TMP/tcp.err")"; fi
if cmp -s "$JR_TMP/two/model/model.safetensors" "$JR_TMP/tcp/model/model.safetensors" &&
   [ "$(losses "$JR_TMP/tcp/metrics.jsonl")" = "$(cat "$JR_TMP/two.loss")" ]; then ok tcp_bit_identical
else fail tcp_bit_identical "the TCP run differs from the shared-memory run"; fi

# 4. kill -9 of rank 1 after the first checkpoint: the job ends with a message naming the rank, the last
# checkpoint is intact and the resumed run ends bit-identical to the uninterrupted one
$MPI "$JR_BIN" train "$JR_TMP/sft.yaml" run.out_dir="$JR_TMP/k" >/dev/null 2>"$JR_TMP/k.err" &
mp=$!
i=0
while [ ! -f "$JR_TMP/k/checkpoints/latest" ] && [ $i -lt 12000 ]; do sleep 0.01; i=$((i + 1)); done
r1=""
for p in $(pgrep -P $mp); do
  tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -q '^OMPI_COMM_WORLD_RANK=1$' && r1=$p
done
[ -n "$r1" ] && kill -9 "$r1" 2>/dev/null
wait $mp; rc=$?
if [ -z "$r1" ] || [ -d "$JR_TMP/k/model" ]; then skip rank_killed "the run finished before rank 1 was killed"
elif [ "$rc" -ne 0 ] && grep -q 'rank 1 .*exited on signal 9' "$JR_TMP/k.err"; then ok rank_killed
else fail rank_killed "exit $rc: $(tail -c 400 "$JR_TMP/k.err")"; fi
if $MPI "$JR_BIN" train "$JR_TMP/sft.yaml" run.out_dir="$JR_TMP/k" trainer.resume=true >"$JR_TMP/k.out" 2>"$JR_TMP/k2.err" &&
   grep -q '^resumed, steps' "$JR_TMP/k.out"; then ok killed_run_resumes
else fail killed_run_resumes "$(tail -c 600 "$JR_TMP/k2.err")"; fi
if cmp -s "$JR_TMP/two/model/model.safetensors" "$JR_TMP/k/model/model.safetensors" &&
   [ "$(losses "$JR_TMP/k/metrics.jsonl")" = "$(cat "$JR_TMP/two.loss")" ]; then ok resumed_bit_identical
else fail resumed_bit_identical "$(losses "$JR_TMP/k/metrics.jsonl" | diff - "$JR_TMP/two.loss" | head -5)"; fi

# 5. clear refusals under mpirun
$MPI "$JR_BIN" train "$JR_TMP/sft.yaml" run.out_dir="$JR_TMP/e1" trainer.grad_accum=1 >/dev/null 2>"$JR_TMP/e1.err"; rc=$?
if [ "$rc" -ne 0 ] && grep -q 'trainer.grad_accum=1 is below the 2 ranks' "$JR_TMP/e1.err" && [ ! -d "$JR_TMP/e1/checkpoints" ]; then
  ok grad_accum_below_ranks
else fail grad_accum_below_ranks "exit $rc: $(tail -c 400 "$JR_TMP/e1.err")"; fi
$MPI "$JR_BIN" train "$JR_TMP/sft.yaml" run.out_dir="$JR_TMP/e2" trainer.algo=distill >/dev/null 2>"$JR_TMP/e2.err"; rc=$?
if [ "$rc" -ne 0 ] && grep -q 'trainer.algo=distill does not run data-parallel yet' "$JR_TMP/e2.err"; then ok distill_refused
else fail distill_refused "exit $rc: $(tail -c 400 "$JR_TMP/e2.err")"; fi

# 6. GRPO / RLOO: each rank generates and rewards whole groups of its share of the prompts (the same sampling
# seeds as one process), advantages stay on the rank, the loss normalisers and the metrics are the batch's
i=0; while [ $i -lt 32 ]; do printf '{"prompt": "Item %d:", "idx": %d}\n' $i $i; i=$((i + 1)); done >"$JR_TMP/p.jsonl"
cat >"$JR_TMP/grpo.yaml" <<Y
run: {seed: 1}
data: {train: $JR_TMP/p.jsonl}
model: {init: $JR_ROOT/configs/models/tiny-byte.json, compute: float32}
trainer: {algo: grpo, steps: 6, batch_size: 16, lr: 1e-2, lr_schedule: constant, tensorboard: false, threads: 1}
grpo: {num_generations: 8, prompts_per_step: 4, max_prompt_length: 16, max_completion_length: 8}
reward:
  components:
    - {name: starts_lower, fn: format, params: {pattern: "^[a-z]"}}
Y
# step reward mean  reward std  loss  grad_norm  mean length
rl_rows() { sed -n 's/.*"step":\([0-9]*\),.*"reward":\([^,]*\),"reward_std":\([^,]*\),.*"loss":\([^,]*\),.*"completions\/mean_length":\([^,]*\),.*"grad_norm":\([^,}]*\).*/\1 \2 \3 \4 \6 \5/p' "$1"; }
for algo in grpo rloo; do
  "$JR_BIN" train "$JR_TMP/grpo.yaml" trainer.algo=$algo run.out_dir="$JR_TMP/$algo-1" >/dev/null 2>"$JR_TMP/$algo-1.err" &&
  $MPI "$JR_BIN" train "$JR_TMP/grpo.yaml" trainer.algo=$algo run.out_dir="$JR_TMP/$algo-2" >"$JR_TMP/$algo-2.out" 2>"$JR_TMP/$algo-2.err"
  rc=$?
  rl_rows "$JR_TMP/$algo-1/metrics.jsonl" >"$JR_TMP/$algo-1.rows"; rl_rows "$JR_TMP/$algo-2/metrics.jsonl" >"$JR_TMP/$algo-2.rows"
  # the same samples (rewards, std and lengths equal as printed); loss and grad_norm within fp32 rounding (measured
  # gaps ~1e-8 relative; asserted 1e-6); and a run that rewarded something (not all zero)
  if [ "$rc" -eq 0 ] && [ "$(wc -l <"$JR_TMP/$algo-1.rows")" -eq 6 ] && [ "$(wc -l <"$JR_TMP/$algo-2.rows")" -eq 6 ] &&
     paste "$JR_TMP/$algo-1.rows" "$JR_TMP/$algo-2.rows" | awk '
       function rel(a, b) { d = a - b; if (d < 0) d = -d; m = a < 0 ? -a : a; return d <= 1e-6 * m + 1e-9 }
       { if ($1 != $7 || $2 != $8 || $3 != $9 || $6 != $12 || !rel($4, $10) || !rel($5, $11)) bad = 1; if ($2 > 0) any = 1 }
       END { exit bad || !any }'; then ok ${algo}_two_ranks_equal_one_process
  else fail ${algo}_two_ranks_equal_one_process "exit $rc: $(tail -c 300 "$JR_TMP/$algo-2.err"; paste "$JR_TMP/$algo-1.rows" "$JR_TMP/$algo-2.rows" | head -3)"; fi
done
if [ "$(grep -c '"step":' "$JR_TMP/grpo-2/metrics.jsonl")" -eq 6 ] && [ -f "$JR_TMP/grpo-2/model/model.safetensors" ]; then
  ok grpo_rank0_writes
else fail grpo_rank0_writes "$(ls "$JR_TMP/grpo-2")"; fi
$MPI "$JR_BIN" train "$JR_TMP/grpo.yaml" run.out_dir="$JR_TMP/e3" grpo.prompts_per_step=5 grpo.loss_type=bnpo \
  trainer.batch_size=12 >/dev/null 2>"$JR_TMP/e3.err"; rc=$?
if [ "$rc" -ne 0 ] && grep -q "grpo.loss_type=bnpo over 2 ranks: rank 1's samples start at 16" "$JR_TMP/e3.err"; then
  ok bnpo_unaligned_refused
else fail bnpo_unaligned_refused "exit $rc: $(tail -c 400 "$JR_TMP/e3.err")"; fi
$MPI "$JR_BIN" train "$JR_TMP/grpo.yaml" run.out_dir="$JR_TMP/e4" grpo.scale_rewards=batch >/dev/null 2>"$JR_TMP/e4.err"; rc=$?
if [ "$rc" -ne 0 ] && grep -q 'grpo.scale_rewards=batch (batch-wide std) does not run data-parallel yet' "$JR_TMP/e4.err"; then
  ok batch_scaling_refused
else fail batch_scaling_refused "exit $rc: $(tail -c 400 "$JR_TMP/e4.err")"; fi

# 7. a judge reward: every rank calls the judge for its own groups and keeps its own cache file in the run directory
"$PY" "$JR_ROOT/tests/judge_server.py" --log "$JR_TMP/judge.log" >"$JR_TMP/judge.port" 2>/dev/null &
jp=$!
i=0; while ! grep -q '^port' "$JR_TMP/judge.port" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
port=$(sed -n 's/^port //p' "$JR_TMP/judge.port")
cat >"$JR_TMP/judge.yaml" <<Y
run: {seed: 1}
data: {train: $JR_TMP/p.jsonl}
model: {init: $JR_ROOT/configs/models/tiny-byte.json, compute: float32}
trainer: {algo: grpo, steps: 2, batch_size: 16, lr: 1e-2, tensorboard: false, threads: 1}
grpo: {num_generations: 4, prompts_per_step: 4, max_prompt_length: 16, max_completion_length: 8}
judge:
  protocol: pointwise
  endpoints: [{url: "http://127.0.0.1:$port/v1", model: rule-judge}]
  concurrency: 4
reward:
  components: [{name: judge, fn: pointwise}]
Y
if [ -n "$port" ] && $MPI "$JR_BIN" train "$JR_TMP/judge.yaml" run.out_dir="$JR_TMP/j" >/dev/null 2>"$JR_TMP/j.err" &&
   [ -s "$JR_TMP/j/judge_cache.rank-0.sqlite" ] && [ -s "$JR_TMP/j/judge_cache.rank-1.sqlite" ] &&
   [ ! -e "$JR_TMP/j/judge_cache.sqlite" ] && [ "$(grep -c . "$JR_TMP/judge.log")" -ge 8 ]; then
  ok judge_cache_per_rank
else fail judge_cache_per_rank "port '$port': $(tail -c 400 "$JR_TMP/j.err"; ls "$JR_TMP/j" 2>&1)"; fi
# a concurrency below the ranks cannot be shared without exceeding it: one clear error, before any training
if [ -n "$port" ]; then
  $MPI "$JR_BIN" train "$JR_TMP/judge.yaml" judge.concurrency=1 run.out_dir="$JR_TMP/c1" >/dev/null 2>"$JR_TMP/c1.err"; rc=$?
  if [ "$rc" -ne 0 ] && grep -q 'concurrency 1 cannot be shared among 2 MPI ranks' "$JR_TMP/c1.err" && [ ! -d "$JR_TMP/c1/checkpoints" ]; then
    ok concurrency_below_ranks_refused
  else fail concurrency_below_ranks_refused "exit $rc: $(grep judgerl "$JR_TMP/c1.err" | tail -c 400)"; fi
fi
# the unscored share is the whole batch's and stops every rank after rank 0 wrote its checkpoint and reasons
# (rank 1's prompts fail at the judge: 2 of 4 prompts, 50% > max_unscored_frac 0.1 only counted globally)
i=0; while [ $i -lt 32 ]; do
  if [ $((i % 4)) -ge 2 ]; then f=" fault=500*all"; else f=""; fi
  printf '{"prompt": "Item %d:%s", "idx": %d}\n' $i "$f" $i; i=$((i + 1)); done >"$JR_TMP/pf.jsonl"
if [ -n "$port" ]; then
  $MPI "$JR_BIN" train "$JR_TMP/judge.yaml" data.train="$JR_TMP/pf.jsonl" data.shuffle=false judge.max_attempts=1 \
    judge.cache=false run.out_dir="$JR_TMP/u" >/dev/null 2>"$JR_TMP/u.err"; rc=$?
  if [ "$rc" -ne 0 ] && grep -q 'rank 0 of 2: step 1: 8 of 16 samples unscored (50% > judge.max_unscored_frac=0.1' "$JR_TMP/u.err" &&
     [ -s "$JR_TMP/u/unscored.json" ] && [ "$(cat "$JR_TMP/u/checkpoints/latest" 2>/dev/null)" = step-00000000 ]; then
    ok unscored_stop_global
  else fail unscored_stop_global "exit $rc: $(grep judgerl "$JR_TMP/u.err" | tail -c 600; ls "$JR_TMP/u" 2>&1)"; fi
else fail unscored_stop_global "the judge server did not start"; fi
kill $jp 2>/dev/null; wait $jp 2>/dev/null || true
