/* python.c - a Python program against its tests in two sandboxes: the program's process only answers
 * calls with plain data; the tests run, and decide, in a process where no code of the program runs */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "judgerl/sandbox.h"

/* What crosses fd 7 (a socketpair between the two sandboxes): one JSON object a line, values in a
 * tagged encoding (lists as arrays; tuple, set, frozenset, dict, bytes, complex, non-finite float as
 * one-key objects) that decodes into builtin types only. Both sides lift Python's int digit limit. */
#define CODEC \
    "import os, sys, json\n" \
    "if hasattr(sys, 'set_int_max_str_digits'): sys.set_int_max_str_digits(0)\n" \
    "def _jr_codec():\n" \
    "    inf = float('inf')\n" \
    "    tags = {tuple: 'tuple', set: 'set', frozenset: 'frozenset'}\n" \
    "    def enc(x, d=0):\n" \
    "        if d > 200: raise ValueError('a value nested over 200 deep')\n" \
    "        t = type(x)\n" \
    "        if x is None or t is bool or t is str: return x\n" \
    "        if t is int: return x\n" \
    "        if t is float: return x if -inf < x < inf else {'float': repr(x)}\n" \
    "        if t is list: return [enc(v, d + 1) for v in x]\n" \
    "        if t in tags: return {tags[t]: [enc(v, d + 1) for v in x]}\n" \
    "        if t is dict: return {'dict': [[enc(k, d + 1), enc(v, d + 1)] for k, v in x.items()]}\n" \
    "        if t is bytes: return {'bytes': x.hex()}\n" \
    "        if t is complex: return {'complex': [enc(x.real), enc(x.imag)]}\n" \
    "        for b in (bool, int, float, str, list, tuple, dict, frozenset, set, bytes):\n" \
    "            if isinstance(x, b): return enc(b(x), d)\n" \
    "        raise TypeError('a value of type %s cannot pass between the program and its tests' % t.__name__)\n" \
    "    def dec(x):\n" \
    "        t = type(x)\n" \
    "        if t is list: return [dec(v) for v in x]\n" \
    "        if t is not dict: return x\n" \
    "        if len(x) != 1: raise ValueError('malformed value')\n" \
    "        (k, v), = x.items()\n" \
    "        if k == 'float' and type(v) is str: return float(v)\n" \
    "        if k == 'bytes' and type(v) is str: return bytes.fromhex(v)\n" \
    "        if type(v) is not list: raise ValueError('malformed value')\n" \
    "        if k == 'tuple': return tuple(dec(e) for e in v)\n" \
    "        if k == 'set': return set(dec(e) for e in v)\n" \
    "        if k == 'frozenset': return frozenset(dec(e) for e in v)\n" \
    "        if k == 'dict': return {dec(a): dec(b) for a, b in v}\n" \
    "        if k == 'complex': return complex(*[float(dec(e)) for e in v])\n" \
    "        raise ValueError('malformed value')\n" \
    "    return enc, dec\n"

/* The program's side: reads {"program"} from fd 3, runs it in fresh globals (as HumanEval's harness:
 * __name__ is 'builtins'), sends {"ready": callable names, "values": encodable constants} (or
 * {"error": text}), then answers {"call", "args", "kwargs"} with {"ok": value} or {"raise": name,
 * "msg"} until the tests' side hangs up. A forked child of the program sends nothing. */
