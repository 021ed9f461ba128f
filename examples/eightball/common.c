/* common.c - what the 8-ball demo's stages share: training in this process (or reusing a trained model),
 * judge servers as child processes, held-out generation and grading in this process */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "eightball/eightball.h"
#include "judgerl/config.h"
#include "judgerl/fsutil.h"
#include "judgerl/genrows.h"
#include "judgerl/judge.h"
#include "judgerl/kvcache.h"
#include "judgerl/model.h"
#include "judgerl/protocols.h"
#include "judgerl/reward.h"
#include "judgerl/sandbox.h"
#include "judgerl/sha256.h"
#include "judgerl/strbuf.h"
#include "judgerl/textgen.h"
#include "judgerl/train.h"

char *eb_path(const eb_ctx *c, char *buf, size_t cap, const char *fmt, ...) {
    int n = snprintf(buf, cap, "%s/", c->out);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < cap) vsnprintf(buf + n, cap - (size_t)n, fmt, ap);
    va_end(ap);
    return buf;
}

char *eb_endpoint(char *buf, size_t cap, int port) {
    snprintf(buf, cap, "judge.endpoints=[{url: \"http://127.0.0.1:%d/v1\", model: judge}]", port);
    return buf;
}

jr_status eb_load_jsonl(const char *path, json_t **out) {
    jr_status st = jr_genrows_read(path, out);
    size_t i;
    json_t *r;
    if (!st) json_array_foreach(*out, i, r) json_object_del(r, "_line");
    return st;
}

/* ---- training ---- */

/* jr_train_run on config + overrides: eb_train_or_reuse's trainer. */
static jr_status train_config(const char *config, int n_over, char *const *over, FILE *log, volatile sig_atomic_t *stop,
                              jr_train_result *res) {
    jr_config cfg;
    jr_status st = jr_config_load(&cfg, config, n_over, over, jr_train_tables);
    if (st) return st;
    st = jr_train_run(&cfg, log, stop, res);
    jr_config_free(&cfg);
    return st;
}

jr_status eb_train_or_reuse(eb_ctx *c, const char *dir, const char *config, char *const *over, int n_over, int *reused) {
    return eb_train_or_reuse_with(c, dir, "train", config, over, n_over, train_config, reused);
}

/* ---- the reuse stamp: what a training reads, by content ---- */

/* "file PATH SHA256" into sb for a regular file (hashed in 64 KiB reads); nothing when it cannot be read. */
static void stamp_file(jr_strbuf *sb, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return;
    jr_sha256 h;
    jr_sha256_init(&h);
    char buf[65536], hex[65];
    size_t r;
    while ((r = fread(buf, 1, sizeof buf, f)) > 0) jr_sha256_update(&h, buf, r);
    int bad = ferror(f);
    fclose(f);
    jr_sha256_final_hex(&h, hex);
    jr_strbuf_addf(sb, "file %s %s\n", path, bad ? "unreadable" : hex);
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A path a training value names: a regular file, or a directory's regular files (one level, sorted: a
 * model or tokenizer directory); not the training's own output directory `own` nor anything in it. */
static void stamp_path(jr_strbuf *sb, const char *path, const char *own) {
    struct stat stt;
    char real[PATH_MAX];
    if (!*path || stat(path, &stt) || !realpath(path, real)) return;
    size_t n = strlen(own);
    if (!strncmp(real, own, n) && (real[n] == 0 || real[n] == '/')) return;
    if (S_ISREG(stt.st_mode)) { stamp_file(sb, path); return; }
    if (!S_ISDIR(stt.st_mode)) return;
    char cwd[PATH_MAX];
    size_t m = strlen(real);
    if (getcwd(cwd, sizeof cwd) && !strncmp(cwd, real, m) && (cwd[m] == 0 || cwd[m] == '/' || m == 1))
        return; /* "." or an ancestor: not a model */
    DIR *d = opendir(path);
    if (!d) return;
    char **names = NULL;
    size_t k = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (k == cap) {
            char **grown = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof *names);
            if (!grown) break;
            names = grown;
        }
        if (!(names[k] = jr_strfmt("%s/%s", path, e->d_name))) break;
        k++;
    }
    closedir(d);
    if (names) qsort(names, k, sizeof *names, cmp_names);
    for (size_t i = 0; i < k; i++) {
        if (!stat(names[i], &stt) && S_ISREG(stt.st_mode)) stamp_file(sb, names[i]);
        free(names[i]);
    }
    free(names);
}

