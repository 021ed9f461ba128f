"""test_wf_real_config.py - the documented real-setup config (configs/seed2_workflow.yaml) runs one
step: the policy a random-weight Qwen2 HF directory (model.path, LoRA), the executor AND the judge a
random-weight model served by `judgerl serve` (an OpenAI-compatible endpoint, as vLLM or llama.cpp
would be), constrained by the server's guided_regex so its replies have the shape the operators and
the reference protocol read. Only sizes and endpoints are overridden."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jrtest import BIN, ROOT, TMP, report, exit_code, start_server, write  # noqa: E402



def main():
    d = os.path.join(TMP, "wf_real")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    # a random-weight Qwen2 directory for the policy: one SFT step from model.init writes it
    write(os.path.join(d, "sft.jsonl"), '{"prompt": "a", "completion": "b"}\n')
    p = subprocess.run([BIN, "train", os.path.join(ROOT, "configs/sft_demo.yaml"), "model.init=" + os.path.join(ROOT, "configs/models/tiny-byte.json"),
                        "data.train=" + os.path.join(d, "sft.jsonl"), "run.out_dir=" + os.path.join(d, "policy"), "trainer.steps=1",
                        "trainer.batch_size=1", "trainer.eval_every=0", "data.validation=null", "data.validation_frac=0"],
                       capture_output=True, text=True, timeout=300)
    policy = os.path.join(d, "policy", "model")
    with open(os.path.join(policy, "config.json")) if os.path.exists(os.path.join(policy, "config.json")) else open(os.devnull) as f:
        arch = (json.loads(f.read() or "{}").get("architectures") or [""])[0]
    report("a random-weight Qwen2 policy directory", p.returncode == 0 and arch == "Qwen2ForCausalLM", p.stdout + p.stderr)
    err_path = os.path.join(d, "serve.err")
    # the served model: the tiny random fixture with a context long enough for the judge's prompt
    served = os.path.join(d, "served")
    shutil.copytree(os.path.join(ROOT, "tests/fixtures/serve/tiny"), served)
    with open(os.path.join(served, "config.json")) as f:
        c = json.load(f)
    c["max_position_embeddings"] = 4096
    write(os.path.join(served, "config.json"), json.dumps(c))
    srv, port = start_server([BIN, "serve", "--model", served, "--port", "0", "--parallel", "4",
                              "--served-model-name", "executor"], err_path, "ready: ")
    try:
        if not port:
            report("judgerl serve starts", False, open(err_path).read())
            return 1
        url = "http://127.0.0.1:%d/v1" % port
        with open(os.path.join(ROOT, "configs/seed2_executor.yaml")) as f:
            ex = f.read()
        ex = ex.replace("http://127.0.0.1:8001/v1", url).replace("cache: runs/seed2-workflow/executor-cache.sqlite", "cache: false")
        # one statement and the return: short enough for the tiny policy's 256 positions
        ex = ex.replace("  max_statements: 8\n", "  max_statements: 2\n")
        ex = ex.replace("  max_tokens: 512\n", "  max_tokens: 16\n").replace("templates: templates/workflow", "templates: %s/templates/workflow" % ROOT)
        ex = ex.replace("  concurrency: 16\n", "  concurrency: 16\n  extra_body: {guided_regex: \"<answer>[0-9]{1,3}</answer>\"}\n")
        write(os.path.join(d, "seed2_executor.yaml"), ex)
        with open(os.path.join(ROOT, "configs/seed2_reward.yaml")) as f:
            rw = f.read()
        rw = rw.replace("http://127.0.0.1:8000/v1", url).replace("{url: \"%s\", model: judge}" % url, "{url: \"%s\", model: executor}" % url)
        rw = rw.replace("  max_tokens: 512\n", "  max_tokens: 24\n  cache: false\n  extra_body: {guided_regex: \"VERDICT: (CORRECT|INCORRECT)\"}\n")
        write(os.path.join(d, "seed2_reward.yaml"), rw)
        shutil.copy(os.path.join(ROOT, "configs/seed2_workflow.yaml"), os.path.join(d, "seed2_workflow.yaml"))
        rows = []
        for dom in ("math", "code", "qa"):
            q = subprocess.run([BIN, "workflow", "tasks", "--domain", dom, "--n", "4", "--seed", "1"], capture_output=True, text=True, check=True)
            rows += [json.loads(l) for l in q.stdout.splitlines() if l.strip()]
        write(os.path.join(d, "train.jsonl"), "".join(json.dumps(r) + "\n" for r in rows))
        held = [r for r in rows if r["type"] != "code"][:2]
        write(os.path.join(d, "heldout.jsonl"), "".join(json.dumps(r) + "\n" for r in held))
        run = os.path.join(d, "run")
        p = subprocess.run([BIN, "workflow", "train", os.path.join(d, "seed2_workflow.yaml"), "model.path=" + policy,
                            "run.out_dir=" + run, "data.train=" + os.path.join(d, "train.jsonl"),
                            "data.validation=" + os.path.join(d, "heldout.jsonl"), "trainer.steps=1", "trainer.eval_every=1",
                            "trainer.batch_size=12", "grpo.prompts_per_step=3", "grpo.num_generations=4", "grpo.max_prompt_length=48",
                            "grpo.max_completion_length=200", "wftrain.layer1_template=" + os.path.join(ROOT, "templates/workflow_layer1.txt"),
                            "wfenv.parallel=3"], capture_output=True, text=True, timeout=900)
        report("one step of configs/seed2_workflow.yaml", p.returncode == 0 and "trained steps 1..1" in p.stdout, p.stdout + p.stderr)
        m = []
        if os.path.exists(os.path.join(run, "metrics.jsonl")):
            with open(os.path.join(run, "metrics.jsonl")) as f:
                m = [json.loads(l) for l in f if l.strip()]
        r = m[-1] if m else {}
        report("its metrics: 3 prompts x 4 workflows, the held-out gold accuracy, adapters written",
               r.get("train/overall/n") == 12 and "eval/gold_acc" in r and os.path.isdir(os.path.join(run, "adapter")), r)
        # workflows the policy finished within its length ran on the served executor; its replies were
        # graded (a short-circuit or the served judge's verdict: nothing unscored)
        report("the executor and the judge were the served model",
               r.get("train/overall/executor_tokens", 0) > 0 and r.get("train/overall/answer_rate", 0) > 0
               and r.get("train/overall/unscored", 1) == 0, r)
    finally:
        srv.terminate()
        srv.wait()
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
