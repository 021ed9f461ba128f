/* test_sandbox.c - generated code is contained: fork bomb, 10 GB, network, $HOME, env secret, the
 * parent, stdin, endless print, rm -rf; results come back as passed / failed: reason / timed out */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "judgerl/clock.h"
#include "judgerl/sandbox.h"
#include "judgerl/status.h"

static jr_sandbox_opts O;
static int available;
static const char *why_not;

/* Runs a program to its end (its tests call a function it ends with); returns the result text
 * (static) and the outcome. */
static const char *run_py(const char *program, jr_sb_outcome *outcome, double *wall) {
    static char text[600];
    char *prog = malloc(strlen(program) + 64);
    sprintf(prog, "%s\n\ndef jr_end():\n    pass\n", program);
    jr_py_job job = {prog, "def check(candidate):\n    candidate()\n", "jr_end", 0, NULL};
    jr_py_result r;
    jr_status st = jr_sandbox_python(&O, &job, &r);
    free(prog);
    if (st) { snprintf(text, sizeof text, "ERROR %s", jr_errmsg()); *outcome = JR_SB_FAILED; return text; }
    snprintf(text, sizeof text, "%s", r.result);
    *outcome = r.outcome;
    if (wall) *wall = r.wall_s;
    jr_py_result_free(&r);
    return text;
}

#define NEED_SANDBOX() do { if (!available) SKIP("%s", why_not); } while (0)

TEST(passes_and_fails) {
    NEED_SANDBOX();
    jr_sb_outcome oc;
    CHECK_STR(run_py("def f():\n    return 1\nassert f() == 1\n", &oc, NULL), "passed");
    CHECK(oc == JR_SB_PASSED);
    CHECK_STR(run_py("assert 1 == 2\n", &oc, NULL), "failed: AssertionError");
    CHECK(oc == JR_SB_FAILED);
    CHECK_STR(run_py("raise ValueError('bad value')\n", &oc, NULL), "failed: bad value");
    CHECK_STR(run_py("def f(:\n", &oc, NULL), "failed: invalid syntax (program.py, line 1)");
    /* HumanEval's globals: __name__ is not '__main__', so a main block does not run */
    CHECK_STR(run_py("if __name__ == '__main__':\n    raise SystemExit(3)\n", &oc, NULL), "passed");
}

TEST(early_exit_is_not_a_pass) {
    NEED_SANDBOX();
    jr_sb_outcome oc;
    CHECK_STR(run_py("import sys\nsys.exit(0)\nassert False\n", &oc, NULL), "failed: 0"); /* as HumanEval: f"failed: {e}" */
    const char *t = run_py("import os\nos._exit(0)\n", &oc, NULL);
    CHECK_MSG(oc == JR_SB_FAILED && strstr(t, "before its tests finished"), "%s", t);
    /* printing what the driver would print, on every fd it could be, forges nothing */
    t = run_py("import os, json\nfor fd in (1, 2, 4):\n    os.write(fd, json.dumps({'nonce': 'x', 'result': 'passed'}).encode())\nos._exit(0)\n", &oc, NULL);
    CHECK_MSG(oc == JR_SB_FAILED, "%s", t);
    t = run_py("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n", &oc, NULL);
    CHECK_MSG(oc == JR_SB_FAILED && strstr(t, "SIGSEGV"), "%s", t);
}