/* Every string leaf of a parsed config value but an output directory's (`out_dir`: what the training writes). */
static void stamp_strings(jr_strbuf *sb, const json_t *v, const char *own) {
    size_t i;
    const char *key;
    json_t *x;
    if (json_is_string(v)) stamp_path(sb, json_string_value(v), own);
    else if (json_is_array(v)) json_array_foreach(v, i, x) stamp_strings(sb, x, own);
    else if (json_is_object(v))
        json_object_foreach((json_t *)v, key, x)
            if (strcmp(key, "out_dir")) stamp_strings(sb, x, own);
}

/* The stamp of a training into *out: the arguments of the judgerl command that trains the same, then the content of the config file and of every file its values and the overrides' values name
 * (data, tokenizer, the model it starts from), so that an edited config or regenerated data retrains
 * instead of silently reusing a model trained on the old ones. */
static jr_status reuse_stamp(const char *dir, const char *cmd, const char *config, char *const *over, int n_over,
                             char **out) {
    jr_strbuf sb = {0};
    jr_strbuf_addf(&sb, "%s\n%s\n", cmd, config);
    for (int i = 0; i < n_over; i++) jr_strbuf_addf(&sb, "%s\n", over[i]);
    char own[PATH_MAX];
    if (!realpath(dir, own)) snprintf(own, sizeof own, "%s", dir);
    char *text = NULL;
    size_t len = 0;
    json_t *root = NULL;
    jr_status st = jr_read_file(config, &text, &len);
    if (!st) st = jr_yaml_parse(text, len, config, &root);
    free(text);
    if (st) { jr_strbuf_free(&sb); return st; }
    stamp_file(&sb, config);
    stamp_strings(&sb, root, own);
    json_decref(root);
    for (int i = 0; i < n_over; i++) { /* the value of KEY=VALUE, a YAML scalar or list */
        const char *eq = strchr(over[i], '=');
        json_t *v = NULL;
        if (eq && strncmp(over[i], "run.out_dir=", 12) && !jr_yaml_parse(eq + 1, strlen(eq + 1), over[i], &v))
            stamp_strings(&sb, v, own);
        json_decref(v);
    }
    *out = jr_strbuf_take(&sb);
    return *out ? JR_OK : jr_fail(JR_ENOMEM, "%s: out of memory", dir);
}

jr_status eb_stamp(const char *dir, const char *cmd, const char *config, char *const *over, int n_over, int *matches) {
    char *text = NULL, stamp[PATH_MAX + 32], cfgp[PATH_MAX + 32];
    jr_status st = reuse_stamp(dir, cmd, config, over, n_over, &text);
    if (st) return st;
    snprintf(stamp, sizeof stamp, "%s/demo-args.txt", dir);
    if (!matches) {
        st = jr_write_atomic(stamp, text, strlen(text));
        free(text);
        return st;
    }
    snprintf(cfgp, sizeof cfgp, "%s/model/config.json", dir);
    char *old = NULL;
    *matches = jr_path_exists(cfgp) && !jr_read_file(stamp, &old, NULL) && old && !strcmp(old, text);
    free(old);
    free(text);
    return JR_OK;
}

jr_status eb_train_or_reuse_with(eb_ctx *c, const char *dir, const char *cmd, const char *config, char *const *over, int n_over,
                                 eb_trainer train, int *reused) {
    jr_status st = eb_stamp(dir, cmd, config, over, n_over, reused);
    if (st || *reused) return st;
    /* a stale or partial run, or other inputs: start over (checkpoints of other inputs must not be resumed) */
    if ((st = jr_rmtree(dir))) return st;
    fprintf(c->logf, "\n$ judgerl %s %s", cmd, config);
    for (int i = 0; i < n_over; i++) fprintf(c->logf, " %s", over[i]);
    fprintf(c->logf, "\n");
    fflush(c->logf);
    jr_train_result res;
    st = train(config, n_over, over, c->logf, c->stop, &res);
    if (!st) fprintf(c->logf, "trained steps %lld..%lld: %.4f -> %.4f\n", (long long)res.first_step, (long long)res.last_step,
                     res.first_loss, res.last_loss);
    fflush(c->logf);
    if (!st) st = eb_stamp(dir, cmd, config, over, n_over, NULL);
    return st;
}

/* ---- child processes ---- */

extern char **environ;

