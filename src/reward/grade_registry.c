/* grade_registry.c - jr_grade_file when the config lists reward.components: rows go through the
 * reward registry in windows; each window's rows are appended, then fsynced */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/clock.h"
#include "reward/grade_internal.h"

/* Counts for the summary and the stop check; sums/counts hold each component's scored values. */
struct counts {
    long n_unreliable, n_skipped, n_done, n_unscored, n_ok, n_rows, judge_calls, n_consistent, n_pairs;
    double *sums;
    long *counts;
};

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

/* Reads up to window new rows into rows (skipping finished ids); returns how many, or -1 on a bad
 * row (the message is set). */
static long read_window(jr_grade_io *g, json_t **rows, long window, struct counts *t) {
    long nw = 0;
    while (!g->eof && nw < window) {
        json_t *row;
        int skipped_done, got = jr_grade_io_next(g, &row, &skipped_done);
        if (got < 0) return -1;
        if (got == 0) { t->n_rows += skipped_done; t->n_skipped += skipped_done; continue; }
        t->n_rows++;
        rows[nw++] = row;
    }
    return nw;
}

/* Counts one scored row's result (and logs it when unscored). */
static void count_result(const jr_grade_opts *o, const jr_reward_result *res, const json_t *row, int np, struct counts *t) {
    t->n_done++;
    t->judge_calls += res->judge_calls;
    if (res->scored) t->n_ok++;
    else {
        t->n_unscored++;
        char id[1024] = "";
        jr_grade_id_text(json_object_get(row, "id"), id, sizeof id);
        jr_grade_log_unscored(o, id, res->reason);
    }
    for (int k = 0; k < np && res->parts; k++)
        t->n_unreliable += jr_grade_unreliable(json_object_get(res->parts[k].detail, "judge"));
    for (int k = 0; k < np; k++) {
        if (!res->parts || !res->parts[k].scored) continue;
        t->sums[k] += res->parts[k].value;
        t->counts[k]++;
        json_t *c = json_object_get(json_object_get(res->parts[k].detail, "scores"), "consistent");
        if (json_is_integer(c)) { t->n_pairs++; t->n_consistent += json_integer_value(c) != 0; }
    }
}

/* Appends and counts the nw results of a window unless write_rows is 0 (then they are dropped), frees
 * them and the rows, then fdatasyncs. */
static jr_status write_window(jr_grade_io *g, const jr_reward *r, json_t **rows, jr_reward_result *res, long nw,
                              int write_rows, struct counts *t) {
    jr_status st = JR_OK;
    int np = jr_reward_n_parts(r);
    for (long i = 0; i < nw; i++) {
        if (write_rows) {
            char *line = out_line(r, &res[i], rows[i]);
            if (!line) { if (!st) st = jr_fail(JR_ENOMEM, "%s: out of memory", g->out_path); }
            else if (!st) st = jr_grade_io_append(g, line);
            free(line);
            count_result(g->o, &res[i], rows[i], np, t);
        }
        jr_reward_result_free(&res[i]);
        json_decref(rows[i]);
        rows[i] = NULL;
    }
    return st ? st : jr_jsonl_writer_sync(g->out);
}

/* The JSON summary line (caller frees). */
static char *summary_text(const jr_reward *r, const jr_grade_io *g, const struct counts *t, double t0) {
    int np = jr_reward_n_parts(r);
    json_t *sum = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:f}", "rows", (json_int_t)t->n_rows, "graded", (json_int_t)t->n_done,
                            "skipped", (json_int_t)t->n_skipped, "ok", (json_int_t)t->n_ok, "unscored",
                            (json_int_t)(t->n_unscored - g->n_prev_unscored), "torn_lines_dropped", (json_int_t)g->n_dropped,
                            "logprobs_unreliable", (json_int_t)t->n_unreliable,
                            "judge_calls", (json_int_t)t->judge_calls, "elapsed_s", round((jr_now_s() - t0) * 1e3) / 1e3);
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
    json_decref(sum);
    return txt;
}

/* Scores window after window until the input is done or the run must stop (*stop_msg set). */
static jr_status grade_loop(jr_grade_io *g, jr_reward *r, json_t **rows, jr_reward_result *res, long window,
                            struct counts *t, const char **stop_msg, char *stop_buf, size_t stop_n) {
    double max_frac = g->o->reward->judge.max_unscored_frac;
    while (!g->eof && !(g->o->stop && *g->o->stop) && !*stop_msg) {
        long nw = read_window(g, rows, window, t);
        if (nw < 0) return JR_EINVAL;
        if (!nw) break;
        if (jr_reward_score(r, (const json_t *const *)rows, (size_t)nw, res)) *stop_msg = jr_grade_stop_config(stop_buf, stop_n, jr_errmsg());
        jr_status st = write_window(g, r, rows, res, nw, !*stop_msg, t);
        if (st) return st;
        if (!*stop_msg && g->total > 0 && (double)t->n_unscored > max_frac * (double)g->total)
            *stop_msg = jr_grade_stop_unscored(stop_buf, stop_n, max_frac, t->n_unscored, g->total,
                                               jr_reward_unscored_count(r) ? jr_reward_unscored_summary(r) : NULL);
    }
    if (g->o->stop && *g->o->stop && !*stop_msg) *stop_msg = "interrupted";
    return JR_OK;
}

jr_status jr_grade_by_registry(jr_grade_io *g, char **summary) {
    const jr_reward_opts *ro = g->o->reward;
    struct counts t = {.n_unscored = g->n_prev_unscored};
    jr_reward *r = NULL;
    json_t **rows = NULL;
    jr_reward_result *res = NULL;
    long window = 4L * (ro->judge.concurrency > 0 ? ro->judge.concurrency : 64); /* 0: by server kind */
    if (window < 64) window = 64;
    jr_status st = jr_reward_open_opts(&r, ro);
    if (!st) {
        int np = jr_reward_n_parts(r);
        t.sums = calloc((size_t)np, sizeof *t.sums);
        t.counts = calloc((size_t)np, sizeof *t.counts);
        rows = calloc((size_t)window, sizeof *rows);
        res = calloc((size_t)window, sizeof *res);
        if (!t.sums || !t.counts || !rows || !res) st = jr_fail(JR_ENOMEM, "out of memory");
    }
    if (!st) st = jr_grade_io_open_output(g);
    double t0 = jr_now_s();
    const char *stop_msg = NULL;
    char stop_buf[2000];
    if (!st) st = grade_loop(g, r, rows, res, window, &t, &stop_msg, stop_buf, sizeof stop_buf);
    if (!st && stop_msg)
        st = jr_fail(JR_ECANCELED, "%s; %ld rows written to %s, rerun the same command to resume", stop_msg,
                     t.n_done + t.n_skipped, g->out_path);
    if (!st) st = jr_grade_io_finish(g);
    if (!st && !(*summary = summary_text(r, g, &t, t0))) st = jr_fail(JR_ENOMEM, "out of memory");
    for (long i = 0; rows && i < window; i++) json_decref(rows[i]);
    free(rows);
    free(res);
    free(t.sums);
    free(t.counts);
    jr_reward_close(r);
    return st;
}