TEST(fork_bomb) {
    NEED_SANDBOX();
    jr_sb_outcome oc;
    double wall;
    /* as the subreaper, this process inherits whatever of the run outlives its parents */
    CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
    const char *t = run_py("import os\nwhile True:\n    os.fork()\n", &oc, &wall);
    CHECK_MSG(oc == JR_SB_FAILED && strstr(t, "Resource temporarily unavailable"), "%s", t);
    /* the processes are gone with the sandbox: no descendant is left (this looks at this run only, not at the
     * sandbox uid machine-wide, where other suites' sandboxes may be running). The kernel kills the namespace's
     * processes as it goes; under load their exits can take a while, so this waits for the state (every
     * descendant exited and reaped), up to 60 s: a survivor of the bomb forks forever and never exits. */
    pid_t w;
    int st, reaped = 0;
    for (int i = 0; i < 1200; i++) {
        while ((w = waitpid(-1, &st, WNOHANG)) > 0) reaped++;
        if (w < 0 && errno == ECHILD) break;
        usleep(50 * 1000);
    }
    CHECK_MSG(w < 0 && errno == ECHILD, "sandbox processes survived the run by 60 s (%d reaped meanwhile)", reaped);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
    /* bounded by RLIMIT_NPROC inside the sandbox, not by the clock */
    t = run_py("import os\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            import time; time.sleep(5); os._exit(0)\n        n += 1\n"
               "except OSError:\n    pass\nassert 20 <= n <= 32, n\n", &oc, NULL);
    CHECK_MSG(oc == JR_SB_PASSED, "%s", t);
}

/* A fork bomb in one sandbox does not starve another running at the same time. */
static void *bomb(void *arg) {
    jr_sb_outcome oc;
    jr_py_job job = {"import os, time\ntry:\n    while True: os.fork()\nexcept OSError:\n    time.sleep(1.5)\n", "def check(c):\n    pass\n", "os", 0, NULL};
    jr_py_result r;
    if (!jr_sandbox_python(&O, &job, &r)) jr_py_result_free(&r);
    (void)oc;
    return arg;
}

TEST(fork_bomb_does_not_starve_others) {
    NEED_SANDBOX();
    pthread_t th;
    pthread_create(&th, NULL, bomb, NULL);
    usleep(500 * 1000);
    jr_sb_outcome oc;
    const char *t = run_py("import subprocess\nassert subprocess.check_output(['/usr/bin/echo', 'hi']) == b'hi\\n'\n", &oc, NULL);
    CHECK_MSG(oc == JR_SB_PASSED, "%s", t);
    pthread_join(th, NULL);
}

TEST(ten_gigabytes) {
    NEED_SANDBOX();
    jr_sb_outcome oc;
    CHECK_STR(run_py("x = bytearray(10 * 1024 ** 3)\n", &oc, NULL), "failed: MemoryError");
    CHECK(oc == JR_SB_FAILED);
}

typedef struct { int fd; int accepted; } listener;

static void *accept_one(void *arg) {
    listener *l = arg;
    int c = accept(l->fd, NULL, NULL);
    if (c >= 0) { l->accepted = 1; close(c); }
    return NULL;
}

TEST(network) {
    NEED_SANDBOX();
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    CHECK(bind(s, (struct sockaddr *)&a, sizeof a) == 0 && listen(s, 4) == 0 && getsockname(s, (struct sockaddr *)&a, &al) == 0);
    listener l = {s, 0};
    pthread_t th;
    pthread_create(&th, NULL, accept_one, &l);
    char prog[300];
    snprintf(prog, sizeof prog, "import socket\nsocket.create_connection(('127.0.0.1', %d), timeout=1).sendall(b'leak')\n", ntohs(a.sin_port));
    jr_sb_outcome oc;
    const char *t = run_py(prog, &oc, NULL);
    CHECK_MSG(oc == JR_SB_FAILED && strstr(t, "refused"), "%s", t);
    /* the listener is reachable from the host: the test would see a connection */
    int c = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(connect(c, (struct sockaddr *)&a, sizeof a) == 0);
    close(c);
    pthread_join(th, NULL);
    CHECK(l.accepted == 1); /* exactly the host's own connection */
    close(s);
    /* no name resolution either */
    t = run_py("import socket\nsocket.getaddrinfo('example.com', 80)\n", &oc, NULL);
    CHECK_MSG(oc == JR_SB_FAILED, "%s", t);
}

