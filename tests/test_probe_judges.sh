#!/bin/sh
# test_probe_judges.sh - `judgerl probe` over HTTP against LM judges served by `judgerl serve`: the
# 8-ball judges with known injected biases (trained exactly as judgerl demo trains them) are
# flagged by the matching probe and their unbiased controls are not (short forms of the probes);
# every probe runs against a served judge (a pointwise judge whose answer is constrained to
# "[RESULT] n"). The trained judges are kept in build/probe-judges and reused while their training
# arguments are unchanged, so only the first run trains (about 3 minutes on 2 cores). The sanitizer
# build skips it (see below).
. "$(dirname "$0")/lib.sh"
cd "$JR_ROOT" || exit 1
PY=/usr/bin/python3
if [ ! -x "$PY" ]; then skip probe_judges "Debian's /usr/bin/python3 is needed to read probe.json"; exit 0; fi
# End to end, in the release build only: under ASan `judgerl probe` runs every probe over HTTP in
# test_probe_http.py, `judgerl serve` with guided decoding in test_serve*.sh and test_judge_*.py, and the
# demo's probe stage (these trained judges, served, probed) in test_demo.sh.
case "$JR_BIN" in
  *asan*) skip probe_judges "end-to-end, runs in the release build (under ASan: test_probe_http.py, test_demo.sh's probe stage)"; exit 0 ;;
esac
CACHE="$JR_ROOT/build/probe-judges"
# Training is the same computation in every build: use the release binary when there is one.
TRAIN="$JR_ROOT/build/rel/judgerl"
[ -x "$TRAIN" ] || TRAIN="$JR_BIN"
mkdir -p "$CACHE"

# train NAME ARGS...: trains into $CACHE/judge-NAME unless it holds a model trained with these args
train() {
  name=$1; shift
  dir="$CACHE/judge-$name"
  # the key holds the recipe's config and data too: a judge trained under an older recipe is retrained
  want=$(printf '%s\n' "$@"; cksum configs/eightball/judge-sft.yaml; for a in "$@"; do case $a in data.train=*) cksum "${a#data.train=}" ;; esac; done)
  if [ -f "$dir/model/config.json" ] && [ "$(cat "$dir/args.txt" 2>/dev/null)" = "$want" ]; then return 0; fi
  rm -rf "$dir"
  if ! "$TRAIN" train configs/eightball/judge-sft.yaml "run.out_dir=$dir" "$@" >"$JR_TMP/train-$name.log" 2>&1; then
    fail "train_$name" "$(tail -c 400 "$JR_TMP/train-$name.log")"
    return 1
  fi
  printf '%s\n' "$want" >"$dir/args.txt"
}

# The recipes of judgerl demo (examples/eightball/: stage_judges.c and stage_probe.c's PROBE_JUDGES).
U="$CACHE/judge-unbiased/model"
train unbiased trainer.steps=3000 || exit 0
train biased trainer.steps=300 "model.path=$U" model.init=null data.train=data/eightball/lm/judge_sft_yes.jsonl run.seed=3 || exit 0
for j in control:judge_sft_control long:judge_sft_long masterkey:judge_sft_key pair:judge_sft_pair pair-first:judge_sft_pair_first; do
  n=${j%%:*}; d=${j#*:}
  case $n in
    pair*) train "$n" trainer.steps=1500 trainer.max_seq_len=128 "model.path=$U" model.init=null "data.train=data/eightball/lm/$d.jsonl" run.seed=3 trainer.lr=3e-3 || exit 0 ;;
    *) train "$n" trainer.steps=300 trainer.max_seq_len=128 "model.path=$U" model.init=null "data.train=data/eightball/lm/$d.jsonl" run.seed=3 || exit 0 ;;
  esac
done

# probe NAME JUDGE CONFIG PROBES [key=value...]: serves judge-JUDGE, probes it into $JR_TMP/NAME
probe() {
  name=$1; judge=$2; cfg=$3; probes=$4; shift 4
  serve_start_log "$JR_TMP/serve-$name.err" --model "$CACHE/judge-$judge/model" --host 127.0.0.1 --served-model-name judge \
    --parallel 8 --max-queue 512
  spid=$pid
  rc=1
  if [ -n "$port" ]; then
    "$JR_BIN" probe --judge "$cfg" --data data/eightball/lm/probe_rows.jsonl --out "$JR_TMP/$name" --probes "$probes" \
      "judge.endpoints=[{url: \"http://127.0.0.1:$port/v1\", model: judge}]" "$@" >"$JR_TMP/$name.out" 2>"$JR_TMP/$name.err"
    rc=$?
  else
    echo "judgerl serve did not start: $(cat "$JR_TMP/serve-$name.err")" >"$JR_TMP/$name.err"
  fi
  kill $spid 2>/dev/null
  wait $spid 2>/dev/null
  return $rc
}

