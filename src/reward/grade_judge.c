/* grade_judge.c - jr_grade_file when no reward component is configured: the judge client grades
 * each row as it is read (a window of rows in flight), rows written as their verdicts come back */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/clock.h"
#include "judgerl/judge.h"
#include "judgerl/strbuf.h"
#include "reward/grade_internal.h"

/* Row counts for the summary and the stop checks. */
struct counts {
    long n_unreliable, n_skipped, n_done, n_unscored, n_ok, n_rows;
};

/* One judge grading run. */
struct run {
    jr_grade_io *g;
    jr_judge *j;
    jr_reason_tally *why;
    json_t *ids; /* owns each submitted row until its result is written */
    struct counts c;
};

static int stopped(const jr_grade_opts *o) { return o->stop && *o->stop; }

static void progress(FILE *f, double t0, long done, long total, long unscored, const jr_judge_stats *s, int final) {
    double el = jr_now_s() - t0, rate = el > 0 ? done / el : 0;
    double eta = rate > 0 ? (total - done) / rate : 0;
    int width = 30, fill = total > 0 ? (int)(width * done / total) : width;
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
    bar[width] = 0;
    double hit = s->cache_lookups ? 100.0 * s->cache_hits / s->cache_lookups : 0;
    fprintf(f, "\r[%s] %ld/%ld %.1f rows/s ETA %.0fs | unscored %ld | in flight %d | retries %llu | cache %.0f%%%s", bar, done,
            total, rate, eta, unscored, s->in_flight, (unsigned long long)s->retries, hit, final ? "\n" : "  ");
    fflush(f);
}

/* An output row: the input row's fields (prompt, response, ...) with the grade's fields set over them. */
static char *out_line(const jr_judge_result *r, const json_t *row) {
    json_t *o = json_deep_copy(row);
    if (!o) return NULL;
    json_object_set_new(o, "reward", r->status == JR_SCORE_OK ? json_real(r->reward) : json_null());
    json_object_set(o, "scores", r->scores ? r->scores : json_null());
    json_object_set_new(o, "status", json_string(r->status == JR_SCORE_OK ? "ok" : "unscored"));
    json_object_set_new(o, "attempts", json_integer(r->attempts));
    json_object_set_new(o, "cached", json_boolean(r->n_calls > 0 && r->n_cached == r->n_calls));
    json_object_set_new(o, "latency_s", json_real(round(r->latency_s * 1e4) / 1e4));
    json_object_set_new(o, "error", r->error ? json_string(r->error) : json_null());
    if (r->detail) json_object_set(o, "detail", r->detail);
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(9));
    json_decref(o);
    return s;
}

/* Submits input rows while the judge has fewer than window pending. */
static jr_status submit_rows(struct run *u, uint64_t window) {
    jr_grade_io *g = u->g;
    while (!g->eof && jr_judge_pending(u->j) < window && !stopped(g->o)) {
        json_t *row;
        int skipped_done, got = jr_grade_io_next(g, &row, &skipped_done);
        if (got < 0) return JR_EINVAL;
        if (got == 0) { u->c.n_rows += skipped_done; u->c.n_skipped += skipped_done; continue; }
        u->c.n_rows++;
        char id[1024];
        jr_grade_id_text(json_object_get(row, "id"), id, sizeof id);
        json_array_append(u->ids, row); /* kept until written: the output row carries its fields */
        jr_status st = jr_judge_submit(u->j, row, row, NULL);
        json_decref(row);
        if (st) return jr_fail_ctx(st, "%s: line %ld (id %s)", g->in_path, g->lineno, id);
    }
    return JR_OK;
}

/* Writes and counts n collected results (freeing them): one write per row (O_APPEND: a row is never
 * interleaved), one fdatasync per batch; after a configuration error the unscored rows are not
 * written (a rerun grades them). */
static jr_status write_results(struct run *u, jr_judge_result *res, int n) {
    jr_status st = JR_OK;
    int config_error = jr_judge_fatal(u->j) != NULL;
    for (int i = 0; i < n; i++) {
        json_t *row = res[i].user;
        if (config_error && res[i].status != JR_SCORE_OK) { jr_judge_result_free(&res[i]); continue; }
        char *line = st ? NULL : out_line(&res[i], row);
        if (line) st = jr_grade_io_append(u->g, line);
        else if (!st) st = jr_fail(JR_ENOMEM, "%s: out of memory", u->g->out_path);
        free(line);
        u->c.n_unreliable += jr_grade_unreliable(res[i].detail);
        if (res[i].status == JR_SCORE_OK) u->c.n_ok++;
        else {
            u->c.n_unscored++;
            jr_reason_tally_add(u->why, res[i].error);
            jr_grade_log_unscored(u->g->o, res[i].id, res[i].error);
        }
        u->c.n_done++;
        jr_judge_result_free(&res[i]);
    }
    return st ? st : jr_jsonl_writer_sync(u->g->out);
}