static const char program_driver[] = CODEC
    "def _jr_serve():\n"
    "    enc, dec = _jr_codec()\n"
    "    loads, dumps, write, _exit, getpid = json.loads, json.dumps, os.write, os._exit, os.getpid\n"
    "    me = getpid()\n"
    "    with os.fdopen(3, 'rb') as f:\n"
    "        job = loads(f.read())\n"
    "    rf = os.fdopen(7, 'rb')\n"
    "    def send(m):\n"
    "        if getpid() != me: _exit(0)\n"
    "        try:\n"
    "            b = (dumps(m, allow_nan=False) + '\\n').encode()\n"
    "        except BaseException as e:\n"
    "            b = (dumps({'raise': 'TypeError', 'msg': str(e)}) + '\\n').encode()\n"
    "        try:\n"
    "            while b: b = b[write(7, b):]\n"
    "        except OSError:\n"
    "            _exit(0)\n"
    "    g = {}\n"
    "    try:\n"
    "        exec(compile(job['program'], 'program.py', 'exec'), g)\n"
    "    except BaseException as e:\n"
    "        send({'error': str(e) or type(e).__name__})\n"
    "        _exit(0)\n"
    "    names, values = [], {}\n"
    "    for k, v in list(g.items()):\n"
    "        if k.startswith('__') or type(k) is not str: continue\n"
    "        if callable(v): names.append(k)\n"
    "        else:\n"
    "            try: values[k] = enc(v); dumps(values[k], allow_nan=False)\n"
    "            except BaseException: values.pop(k, None)\n"
    "    send({'ready': names, 'values': values})\n"
    "    while True:\n"
    "        line = rf.readline()\n"
    "        if not line: _exit(0)\n"
    "        try:\n"
    "            m = loads(line)\n"
    "            r = {'ok': enc(g[m['call']](*dec(m['args']), **dec(m['kwargs'])))}\n"
    "        except BaseException as e:\n"
    "            r = {'raise': type(e).__name__, 'msg': str(e)}\n"
    "        send(r)\n"
    "_jr_serve()\n";

/* The tests' side: reads {"nonce", "test", "entry_point", "count_all", "prelude"} from fd 3, runs the
 * prelude (the prompt), defines the program's other names as proxies that forward calls (never over a
 * builtin or a name of the prelude, the entry point always), runs the test and check(entry_point),
 * and writes {"nonce", "result", "asserts", "lost"} to fd 4 (lost: the program's side hung up). With
 * count_all, each `assert` becomes a counted call, so a failed assert does not stop the others. */
static const char tests_driver[] = CODEC
    "def _jr_check():\n"
    "    import ast, builtins\n"
    "    enc, dec = _jr_codec()\n"
    "    loads, dumps, write, _exit = json.loads, json.dumps, os.write, os._exit\n"
    "    with os.fdopen(3, 'rb') as f:\n"
    "        job = loads(f.read())\n"
    "    res = {'nonce': job['nonce']}\n"
    "    cnt = [0, 0]\n"
    "    lost = [0]\n"
    "    def report(r):\n"
    "        res['result'] = r\n"
    "        res['asserts'] = list(cnt)\n"
    "        res['lost'] = bool(lost[0])\n"
    "        b = dumps(res).encode()\n"
    "        while b: b = b[write(4, b):]\n"
    "        _exit(0)\n"
    "    rf = os.fdopen(7, 'rb')\n"
    "    class Lost(Exception): pass\n"
    "    def recv():\n"
    "        line = b'' if lost[0] else rf.readline()\n"
    "        if not line:\n"
    "            lost[0] = 1\n"
    "            raise Lost('the program ended before its tests finished')\n"
    "        m = loads(line)\n"
    "        if type(m) is not dict: raise ValueError('malformed message')\n"
    "        return m\n"
    "    def proxy(name):\n"
    "        def call(*args, **kwargs):\n"
    "            b = (dumps({'call': name, 'args': enc(list(args)), 'kwargs': enc(kwargs)}, allow_nan=False) + '\\n').encode()\n"
    "            try:\n"
    "                while b and not lost[0]: b = b[write(7, b):]\n"
    "            except OSError:\n"
    "                lost[0] = 1\n"
    "            r = recv()\n"
    "            if 'ok' in r: return dec(r['ok'])\n"
    "            e = getattr(builtins, str(r.get('raise')), None)\n"
    "            # StopIteration would end a map() inside all() early: it arrives as RuntimeError\n"
    "            if not (isinstance(e, type) and issubclass(e, Exception)) or issubclass(e, (StopIteration, StopAsyncIteration)): e = RuntimeError\n"
    "            raise e(str(r.get('msg', '')))\n"
    "        call.__name__ = call.__qualname__ = name\n"
    "        return call\n"
    "    try:\n"
    "        hello = recv()\n"
    "        if 'error' in hello: report('failed: ' + str(hello['error']))\n"
    "        ep = job['entry_point']\n"
    "        # the prompt's helpers (poly, encode_cyclic) are the prompt's, not the program's redefinitions;\n"
    "        # a prompt that does not run on its own (a bare def line) is left out\n"
    "        g = {'__builtins__': builtins}\n"
    "        if job.get('prelude'):\n"
    "            try:\n"
    "                exec(compile(job['prelude'], 'prompt.py', 'exec'), g)\n"
    "            except Exception:\n"
    "                g = {'__builtins__': builtins}\n"
    "        # the program's names, never one that would shadow a builtin (abs, len, ...) or a prompt's helper\n"
    "        keep = lambda n: type(n) is str and (n == ep or not (hasattr(builtins, n) or n in g))\n"
    "        names = [n for n in hello['ready'] if keep(n)]\n"
    "        g.update({k: dec(v) for k, v in dict(hello.get('values', {})).items() if keep(k)})\n"
    "        g.update({n: proxy(n) for n in names})\n"
    "        tree = ast.parse(job['test'], 'test.py')\n"
    "        if job.get('count_all'):\n"
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
    "            tree = T().visit(tree)\n"
    "            g['__jr_assert'] = counted\n"
    "        exec(compile(tree, 'test.py', 'exec'), g)\n"
    "        if ep not in names: raise NameError(\"name '%s' is not defined\" % ep)\n"
    "        g['check'](proxy(ep))\n"
    "        if cnt[0] < cnt[1]:\n"
    "            report('failed: %d of %d assertions failed' % (cnt[1] - cnt[0], cnt[1]))\n"
    "    except BaseException as e:\n"
    "        report('failed: ' + (str(e) or type(e).__name__))\n"
    "    report('passed')\n"
    "_jr_check()\n";

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