jr_status eb_spawn(eb_ctx *c, char *const *args, const char *log, int single_thread, pid_t *pid) {
    *pid = -1;
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return jr_fail(JR_EIO, "%s: cannot open the log: %s", log, strerror(errno));
    size_t ne = 0, na = 0;
    while (environ && environ[ne]) ne++;
    while (args[na]) na++;
    char **envp = calloc(ne + 3, sizeof *envp), **argv = calloc(na + 2, sizeof *argv);
    if (!envp || !argv) { free(envp), free(argv), close(fd); return jr_fail(JR_ENOMEM, "out of memory"); }
    /* first, so they win over the caller's: threads that sleep when idle (libgomp's default spins, and with a server,
     * a trainer and the background training on two cores the spinning threads starved the working ones: the
     * study took 300 s, 47 s so); single_thread: one thread (the tiny models' servers are faster on one) */
    size_t k = 0;
    if (single_thread) envp[k++] = "OMP_NUM_THREADS=1";
    envp[k++] = "OMP_WAIT_POLICY=PASSIVE";
    for (size_t i = 0; i < ne; i++) envp[k++] = environ[i];
    argv[0] = (char *)c->judgerl;
    for (size_t i = 0; i < na; i++) argv[1 + i] = args[i];
    pid_t parent = getpid();
    pid_t p = fork();
    if (p == 0) { /* only async-signal-safe calls until exec */
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* the child (a judge server, a training) ends with the demo, even after a kill -9 */
        if (getppid() != parent) _exit(127);
        dup2(fd, 1);
        dup2(fd, 2);
        execve(c->judgerl, argv, envp);
        _exit(127);
    }
    int err = errno;
    close(fd);
    free(envp);
    free(argv);
    if (p < 0) return jr_fail(JR_EIO, "fork: %s", strerror(err));
    *pid = p;
    return JR_OK;
}

jr_status eb_wait_child(eb_ctx *c, pid_t *pid, const char *what, const char *log) {
    int ws = 0;
    for (;;) {
        pid_t r = waitpid(*pid, &ws, WNOHANG);
        if (r == *pid) break;
        if (r < 0 && errno != EINTR) { *pid = -1; return jr_fail(JR_EIO, "%s: waitpid: %s", what, strerror(errno)); }
        if (c->stop && *c->stop) { eb_stop_child(pid); return jr_fail(JR_ECANCELED, "%s: stopped", what); }
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    *pid = -1;
    if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0) return JR_OK;
    return jr_fail(JR_EINTERNAL, "%s %s %d: see %s", what, WIFEXITED(ws) ? "exited with" : "was killed by signal",
                   WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws), log);
}