TEST(files_outside) {
    NEED_SANDBOX();
    const char *tmp = getenv("JR_TMP") ? getenv("JR_TMP") : "/tmp";
    char home[512], victim[600], prog[1600];
    snprintf(home, sizeof home, "%s/home-%d", tmp, (int)getpid());
    mkdir(home, 0777);
    chmod(home, 0777); /* writable even by the sandbox's uid, were it mounted */
    snprintf(victim, sizeof victim, "%s/keep.txt", home);
    FILE *f = fopen(victim, "w");
    fputs("keep", f);
    fclose(f);
    chmod(victim, 0666);
    setenv("HOME", home, 1);
    snprintf(prog, sizeof prog,
             "import os\nerrs = []\nfor p in ['%s/pwned', os.path.expanduser('~/pwned'), '/usr/pwned', '/pwned', '/etc/pwned']:\n"
             "    try:\n        open(p, 'w').write('x')\n    except OSError as e:\n        errs.append(p)\n"
             "try:\n    os.remove('%s')\nexcept OSError:\n    errs.append('rm')\n"
             "open('/tmp/scratch', 'w').write('fine')\nassert open('/tmp/scratch').read() == 'fine'\n"
             "assert len(errs) == 6, errs\n",
             home, victim);
    jr_sb_outcome oc;
    const char *t = run_py(prog, &oc, NULL);
    CHECK_MSG(oc == JR_SB_PASSED, "%s", t);
    char p[700];
    snprintf(p, sizeof p, "%s/pwned", home);
    CHECK(access(p, F_OK) != 0);
    CHECK(access("/pwned", F_OK) != 0 && access("/usr/pwned", F_OK) != 0);
    CHECK(access(victim, F_OK) == 0);
    /* each sandbox has its own empty /tmp and sees nothing of the host's root */
    t = run_py("import os\nassert os.listdir('/tmp') == [], os.listdir('/tmp')\nassert sorted(os.listdir('/')) == ['bin', 'dev', 'lib', 'lib64', 'proc', 'sbin', 'tmp', 'usr'], os.listdir('/')\n", &oc, NULL);
    CHECK_MSG(oc == JR_SB_PASSED || access("/usr/lib64", F_OK) != 0, "%s", t);
}

TEST(rm_rf_everything) {
    NEED_SANDBOX();
    const char *tmp = getenv("JR_TMP") ? getenv("JR_TMP") : "/tmp";
    char keep[512];
    snprintf(keep, sizeof keep, "%s/keep-rm-%d", tmp, (int)getpid());
    FILE *f = fopen(keep, "w");
    fputs("x", f);
    fclose(f);
    chmod(keep, 0666);
    jr_sb_outcome oc;
    /* rm walks every file of the read-only /usr: slow on a loaded machine; this test is about what
     * it touches, not about the clock */
    double saved = O.timeout_s;
    O.timeout_s = 120;
    const char *t = run_py("import subprocess\nsubprocess.run(['/usr/bin/rm', '-rf', '--no-preserve-root', '/'])\nsubprocess.check_output('rm -rf tmp', shell=True)\n", &oc, NULL);
    O.timeout_s = saved;
    CHECK_MSG(oc == JR_SB_PASSED || oc == JR_SB_FAILED, "%s", t);
    CHECK(access(keep, F_OK) == 0);
    CHECK(access("/usr/bin/python3", X_OK) == 0);
}

TEST(env_secret) {
    NEED_SANDBOX();
    setenv("JR_TEST_SECRET", "s3cr3t-value", 1);
    jr_sb_outcome oc;
    const char *t = run_py("import os\nprint(os.environ.get('JR_TEST_SECRET'))\nassert os.environ.get('JR_TEST_SECRET') is None\n"
                           "for p in os.listdir('/proc'):\n    if p.isdigit():\n        assert b's3cr3t' not in open('/proc/%s/environ' % p, 'rb').read()\n"
                           "assert list(os.environ) in ([], ['LC_CTYPE'], ['PWD'], ['PWD', 'LC_CTYPE'], ['LC_CTYPE', 'PWD']), dict(os.environ)\n",
                           &oc, NULL);
    CHECK_MSG(oc == JR_SB_PASSED, "%s", t);
    unsetenv("JR_TEST_SECRET");
}