/* One of the two sandboxes of a job. */
typedef struct side {
    jr_sandbox_opts o;
    const char *driver;
    char *input;
    int fd;                 /* its end of the socketpair (closed when its run ends) */
    jr_sandbox_result sr;
    jr_status st;
    char msg[600];          /* jr_errmsg() of st (thread-local, so copied here) */
} side;

static void *run_side(void *arg) {
    side *s = arg;
    const char *argv[] = {s->o.python, "-I", "-c", s->driver, NULL};
    s->st = jr_sandbox_run_peer(&s->o, argv, s->input, strlen(s->input), s->fd, &s->sr);
    if (s->st) snprintf(s->msg, sizeof s->msg, "%s", jr_errmsg());
    close(s->fd); /* the other side sees this one's end */
    s->fd = -1;
    return NULL;
}

/* How the program's sandbox ended, as a result (it hung up before the tests finished). */
static void program_ended(const jr_sandbox_result *sr, jr_py_result *res) {
    char line[400], msg[800];
    free(res->result);
    if (sr->outcome == JR_SB_TIMEOUT) {
        res->outcome = JR_SB_TIMEOUT;
        res->result = jr_strdup("timed out");
        return;
    }
    res->outcome = JR_SB_FAILED;
    if (sr->outcome == JR_SB_PASSED) res->result = failed("the program exited (status 0) before its tests finished");
    else if (sr->exit_code > 0 && sr->err_len) {
        snprintf(msg, sizeof msg, "%s: %s", sr->reason, last_line(sr->err, line, sizeof line));
        res->result = failed(msg);
    } else res->result = failed(sr->reason ? sr->reason : "the program ended before its tests finished");
}

