/* sandbox.c - runs a command under bubblewrap with rlimits, an unprivileged uid, a wall-clock kill
 * of its process group and capped output */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "judgerl/clock.h"
#include "judgerl/sandbox.h"
#include "judgerl/strbuf.h"

const jr_cfg_field jr_sandbox_cfg[] = {
    {"sandbox.timeout_s", JR_CFG_FLOAT, "3.0", "wall-clock limit of one run; the process group is killed after it", NULL, NULL, 0.01, 3600},
    {"sandbox.cpu_s", JR_CFG_FLOAT, "0", "CPU seconds per process (RLIMIT_CPU); 0: ceil(timeout_s) + 1", NULL, NULL, 0, 3600},
    {"sandbox.memory_mb", JR_CFG_INT, "2048", "address space per process, MiB (RLIMIT_AS)", NULL, NULL, 16, 1 << 20},
    {"sandbox.max_procs", JR_CFG_INT, "32", "processes and threads inside one sandbox (RLIMIT_NPROC in its user namespace)", NULL, NULL, 1, 4096},
    {"sandbox.file_mb", JR_CFG_INT, "16", "largest file a run may write, MiB (RLIMIT_FSIZE)", NULL, NULL, 1, 1 << 20},
    {"sandbox.max_files", JR_CFG_INT, "64", "open files per process (RLIMIT_NOFILE)", NULL, NULL, 8, 65536},
    {"sandbox.tmp_mb", JR_CFG_INT, "64", "size of the private tmpfs /tmp, MiB", NULL, NULL, 1, 1 << 20},
    {"sandbox.output_bytes", JR_CFG_INT, "1048576", "stdout and stderr kept per run; a run printing more is killed and failed", NULL, NULL, 1024, 1 << 30},
    {"sandbox.uid", JR_CFG_INT, "65534", "uid/gid the sandbox runs as when judgerl runs as root (RLIMIT_NPROC does not bind root)", NULL, NULL, 1, 4294967294.0},
    {"sandbox.unsafe", JR_CFG_BOOL, "false", "run generated code WITHOUT bubblewrap (rlimits and the kill only): only for code you trust", NULL, NULL, 0, 0},
    {"sandbox.bwrap", JR_CFG_STRING, "bwrap", "the bubblewrap binary (Debian package bubblewrap)", NULL, NULL, 0, 0},
    {"sandbox.python", JR_CFG_STRING, "/usr/bin/python3", "the Python interpreter, as seen inside the sandbox (under /usr)", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

void jr_sandbox_opts_default(jr_sandbox_opts *o) {
    *o = (jr_sandbox_opts){.timeout_s = 3.0, .cpu_s = 0, .memory_mb = 2048, .max_procs = 32, .file_mb = 16,
                           .max_files = 64, .tmp_mb = 64, .output_bytes = 1 << 20, .uid = 65534, .unsafe = 0,
                           .bwrap = "bwrap", .python = "/usr/bin/python3"};
}

void jr_sandbox_opts_from_config(jr_sandbox_opts *o, const jr_config *c) {
    jr_sandbox_opts_default(o);
    o->timeout_s = jr_cfg_float(c, "sandbox.timeout_s");
    o->cpu_s = jr_cfg_float(c, "sandbox.cpu_s");
    o->memory_mb = (long)jr_cfg_int(c, "sandbox.memory_mb");
    o->max_procs = (long)jr_cfg_int(c, "sandbox.max_procs");
    o->file_mb = (long)jr_cfg_int(c, "sandbox.file_mb");
    o->max_files = (long)jr_cfg_int(c, "sandbox.max_files");
    o->tmp_mb = (long)jr_cfg_int(c, "sandbox.tmp_mb");
    o->output_bytes = (long)jr_cfg_int(c, "sandbox.output_bytes");
    o->uid = (long)jr_cfg_int(c, "sandbox.uid");
    o->unsafe = jr_cfg_bool(c, "sandbox.unsafe");
    o->bwrap = jr_cfg_str(c, "sandbox.bwrap");
    o->python = jr_cfg_str(c, "sandbox.python");
}

jr_status jr_sandbox_opts_check(const jr_sandbox_opts *o) {
    if (!(o->timeout_s > 0 && o->timeout_s <= 3600)) return jr_fail(JR_EINVAL, "sandbox.timeout_s=%g: use a value in (0, 3600]", o->timeout_s);
    if (!(o->cpu_s >= 0 && o->cpu_s <= 3600)) return jr_fail(JR_EINVAL, "sandbox.cpu_s=%g: use a value in [0, 3600]", o->cpu_s);
    struct { const char *name; long v, min; } lim[] = {
        {"memory_mb", o->memory_mb, 16}, {"max_procs", o->max_procs, 1}, {"file_mb", o->file_mb, 1},
        {"max_files", o->max_files, 8}, {"tmp_mb", o->tmp_mb, 1}, {"output_bytes", o->output_bytes, 1024}, {"uid", o->uid, 1},
    };
    for (size_t i = 0; i < sizeof lim / sizeof *lim; i++)
        if (lim[i].v < lim[i].min) return jr_fail(JR_EINVAL, "sandbox.%s=%ld: at least %ld", lim[i].name, lim[i].v, lim[i].min);
    if (!o->bwrap || !*o->bwrap) return jr_fail(JR_EINVAL, "sandbox.bwrap: name the bubblewrap binary");
    if (!o->python || o->python[0] != '/') return jr_fail(JR_EINVAL, "sandbox.python: an absolute path is needed");
    return JR_OK;
}

void jr_sandbox_result_free(jr_sandbox_result *r) {
    if (!r) return;
    free(r->reason);
    free(r->out);
    free(r->err);
    free(r->channel);
    memset(r, 0, sizeof *r);
}

/* The absolute path of `name` (as execvp would find it), or NULL. Caller frees. */
static char *find_exe(const char *name) {
    if (strchr(name, '/')) return access(name, X_OK) ? NULL : jr_strdup(name);
    const char *path = getenv("PATH");
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        char buf[4096];
        if (n && n + strlen(name) + 2 < sizeof buf) {
            snprintf(buf, sizeof buf, "%.*s/%s", (int)n, path, name);
            if (!access(buf, X_OK)) return jr_strdup(buf);
        }
        path += n + (path[n] == ':');
    }
    return NULL;
}

/* argv for execve: bwrap's options, then prlimit (RLIMIT_NPROC inside the new user namespace),
 * then the command. Strings in `store` (freed by the caller). */
static const char **build_argv(const jr_sandbox_opts *o, const char *bwrap, const char *const *argv, char store[3][64]) {
    size_t n = 0;
    while (argv[n]) n++;
    const char **a = jr_calloc(n + 64, sizeof *a);
    if (!a) return NULL;
    size_t k = 0;
    if (o->unsafe) {
        for (size_t i = 0; i < n; i++) a[k++] = argv[i];
        return a;
    }
    snprintf(store[0], 64, "%ld", o->tmp_mb * 1024 * 1024);
    snprintf(store[1], 64, "--nproc=%ld:%ld", o->max_procs, o->max_procs);
    static const char *const fixed[] = {
        "--unshare-all", "--die-with-parent", "--new-session", "--clearenv", "--hostname", "sandbox",
        "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
        "--symlink", "usr/lib", "/lib", "--proc", "/proc", "--dev", "/dev", NULL};
    a[k++] = bwrap;
    for (int i = 0; fixed[i]; i++) a[k++] = fixed[i];
    if (!access("/usr/lib64", F_OK)) { a[k++] = "--symlink"; a[k++] = "usr/lib64"; a[k++] = "/lib64"; }
    a[k++] = "--size"; a[k++] = store[0]; a[k++] = "--tmpfs"; a[k++] = "/tmp";
    a[k++] = "--remount-ro"; a[k++] = "/";
    a[k++] = "--chdir"; a[k++] = "/tmp";
    a[k++] = "--info-fd"; a[k++] = "5";
    a[k++] = "--"; a[k++] = "/usr/bin/prlimit"; a[k++] = store[1]; a[k++] = "--";
    for (size_t i = 0; i < n; i++) a[k++] = argv[i];
    return a;
}

/* In the child: limits, credentials, fds, exec. Only async-signal-safe calls. */
static void child(const jr_sandbox_opts *o, const char **argv, const int fds[8]) {
    setsid();
    int nfd = fds[7] >= 0 ? 8 : 7;
    /* first above 6, then into place: a source fd that is itself a target below 7 (the parent's threads
     * free and reuse low numbers, or its stdio is closed) would be overwritten by an earlier dup2 (the
     * program then read its output pipe as input or wrote its result into the read-only input: EBADF) */
    int hi[8];
    for (int i = 0; i < nfd; i++)
        if ((hi[i] = fcntl(fds[i], F_DUPFD, 8)) < 0) _exit(126);
    for (int i = 0; i < nfd; i++)
        if (dup2(hi[i], i) < 0) _exit(126);
    if (fcntl(6, F_SETFD, FD_CLOEXEC) < 0) _exit(126);
    syscall(SYS_close_range, (unsigned)nfd, ~0U, 0U);
    double cpu = o->cpu_s > 0 ? o->cpu_s : ceil(o->timeout_s) + 1;
    struct { int res; rlim_t v; } lim[] = {
        {RLIMIT_CPU, (rlim_t)ceil(cpu)}, {RLIMIT_AS, (rlim_t)o->memory_mb << 20}, {RLIMIT_FSIZE, (rlim_t)o->file_mb << 20},
        {RLIMIT_NOFILE, (rlim_t)o->max_files}, {RLIMIT_CORE, 0}, {RLIMIT_NPROC, (rlim_t)o->max_procs},
    };
    /* Without bwrap, RLIMIT_NPROC is set here; with it, prlimit sets it inside the sandbox's own user
     * namespace, so that the count is per sandbox and not shared by every run of the same uid. */
    int n_lim = o->unsafe ? 6 : 5;
    for (int i = 0; i < n_lim; i++) {
        struct rlimit r = {lim[i].v, lim[i].v};
        if (setrlimit(lim[i].res, &r)) goto fail;
    }
    if (geteuid() == 0) {
        if (setgroups(0, NULL) || setgid((gid_t)o->uid) || setuid((uid_t)o->uid)) goto fail;
    }
    if (o->unsafe && chdir("/tmp")) goto fail; /* the sandbox's working directory is /tmp too */
    /* After setuid (which clears it): if judgerl dies, bwrap dies, and --die-with-parent the rest. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    char *const envp[] = {NULL};
    execve(argv[0], (char *const *)argv, envp);
fail:;
    int e = errno;
    ssize_t w = write(6, &e, sizeof e);
    (void)w;
    _exit(127);
}

typedef struct stream {
    int fd;
    jr_strbuf buf;
    long cap;    /* bytes kept */
    int over;    /* more than cap arrived */
} stream;

/* Reads what is available; returns 0 at EOF (fd closed), 1 otherwise. */
static int drain(stream *s) {
    char tmp[65536];
    ssize_t r = read(s->fd, tmp, sizeof tmp);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) return 1;
    if (r <= 0) { close(s->fd); s->fd = -1; return 0; }
    size_t keep = s->buf.n < (size_t)s->cap ? (size_t)s->cap - s->buf.n : 0;
    if ((size_t)r > keep) s->over = 1;
    jr_strbuf_addn(&s->buf, tmp, (size_t)r < keep ? (size_t)r : keep);
    return 1;
}

