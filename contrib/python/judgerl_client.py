"""judgerl_client.py - the HTTP client the judgerl reward shims share (Python standard library only).

Talks to `judgerl serve-reward` (docs/REWARD_SERVICE.md) over its batch API, POST /v1/rewards.
Settings come from the environment, so the engines' own config files only name the shim:

  JUDGERL_REWARD_URL      base URL of the service (default http://127.0.0.1:8100)
  JUDGERL_REWARD_API_KEY  the key when the service runs with --api-key-env (sent as a Bearer token)
  JUDGERL_REWARD_TIMEOUT  seconds per HTTP request (default 600: a judge on a busy vLLM is slow)
  JUDGERL_REWARD_RETRIES  tries per request on connection errors, 429 and 503 (default 8)
  JUDGERL_UNSCORED_VALUE  unset (default): an unscored row raises Unscored (verl, OpenRLHF) or is
                          None (TRL); set to a number to use that value instead (logged each time)

A row the service could not score is never turned into a number unless JUDGERL_UNSCORED_VALUE says so.
"""
import asyncio
import json
import math
import os
import sys
import time
import urllib.error
import urllib.request

MAX_ROWS = 1024  # rows per request (the service's default limit is 4096)


class Unscored(RuntimeError):
    """A row the service could not score (the judge failed, the row lacks a field, ...)."""


class ServiceError(RuntimeError):
    """The service refused the request or could not be reached after every retry."""


def _url():
    return os.environ.get("JUDGERL_REWARD_URL", "http://127.0.0.1:8100").rstrip("/")


def unscored_value():
    """The configured stand-in for an unscored row, or None (the default: no stand-in)."""
    v = os.environ.get("JUDGERL_UNSCORED_VALUE")
    if v is None or v == "":
        return None
    x = float(v)
    if math.isnan(x):
        raise ValueError("JUDGERL_UNSCORED_VALUE: a number is required, got %r" % v)
    return x


def _post(path, body):
    data = json.dumps(body, default=str).encode()
    headers = {"Content-Type": "application/json"}
    key = os.environ.get("JUDGERL_REWARD_API_KEY")
    if key:
        headers["Authorization"] = "Bearer " + key
    timeout = float(os.environ.get("JUDGERL_REWARD_TIMEOUT", "600"))
    tries = max(1, int(os.environ.get("JUDGERL_REWARD_RETRIES", "8")))
    why = ""
    for attempt in range(tries):
        req = urllib.request.Request(_url() + path, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read().decode())
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            try:
                why = "HTTP %d: %s" % (e.code, json.loads(text)["error"]["message"])
            except (ValueError, KeyError, TypeError):
                why = "HTTP %d: %s" % (e.code, text[:300])
            if e.code not in (429, 502, 503, 504):
                raise ServiceError("%s%s: %s" % (_url(), path, why)) from None
        except (OSError, urllib.error.URLError) as e:  # refused, reset, timed out: the service restarts
            why = str(e)
        time.sleep(min(30.0, 0.25 * 2 ** attempt))
    raise ServiceError("%s%s: no answer after %d tries (%s)" % (_url(), path, tries, why))


def score_rows(rows):
    """The service's results for rows (dicts with prompt, response, reference, ...), in order:
    [{"reward": float | None, "status": "ok" | "unscored", "reason"?, "scores": {component: value | None}, ...}]."""
    out = []
    for k in range(0, len(rows), MAX_ROWS):
        res = _post("/v1/rewards", {"rows": rows[k:k + MAX_ROWS]})["results"]
        if len(res) != len(rows[k:k + MAX_ROWS]):
            raise ServiceError("the service answered %d results for %d rows" % (len(res), len(rows[k:k + MAX_ROWS])))
        out.extend(res)
    return out


async def score_rows_async(rows):
    """score_rows without blocking the event loop (the request runs in a worker thread)."""
    return await asyncio.to_thread(score_rows, rows)


def reward_or_raise(result, where=""):
    """The result's reward; an unscored result raises Unscored unless JUDGERL_UNSCORED_VALUE is set."""
    if result.get("reward") is not None:
        return float(result["reward"])
    v = unscored_value()
    reason = result.get("reason", "unscored")
    if v is None:
        raise Unscored("judgerl: %sunscored: %s (set JUDGERL_UNSCORED_VALUE to use a number instead)" % (where, reason))
    print("judgerl: %sunscored: %s; using JUDGERL_UNSCORED_VALUE=%g" % (where, reason, v), file=sys.stderr)
    return v


def reference_of(row_fields, names=("reference", "ground_truth", "solution", "answer", "label")):
    """The first of the usual reference columns present in a dict, or None."""
    for n in names:
        if row_fields.get(n) is not None:
            return row_fields[n]
    return None
