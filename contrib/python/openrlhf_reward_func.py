"""openrlhf_reward_func.py - OpenRLHF's Python reward_func served by `judgerl serve-reward` (stdlib only).

    python -m openrlhf.cli.train_ppo_ray ... \\
        --reward.remote_url /path/to/judgerl/contrib/python/openrlhf_reward_func.py --label_key answer
    (older OpenRLHF: --remote_rm_url /path/to/.../openrlhf_reward_func.py)

Environment: JUDGERL_REWARD_URL, JUDGERL_REWARD_API_KEY, JUDGERL_UNSCORED_VALUE (judgerl_client.py).
Unlike pointing --reward.remote_url at the service's /get_reward, this file sends the API key and
retries 429/503 with backoff. OpenRLHF calls reward_func(queries, prompts, labels) (one sample per
call in a worker thread in current versions, the whole batch in older ones); query is the prompt
followed by the response, so the prompt prefix is removed. The answer is {"rewards": [...],
"scores": [...] (the reward clipped to [0, 1], for --dynamic_filtering), "extra_logs":
{component: [...]}}. A row the service could not score raises judgerl_client.Unscored: OpenRLHF
logs the failure and the sample gets no reward (the step fails visibly), never a made-up 0.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import judgerl_client  # noqa: E402


def reward_func(queries, prompts, labels, **kwargs):
    rows = []
    for q, p, lab in zip(queries, prompts, labels):
        resp = q[len(p):] if isinstance(p, str) and q.startswith(p) else q
        rows.append({"prompt": p, "response": resp, "label": lab})
    results = judgerl_client.score_rows(rows)
    rewards = [judgerl_client.reward_or_raise(r, "row %d: " % i) for i, r in enumerate(results)]
    logs = {}
    for name in (results[0].get("scores") or {}) if results else ():
        vals = [r.get("scores", {}).get(name) for r in results]
        if all(v is not None for v in vals):  # a component unscored anywhere is left out, not logged as 0
            logs[name] = [float(v) for v in vals]
    return {"rewards": rewards, "scores": [min(1.0, max(0.0, r)) for r in rewards], "extra_logs": logs}
