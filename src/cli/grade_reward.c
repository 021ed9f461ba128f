/* grade_reward.c - `judgerl grade` when the config lists reward.components: rows go through the
 * reward registry in windows; each finished row is appended + fsynced, resume skips done ids */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "judgerl/fsutil.h"
#include "judgerl/reward.h"

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) { (void)sig; stop_flag = 1; }

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}


/* One output line: the input row's fields with {id, reward, scores: {component: value | null},
 * status, error, judge_calls, components: {...}} set over them (caller frees). */
static char *out_line(const jr_reward *r, const jr_reward_result *res, const json_t *row) {
    json_t *o = json_deep_copy(row), *scores = json_object();
    if (!o || !scores) { json_decref(o); json_decref(scores); return NULL; }
    json_object_set_new(o, "reward", res->scored ? json_real(res->reward) : json_null());
    for (int k = 0; k < res->n_parts; k++)
        json_object_set_new(scores, jr_reward_part_name(r, k), res->parts[k].scored ? json_real(res->parts[k].value) : json_null());
    json_object_set_new(o, "scores", scores);
    json_object_set_new(o, "status", json_string(res->scored ? "ok" : "unscored"));
    json_object_set_new(o, "error", res->reason ? json_string(res->reason) : json_null());
    json_object_set_new(o, "judge_calls", json_integer(res->judge_calls));
    json_t *full = jr_reward_result_json(r, res);
    if (full) json_object_set(o, "components", json_object_get(full, "components"));
    json_decref(full);
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(9));
    json_decref(o);
    return s;
}

/* Counts for the summary and the stop check; sums/counts hold each component's scored values. */
struct reward_counts {
    long n_unreliable, n_skipped, n_done, n_unscored, n_ok, n_rows, judge_calls, n_consistent, n_pairs;
    long n_prev_unscored, n_dropped;
    double *sums;
    long *counts;
};

/* The input and where reading it has got to. */
struct reward_input {
    const char *path;
    char *text;
    size_t len, pos;
    long lineno;
    json_t *done, *seen;
};

/* Reads up to window new rows into rows (skipping finished ids); returns how many, or -1 on a bad
 * row (the message is set). */
static long read_window(struct reward_input *in, json_t **rows, long window, struct reward_counts *t) {
    long nw = 0;
    while (in->pos < in->len && nw < window) {
        json_t *row;
        int skipped_done, got = cli_grade_next_row(in->path, in->text, in->len, &in->pos, &in->lineno, in->seen, in->done, &row, &skipped_done);
        if (got < 0) return -1;
        if (got == 0) { t->n_rows += skipped_done; t->n_skipped += skipped_done; continue; }
        t->n_rows++;
        rows[nw++] = row;
    }
    return nw;
}

/* Counts one scored row's result (and reports it on stderr when unscored, unless quiet). */
static void count_result(const char *cmd, const jr_reward_result *res, const json_t *row, int np, int quiet,
                         struct reward_counts *t) {
    t->n_done++;
    t->judge_calls += res->judge_calls;
    if (res->scored) t->n_ok++;
    else {
        t->n_unscored++;

        if (!quiet) {
            char id[1024] = "";
            cli_grade_id_text(json_object_get(row, "id"), id, sizeof id);
            fprintf(stderr, "judgerl %s: unscored id=%s: %s\n", cmd, id, res->reason ? res->reason : "?");
        }
    }
    for (int k = 0; k < np && res->parts; k++)
        t->n_unreliable += cli_grade_unreliable(json_object_get(res->parts[k].detail, "judge"));
    for (int k = 0; k < np; k++) {
        if (!res->parts || !res->parts[k].scored) continue;
        t->sums[k] += res->parts[k].value;
        t->counts[k]++;
        json_t *c = json_object_get(json_object_get(res->parts[k].detail, "scores"), "consistent");
        if (json_is_integer(c)) { t->n_pairs++; t->n_consistent += json_integer_value(c) != 0; }
    }
}

/* Appends and counts the nw results of a window unless write_rows is 0 (then they are dropped), frees
 * them and the rows, then fdatasyncs. Returns 0 or the errno of the failed write. */
static int write_window(const char *cmd, const jr_reward *r, int fd, json_t **rows, jr_reward_result *res, long nw,
                        int write_rows, int quiet, struct reward_counts *t) {
    int werr = 0, np = jr_reward_n_parts(r);
    for (long i = 0; i < nw; i++) {
        if (write_rows) {
            char *line = out_line(r, &res[i], rows[i]);
            if (!line) werr = ENOMEM;
            else {
                size_t ll = strlen(line);
                line[ll] = '\n';
                if (!werr && write(fd, line, ll + 1) != (ssize_t)(ll + 1)) werr = errno ? errno : EIO;
                free(line);
            }
            count_result(cmd, &res[i], rows[i], np, quiet, t);
        }
        jr_reward_result_free(&res[i]);
        json_decref(rows[i]);
        rows[i] = NULL;
    }
    if (!werr && fdatasync(fd) != 0) werr = errno;
    return werr;
}