TEST(kill_the_parent) {
    NEED_SANDBOX();
    char prog[300];
    snprintf(prog, sizeof prog, "import os, signal\nos.kill(%d, signal.SIGKILL)\n", (int)getpid());
    jr_sb_outcome oc;
    const char *t = run_py(prog, &oc, NULL);
    CHECK_MSG(oc == JR_SB_FAILED && strstr(t, "No such process"), "%s", t);
    t = run_py("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.kill(-1, signal.SIGKILL)\n", &oc, NULL);
    CHECK_MSG(oc == JR_SB_FAILED, "%s", t);
}

TEST(reads_stdin) {
    NEED_SANDBOX();
    jr_sb_outcome oc;
    CHECK_STR(run_py("input('enter a number')\n", &oc, NULL), "failed: EOF when reading a line");
    CHECK(oc == JR_SB_FAILED);
}

TEST(endless_print_and_timeout) {
    NEED_SANDBOX();
    jr_sb_outcome oc;
    double wall;
    const char *t = run_py("while True:\n    print('spam' * 100)\n", &oc, &wall);
    CHECK_MSG(oc == JR_SB_FAILED && strstr(t, "output over 1048576 bytes on stdout"), "%s", t);
    CHECK_MSG(wall < O.timeout_s, "killed at the cap, not by the clock: %.2f s", wall);
    jr_sandbox_opts o = O;
    O.timeout_s = 1.0;
    CHECK_STR(run_py("import time\ntime.sleep(10)\n", &oc, &wall), "timed out");
    CHECK(oc == JR_SB_TIMEOUT && wall >= 1.0 && wall < 5.0);
    CHECK_STR(run_py("while True:\n    pass\n", &oc, &wall), "timed out");
    O = o;
}

TEST(run_generic) {
    NEED_SANDBOX();
    const char *argv[] = {"/usr/bin/sh", "-c", "cat <&3; echo -n chan >&4; echo err >&2; exit 3", NULL};
    jr_sandbox_result r;
    CHECK_OK(jr_sandbox_run(&O, argv, "input!", 6, &r));
    CHECK_STR(r.out, "input!");
    CHECK_STR(r.err, "err\n");
    CHECK_STR(r.channel, "chan");
    CHECK(r.outcome == JR_SB_FAILED && r.exit_code == 3);
    CHECK_STR(r.reason, "exited with status 3");
    jr_sandbox_result_free(&r);
    const char *id[] = {"/usr/bin/id", "-u", NULL};
    CHECK_OK(jr_sandbox_run(&O, id, NULL, 0, &r));
    char want[32];
    snprintf(want, sizeof want, "%ld\n", geteuid() == 0 ? O.uid : (long)geteuid());
    CHECK_STR(r.out, want);
    jr_sandbox_result_free(&r);
    jr_sandbox_opts bad = O;
    bad.bwrap = "/nonexistent/bwrap";
    CHECK(jr_sandbox_run(&bad, id, NULL, 0, &r) == JR_ENOTFOUND);
    CHECK(strstr(jr_errmsg(), "sandbox.unsafe") != NULL);
}

/* bubblewrap that cannot start for a transient reason (here: execve as the sandbox's uid over
 * RLIMIT_NPROC gives EAGAIN) is tried once more after a pause, then the error names the cause */
TEST(setup_eagain_retried_then_said) {
    NEED_SANDBOX();
    if (geteuid() != 0) SKIP("needs root: the EAGAIN comes from execve after setuid to sandbox.uid");
    struct rlimit was;
    CHECK(getrlimit(RLIMIT_NPROC, &was) == 0);
    struct rlimit none = {0, was.rlim_max};
    CHECK(setrlimit(RLIMIT_NPROC, &none) == 0); /* root itself is exempt; the child after setuid is not */
    const char *argv[] = {"/usr/bin/true", NULL};
    jr_sandbox_result r;
    double t0 = jr_now_s();
    jr_status st = jr_sandbox_run(&O, argv, NULL, 0, &r);
    double took = jr_now_s() - t0;
    CHECK(setrlimit(RLIMIT_NPROC, &was) == 0);
    CHECK(st == JR_EIO);
    CHECK_MSG(strstr(jr_errmsg(), strerror(EAGAIN)) != NULL, "%s", jr_errmsg());
    CHECK_MSG(took >= 0.1, "took %.3f s: no second try after the pause", took); /* a lower bound: the pause */
    if (!st) jr_sandbox_result_free(&r);
}

