"""trl_reward.py - a TRL GRPOTrainer reward function served by `judgerl serve-reward` (stdlib only).

    import sys; sys.path.insert(0, "/path/to/judgerl/contrib/python")
    from trl_reward import judgerl_reward            # or judgerl_reward_async
    trainer = GRPOTrainer(model=..., reward_funcs=[judgerl_reward], train_dataset=ds, ...)

Environment: JUDGERL_REWARD_URL, JUDGERL_REWARD_API_KEY, JUDGERL_UNSCORED_VALUE (judgerl_client.py).

TRL calls f(prompts=..., completions=..., completion_ids=..., **dataset columns) and takes a list
of float | None. Prompts and completions are strings, or lists of chat messages for a
conversational dataset (the completion's contents are joined into the response). The reference is
the first column present of reference, ground_truth, solution, answer, label; every other
JSON-serialisable column goes with the row (IFEval's instruction_id_list and kwargs, ...). A row
the service could not score is None (TRL leaves a row out when every reward function returned
None; with other reward functions beside this one, TRL's nansum would sum the others alone), and
the share of such rows is logged as the metric judgerl/unscored_frac.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import judgerl_client  # noqa: E402

_TRL_ARGS = ("trainer_state", "log_extra", "log_metric", "environments")


def _text(x):
    if isinstance(x, list):  # chat messages
        return "".join(m.get("content", "") if isinstance(m.get("content"), str) else "" for m in x)
    return x


def _rows(prompts, completions, kwargs):
    cols = {k: v for k, v in kwargs.items() if k not in _TRL_ARGS and isinstance(v, list) and len(v) == len(prompts)}
    rows = []
    for i, (p, c) in enumerate(zip(prompts, completions)):
        row = {"prompt": p, "response": _text(c)}
        for k, v in cols.items():
            row[k] = v[i]
        ref = judgerl_client.reference_of({k: v[i] for k, v in cols.items()})
        if ref is not None:
            row.setdefault("reference", ref)
        rows.append(row)
    return rows


def _answer(results, kwargs):
    v = judgerl_client.unscored_value()
    out = []
    for i, r in enumerate(results):
        if r.get("reward") is not None:
            out.append(float(r["reward"]))
        elif v is not None:
            out.append(judgerl_client.reward_or_raise(r, "row %d: " % i))
        else:
            out.append(None)
    log_metric = kwargs.get("log_metric")
    if callable(log_metric) and results:
        log_metric("judgerl/unscored_frac", sum(r.get("reward") is None for r in results) / len(results))
    return out


def judgerl_reward(prompts, completions, completion_ids=None, **kwargs):
    return _answer(judgerl_client.score_rows(_rows(prompts, completions, kwargs)), kwargs)


async def judgerl_reward_async(prompts, completions, completion_ids=None, **kwargs):
    return _answer(await judgerl_client.score_rows_async(_rows(prompts, completions, kwargs)), kwargs)