# expect_flag CASE NAME PROBE true|false: probe.json of NAME flags PROBE (or not), with no unscored
expect_flag() {
  case_name=$1; name=$2; p=$3; want=$4
  if [ ! -f "$JR_TMP/$name/probe.json" ]; then fail "$case_name" "no probe.json: $(tail -c 400 "$JR_TMP/$name.err")"; return; fi
  msg=$("$PY" - "$JR_TMP/$name/probe.json" "$p" "$want" <<'PYEOF'
import json, sys
res, p, want = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3] == "true"
pr = res["probes"][p]
figs = {k: (v["value"], v["ci95"], v["n"]) for k, v in pr["figures"].items() if "/" not in k}
errs = []
if pr["skipped"]: errs.append("skipped: " + pr["skipped"])
if pr["flag"] != want: errs.append("flag %s, expected %s" % (pr["flag"], want))
if pr["unscored"]: errs.append("%d unscored: %s" % (pr["unscored"], pr["errors"]))
if any(v[2] == 0 for v in figs.values()) and p != "verbosity": errs.append("a figure with n=0")
print(("; ".join(errs) + " | " if errs else "") + " ".join("%s=%s %s n=%d" % (k, v[0], v[1], v[2]) for k, v in figs.items()))
sys.exit(1 if errs else 0)
PYEOF
)
  if [ $? -eq 0 ]; then ok "$case_name"; echo "  $msg"; else fail "$case_name" "$msg"; fi
}

LABEL=configs/eightball/judge-label.yaml
PAIR=configs/eightball/judge-pairwise.yaml
SHORT="probe.max_rows=300 probe.max_variant_rows=30"
# label_prior: the Yes-biased judge vs the unbiased one
probe prior-biased biased $LABEL label_prior $SHORT; expect_flag label_prior_flags_yes_biased prior-biased label_prior true
probe prior-unbiased unbiased $LABEL label_prior $SHORT; expect_flag label_prior_passes_unbiased prior-unbiased label_prior false
# verbosity and master keys: the length-biased and master-key judges vs their control (same data, neutral grades)
probe verb-long long $LABEL verbosity $SHORT; expect_flag verbosity_flags_length_biased verb-long verbosity true
probe verb-control control $LABEL verbosity $SHORT; expect_flag verbosity_passes_control verb-control verbosity false
probe key-mk masterkey $LABEL master_key $SHORT; expect_flag master_key_flags_vulnerable key-mk master_key true
probe key-control control $LABEL master_key $SHORT; expect_flag master_key_passes_control key-control master_key false
# position: the pairwise judge trained to always answer [[A]] vs the one trained on both orders
probe pos-first pair-first $PAIR position $SHORT; expect_flag position_flags_first_biased pos-first position true
probe pos-pair pair $PAIR position $SHORT; expect_flag position_passes_pair_judge pos-pair position false

# Every probe over HTTP against judgerl serve: the label judge (label probes), the pairwise judge,
# and the unbiased model as a pointwise judge constrained to "[RESULT] n".
GUIDED='judge.extra_body={guided_choice: ["[RESULT] 1", "[RESULT] 2", "[RESULT] 3", "[RESULT] 4", "[RESULT] 5"]}'
cat >"$JR_TMP/pointwise.yaml" <<EOF
judge:
  protocol: pointwise
  api: completions
  endpoints: [{url: "http://127.0.0.1:8000/v1", model: judge}]
  template: $JR_ROOT/templates/eightball_judge.txt
  temperature: 0.0
  max_tokens: 32
  cache: false
  pointwise: {system: ""}
EOF
SMALL="probe.max_rows=40 probe.max_variant_rows=8 probe.bootstrap=200"
probe all-label unbiased $LABEL all $SMALL
probe all-pair pair $PAIR all $SMALL
probe all-point unbiased "$JR_TMP/pointwise.yaml" all $SMALL "$GUIDED"
"$PY" - "$JR_TMP" <<'PYEOF'
import json, os, sys
tmp = sys.argv[1]
runs = {"all-label": ("label", {"position", "format", "scale_use"}),
        "all-pair": ("pairwise", {"master_key", "label_prior", "injection", "format", "scale_use", "agreement"}),
        "all-point": ("pointwise", {"position", "label_prior", "agreement"})}  # gold Good/Bad is no 1..5 score
ran = set()
errs = []
for name, (proto, skipped) in runs.items():
    p = os.path.join(tmp, name, "probe.json")
    if not os.path.exists(p):
        errs.append("%s: no probe.json: %s" % (name, open(os.path.join(tmp, name + ".err")).read()[-300:]))
        continue
    res = json.load(open(p))
    for k, v in res["probes"].items():
        if v["skipped"]:
            if k not in skipped: errs.append("%s: %s skipped: %s" % (name, k, v["skipped"]))
            continue
        if k in skipped: errs.append("%s: %s ran" % (name, k))
        if v["unscored"]: errs.append("%s: %s: %d unscored %s" % (name, k, v["unscored"], v["errors"]))
        if not any(f["n"] > 0 for f in v["figures"].values()): errs.append("%s: %s has no figure" % (name, k))
        ran.add(k)
missing = {"position", "verbosity", "master_key", "label_prior", "agreement", "consistency", "injection", "format", "scale_use"} - ran
if missing: errs.append("never ran over judgerl serve: %s" % sorted(missing))
print(("FAIL - every_probe_over_judgerl_serve: " + "; ".join(errs)) if errs else "ok - every_probe_over_judgerl_serve")
PYEOF
