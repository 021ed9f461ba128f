"""test_reward_shims.py - contrib/python's verl, TRL and OpenRLHF shims against a real
`judgerl serve-reward` (loopback) and the fault-injecting judge, each called exactly the way its
engine calls it. The call shapes come from the engines' own code:

  OpenRLHF  openrlhf/utils/agent.py @ ed62d0e20dea08397251eba5e010ee9dabc4d048 (OpenRLHF/OpenRLHF):
            SingleTurnAgentExecutor loads reward_func with importlib.util.spec_from_file_location
            and calls asyncio.to_thread(self.reward_func, [query], [prompt], [label]); a raised
            exception is logged and the sample gets no reward.
  verl      verl/workers/reward_manager/naive.py @ 3ecef438c4004d911832bbad89539ff4f1fd742a
            (volcengine/verl): compute_score(data_source=, solution_str=, ground_truth=, extra_info=);
            verl/workers/reward_manager/batch.py (same commit): compute_score(data_sources=,
            solution_strs=, ground_truths=, extra_infos=, **reward_kwargs);
            verl/experimental/reward_loop/reward_manager/naive.py @ 6bc3e1232bd16b480c54cba3db6444e293adae1f:
            `await self.compute_score(...)` when inspect.iscoroutinefunction; a dict's "score" is the reward.
  TRL       trl/trainer/grpo_trainer.py @ c1f6f24e1bfa62b86095d3adaab00c0dd6bf1b51 (huggingface/trl):
            _calculate_rewards calls reward_func(prompts=, completions=, completion_ids=, **reward_kwargs)
            with the dataset columns plus trainer_state, log_extra, log_metric; async functions are
            awaited with asyncio.gather; None becomes NaN.
  slime     slime/rollout/rm_hub/__init__.py @ 4c058f65c3d296db719f6cee9e7e67b2078b3e9c (THUDM/slime):
            remote_rm posts {"prompt", "response", "label"} and returns resp.json() (no shim: the
            service's /slime answers the number itself).
"""
import asyncio
import importlib.util
import inspect
import json
import math
import os
import sys
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import judge_server  # noqa: E402
import test_reward_service as base  # noqa: E402
from jrtest import ROOT, exit_code, report  # noqa: E402
from test_reward_service import Service, cfg_copy, judge_overrides  # noqa: E402

SHIMS = os.path.join(ROOT, "contrib", "python")


