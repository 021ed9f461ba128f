"""grade_python.py - the comparison client for `judgerl bench grade`: a Python ThreadPoolExecutor with
urllib (the approach of verl's genrm recipe) grading the same rows against the same loopback server.

usage: /usr/bin/python3 bench/grade_python.py --url http://127.0.0.1:PORT/v1 --levels 1,16,64,256 --per-level 20 --min 30
prints one JSON object: {"levels": [{"in_flight", "requests", "wall_s", "rps", "cpu_us_per_req", "ok"}]}
"""
import json
import re
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

TEMPLATE = ("###Task Description:\nGrade the response from 1 to 5. Output: \"Feedback: ... [RESULT] n\"\n\n"
            "###The instruction to evaluate:\n{prompt}\n\n###Response to evaluate:\n{response}\n\n###Feedback: ")


def grade(url, row):
    body = {"model": "bench-judge", "temperature": 0.0, "max_tokens": 512,
            "messages": [{"role": "user", "content": TEMPLATE.format(**row)}]}
    req = urllib.request.Request(url + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=60) as r:
        ans = json.loads(r.read())
    text = ans["choices"][0]["message"]["content"]
    m = re.findall(r"\[RESULT\]\s*(\d+)", text)
    return int(m[-1]) if m else None


def main():
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    url = args["--url"]
    levels = [int(x) for x in args.get("--levels", "1,16,64,256").split(",")]
    per, mn = int(args.get("--per-level", "20")), int(args.get("--min", "30"))
    out = []
    for lv in levels:
        n = max(lv * per, mn)
        rows = [{"prompt": "bench question %d" % i, "response": "bench answer %d" % i} for i in range(n)]
        c0, t0 = time.process_time(), time.monotonic()
        with ThreadPoolExecutor(max_workers=lv) as ex:
            res = list(ex.map(lambda r: grade(url, r), rows))
        wall, cpu = time.monotonic() - t0, time.process_time() - c0
        out.append({"in_flight": lv, "requests": n, "wall_s": round(wall, 3), "rps": round(n / wall, 1),
                    "cpu_us_per_req": round(cpu / n * 1e6, 1), "ok": sum(1 for x in res if x is not None)})
    print(json.dumps({"levels": out}))


if __name__ == "__main__":
    main()
