/* sandbox.h - generated code run safely: bubblewrap (no network, read-only system, private /tmp),
 * rlimits, an unprivileged uid, a wall-clock kill and capped output; Python programs on top */
#ifndef JUDGERL_SANDBOX_H
#define JUDGERL_SANDBOX_H

#include <stddef.h>

#include "judgerl/config.h"
#include "judgerl/status.h"

/* The sandbox's options (sandbox.* in a config; defaults from jr_sandbox_opts_default). */
typedef struct jr_sandbox_opts {
    double timeout_s;    /* wall clock from start to kill of the whole process group (3) */
    double cpu_s;        /* RLIMIT_CPU per process; 0: ceil(timeout_s) + 1 */
    long memory_mb;      /* RLIMIT_AS per process (2048) */
    long max_procs;      /* RLIMIT_NPROC inside the sandbox's own user namespace (32) */
    long file_mb;        /* RLIMIT_FSIZE (16) */
    long max_files;      /* RLIMIT_NOFILE (64) */
    long tmp_mb;         /* size of the private tmpfs /tmp (64) */
    long output_bytes;   /* stdout and stderr are each kept up to this; more kills the run (1 MiB) */
    long uid;            /* when judgerl runs as root: the uid/gid the sandbox runs as (65534) */
    int unsafe;          /* 1: no bubblewrap (rlimits, uid and the kill only); sandbox.unsafe: true */
    const char *bwrap;   /* the bubblewrap binary ("bwrap", looked up in PATH) */
    const char *python;  /* the interpreter inside (/usr/bin/python3) */
} jr_sandbox_opts;

/* The options table (sandbox.*); include it in the tables of any command that may run code. */
extern const jr_cfg_field jr_sandbox_cfg[];

/* Fills o with the defaults above. */
void jr_sandbox_opts_default(jr_sandbox_opts *o);

/* Fills o from a config loaded with jr_sandbox_cfg. Strings are borrowed from cfg. */
void jr_sandbox_opts_from_config(jr_sandbox_opts *o, const jr_config *cfg);

/* Checks the options (positive limits, timeout in (0, 3600]); the message names the option. */
jr_status jr_sandbox_opts_check(const jr_sandbox_opts *o);

/* How a run ended. */
typedef enum {
    JR_SB_PASSED = 0, /* exited with status 0 (jr_sandbox_python: the tests passed) */
    JR_SB_FAILED,     /* anything else: reason says what */
    JR_SB_TIMEOUT     /* the wall clock ran out; the process group was killed */
} jr_sb_outcome;

typedef struct jr_sandbox_result {
    jr_sb_outcome outcome;
    char *reason;       /* FAILED: one line ("exited with status 1", "killed by signal 9 (SIGKILL)",
                           "output over 1048576 bytes on stdout", ...); NULL otherwise. Owned. */
    int exit_code;      /* when it exited, else -1 */
    int signal;         /* when a signal ended it, else 0 */
    char *out, *err;    /* captured stdout / stderr, NUL-terminated, at most output_bytes (owned) */
    size_t out_len, err_len;
    char *channel;      /* what the program wrote on fd 4 (at most 1 MiB, NUL-terminated; owned) */
    size_t channel_len;
    double wall_s;      /* start to end, seconds */
    int killed;         /* 1 when judgerl killed it (clock or output cap): what it said after is moot */
} jr_sandbox_result;

void jr_sandbox_result_free(jr_sandbox_result *r);

/* 1 when `bwrap --unshare-user true` works here (as the sandbox's uid when root), else 0 with *why
 * set to a one-line reason (thread-local storage; why may be NULL). Tests skip on 0 and only on 0:
 * a sandbox that fails otherwise is a failure. */
int jr_sandbox_available(const jr_sandbox_opts *o, const char **why);

/* Runs argv (argv[0] an absolute path inside the sandbox) in the sandbox and waits for it. Inside:
 * /usr read-only (with the /bin, /lib, /lib64 links), a private /tmp (tmp_mb, the working
 * directory), a new /proc and minimal /dev, no other file of the host; every namespace unshared
 * (no network: only a loopback of its own); empty environment; new session; stdin /dev/null; fd 3
 * reads `input` (len bytes; an empty file when NULL); fd 4 writes into res->channel. It runs as
 * `uid` when judgerl is root, with the rlimits of o (RLIMIT_NPROC set inside its own user
 * namespace, so parallel sandboxes do not share the count), and dies with judgerl.
 * Returns JR_OK with res filled whatever the program did; an error (res empty) only when the
 * sandbox itself could not start (bwrap missing or refused: the message quotes it). */
jr_status jr_sandbox_run(const jr_sandbox_opts *o, const char *const *argv, const void *input, size_t len,
                         jr_sandbox_result *res);

/* As jr_sandbox_run, with `peer` (an fd of the caller's, e.g. one end of a socketpair; -1: none) as fd 7
 * inside. The caller keeps and closes peer. */
jr_status jr_sandbox_run_peer(const jr_sandbox_opts *o, const char *const *argv, const void *input, size_t len, int peer,
                              jr_sandbox_result *res);

/* ---- Python programs against tests ---- */

/* One Python job: `program` (HumanEval's prompt + completion) against `test` (a Python suite that
 * defines check(candidate)), called as check(entry_point).
 * Two sandboxes run at once. The program's sandbox runs the program and then only answers calls
 * (a function name and arguments, JSON-encoded) with JSON-encoded results or exception names; the
 * tests' sandbox, where no code of the program ever runs, runs the test with proxies for the
 * program's functions and decides. What crosses is plain data: None, bool, int (any size), float
 * (inf and nan too), str, bytes, complex, list, tuple, set, frozenset, dict (keys of any of these).
 * Nothing the program writes, exits with or raises can count as a pass.
 * With count_all 0 (HumanEval's semantics), the first failed assert ends the run as
 * "failed: <assert message or AssertionError>"; with 1, each `assert` is counted instead of raised and
 * asserts_passed / asserts_total give the pass fraction. */
typedef struct jr_py_job {
    const char *program;
    const char *test;
    const char *entry_point;
    int count_all;
    const char *prelude;     /* trusted code run first on the tests' side (the row's prompt), or NULL:
                                the names it defines stay its own there (a test's helper such as
                                HumanEval/32's poly), whatever the program redefines */
} jr_py_job;

typedef struct jr_py_result {
    jr_sb_outcome outcome;
    char *result;        /* "passed", "timed out" or "failed: reason" (owned) */
    int asserts_passed;  /* count_all only, else 0 */
    int asserts_total;
    double wall_s;
} jr_py_result;

/* Runs a job with o->python in the sandbox (in o->unsafe mode, both processes run directly and
 * nothing separates them: trusted code only). PASSED only when the tests' process reports, with a
 * per-run nonce on its private channel, that check() ran to its end with every assert true;
 * TIMEOUT when a clock ran out first. Errors as jr_sandbox_run. */
jr_status jr_sandbox_python(const jr_sandbox_opts *o, const jr_py_job *job, jr_py_result *res);

void jr_py_result_free(jr_py_result *r);

#endif