def load(path, module_name):
    """Loads a file the way OpenRLHF and verl do (importlib.util.spec_from_file_location)."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def raises(fn, *a, **k):
    try:
        fn(*a, **k)
    except Exception as e:  # noqa: BLE001 - the engines catch everything too
        return e
    return None


def test_openrlhf(mod):
    reward_func = mod.reward_func
    prompt = "<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n"
    query = prompt + "It is 42. score=5<|im_end|>"

    async def engine_call(q, p, lab):  # SingleTurnAgentExecutor._fetch_rewards_via_func, batch_size 1
        return await asyncio.gather(asyncio.to_thread(reward_func, [q], [p], [lab]))
    info = asyncio.run(engine_call(query, prompt, "42"))[0]
    report("openrlhf_reward_func_single", info == {"rewards": [5.0], "scores": [1.0], "extra_logs": {"quality": [5.0]}}, str(info))
    # older OpenRLHF: the whole batch in one call
    qs = ["p%d r%d score=%d" % (i, i, 1 + i % 5) for i in range(5)]
    info = reward_func(qs, ["p%d" % i for i in range(5)], [""] * 5)
    report("openrlhf_reward_func_batch", info["rewards"] == [1.0, 2.0, 3.0, 4.0, 5.0] and len(info["scores"]) == 5, str(info))
    e = raises(reward_func, [prompt + "bad fault=400*all"], [prompt], ["x"])
    report("openrlhf_reward_func_unscored_raises", e is not None and "unscored" in str(e) and "HTTP 400" in str(e), repr(e))


def test_verl(mod):
    # naive manager: sync, keyword arguments
    s = mod.compute_score(data_source="gsm8k", solution_str="The answer is 4. score=4", ground_truth="4",
                          extra_info={"question": "2+2?", "index": 3})
    report("verl_compute_score_sync", s["score"] == 4.0 and s["quality"] == 4.0 and s["judgerl_unscored"] == 0.0, str(s))
    # reward loop: awaited when the function is a coroutine function
    fn = mod.compute_score_async
    ok_async = inspect.iscoroutinefunction(fn)
    s = asyncio.run(fn(data_source="gsm8k", solution_str="async answer score=2", ground_truth="2", extra_info={}))
    report("verl_compute_score_async", ok_async and s["score"] == 2.0, str(s))
    # batch manager: one call per batch, plural keyword arguments + reward_kwargs
    extras = [{"rollout_reward_scores": {}} for _ in range(3)]
    out = mod.compute_score_batch(data_sources=["a", "b", "c"], solution_strs=["b1 score=1", "b2 score=3", "b3 score=5"],
                                  ground_truths=["1", "3", "5"], extra_infos=extras)
    report("verl_compute_score_batch", [o["score"] for o in out] == [1.0, 3.0, 5.0] and all("quality" in o for o in out), str(out))
    e = raises(mod.compute_score, data_source="x", solution_str="verl bad fault=400*all", ground_truth="", extra_info=None)
    report("verl_unscored_raises_not_zero", e is not None and type(e).__name__ == "Unscored", repr(e))
    os.environ["JUDGERL_UNSCORED_VALUE"] = "-1"
    try:
        s = mod.compute_score(data_source="x", solution_str="verl bad fault=400*all", ground_truth="", extra_info=None)
    finally:
        del os.environ["JUDGERL_UNSCORED_VALUE"]
    report("verl_unscored_value_opt_in", s["score"] == -1.0 and s["judgerl_unscored"] == 1.0 and math.isnan(s["quality"]), str(s))


def test_trl(mod):
    metrics = {}

    class State:  # stands in for the TrainerState object TRL passes (the shim ignores it)
        global_step = 7
    kw = {"trainer_state": State(), "log_extra": lambda *a, **k: None, "log_metric": lambda n, v: metrics.setdefault(n, v)}
    prompts = ["Q1", "Q2", "Q3"]
    completions = ["c1 score=3", "c2 fault=400*all", "c3 score=5"]
    cols = {"solution": ["s1", "s2", "s3"], "difficulty": [1, 2, 3]}
    out = mod.judgerl_reward(prompts=prompts, completions=completions, completion_ids=[[1], [2], [3]], **cols, **kw)
    as_trl = [r if r is not None else math.nan for r in out]  # what _calculate_rewards does with None
    report("trl_reward_strings_none_for_unscored", out == [3.0, None, 5.0] and math.isnan(as_trl[1])
           and abs(metrics.get("judgerl/unscored_frac", 0) - 1 / 3) < 1e-9, "%s %s" % (out, metrics))
    conv_p = [[{"role": "user", "content": "Say hi"}]]
    conv_c = [[{"role": "assistant", "content": "hi there score=4"}]]
    fn = mod.judgerl_reward_async

    async def gather():  # TRL awaits async reward functions with asyncio.gather
        return await asyncio.gather(fn(prompts=conv_p, completions=conv_c, completion_ids=[[5]], **kw))
    out = asyncio.run(gather())[0]
    report("trl_reward_conversational_async", inspect.iscoroutinefunction(fn) and out == [4.0], str(out))


def test_slime(svc):
    # slime's remote_rm: POST the sample's prompt/response/label to --rm-url, the JSON body is the reward
    req = urllib.request.Request(svc.url("/slime"), data=json.dumps({"prompt": "p", "response": "slime score=3", "label": "x"}).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=60) as r:
        v = json.loads(r.read())
    report("slime_remote_rm_body_is_the_reward", v == 3.0, repr(v))


def main():
    jsrv, jport = judge_server.start(stall=2.0)
    svc = None
    try:
        svc = Service(cfg_copy("shims"), judge_overrides(jport), args=["--api-key-env", "SHIM_KEY"], env={"SHIM_KEY": "shim-key"},
                      name="shims")
        os.environ["JUDGERL_REWARD_URL"] = "http://127.0.0.1:%d" % svc.port
        os.environ["JUDGERL_REWARD_API_KEY"] = "shim-key"
        os.environ["JUDGERL_REWARD_RETRIES"] = "2"
        test_openrlhf(load(os.path.join(SHIMS, "openrlhf_reward_func.py"), "reward_func"))
        test_verl(load(os.path.join(SHIMS, "verl_reward.py"), "custom_module"))
        test_trl(load(os.path.join(SHIMS, "trl_reward.py"), "trl_reward"))
        os.environ["JUDGERL_REWARD_API_KEY"] = "wrong"
        e = raises(load(os.path.join(SHIMS, "verl_reward.py"), "custom_module2").compute_score, data_source="x", solution_str="y",
                   ground_truth="", extra_info=None)
        report("shim_wrong_key_fails_at_once", e is not None and "HTTP 401" in str(e), repr(e))
        svc2 = Service(cfg_copy("shims_slime"), judge_overrides(jport), name="shims_slime")
        test_slime(svc2)
        svc2.stop()
    finally:
        if svc:
            svc.stop()
        base.cleanup(jsrv)
    sys.exit(exit_code())


if __name__ == "__main__":
    main()