/* Prints the JSON summary line on stdout. */
static void print_summary(const jr_reward *r, const struct reward_counts *t, double t0) {
    int np = jr_reward_n_parts(r);
    json_t *sum = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:f}", "rows", (json_int_t)t->n_rows, "graded", (json_int_t)t->n_done,
                            "skipped", (json_int_t)t->n_skipped, "ok", (json_int_t)t->n_ok, "unscored",
                            (json_int_t)(t->n_unscored - t->n_prev_unscored), "torn_lines_dropped", (json_int_t)t->n_dropped,
                            "logprobs_unreliable", (json_int_t)t->n_unreliable,
                            "judge_calls", (json_int_t)t->judge_calls, "elapsed_s", round((mono() - t0) * 1e3) / 1e3);
    json_t *comps = json_object();
    for (int k = 0; k < np; k++) {
        json_t *c = json_pack("{s:f,s:o,s:I}", "weight", jr_reward_part_weight(r, k), "mean",
                              t->counts[k] ? json_real(t->sums[k] / (double)t->counts[k]) : json_null(), "scored", (json_int_t)t->counts[k]);
        /* HealthBench reports the mean of a rubric score clipped to [0, 1]. */
        if (c && t->counts[k] && !strcmp(jr_reward_part_fn(r, k), "rubric"))
            json_object_set_new(c, "clipped_mean", json_real(fmin(1, fmax(0, t->sums[k] / (double)t->counts[k]))));
        json_object_set_new(comps, jr_reward_part_name(r, k), c);
    }
    json_object_set_new(sum, "components", comps);
    if (t->n_pairs) json_object_set_new(sum, "position_consistency", json_real((double)t->n_consistent / (double)t->n_pairs));
    char *txt = json_dumps(sum, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    printf("%s\n", txt ? txt : "{}");
    free(txt);
    json_decref(sum);
}

int cli_grade_reward(const char *cmd, const jr_reward_opts *ro, const char *in_path, const char *out_path, int quiet,
                     int retry_unscored) {
    struct reward_input in = {.path = in_path, .done = json_object(), .seen = json_object()};
    struct reward_counts t = {0};
    jr_reward *r = NULL;
    int fd = -1, rc = CLI_OK;
    json_t **rows = NULL;
    jr_reward_result *res = NULL;
    jr_status st = jr_read_file(in_path, &in.text, &in.len);
    if (!st) st = cli_grade_load_done(out_path, in.done, &t.n_prev_unscored, retry_unscored, &t.n_dropped);
    if (st) { rc = cli_fail(cmd, st); goto out; }
    long total = 0;
    for (size_t i = 0; i < in.len; i++) if (in.text[i] == '\n' || i + 1 == in.len) total++;
    if ((st = jr_reward_open_opts(&r, ro))) { rc = cli_fail(cmd, st); goto out; }
    int np = jr_reward_n_parts(r);
    t.sums = calloc((size_t)np, sizeof *t.sums);
    t.counts = calloc((size_t)np, sizeof *t.counts);
    long window = 4L * (ro->judge.concurrency > 0 ? ro->judge.concurrency : 64); /* 0: by server kind */
    if (window < 64) window = 64;
    rows = calloc((size_t)window, sizeof *rows);
    res = calloc((size_t)window, sizeof *res);
    if (!t.sums || !t.counts || !rows || !res) { rc = cli_fail(cmd, jr_fail(JR_ENOMEM, "out of memory")); goto out; }
    fd = open(out_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) { rc = cli_fail(cmd, jr_fail(JR_EIO, "%s: cannot open for appending: %s", out_path, strerror(errno))); goto out; }
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    double max_frac = ro->judge.max_unscored_frac;
    t.n_unscored = t.n_prev_unscored;
    double t0 = mono();
    const char *stop_msg = NULL;
    char stop_buf[2000];
    while (in.pos < in.len && !stop_flag && !stop_msg) {
        long nw = read_window(&in, rows, window, &t);
        if (nw < 0) { rc = cli_fail(cmd, JR_EINVAL); goto out; }
        if (!nw) break;
        st = jr_reward_score(r, (const json_t *const *)rows, (size_t)nw, res);
        if (st) {
            snprintf(stop_buf, sizeof stop_buf, "configuration error: %.1200s (check judge.endpoints, judge.api_key_env and the "
                     "judge's context); no row was written for it", jr_errmsg());
            stop_msg = stop_buf;
        }
        int werr = write_window(cmd, r, fd, rows, res, nw, !stop_msg, quiet, &t);
        if (werr) { rc = cli_fail(cmd, jr_fail(JR_EIO, "%s: write failed: %s", out_path, strerror(werr))); goto out; }
        if (!stop_msg && total > 0 && (double)t.n_unscored > max_frac * (double)total) {
            snprintf(stop_buf, sizeof stop_buf, "judge.max_unscored_frac=%g exceeded: %ld of %ld rows unscored (%.1500s)",
                     max_frac, t.n_unscored, total,
                     jr_reward_unscored_count(r) ? jr_reward_unscored_summary(r) : "unscored in an earlier run: see their error fields");
            stop_msg = stop_buf;
        }
    }
    if (stop_flag && !stop_msg) stop_msg = "interrupted";
    if (stop_msg) {
        rc = cli_fail(cmd, jr_fail(JR_ECANCELED, "%s; %ld rows written to %s, rerun the same command to resume", stop_msg,
                                   t.n_done + t.n_skipped, out_path));
        goto out;
    }
    if ((st = cli_grade_input_order(in_path, out_path))) { rc = cli_fail(cmd, st); goto out; }
    print_summary(r, &t, t0);
out:
    for (long i = 0; rows && i < window; i++) json_decref(rows[i]);
    free(rows);
    free(res);
    free(t.sums);
    free(t.counts);
    jr_reward_close(r);
    if (fd >= 0) close(fd);
    free(in.text);
    json_decref(in.done);
    json_decref(in.seen);
    return rc;
}