void eb_stop_child(pid_t *pid) {
    if (*pid <= 0) return;
    kill(*pid, SIGTERM);
    int ws;
    for (int i = 0; i < 200; i++) { /* 10 s to stop at a checkpoint, then SIGKILL */
        if (waitpid(*pid, &ws, WNOHANG) == *pid) { *pid = -1; return; }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(*pid, SIGKILL);
    waitpid(*pid, &ws, 0);
    *pid = -1;
}

/* ---- judge servers ---- */

jr_status eb_server_start(eb_ctx *c, eb_server *sv, const char *model, const char *name) {
    sv->pid = -1;
    sv->port = 0;
    char log[PATH_MAX], *pf = sv->port_file;
    eb_path(c, log, sizeof log, "serve-%s.log", name);
    eb_path(c, pf, sizeof sv->port_file, "serve-%s.port", name);
    jr_status st = jr_rmtree(pf); /* a port file of an earlier run must not be read as this one's */
    if (st) return st;
    char *args[] = {"serve", "--model", (char *)model, "--host", "127.0.0.1", "--port", "0", "--served-model-name", "judge",
                    "--parallel", "8", "--max-queue", "256", "--port-file", pf, NULL};
    if ((st = eb_spawn(c, args, log, 1, &sv->pid))) return st;
    pid_t pid = sv->pid;
    for (int i = 0; i < 2400; i++) { /* up to 120 s for the model to load */
        char *text = NULL;
        if (!jr_read_file(pf, &text, NULL) && text) sv->port = atoi(text);
        free(text);
        if (sv->port > 0) return JR_OK;
        int ws;
        if (waitpid(pid, &ws, WNOHANG) == pid) {
            sv->pid = -1;
            return jr_fail(JR_EINTERNAL, "judgerl serve --model %s exited before it was ready: see %s", model, log);
        }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    eb_server_stop(sv);
    return jr_fail(JR_EINTERNAL, "judgerl serve --model %s was not ready after 120 s: see %s", model, log);
}

void eb_server_stop(eb_server *sv) {
    if (sv->port_file[0]) unlink(sv->port_file);
    eb_stop_child(&sv->pid); /* 10 s to drain, then SIGKILL */
}

/* ---- held-out samples and grading ---- */

jr_status eb_generate(eb_ctx *c, const char *model_dir, const char *out_jsonl, int n, json_t **rows) {
    *rows = NULL;
    const char *prompts = "data/eightball/lm/heldout_prompts.jsonl";
    json_t *in = NULL;
    jr_status st = jr_genrows_read(prompts, &in);
    if (st) return st;
    jr_textgen t;
    char desc[1024];
    if ((st = jr_textgen_open_dir(&t, model_dir, "auto", 1, 2, desc, sizeof desc))) { json_decref(in); return st; }
    /* what `judgerl generate` does by default: the weights as model.compute auto says, fp32 cache, deterministic */
    jr_kv_opts kvo = jr_kv_opts_default();
    kvo.weights = jr_model_compute_resolve("auto");
    jr_genrows_opts o;
    jr_genrows_opts_init(&o);
    o.n = n;
    o.max_tokens = 32;
    o.temperature = 1;
    o.seed = 7;
    o.parallel = 16;
    o.source = prompts;
    if (!(st = jr_textgen_set_kv(&t, &kvo)) && !(st = jr_genrows_run(&t, in, &o, rows))) st = jr_genrows_write(*rows, out_jsonl, NULL);
    if (st) { jr_fail_ctx(st, "%s", out_jsonl); json_decref(*rows); *rows = NULL; }
    jr_textgen_close(&t);
    json_decref(in);
    fprintf(c->logf, "generated %d sample(s) per held-out question of %s into %s\n", n, model_dir, out_jsonl);
    fflush(c->logf);
    return st;
}

/* The graded rows: each input row with its reward (null when unscored), status and error. */
static jr_status write_graded(const char *path, const json_t *rows, const jr_reward_result *res) {
    json_t *out = json_array();
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *o = json_deep_copy(json_array_get(rows, i));
        json_object_del(o, "tokens");
        json_object_set_new(o, "reward", res[i].scored ? json_real(res[i].reward) : json_null());
        json_object_set_new(o, "status", json_string(res[i].scored ? "ok" : "unscored"));
        json_object_set_new(o, "error", res[i].reason ? json_string(res[i].reason) : json_null());
        json_object_set_new(o, "latency_s", json_real(res[i].judge_latency_s));
        json_array_append_new(out, o);
    }
    jr_status st = jr_genrows_write(out, path, NULL);
    json_decref(out);
    return st;
}

jr_status eb_grade(eb_ctx *c, const json_t *rows, int port, const char *name, double *mean, double *unscored,
                   double *latency, json_t **rewards) {
    char ep[128], outp[PATH_MAX];
    char *over[] = {eb_endpoint(ep, sizeof ep, port), "judge.max_unscored_frac=1.0"};
    const jr_cfg_field *const tables[] = {jr_judge_cfg, jr_protocols_cfg, jr_reward_cfg, jr_sandbox_cfg, NULL};
    jr_config cfg;
    jr_status st = jr_config_load(&cfg, "configs/eightball/judge-label.yaml", 2, over, tables);
    if (st) return st;
    jr_reward *r = NULL;
    size_t n = json_array_size(rows);
    const json_t **rv = calloc(n ? n : 1, sizeof *rv);
    jr_reward_result *res = calloc(n ? n : 1, sizeof *res);
    if (!rv || !res) st = jr_fail(JR_ENOMEM, "out of memory for %zu rows", n);
    for (size_t i = 0; !st && i < n; i++) {
        json_t *row = json_deep_copy(json_array_get(rows, i)); /* numbered 0.. as the rows were */
        json_object_del(row, "tokens");
        json_object_set_new(row, "id", json_integer((json_int_t)i));
        rv[i] = row;
    }
    if (!st) st = jr_reward_open(&r, &cfg);
    if (!st) st = jr_reward_score(r, (const json_t *const *)rv, n, res);
    double s = 0, lat = 0;
    long ns = 0, nu = 0;
    json_t *rw = json_array();
    for (size_t i = 0; !st && i < n; i++) {
        if (res[i].scored) { s += res[i].reward; ns++; }
        else nu++;
        lat += res[i].judge_latency_s;
        json_array_append_new(rw, res[i].scored ? json_real(res[i].reward) : json_null());
    }
    if (!st) st = write_graded(eb_path(c, outp, sizeof outp, "eval/%s-graded.jsonl", name), rows, res);
    for (size_t i = 0; res && i < n; i++) jr_reward_result_free(&res[i]);
    for (size_t i = 0; rv && i < n; i++) json_decref((json_t *)rv[i]);
    free(res);
    free(rv);
    jr_reward_close(r);
    jr_config_free(&cfg);
    if (st) { json_decref(rw); return st; }
    *mean = ns ? s / (double)ns : NAN;
    *unscored = n ? (double)nu / (double)n : NAN;
    *latency = n ? lat / (double)n : NAN;
    if (rewards) *rewards = rw;
    else json_decref(rw);
    fprintf(c->logf, "graded %zu rows (%s) against the judge on port %d: mean reward %.4f, %ld unscored\n", n, name, port, *mean, nu);
    fflush(c->logf);
    return JR_OK;
}