static const char *signame(int sig) {
    switch (sig) {
    case SIGKILL: return "SIGKILL";
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGXCPU: return "SIGXCPU (CPU time limit)";
    case SIGXFSZ: return "SIGXFSZ (file size limit)";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGTERM: return "SIGTERM";
    case SIGPIPE: return "SIGPIPE";
    default: return "signal";
    }
}

static void set_reason(jr_sandbox_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_reason(jr_sandbox_result *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    free(r->reason);
    if (vasprintf(&r->reason, fmt, ap) < 0) r->reason = NULL;
    va_end(ap);
}

static void close_all(int *fds, int n) {
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0) { close(fds[i]); fds[i] = -1; }
}

/* The pipes and the input memfd; p[2k] is the parent's end of pipe k (child's end p[2k+1]). */
static jr_status make_fds(const void *input, size_t len, int *in_fd, int p[10]) {
    for (int i = 0; i < 10; i++) p[i] = -1;
    *in_fd = memfd_create("jr-sandbox-input", MFD_CLOEXEC);
    if (*in_fd < 0) return jr_fail(JR_EIO, "sandbox: memfd_create: %s", strerror(errno));
    for (size_t off = 0; input && off < len;) {
        ssize_t w = write(*in_fd, (const char *)input + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return jr_fail(JR_EIO, "sandbox: writing the input: %s", strerror(errno));
        off += (size_t)w;
    }
    lseek(*in_fd, 0, SEEK_SET);
    for (int k = 0; k < 5; k++) {
        int pp[2];
        if (pipe2(pp, O_CLOEXEC)) return jr_fail(JR_EIO, "sandbox: pipe: %s", strerror(errno));
        p[2 * k] = pp[0];
        p[2 * k + 1] = pp[1];
    }
    return JR_OK;
}

/* Builds the command line and the fds, and forks the child: on success, *pid is the child, *t0 the
 * time of the fork and p[2k] the parent's end of pipe k (the child's ends are closed). *transient is
 * set when fork failed with EAGAIN. */
static jr_status spawn(const jr_sandbox_opts *o, const char *const *argv, const void *input, size_t len, int peer,
                       int p[10], pid_t *pid, double *t0, int *transient) {
    jr_status st = JR_OK;
    char *bwrap = o->unsafe ? NULL : find_exe(o->bwrap);
    if (!o->unsafe && !bwrap)
        return jr_fail(JR_ENOTFOUND, "sandbox: '%s' not found: install bubblewrap (tools/deps.sh build), or set sandbox.unsafe: true to run code unsandboxed", o->bwrap);
    char store[3][64];
    const char **a = build_argv(o, bwrap, argv, store);
    int in_fd = -1, devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (!a || devnull < 0 || (st = make_fds(input, len, &in_fd, p))) {
        if (!st) st = jr_fail(JR_EIO, "sandbox: /dev/null: %s", strerror(errno));
        free(a); free(bwrap);
        if (in_fd >= 0) close(in_fd);
        if (devnull >= 0) close(devnull);
        close_all(p, 10);
        return st;
    }
    /* child fds: 0 stdin, 1 stdout, 2 stderr, 3 input, 4 channel, 5 bwrap info, 6 exec error, 7 peer */
    const int cfds[8] = {devnull, p[1], p[3], in_fd, p[5], p[7], p[9], peer};
    *t0 = jr_now_s();
    *pid = fork();
    if (*pid == 0) child(o, a, cfds);
    int fork_errno = errno;
    close(devnull);
    close(in_fd);
    for (int k = 0; k < 5; k++) { close(p[2 * k + 1]); p[2 * k + 1] = -1; }
    free(a);
    free(bwrap);
    if (*pid < 0) {
        close_all(p, 10);
        *transient = fork_errno == EAGAIN;
        return jr_fail(JR_EIO, "sandbox: fork: %s", strerror(fork_errno));
    }
    return JR_OK;
}

/* Reads the streams until they close (the child exited, plus a grace period for stragglers), the
 * deadline passes or an output cap is crossed; *exited once the child is reaped into *status.
 * Returns why the run is cut short: 0 not, 1 timeout, 2 stdout, 3 stderr. */
static int pump(stream s[4], pid_t pid, int pidfd, double deadline, int *status, int *exited) {
    double grace_end = 0;
    int killed_for = 0;
    for (;;) {
        struct pollfd pf[5];
        int np = 0, idx[5];
        for (int i = 0; i < 4; i++)
            if (s[i].fd >= 0) { pf[np] = (struct pollfd){s[i].fd, POLLIN, 0}; idx[np++] = i; }
        if (!*exited && pidfd >= 0) { pf[np] = (struct pollfd){pidfd, POLLIN, 0}; idx[np++] = -1; }
        if (!np) break;
        double t = jr_now_s(), until = *exited ? grace_end : deadline;
        if (t >= until) {
            if (!*exited) killed_for = 1;
            break;
        }
        int ms = (int)ceil((until - t) * 1000);
        if (!*exited && pidfd < 0 && ms > 20) ms = 20; /* no pidfd: poll waitpid */
        int r = poll(pf, (nfds_t)np, ms);
        if (r < 0 && errno != EINTR) break;
        for (int j = 0; r > 0 && j < np; j++) {
            if (!pf[j].revents) continue;
            if (idx[j] >= 0) drain(&s[idx[j]]);
        }
        if (s[0].over || s[1].over) { killed_for = s[0].over ? 2 : 3; break; }
        if (!*exited && waitpid(pid, status, WNOHANG) == pid) {
            *exited = 1;
            grace_end = jr_now_s() + 0.5; /* pipes still held by stragglers close when the group dies */
            kill(-pid, SIGKILL);
        }
    }
    return killed_for;
}

/* Takes what is left in the streams' pipes without waiting, and closes them. */
static void drain_rest(stream s[4]) {
    for (int i = 0; i < 4; i++)
        if (s[i].fd >= 0) {
            fcntl(s[i].fd, F_SETFL, O_NONBLOCK);
            while (s[i].fd >= 0 && drain(&s[i]) && !s[i].over) {
                struct pollfd pf = {s[i].fd, POLLIN, 0};
                if (poll(&pf, 1, 0) <= 0) break;
            }
            if (s[i].fd >= 0) close(s[i].fd);
        }
}

/* The outcome and reason of a run whose child has been reaped (killed_for as from pump; started:
 * the sandbox was set up). *transient is set when bubblewrap died before the sandbox existed (the
 * program never ran) without a word, or with EAGAIN (a namespace or process the kernel could not
 * make just then). */
static jr_status classify(const jr_sandbox_opts *o, jr_sandbox_result *res, int status, int killed_for, int started,
                          int *transient) {
    res->killed = killed_for != 0;
    if (killed_for == 1) { res->outcome = JR_SB_TIMEOUT; return JR_OK; }
    res->outcome = JR_SB_FAILED;
    if (killed_for) { set_reason(res, "output over %ld bytes on %s", o->output_bytes, killed_for == 2 ? "stdout" : "stderr"); return JR_OK; }
    if (WIFSIGNALED(status)) res->signal = WTERMSIG(status);
    else res->exit_code = WEXITSTATUS(status);
    if (!started) { /* bwrap stopped before the sandbox existed: the sandbox is broken, not the program */
        char line[300];
        snprintf(line, sizeof line, "%.*s", (int)strcspn(res->err, "\n"), res->err);
        *transient = !line[0] || strstr(line, strerror(EAGAIN)) != NULL;
        jr_sandbox_result_free(res);
        return jr_fail(JR_EIO, "sandbox: bubblewrap could not set up the sandbox: %s (user namespaces must be allowed; or set sandbox.unsafe: true)",
                       line[0] ? line : "no message");
    }
    /* bwrap reports a command killed by signal N as exit status 128 + N */
    if (!o->unsafe && res->exit_code > 128 && res->exit_code < 128 + 65) { res->signal = res->exit_code - 128; res->exit_code = -1; }
    if (res->signal) set_reason(res, "killed by signal %d (%s)", res->signal, signame(res->signal));
    else if (res->exit_code) set_reason(res, "exited with status %d", res->exit_code);
    else res->outcome = JR_SB_PASSED;
    if (res->outcome == JR_SB_FAILED && !res->reason) { jr_sandbox_result_free(res); return jr_fail(JR_ENOMEM, "sandbox: out of memory"); }
    return JR_OK;
}

static jr_status run_once(const jr_sandbox_opts *o, const char *const *argv, const void *input, size_t len, int peer,
                          jr_sandbox_result *res, int *transient) {
    *transient = 0;
    memset(res, 0, sizeof *res);
    res->exit_code = -1;
    jr_status st = jr_sandbox_opts_check(o);
    if (st) return st;
    if (!argv || !argv[0] || argv[0][0] != '/') return jr_fail(JR_EINVAL, "sandbox: the command needs an absolute path");
    int p[10] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1}; /* spawn's error paths close them all */
    pid_t pid = 0;
    double t0 = 0;
    st = spawn(o, argv, input, len, peer, p, &pid, &t0, transient);
    if (st) return st;

    stream s[4] = {{p[0], {0}, o->output_bytes, 0}, {p[2], {0}, o->output_bytes, 0},
                   {p[4], {0}, 1 << 20, 0}, {p[6], {0}, 4096, 0}};
    int errfd = p[8];
    int exec_errno = 0;
    {   /* the exec error pipe closes on a successful execve */
        ssize_t r;
        while ((r = read(errfd, &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {}
        if (r <= 0) exec_errno = 0;
        close(errfd);
    }
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    int status = 0, exited = 0;
    int killed_for = exec_errno ? 0 : pump(s, pid, pidfd, t0 + o->timeout_s, &status, &exited);
    kill(-pid, SIGKILL);
    if (!exited) while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    res->wall_s = jr_now_s() - t0;
    drain_rest(s);
    if (pidfd >= 0) close(pidfd);
    int started = s[3].buf.n > 0 || o->unsafe;
    char *info = jr_strbuf_take(&s[3].buf);
    free(info);
    res->out = jr_strbuf_take(&s[0].buf);
    res->err = jr_strbuf_take(&s[1].buf);
    res->channel = jr_strbuf_take(&s[2].buf);
    if (!res->out || !res->err || !res->channel) { jr_sandbox_result_free(res); return jr_fail(JR_ENOMEM, "sandbox: out of memory"); }
    res->out_len = strlen(res->out);
    res->err_len = strlen(res->err);
    res->channel_len = strlen(res->channel);
    if (exec_errno) {
        *transient = exec_errno == EAGAIN; /* execve after setuid over the uid's RLIMIT_NPROC */
        jr_sandbox_result_free(res);
        return jr_fail(JR_EIO, "sandbox: cannot start %s (as uid %ld): %s%s", o->unsafe ? argv[0] : o->bwrap,
                       geteuid() == 0 ? o->uid : (long)geteuid(), strerror(exec_errno),
                       exec_errno == EAGAIN ? " (the uid's processes, other runs' included, are over RLIMIT_NPROC"
                                              "; with sandbox.unsafe that is sandbox.max_procs for the whole uid)" : "");
    }
    return classify(o, res, status, killed_for, started, transient);
}

int jr_sandbox_available(const jr_sandbox_opts *o, const char **why) {
    static __thread char msg[600];
    char *bwrap = find_exe(o->bwrap);
    if (!bwrap) {
        snprintf(msg, sizeof msg, "'%s' not found (Debian package bubblewrap)", o->bwrap);
        if (why) *why = msg;
        return 0;
    }
    /* exactly `bwrap --unshare-user true` (with /usr to find true), as the sandbox's uid */
    jr_sandbox_opts t = *o;
    t.unsafe = 1;
    t.timeout_s = 20;
    /* run unsafe, the probe's RLIMIT_NPROC would count every process of the uid on the machine (other
     * sandboxes, their zombies): a real run sets it inside bwrap's user namespace instead */
    t.max_procs = 4096;
    const char *argv[] = {bwrap, "--unshare-user", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
                          "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "/usr/bin/true", NULL};
    jr_sandbox_result r;
    jr_status st = jr_sandbox_run(&t, argv, NULL, 0, &r);
    free(bwrap);
    if (!st && r.outcome == JR_SB_PASSED) { jr_sandbox_result_free(&r); return 1; }
    if (st) snprintf(msg, sizeof msg, "%s", jr_errmsg());
    else snprintf(msg, sizeof msg, "bwrap --unshare-user true (as uid %ld): %s: %.200s", geteuid() == 0 ? o->uid : (long)geteuid(),
                  r.outcome == JR_SB_TIMEOUT ? "timed out" : r.reason, r.err);
    jr_sandbox_result_free(&r);
    if (why) *why = msg;
    return 0;
}

jr_status jr_sandbox_run(const jr_sandbox_opts *o, const char *const *argv, const void *input, size_t len,
                         jr_sandbox_result *res) {
    return jr_sandbox_run_peer(o, argv, input, len, -1, res);
}

jr_status jr_sandbox_run_peer(const jr_sandbox_opts *o, const char *const *argv, const void *input, size_t len, int peer,
                              jr_sandbox_result *res) {
    int transient = 0;
    jr_status st = run_once(o, argv, input, len, peer, res, &transient);
    /* bubblewrap that died before the sandbox existed with nothing on stderr (seen once on a loaded
     * machine, among 164 runs that set up fine) or with "Resource temporarily unavailable" (seen twice
     * at load 33-40 while other test suites ran) gets one more try after a short pause: the program
     * never ran, so nothing is repeated; a second such failure is the error */
    if (st && transient) {
        nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
        st = run_once(o, argv, input, len, peer, res, &transient);
    }
    return st;
}