/* Why the run must stop now (a configuration error, or too many unscored rows), written to buf;
 * NULL to go on. */
static const char *stop_reason(const struct run *u, double max_frac, char *buf, size_t n) {
    const char *fatal = jr_judge_fatal(u->j);
    long total = u->g->total;
    if (fatal) return jr_grade_stop_config(buf, n, fatal);
    if (total > 0 && (double)u->c.n_unscored > max_frac * (double)total)
        return jr_grade_stop_unscored(buf, n, max_frac, u->c.n_unscored, total,
                                      jr_reason_tally_count(u->why) ? jr_reason_tally_summary(u->why) : NULL);
    return NULL;
}

static char *summary_text(const struct counts *c, const jr_grade_io *g, const jr_judge_stats *s, double t0) {
    return jr_strfmt("{\"rows\": %ld, \"graded\": %ld, \"skipped\": %ld, \"ok\": %ld, \"unscored\": %ld, \"torn_lines_dropped\": %ld, "
                     "\"logprobs_unreliable\": %ld, \"requests\": %llu, \"retries\": %llu, \"cache_lookups\": %llu, \"cache_hits\": %llu, "
                     "\"cache_hit_rate\": %.4f, \"elapsed_s\": %.3f}",
                     c->n_rows, c->n_done, c->n_skipped, c->n_ok, c->n_unscored - g->n_prev_unscored, g->n_dropped, c->n_unreliable,
                     (unsigned long long)s->requests, (unsigned long long)s->retries, (unsigned long long)s->cache_lookups,
                     (unsigned long long)s->cache_hits, s->cache_lookups ? (double)s->cache_hits / (double)s->cache_lookups : 0.0,
                     jr_now_s() - t0);
}

/* Submits and collects until the input is done or the run must stop (*stop_msg set). */
static jr_status grade_loop(struct run *u, double t0, const char **stop_msg, char *stop_buf, size_t stop_n) {
    const jr_grade_opts *o = u->g->o;
    long conc_total = jr_judge_capacity(u->j);
    uint64_t window = (uint64_t)(conc_total * 4 < 64 ? 64 : conc_total * 4);
    double last_draw = 0;
    enum { BATCH = 256 };
    jr_judge_result res[BATCH];
    jr_status st;
    for (;;) {
        if ((st = submit_rows(u, window))) return st;
        if (stopped(o)) { *stop_msg = "interrupted"; return JR_OK; }
        if (u->g->eof && jr_judge_pending(u->j) == 0) return JR_OK;
        int n = jr_judge_collect(u->j, res, BATCH, 200);
        if (n > 0 && (st = write_results(u, res, n))) return st;
        if ((*stop_msg = stop_reason(u, o->reward->judge.max_unscored_frac, stop_buf, stop_n))) return JR_OK;
        if (o->progress && jr_now_s() - last_draw > 0.25) {
            jr_judge_stats s;
            jr_judge_stats_get(u->j, &s);
            progress(o->progress, t0, u->c.n_done, u->g->total - u->c.n_skipped, u->c.n_unscored, &s, 0);
            last_draw = jr_now_s();
        }
    }
}

jr_status jr_grade_by_judge(jr_grade_io *g, char **summary) {
    const jr_grade_opts *o = g->o;
    struct run u = {.g = g, .why = jr_reason_tally_new(), .ids = json_array(), .c.n_unscored = g->n_prev_unscored};
    jr_status st = !u.why || !u.ids ? jr_fail(JR_ENOMEM, "out of memory") : JR_OK;
    if (!st) st = jr_judge_open_opts(&u.j, &o->reward->judge);
    if (!st) st = jr_grade_io_open_output(g);
    for (int e = 0; !st && o->log && e < jr_judge_n_endpoints(u.j); e++)
        fprintf(o->log, "%s: judge %s\n", o->log_prefix, jr_judge_endpoint_info(u.j, e));
    double t0 = jr_now_s();
    const char *stop_msg = NULL;
    char stop_buf[2000];
    if (!st) st = grade_loop(&u, t0, &stop_msg, stop_buf, sizeof stop_buf);
    if (!st) {
        jr_judge_stats s;
        jr_judge_stats_get(u.j, &s);
        if (o->progress) progress(o->progress, t0, u.c.n_done, g->total - u.c.n_skipped, u.c.n_unscored, &s, 1);
        if (stop_msg)
            st = jr_fail(JR_ECANCELED, "%s; %ld rows in %s, rerun the same command to resume (unscored rows are graded "
                         "again unless --keep-unscored)", stop_msg, u.c.n_done + u.c.n_skipped, g->out_path);
        if (!st) st = jr_grade_io_finish(g);
        if (!st && !(*summary = summary_text(&u.c, g, &s, t0))) st = jr_fail(JR_ENOMEM, "out of memory");
    }
    jr_judge_close(u.j);
    jr_reason_tally_free(u.why);
    json_decref(u.ids);
    return st;
}
