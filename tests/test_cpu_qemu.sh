#!/bin/sh
# test_cpu_qemu.sh - the release binary on older x86-64 CPUs, emulated by qemu-user: a Nehalem (x86-64-v2,
# the portable baseline: no AVX) and a Haswell (x86-64-v3: AVX2 and FMA, no AVX-512). On each, `judgerl
# forward` gives the native loss, logits and gradients, and a 3-step SFT the native per-step losses and final
# weights, within the tolerances below; the kernel level chosen at start-up is the emulated CPU's, a forced
# level (JR_CPU) gives the emulated CPU's bits on this machine, and forcing a level the CPU lacks is refused.
#
# Tolerances (float32 throughout; the baseline level multiplies then adds where the others fuse, so its
# sums round differently). Measured on a Zen 5 against the emulated Nehalem, asserted with margin:
#   loss and logits  |a-b| <= 1e-5 + 1e-5|b|              measured <= 2.1e-6
#   gradients        |a-b| <= 1e-5 max|b| + 1e-5|b|       measured <= 1.8e-6 max|b|
#   SFT step losses  |a-b| <= 1e-6|b|                      measured 2.5e-9|b|
#   SFT weights      |a-b| <= 1e-4 (lr 1e-2 a step)       measured 2.9e-6
# The emulated Haswell gave the native bits on the Zen 5 (AVX-512 and AVX2 levels sum in the same order).
. "$JR_ROOT/tests/lib.sh"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
T="$JR_TMP/cpu"
mkdir -p "$T"

if [ "$(uname -m)" != x86_64 ]; then skip cpu_qemu "an x86-64 check; this machine is $(uname -m)"; exit 0; fi
if ! command -v qemu-x86_64 >/dev/null 2>&1; then
  skip cpu_qemu "qemu-x86_64 is absent (tools/deps.sh test installs qemu-user)"; exit 0
fi
# ASan reserves its shadow memory (terabytes of address space) at start-up; qemu-user backs the guest's
# mappings itself and grows until the machine runs out of memory. The release build runs these checks.
if grep -qa __asan_init "$JR_BIN"; then
  skip cpu_qemu "the sanitizer build: ASan's shadow memory cannot be mapped under qemu-user (the release build runs these checks)"
  exit 0
fi

FIX="$JR_ROOT/tests/fixtures/engine"
IDS="1 5 9 2 7 30 11 4 0 17 3 8"
TGS="5 9 2 7 30 11 4 0 17 3 8 1"
# Haswell without the features qemu's emulator lacks and warns about on every start (none of them is in
# x86-64-v3: process-context ids, the APIC timer, transactional memory)
HASWELL=Haswell,pcid=off,x2apic=off,tsc-deadline=off,hle=off,invpcid=off,rtm=off
# qemu before 7.2 cannot emulate AVX2 (it warns and leaves the features out): the Nehalem alone then
CPUS="Nehalem Haswell"; PAIRS="Nehalem:baseline Haswell:avx2"
if qemu-x86_64 -cpu "$HASWELL" /bin/true 2>&1 | grep -q .; then
  skip cpu_haswell "this qemu cannot emulate a Haswell: $(qemu-x86_64 --version | head -n 1)"
  CPUS=Nehalem; PAIRS=Nehalem:baseline
fi

# emu CPU CMD...: CMD under qemu emulating CPU (Nehalem or Haswell) in a subshell: no core file, at most
# 8 GiB of address space (a runaway emulation must not take a shared machine's memory), and no exec (the
# subshell reports a fatal signal on CMD's stderr, not on the test's output). OPENBLAS_CORETYPE names the
# CPU being emulated: OpenBLAS picks its kernels by that variable when set, and the environment may name
# this machine's (Haswell kernels on an emulated Nehalem stop at the first AVX instruction).
emu() {
  cpu=$1; shift
  case "$cpu" in Haswell) qcpu=$HASWELL ;; *) qcpu=$cpu ;; esac
  (ulimit -c 0; ulimit -v 8388608; OPENBLAS_CORETYPE=$cpu qemu-x86_64 -cpu "$qcpu" "$@")
}
# why RC: a word on a failed exit status
why() {
  case "$1" in
    132) echo "killed by SIGILL: the binary uses an instruction this CPU lacks (built for the build machine's CPU?)" ;;
    *) echo "exit $1" ;;
  esac
}

