/* python.c - Python programs in the sandbox: a driver that runs the program (or program + counted
 * tests) and reports its result with a per-run nonce on a private channel */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <jansson.h>

#include "judgerl/sandbox.h"

/* Reads the job (JSON) from fd 3 and writes {"nonce", "result"[, "asserts"]} to fd 4, then exits at
 * once (no atexit handlers of the program run); a forked child of the program reports nothing. The program's globals are a fresh dict as in
 * HumanEval's harness (so __name__ is 'builtins' and a `__main__` block does not run). With a
 * test, each `assert` becomes a counted call, so a failed assert does not stop the others. */
static const char driver[] =
    "import os, json\n"
    "def _jr_run():\n"
    "    dumps, loads, write, _exit, getpid = json.dumps, json.loads, os.write, os._exit, os.getpid\n"
    "    me = getpid()\n"
    "    with os.fdopen(3, 'rb') as f:\n"
    "        job = loads(f.read())\n"
    "    res = {'nonce': job['nonce']}\n"
    "    cnt = [0, 0]\n"
    "    def report(r):\n"
    "        if getpid() != me: _exit(0)\n"
    "        res['result'] = r\n"
    "        if job.get('test') is not None: res['asserts'] = list(cnt)\n"
    "        b = dumps(res).encode()\n"
    "        while b:\n"
    "            b = b[write(4, b):]\n"
    "        _exit(0)\n"
    "    g = {}\n"
    "    try:\n"
    "        exec(compile(job['program'], 'program.py', 'exec'), g)\n"
    "        if job.get('test') is not None:\n"
    "            import ast\n"
    "            def counted(f):\n"
    "                cnt[1] += 1\n"
    "                try:\n"
    "                    if f(): cnt[0] += 1\n"
    "                except Exception:\n"
    "                    pass\n"
    "            class T(ast.NodeTransformer):\n"
    "                def visit_Assert(self, node):\n"
    "                    a = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])\n"
    "                    call = ast.Call(func=ast.Name(id='__jr_assert', ctx=ast.Load()), args=[ast.Lambda(args=a, body=node.test)], keywords=[])\n"
    "                    return ast.fix_missing_locations(ast.copy_location(ast.Expr(value=call), node))\n"
    "            tree = T().visit(ast.parse(job['test'], 'test.py'))\n"
    "            g['__jr_assert'] = counted\n"
    "            exec(compile(tree, 'test.py', 'exec'), g)\n"
    "            g['check'](g[job['entry_point']])\n"
    "            if cnt[0] < cnt[1]:\n"
    "                report('failed: %d of %d assertions failed' % (cnt[1] - cnt[0], cnt[1]))\n"
    "    except BaseException as e:\n"
    "        report('failed: ' + (str(e) or type(e).__name__))\n"
    "    report('passed')\n"
    "_jr_run()\n";

void jr_py_result_free(jr_py_result *r) {
    if (!r) return;
    free(r->result);
    memset(r, 0, sizeof *r);
}

/* "failed: " + text, one line of at most 500 bytes. */
static char *failed(const char *text) {
    char buf[520];
    snprintf(buf, sizeof buf, "failed: %.500s", text);
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    return jr_strdup(buf);
}

/* The last non-empty line of s, into buf. */
static const char *last_line(const char *s, char *buf, size_t len) {
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ')) n--;
    size_t b = n;
    while (b && s[b - 1] != '\n') b--;
    snprintf(buf, len, "%.*s", (int)(n - b), s + b);
    return buf;
}

/* The result the driver reported, when the channel holds one with our nonce. */
static int read_channel(const jr_sandbox_result *sr, const char *nonce, jr_py_result *res) {
    json_t *j = json_loads(sr->channel, 0, NULL);
    const char *n = json_string_value(json_object_get(j, "nonce"));
    const char *r = json_string_value(json_object_get(j, "result"));
    int ok = n && r && !strcmp(n, nonce);
    if (ok) {
        res->result = !strcmp(r, "passed") ? jr_strdup("passed") : failed(!strncmp(r, "failed: ", 8) ? r + 8 : r);
        res->outcome = !strcmp(r, "passed") ? JR_SB_PASSED : JR_SB_FAILED;
        json_t *a = json_object_get(j, "asserts");
        if (json_array_size(a) == 2) {
            res->asserts_passed = (int)json_integer_value(json_array_get(a, 0));
            res->asserts_total = (int)json_integer_value(json_array_get(a, 1));
        }
    }
    json_decref(j);
    return ok;
}

jr_status jr_sandbox_python(const jr_sandbox_opts *o, const jr_py_job *job, jr_py_result *res) {
    memset(res, 0, sizeof *res);
    if (!job->program) return jr_fail(JR_EINVAL, "sandbox: a Python job needs a program");
    if (job->test && !job->entry_point) return jr_fail(JR_EINVAL, "sandbox: a Python job with a test needs its entry_point");
    unsigned char rnd[16];
    char nonce[33];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) return jr_fail(JR_EIO, "sandbox: getrandom failed");
    for (int i = 0; i < 16; i++) snprintf(nonce + 2 * i, 3, "%02x", rnd[i]);
    json_t *j = json_pack("{s:s,s:s}", "nonce", nonce, "program", job->program);
    if (j && job->test) {
        json_object_set_new(j, "test", json_string(job->test));
        json_object_set_new(j, "entry_point", json_string(job->entry_point));
    }
    char *input = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!input) return jr_fail(JR_EINVAL, "sandbox: the program is not valid UTF-8 (or out of memory)");
    const char *argv[] = {o->python, "-I", "-c", driver, NULL};
    jr_sandbox_result sr;
    jr_status st = jr_sandbox_run(o, argv, input, strlen(input), &sr);
    free(input);
    if (st) return st;
    res->wall_s = sr.wall_s;
    char line[400];
    if (!sr.killed && read_channel(&sr, nonce, res)) {
    } else if (sr.outcome == JR_SB_TIMEOUT) {
        res->outcome = JR_SB_TIMEOUT;
        res->result = jr_strdup("timed out");
    } else {
        res->outcome = JR_SB_FAILED;
        if (sr.outcome == JR_SB_PASSED) res->result = failed("the program exited (status 0) before its tests finished");
        else if (sr.exit_code > 0 && sr.err_len) {
            char msg[800];
            snprintf(msg, sizeof msg, "%s: %s", sr.reason, last_line(sr.err, line, sizeof line));
            res->result = failed(msg);
        } else res->result = failed(sr.reason);
    }
    jr_sandbox_result_free(&sr);
    if (!res->result) return jr_fail(JR_ENOMEM, "sandbox: out of memory");
    return JR_OK;
}
