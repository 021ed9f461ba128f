"""verl_reward.py - verl custom reward functions served by `judgerl serve-reward` (stdlib only).

Per sample (verl's naive / prime / dapo managers and the reward loop; sync or async):
    custom_reward_function.path=/path/to/judgerl/contrib/python/verl_reward.py
    custom_reward_function.name=compute_score            # or compute_score_async
Batch (reward_model.reward_manager=batch: one call per batch, one HTTP request per 1024 rows):
    reward_model.reward_manager=batch
    custom_reward_function.path=/path/to/judgerl/contrib/python/verl_reward.py
    custom_reward_function.name=compute_score_batch
Environment: JUDGERL_REWARD_URL, JUDGERL_REWARD_API_KEY, JUDGERL_UNSCORED_VALUE (judgerl_client.py).

Each call returns {"score": reward, <component>: value, ..., "judgerl_unscored": 0.0 | 1.0}: verl
takes "score" as the reward and logs the other keys. A component the service left unscored (an
optional one) is NaN in the log, never a made-up number. A row the service could not score raises
judgerl_client.Unscored (verl's step fails visibly) unless JUDGERL_UNSCORED_VALUE is set.
verl passes no prompt: it is taken from extra_info["prompt"] / ["question"] / ["problem"] when there.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import judgerl_client  # noqa: E402


def _row(data_source, solution_str, ground_truth, extra_info):
    extra = extra_info if isinstance(extra_info, dict) else {}
    row = {"data_source": data_source, "response": solution_str, "ground_truth": ground_truth,
           "prompt": judgerl_client.reference_of(extra, ("prompt", "question", "problem")) or "", "extra_info": extra}
    for k, v in extra.items():  # IFEval's instruction_id_list / kwargs and the like, at the row's top level
        row.setdefault(k, v)
    return row


def _answer(result, where):
    value = judgerl_client.reward_or_raise(result, where)
    out = {"score": value}
    for name, v in (result.get("scores") or {}).items():
        out[name] = float(v) if v is not None else float("nan")
    out["judgerl_unscored"] = 0.0 if result.get("reward") is not None else 1.0
    return out


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    res = judgerl_client.score_rows([_row(data_source, solution_str, ground_truth, extra_info)])
    return _answer(res[0], "")


async def compute_score_async(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    res = await judgerl_client.score_rows_async([_row(data_source, solution_str, ground_truth, extra_info)])
    return _answer(res[0], "")


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos, **kwargs):
    extra_infos = extra_infos if extra_infos is not None else [None] * len(solution_strs)
    rows = [_row(d, s, g, e) for d, s, g, e in zip(data_sources, solution_strs, ground_truths, extra_infos)]
    res = judgerl_client.score_rows(rows)
    return [_answer(r, "row %d: " % i) for i, r in enumerate(res)]