# cmp_st A B ATOL RTOL GTOL: A's tensors against B's: logits |a-b| <= ATOL + RTOL|b|, any other tensor
# |a-b| <= GTOL max|b| + GTOL|b|; GTOL 0 asks for the same bits everywhere. Prints the worst offender.
cmp_st() {
  "$PY" - "$@" <<'P'
import json, struct, sys
def load(p):
    b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n]); out = {}
    for k, v in h.items():
        if k == '__metadata__': continue
        s, e = v['data_offsets']; d = b[8 + n + s:8 + n + e]
        out[k] = (v['shape'], struct.unpack('<%df' % (len(d) // 4), d))
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
atol, rtol, gtol = map(float, sys.argv[3:6])
if a.keys() != b.keys(): sys.exit('tensors %s, expected %s' % (sorted(a), sorted(b)))
for k in sorted(b):
    (sa, va), (sb, vb) = a[k], b[k]
    if sa != sb: sys.exit('%s: shape %s, expected %s' % (k, sa, sb))
    mx = max(abs(y) for y in vb)
    tol = (lambda y: atol + rtol * abs(y)) if k == 'logits' else (lambda y: gtol * (mx + abs(y)))
    off = [(abs(x - y), i) for i, (x, y) in enumerate(zip(va, vb)) if abs(x - y) > tol(y) or x != x]
    if off:
        d, i = max(off)
        sys.exit('%s: %d of %d off, worst [%d] %.9g vs %.9g' % (k, len(off), len(vb), i, va[i], vb[i]))
P
}
# close A B ATOL RTOL: the numbers A and B within ATOL + RTOL|B|
close() { awk -v a="$1" -v b="$2" -v t="$3" -v r="$4" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b;
  exit !(a != "" && d <= t + r * m) }'; }

# 1. forward on the four engine fixtures (Llama GQA, Qwen2 biases, Qwen3 qk-norm, Qwen3 tied): native, then
# each emulated CPU
for f in llama_gqa qwen2_bias qwen3_qknorm qwen3_tied_bias; do
  "$JR_BIN" forward --model "$FIX/$f" --ids "$IDS" --targets "$TGS" --dump "$T/native_$f.st" >"$T/native_$f.out" 2>"$T/err" ||
    fail "forward_native_$f" "$(cat "$T/err")"
done
for cpu in $CPUS; do
  for f in llama_gqa qwen2_bias qwen3_qknorm qwen3_tied_bias; do
    name=forward_$(echo "$cpu" | tr '[:upper:]' '[:lower:]')_$f
    emu "$cpu" "$JR_BIN" forward --model "$FIX/$f" --ids "$IDS" --targets "$TGS" --dump "$T/$cpu.$f.st" \
      >"$T/$cpu.$f.out" 2>"$T/err"
    rc=$?
    if [ "$rc" -ne 0 ]; then fail "$name" "$(why $rc): $(head -c 300 "$T/err" | tr '\n' ' ')"; continue; fi
    a=$(sed -n 's/^loss //p' "$T/$cpu.$f.out"); b=$(sed -n 's/^loss //p' "$T/native_$f.out")
    if ! close "$a" "$b" 1e-5 1e-5; then fail "$name" "loss $a, native $b"; continue; fi
    if msg=$(cmp_st "$T/$cpu.$f.st" "$T/native_$f.st" 1e-5 1e-5 1e-5 2>&1); then ok "$name"
    else fail "$name" "$msg"; fi
  done
done

# 2. a 3-step SFT of the tests' tiny Llama in float32 (a CPU without bf16 units refuses bfloat16 compute)
tiny_llama_json >"$T/model.json"
cat >"$T/sft.yaml" <<Y
run: {seed: 5}
data: {train: $JR_ROOT/data/sft_demo.jsonl}
model: {init: $T/model.json, compute: float32}
trainer: {steps: 3, batch_size: 8, max_seq_len: 48, lr: 1e-2, warmup_steps: 0, tensorboard: false}
Y
losses() { sed -n 's/.*"step":\([0-9]*\),.*"loss":\([^,]*\),.*/\1 \2/p' "$1"; }
JR_PROGRESS=off "$JR_BIN" train "$T/sft.yaml" run.out_dir="$T/sft_native" >/dev/null 2>"$T/err" ||
  fail sft_native "$(tail -c 300 "$T/err")"
losses "$T/sft_native/metrics.jsonl" >"$T/native.loss"
for cpu in $CPUS; do
  name=sft_$(echo "$cpu" | tr '[:upper:]' '[:lower:]')
  JR_PROGRESS=off emu "$cpu" "$JR_BIN" train "$T/sft.yaml" run.out_dir="$T/sft_$cpu" >/dev/null 2>"$T/err"
  rc=$?
  if [ "$rc" -ne 0 ]; then fail "$name" "$(why $rc): $(tail -c 300 "$T/err" | tr '\n' ' ')"; continue; fi
  losses "$T/sft_$cpu/metrics.jsonl" >"$T/$cpu.loss"
  if [ "$(wc -l <"$T/native.loss")" -eq 3 ] &&
     paste "$T/$cpu.loss" "$T/native.loss" | awk '{ if ($1 != $3) bad = 1; d = $2 - $4; if (d < 0) d = -d;
       if (d > 1e-6 * $4) bad = 1 } END { exit bad }'; then ok "${name}_losses"
  else fail "${name}_losses" "$(paste "$T/$cpu.loss" "$T/native.loss" | tr '\n' ';')"; fi
  d=$(maxdiff "$T/sft_$cpu/model/model.safetensors" "$T/sft_native/model/model.safetensors" 2>&1)
  if awk "BEGIN { exit !($d <= 1e-4) }" 2>/dev/null; then ok "${name}_weights"
  else fail "${name}_weights" "max |a-b| over the final weights = $d"; fi
done

# 3. the kernel level: chosen for the emulated CPU at start-up; JR_CPU forcing a level this CPU has gives the
# emulated CPU's bits natively; forcing one it lacks is refused with the missing features.
if ! "$JR_BIN" version 2>/dev/null | grep -q '^kernel level:'; then
  skip cpu_levels "this judgerl has one kernel level (\`judgerl version\` names none)"; exit 0
fi
for pair in $PAIRS; do
  cpu=${pair%%:*}; level=${pair#*:}
  got=$(emu "$cpu" "$JR_BIN" version 2>"$T/err" | sed -n 's/^kernel level: \([a-z0-9]*\).*/\1/p')
  if [ "$got" = "$level" ]; then ok "level_$level"
  else fail "level_$level" "on an emulated $cpu: kernel level '$got', expected $level $(head -c 200 "$T/err")"; fi
done
# native with JR_CPU=baseline and OpenBLAS's Nehalem kernels = the emulated Nehalem, bit for bit
have=$("$JR_BIN" version | sed -n 's/.*the highest this CPU has: \([a-z0-9]*\).*/\1/p')
for pair in $PAIRS; do
  cpu=${pair%%:*}; level=${pair#*:}
  if [ "$level" = avx2 ] && [ "$have" = baseline ]; then skip "forced_$level" "this CPU has no AVX2"; continue; fi
  bad=""
  for f in llama_gqa qwen3_tied_bias; do
    JR_CPU=$level OPENBLAS_CORETYPE=$cpu "$JR_BIN" forward --model "$FIX/$f" --ids "$IDS" --targets "$TGS" \
      --dump "$T/forced_$level.$f.st" >/dev/null 2>"$T/err" || { bad="$f: $(cat "$T/err")"; break; }
    msg=$(cmp_st "$T/forced_$level.$f.st" "$T/$cpu.$f.st" 0 0 0 2>&1) || { bad="$f: $msg"; break; }
  done
  if [ -z "$bad" ]; then ok "forced_${level}_equals_emulated_$(echo "$cpu" | tr '[:upper:]' '[:lower:]')"
  else fail "forced_${level}_equals_emulated_$(echo "$cpu" | tr '[:upper:]' '[:lower:]')" "$bad"; fi
done
export JR_CPU=avx2
expect_error refuse_avx2_on_nehalem 'JR_CPU=avx2: .*lacks .*avx2' emu Nehalem "$JR_BIN" version
if [ "$CPUS" != Nehalem ]; then
  export JR_CPU=avx512
  expect_error refuse_avx512_on_haswell 'JR_CPU=avx512: .*lacks .*avx512f' emu Haswell "$JR_BIN" version
fi
unset JR_CPU