/* The outcome: only the tests' side, with our nonce on its channel, can say "passed". */
static void decide(const side *prog, const side *tests, const char *nonce, jr_py_result *res) {
    json_t *j = tests->sr.killed ? NULL : json_loads(tests->sr.channel, 0, NULL);
    const char *n = json_string_value(json_object_get(j, "nonce"));
    const char *r = json_string_value(json_object_get(j, "result"));
    char line[400], msg[800];
    if (n && r && !strcmp(n, nonce)) {
        int passed = !strcmp(r, "passed");
        res->outcome = passed ? JR_SB_PASSED : JR_SB_FAILED;
        res->result = passed ? jr_strdup("passed") : failed(!strncmp(r, "failed: ", 8) ? r + 8 : r);
        json_t *a = json_object_get(j, "asserts");
        if (json_array_size(a) == 2) {
            res->asserts_passed = (int)json_integer_value(json_array_get(a, 0));
            res->asserts_total = (int)json_integer_value(json_array_get(a, 1));
        }
        /* killed by its clock or output cap, what the program said after (a broken pipe) is moot */
        if (!passed && (json_is_true(json_object_get(j, "lost")) || prog->sr.killed)) program_ended(&prog->sr, res);
    } else if (tests->sr.outcome == JR_SB_TIMEOUT || prog->sr.outcome == JR_SB_TIMEOUT) {
        res->outcome = JR_SB_TIMEOUT;
        res->result = jr_strdup("timed out");
    } else {
        res->outcome = JR_SB_FAILED;
        snprintf(msg, sizeof msg, "the tests' process: %s: %s", tests->sr.reason ? tests->sr.reason : "no result",
                 last_line(tests->sr.err ? tests->sr.err : "", line, sizeof line));
        res->result = failed(msg);
    }
    json_decref(j);
}

jr_status jr_sandbox_python(const jr_sandbox_opts *o, const jr_py_job *job, jr_py_result *res) {
    memset(res, 0, sizeof *res);
    if (!job->program) return jr_fail(JR_EINVAL, "sandbox: a Python job needs a program");
    if (!job->test || !job->entry_point) return jr_fail(JR_EINVAL, "sandbox: a Python job needs its test and entry_point");
    unsigned char rnd[16];
    char nonce[33];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) return jr_fail(JR_EIO, "sandbox: getrandom failed");
    for (int i = 0; i < 16; i++) snprintf(nonce + 2 * i, 3, "%02x", rnd[i]);
    side prog = {.o = *o, .driver = program_driver}, tests = {.o = *o, .driver = tests_driver};
    /* the tests' clock runs a second longer: a program that hangs is cut by its own, and the tests
     * then report what they counted */
    tests.o.timeout_s = o->timeout_s + 1 > 3600 ? 3600 : o->timeout_s + 1;
    json_t *pj = json_pack("{s:s}", "program", job->program);
    json_t *tj = json_pack("{s:s,s:s,s:s,s:b}", "nonce", nonce, "test", job->test, "entry_point", job->entry_point,
                           "count_all", job->count_all != 0);
    if (tj && job->prelude) json_object_set_new(tj, "prelude", json_string(job->prelude));
    prog.input = pj ? json_dumps(pj, JSON_COMPACT) : NULL;
    tests.input = tj ? json_dumps(tj, JSON_COMPACT) : NULL;
    json_decref(pj);
    json_decref(tj);
    int sv[2] = {-1, -1};
    jr_status st = JR_OK;
    if (!prog.input || !tests.input) st = jr_fail(JR_EINVAL, "sandbox: the program or its test is not valid UTF-8 (or out of memory)");
    else if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) st = jr_fail(JR_EIO, "sandbox: socketpair failed");
    pthread_t th;
    int threaded = 0;
    if (!st) {
        prog.fd = sv[0];
        tests.fd = sv[1];
        threaded = !pthread_create(&th, NULL, run_side, &prog);
        if (!threaded) st = jr_fail(JR_EIO, "sandbox: cannot start a thread");
    }
    if (!st) {
        sv[0] = sv[1] = -1; /* the sides own them now */
        run_side(&tests);
        pthread_join(th, NULL);
        if (prog.st || tests.st) st = jr_fail(prog.st ? prog.st : tests.st, "%s", prog.st ? prog.msg : tests.msg);
    }
    for (int i = 0; i < 2; i++)
        if (sv[i] >= 0) close(sv[i]);
    free(prog.input);
    free(tests.input);
    if (!st) {
        res->wall_s = tests.sr.wall_s > prog.sr.wall_s ? tests.sr.wall_s : prog.sr.wall_s;
        decide(&prog, &tests, nonce, res);
        if (!res->result) st = jr_fail(JR_ENOMEM, "sandbox: out of memory");
    }
    if (!prog.st && threaded) jr_sandbox_result_free(&prog.sr);
    if (!tests.st && threaded) jr_sandbox_result_free(&tests.sr);
    return st;
}