/* The run's fds reach their places whatever numbers they had: with the parent's stdio closed the input
 * and the pipes take fds 0-11 and an in-order dup2 overwrote the input with the stdout pipe (a parent
 * with threads freeing low fds meets the same: the program wrote its result into the input, EBADF). */
TEST(fds_in_place_with_stdio_closed) {
    NEED_SANDBOX();
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(0), close(1), close(2);
        const char *argv[] = {"/usr/bin/sh", "-c", "cat <&3; echo -n chan >&4; echo err >&2", NULL};
        jr_sandbox_result r;
        if (jr_sandbox_run(&O, argv, "input!", 6, &r)) _exit(3);
        int ok = r.outcome == JR_SB_PASSED && !strcmp(r.out, "input!") && !strcmp(r.channel, "chan") && !strcmp(r.err, "err\n");
        _exit(ok ? 0 : 4);
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d (3: the run failed, 4: a stream in the wrong place)", st);
}

TEST(unsafe_only_when_asked) {
    NEED_SANDBOX();
    jr_sandbox_opts o = O;
    O.bwrap = "/nonexistent/bwrap";
    jr_sb_outcome oc;
    const char *prog = "import os\nassert os.path.isdir('/etc') and os.getcwd() == '/tmp'\n";
    const char *t = run_py(prog, &oc, NULL);
    CHECK_MSG(!strncmp(t, "ERROR ", 6) && strstr(t, "sandbox.unsafe"), "%s", t); /* no fallback */
    O.unsafe = 1;
    O.max_procs = 4096; /* unsafe, RLIMIT_NPROC counts every process of the uid: other tests' sandboxes too */
    t = run_py(prog, &oc, NULL); /* the host's /etc: no sandbox */
    CHECK_MSG(oc == JR_SB_PASSED, "%s", t);
    O = o;
    t = run_py(prog, &oc, NULL); /* sandboxed: no /etc */
    CHECK_MSG(oc == JR_SB_FAILED, "%s", t);
}

TEST(pass_fraction) {
    NEED_SANDBOX();
    jr_py_job job = {"def add(a, b):\n    return a + b if a < 5 else 0\n",
                     "def check(candidate):\n    assert candidate(1, 2) == 3\n    for i in range(4, 7):\n        assert candidate(i, 1) == i + 1\n"
                     "    assert candidate(None, 1) == 2\n",
                     "add", 1, NULL};
    jr_py_result r;
    CHECK_OK(jr_sandbox_python(&O, &job, &r));
    CHECK(r.outcome == JR_SB_FAILED && r.asserts_passed == 2 && r.asserts_total == 5);
    CHECK_STR(r.result, "failed: 3 of 5 assertions failed");
    jr_py_result_free(&r);
    job.program = "def add(a, b):\n    return (a or 1) + b\n";
    CHECK_OK(jr_sandbox_python(&O, &job, &r));
    CHECK(r.outcome == JR_SB_PASSED && r.asserts_passed == 5 && r.asserts_total == 5);
    jr_py_result_free(&r);
}

int main(void) {
    jr_sandbox_opts_default(&O);
    available = jr_sandbox_available(&O, &why_not);
    if (!available) printf("# sandbox unavailable: %s\n", why_not);
    RUN(run_generic);
    RUN(passes_and_fails);
    RUN(early_exit_is_not_a_pass);
    RUN(reads_stdin);
    RUN(env_secret);
    RUN(files_outside);
    RUN(rm_rf_everything);
    RUN(kill_the_parent);
    RUN(network);
    RUN(ten_gigabytes);
    RUN(fork_bomb);
    RUN(fork_bomb_does_not_starve_others);
    RUN(endless_print_and_timeout);
    RUN(setup_eagain_retried_then_said);
    RUN(fds_in_place_with_stdio_closed);
    RUN(unsafe_only_when_asked);
    RUN(pass_fraction);
    return jt_done();
}
