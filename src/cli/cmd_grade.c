/* cmd_grade.c - `judgerl grade`: grades a JSONL file with an LLM judge; appends + fsyncs each
 * finished row, resumes after any kill with every row written exactly once */
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
#include "judgerl/sandbox.h"
#include "judgerl/fsutil.h"
#include "judgerl/judge.h"
#include "judgerl/protocols.h"
#include "judgerl/reward.h"

static volatile sig_atomic_t interrupted;
static void on_signal(int sig) { (void)sig; interrupted = 1; }

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The id of a row as text ("" when it has none usable). */
int cli_grade_id_text(const json_t *v, char *out, size_t n) {
    if (json_is_string(v)) { snprintf(out, n, "%s", json_string_value(v)); return 1; }
    if (json_is_integer(v)) { snprintf(out, n, "%lld", (long long)json_integer_value(v)); return 1; }
    return 0;
}

/* Parses input line `lineno` (len bytes at line) of in_path: cli_grade_next_row's parsing. */
static int read_row(const char *in_path, long lineno, const char *line, size_t len, json_t *seen, const json_t *done,
                    json_t **row, int *skipped_done) {
    *row = NULL;
    *skipped_done = 0;
    size_t k = 0;
    while (k < len && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r')) k++;
    if (k == len) return 0; /* blank line */
    json_error_t je;
    json_t *r = json_loadb(line, len, JSON_ALLOW_NUL, &je);
    char id[1024];
    if (!json_is_object(r)) {
        json_decref(r);
        jr_fail(JR_EFORMAT, "%s: line %ld: not a JSON object (%s)", in_path, lineno, je.text);
        return -1;
    }
    if (!cli_grade_id_text(json_object_get(r, "id"), id, sizeof id)) {
        json_decref(r);
        jr_fail(JR_EINVAL, "%s: line %ld: field 'id': expected a string or an integer", in_path, lineno);
        return -1;
    }
    if (json_object_get(seen, id)) {
        json_decref(r);
        jr_fail(JR_EINVAL, "%s: line %ld: duplicate id '%s' (ids must be unique)", in_path, lineno, id);
        return -1;
    }
    json_object_set_new(seen, id, json_true());
    if (json_object_get(done, id)) { json_decref(r); *skipped_done = 1; return 0; }
    *row = r;
    return 1;
}

int cli_grade_next_row(const char *in_path, const char *text, size_t len, size_t *pos, long *lineno, json_t *seen,
                       const json_t *done, json_t **row, int *skipped_done) {
    size_t s0 = *pos, e = s0;
    while (e < len && text[e] != '\n') e++;
    *pos = e < len ? e + 1 : e;
    return read_row(in_path, ++*lineno, text + s0, e - s0, seen, done, row, skipped_done);
}

/* Reads the existing output: drops a torn last line (truncating the file), records finished ids
 * and counts unscored rows. With retry_unscored, rewrites the file without unscored rows. */
jr_status cli_grade_load_done(const char *path, json_t *done, long *n_unscored, int retry_unscored, long *n_dropped) {
    *n_unscored = 0;
    *n_dropped = 0;
    if (!jr_path_exists(path)) return JR_OK;
    char *text;
    size_t len;
    jr_status st = jr_read_file(path, &text, &len);
    if (st) return st;
    size_t keep = len;
    while (keep > 0 && text[keep - 1] != '\n') keep--;
    if (keep < len) {
        if (truncate(path, (off_t)keep) != 0) {
            free(text);
            return jr_fail(JR_EIO, "%s: cannot drop the torn last line: %s", path, strerror(errno));
        }
        int fd = open(path, O_WRONLY);
        if (fd >= 0) { fsync(fd); close(fd); }
        *n_dropped = 1;
    }
    char *kept = retry_unscored ? malloc(keep + 1) : NULL;
    size_t kept_len = 0;
    if (retry_unscored && !kept) { free(text); return JR_ENOMEM; }
    long lineno = 0;
    for (size_t i = 0; i < keep;) {
        size_t j = i;
        while (text[j] != '\n') j++;
        lineno++;
        if (j > i) {
            json_error_t je;
            json_t *o = json_loadb(text + i, j - i, JSON_ALLOW_NUL, &je);
            char id[1024];
            if (!json_is_object(o) || !cli_grade_id_text(json_object_get(o, "id"), id, sizeof id)) {
                json_decref(o);
                free(text);
                free(kept);
                return jr_fail(JR_EFORMAT, "%s: line %ld is not an output row (JSON with an id): move the file aside or fix it", path, lineno);
            }
            int unscored = !json_is_number(json_object_get(o, "reward"));
            if (unscored) (*n_unscored)++;
            if (retry_unscored && unscored) (*n_unscored)--;
            else {
                json_object_set_new(done, id, json_true());
                if (kept) { memcpy(kept + kept_len, text + i, j - i + 1); kept_len += j - i + 1; }
            }
            json_decref(o);
        }
        i = j + 1;
    }
    free(text);
    if (kept) {
        if (kept_len != keep) st = jr_write_atomic(path, kept, kept_len);
        free(kept);
    }
    return st;
}

/* The id text of a JSONL line (0 when it has none). */
static int line_id(const char *line, size_t len, char *id, size_t n) {
    json_t *o = json_loadb(line, len, JSON_ALLOW_NUL, NULL);
    int got = json_is_object(o) && cli_grade_id_text(json_object_get(o, "id"), id, n);
    json_decref(o);
    return got;
}

jr_status cli_grade_input_order(const char *in_path, const char *out_path) {
    char *in = NULL, *out = NULL, *buf = NULL;
    size_t in_len, out_len, n_lines = 0, bn = 0;
    jr_status st = jr_read_file(in_path, &in, &in_len);
    if (!st) st = jr_read_file(out_path, &out, &out_len);
    json_t *where = json_object(); /* id text -> index of its output line */
    size_t *starts = NULL, *lens = NULL;
    char *used = NULL;
    for (size_t i = 0; !st && i < out_len; n_lines++) {
        char *nl = memchr(out + i, '\n', out_len - i);
        i = nl ? (size_t)(nl - out) + 1 : out_len;
    }
    if (!st) {
        starts = calloc(n_lines + 1, sizeof *starts);
        lens = calloc(n_lines + 1, sizeof *lens);
        used = calloc(n_lines + 1, 1);
        buf = malloc(out_len + 2);
        if (!starts || !lens || !used || !buf || !where) st = jr_fail(JR_ENOMEM, "out of memory");
    }
    char id[1024];
    size_t k = 0;
    for (size_t i = 0; !st && i < out_len; k++) {
        char *nl = memchr(out + i, '\n', out_len - i);
        size_t e = nl ? (size_t)(nl - out) : out_len;
        starts[k] = i;
        lens[k] = e - i;
        if (line_id(out + i, e - i, id, sizeof id) && !json_object_get(where, id))
            json_object_set_new(where, id, json_integer((json_int_t)k));
        i = e + 1;
    }
    for (size_t i = 0; !st && i < in_len;) { /* the input's order first */
        char *nl = memchr(in + i, '\n', in_len - i);
        size_t e = nl ? (size_t)(nl - in) : in_len;
        json_t *at = line_id(in + i, e - i, id, sizeof id) ? json_object_get(where, id) : NULL;
        if (at && !used[json_integer_value(at)]) {
            size_t j = (size_t)json_integer_value(at);
            used[j] = 1;
            memcpy(buf + bn, out + starts[j], lens[j]);
            bn += lens[j];
            buf[bn++] = '\n';
        }
        i = e + 1;
    }
    for (size_t j = 0; !st && j < n_lines; j++) /* then rows of ids no longer in the input, as they were */
        if (!used[j] && lens[j]) {
            memcpy(buf + bn, out + starts[j], lens[j]);
            bn += lens[j];
            buf[bn++] = '\n';
        }
    if (!st && (bn != out_len || memcmp(buf, out, bn))) st = jr_write_atomic(out_path, buf, bn);
    json_decref(where);
    free(in); free(out); free(buf); free(starts); free(lens); free(used);
    return st;
}

/* 1 when a verdict's detail says its log-probs could not give an honest confidence (label). */
int cli_grade_unreliable(const json_t *detail) {
    const char *r = json_string_value(json_object_get(detail, "reason"));
    return r && !strcmp(r, "logprobs_unreliable");
}

static void progress(double t0, long done, long total, long unscored, const jr_judge_stats *s, int final) {
    double el = mono() - t0, rate = el > 0 ? done / el : 0;
    double eta = rate > 0 ? (total - done) / rate : 0;
    int width = 30, fill = total > 0 ? (int)(width * done / total) : width;
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
    bar[width] = 0;
    double hit = s->cache_lookups ? 100.0 * s->cache_hits / s->cache_lookups : 0;
    fprintf(stderr, "\r[%s] %ld/%ld %.1f rows/s ETA %.0fs | unscored %ld | in flight %d | retries %llu | cache %.0f%%%s", bar, done,
            total, rate, eta, unscored, s->in_flight, (unsigned long long)s->retries, hit, final ? "\n" : "  ");
    fflush(stderr);
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

static void print_help(void) {
    printf("usage: judgerl grade --config JUDGE.yaml --input IN.jsonl --output OUT.jsonl [key=value ...]\n"
           "                     [--retry-unscored] [--quiet] [--progress] [--print-config]\n"
           "Grades rows {id, prompt, response[, reference][, rubric]} with the judge of the config (judge.*,\n"
           "see docs/JUDGE.md), or with reward.components when the config lists them (docs/PROTOCOLS.md).\n"
           "Each finished row is appended to OUT.jsonl and fsynced: the input row's fields (prompt, response, ...)\n"
           "  with {id, reward (null when unscored), scores, status: ok|unscored, attempts, cached, latency_s, error, detail}\n"
           "set over them. Rows are appended as they finish; a complete run then rewrites OUT.jsonl atomically in\n"
           "the input's order (an interrupted one keeps the finishing order, which resume needs).\n"
           "Rerunning resumes: rows already in OUT.jsonl are skipped (a torn last line is dropped), so every\n"
           "row is written exactly once; unscored rows are graded again (replaced) unless --keep-unscored.\n"
           "judge.cache: true keeps the judge's answers in judge_cache.sqlite beside OUT.jsonl (docs/JUDGE.md).\n"
           "Prints a JSON summary on stdout; a progress bar on stderr when it is a terminal (--progress forces it).\n"
           "Stops with exit 1 when judge.max_unscored_frac of the rows are unscored, and at once, writing no row\n"
           "for it, on a configuration error: the server is not running, refuses the key, model or URL (HTTP\n"
           "401/403/404), or the first prompts do not fit its context.\n");
}

/* The command line of `judgerl grade`; over (key=value overrides) is owned by the caller. */
struct grade_args {
    const char *cfg_path, *in_path, *out_path;
    int print_only, quiet, force_progress, retry_unscored, n_over;
    char **over;
};

/* Fills *a from argv; returns CLI_OK, or the exit code after printing the usage error. On error
 * a->over is freed. */
static int parse_args(const char *cmd, int argc, char **argv, struct grade_args *a) {
    *a = (struct grade_args){.retry_unscored = 1};
    a->over = calloc((size_t)argc + 1, sizeof *a->over);
    if (!a->over) return cli_fail(cmd, jr_fail(JR_ENOMEM, "out of memory"));
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if ((!strcmp(s, "--config") || !strcmp(s, "--input") || !strcmp(s, "--output")) && i + 1 >= argc) {
            free(a->over);
            return cli_usage(cmd, "%s needs a value", s);
        }
        if (!strcmp(s, "--config")) a->cfg_path = argv[++i];
        else if (!strcmp(s, "--input")) a->in_path = argv[++i];
        else if (!strcmp(s, "--output")) a->out_path = argv[++i];
        else if (!strcmp(s, "--print-config")) a->print_only = 1;
        else if (!strcmp(s, "--quiet")) a->quiet = 1;
        else if (!strcmp(s, "--progress")) a->force_progress = 1;
        else if (!strcmp(s, "--retry-unscored")) a->retry_unscored = 1; /* the default; kept for old scripts */
        else if (!strcmp(s, "--keep-unscored")) a->retry_unscored = 0;
        else if (s[0] != '-' && strchr(s, '=')) a->over[a->n_over++] = argv[i];
        else { free(a->over); return cli_usage(cmd, "unexpected argument '%s'", s); }
    }
    return CLI_OK;
}

/* The directory of out_path ("." when it has none, "/" for a file at the root). */
static void dir_of(const char *out_path, char *dir, size_t n) {
    const char *slash = strrchr(out_path, '/');
    snprintf(dir, n, "%.*s", slash ? (int)(slash - out_path) : 1, slash ? out_path : ".");
    if (!dir[0]) snprintf(dir, n, "/");
}

/* Row counts for the summary and the stop checks. */
struct grade_counts {
    long n_unreliable, n_skipped, n_done, n_unscored, n_ok, n_rows, n_prev_unscored, n_dropped;
};

/* State of one judge grading run: the input, the resume sets and the open judge and output. */
struct grade_run {
    const char *in_path, *out_path;
    int quiet, show, fd;
    char *input;
    size_t in_len, pos;
    long lineno, total;
    json_t *done, *seen, *ids; /* ids: owns each submitted row */
    jr_judge *j;
    jr_reason_tally *why;
    struct grade_counts c;
};

/* Reads the input and the existing output, opens the judge and the output for appending and
 * installs the signal handlers. Returns a status; what was opened is left in g for run_close. */
static jr_status run_open(struct grade_run *g, const jr_reward_opts *ro, int retry_unscored) {
    jr_status st = jr_read_file(g->in_path, &g->input, &g->in_len);
    if (!st) st = cli_grade_load_done(g->out_path, g->done, &g->c.n_prev_unscored, retry_unscored, &g->c.n_dropped);
    if (!st && !g->why) st = jr_fail(JR_ENOMEM, "out of memory");
    if (st) return st;
    for (size_t i = 0; i < g->in_len; i++) if (g->input[i] == '\n' || (i + 1 == g->in_len)) g->total++;
    if ((st = jr_judge_open_opts(&g->j, &ro->judge))) return st;
    g->fd = open(g->out_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (g->fd < 0) return jr_fail(JR_EIO, "%s: cannot open for appending: %s", g->out_path, strerror(errno));
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    return JR_OK;
}

static void run_close(struct grade_run *g) {
    jr_judge_close(g->j);
    jr_reason_tally_free(g->why);
    json_decref(g->ids);
    if (g->fd >= 0) close(g->fd);
    free(g->input);
    json_decref(g->done);
    json_decref(g->seen);
}

/* Submits input rows while the judge has fewer than window pending; returns a status. */
static jr_status submit_rows(struct grade_run *g, uint64_t window) {
    while (g->pos < g->in_len && jr_judge_pending(g->j) < window && !interrupted) {
        json_t *row;
        int skipped_done, got = cli_grade_next_row(g->in_path, g->input, g->in_len, &g->pos, &g->lineno, g->seen, g->done, &row, &skipped_done);
        if (got < 0) return JR_EINVAL;
        if (got == 0) { g->c.n_rows += skipped_done; g->c.n_skipped += skipped_done; continue; }
        g->c.n_rows++;
        json_t *idv = json_object_get(row, "id");
        char id[1024];
        cli_grade_id_text(idv, id, sizeof id);
        json_array_append(g->ids, row); /* kept until written: the output row carries its fields */
        jr_status st = jr_judge_submit(g->j, row, row, NULL);
        json_decref(row);
        if (st) return jr_fail_ctx(st, "%s: line %ld (id %s)", g->in_path, g->lineno, id);
    }
    return JR_OK;
}

/* Writes and counts n collected results (freeing them): one write per row (O_APPEND: a row is never
 * interleaved), one fdatasync per batch; after a configuration error the unscored rows are not
 * written (a rerun grades them). Returns 0 or the errno of the failed write. */
static int write_results(struct grade_run *g, jr_judge_result *res, int n) {
    int werr = 0, config_error = jr_judge_fatal(g->j) != NULL;
    for (int i = 0; i < n; i++) {
        json_t *row = res[i].user;
        if (config_error && res[i].status != JR_SCORE_OK) { jr_judge_result_free(&res[i]); continue; }
        char *line = werr ? NULL : out_line(&res[i], row);
        if (line && !werr) {
            size_t ll = strlen(line);
            line[ll] = '\n';
            ssize_t w = write(g->fd, line, ll + 1);
            if (w != (ssize_t)(ll + 1)) werr = errno ? errno : EIO;
            free(line);
        } else if (!werr) werr = ENOMEM;
        g->c.n_unreliable += cli_grade_unreliable(res[i].detail);
        if (res[i].status == JR_SCORE_OK) g->c.n_ok++;
        else {
            g->c.n_unscored++;
            jr_reason_tally_add(g->why, res[i].error);
            if (!g->quiet) {
                if (g->show) fputc('\n', stderr);
                fprintf(stderr, "judgerl grade: unscored id=%s: %s\n", res[i].id, res[i].error ? res[i].error : "?");
            }
        }
        g->c.n_done++;
        jr_judge_result_free(&res[i]);
    }
    if (!werr && fdatasync(g->fd) != 0) werr = errno;
    return werr;
}

/* Why the run must stop now (a configuration error, or too many unscored rows), written to buf;
 * NULL to go on. */
static const char *stop_reason(const struct grade_run *g, double max_frac, char *buf, size_t n) {
    const char *fatal = jr_judge_fatal(g->j);
    if (fatal) {
        snprintf(buf, n, "configuration error: %.1200s (check judge.endpoints, judge.api_key_env and the "
                 "judge's context); no row was written for it", fatal);
        return buf;
    }
    if (g->total > 0 && (double)g->c.n_unscored > max_frac * (double)g->total) {
        snprintf(buf, n, "judge.max_unscored_frac=%g exceeded: %ld of %ld rows unscored (%.1500s)", max_frac,
                 g->c.n_unscored, g->total, jr_reason_tally_count(g->why) ? jr_reason_tally_summary(g->why) : "unscored in an earlier run: see their error fields");
        return buf;
    }
    return NULL;
}

static void print_summary(const struct grade_counts *c, const jr_judge_stats *s, double t0) {
    printf("{\"rows\": %ld, \"graded\": %ld, \"skipped\": %ld, \"ok\": %ld, \"unscored\": %ld, \"torn_lines_dropped\": %ld, "
           "\"logprobs_unreliable\": %ld, \"requests\": %llu, \"retries\": %llu, \"cache_lookups\": %llu, \"cache_hits\": %llu, \"cache_hit_rate\": %.4f, "
           "\"elapsed_s\": %.3f}\n",
           c->n_rows, c->n_done, c->n_skipped, c->n_ok, c->n_unscored - c->n_prev_unscored, c->n_dropped, c->n_unreliable,
           (unsigned long long)s->requests, (unsigned long long)s->retries, (unsigned long long)s->cache_lookups,
           (unsigned long long)s->cache_hits, s->cache_lookups ? (double)s->cache_hits / (double)s->cache_lookups : 0.0, mono() - t0);
}

/* Grades the rows of a->in_path with the judge of ro (no reward.components); returns the exit code. */
static int grade_with_judge(const char *cmd, const jr_reward_opts *ro, const struct grade_args *a) {
    struct grade_run g = {.in_path = a->in_path, .out_path = a->out_path, .quiet = a->quiet, .fd = -1,
                          .done = json_object(), .seen = json_object(), .ids = json_array(), .why = jr_reason_tally_new()};
    int rc = CLI_OK;
    jr_status st = run_open(&g, ro, a->retry_unscored);
    if (st) { rc = cli_fail(cmd, st); goto out; }
    g.c.n_unscored = g.c.n_prev_unscored;
    g.show = a->force_progress || (!a->quiet && isatty(2));
    long conc_total = jr_judge_capacity(g.j);
    for (int e = 0; !a->quiet && e < jr_judge_n_endpoints(g.j); e++) fprintf(stderr, "judgerl grade: judge %s\n", jr_judge_endpoint_info(g.j, e));
    uint64_t window = (uint64_t)(conc_total * 4 < 64 ? 64 : conc_total * 4);
    double t0 = mono(), last_draw = 0;
    enum { BATCH = 256 };
    jr_judge_result res[BATCH];
    const char *stop_msg = NULL;
    char stop_buf[2000];
    for (;;) {
        if ((st = submit_rows(&g, window))) { rc = cli_fail(cmd, st); goto out; }
        if (interrupted) { stop_msg = "interrupted"; break; }
        if (g.pos >= g.in_len && jr_judge_pending(g.j) == 0) break;
        int n = jr_judge_collect(g.j, res, BATCH, 200);
        int werr = n > 0 ? write_results(&g, res, n) : 0;
        if (werr) { rc = cli_fail(cmd, jr_fail(JR_EIO, "%s: write failed: %s", g.out_path, strerror(werr))); goto out; }
        if ((stop_msg = stop_reason(&g, ro->judge.max_unscored_frac, stop_buf, sizeof stop_buf))) break;
        if (g.show && mono() - last_draw > 0.25) {
            jr_judge_stats s;
            jr_judge_stats_get(g.j, &s);
            progress(t0, g.c.n_done, g.total - g.c.n_skipped, g.c.n_unscored, &s, 0);
            last_draw = mono();
        }
    }
    jr_judge_stats s;
    jr_judge_stats_get(g.j, &s);
    if (g.show) progress(t0, g.c.n_done, g.total - g.c.n_skipped, g.c.n_unscored, &s, 1);
    if (stop_msg) {
        rc = cli_fail(cmd, jr_fail(JR_ECANCELED, "%s; %ld rows in %s, rerun the same command to resume (unscored rows are graded "
                                   "again unless --keep-unscored)", stop_msg, g.c.n_done + g.c.n_skipped, g.out_path));
        goto out;
    }
    if ((st = cli_grade_input_order(g.in_path, g.out_path))) { rc = cli_fail(cmd, st); goto out; }
    print_summary(&g.c, &s, t0);
out:
    run_close(&g);
    return rc;
}

int cmd_grade(int argc, char **argv) {
    const char *cmd = "grade";
    if (cli_wants_help(argc, argv)) {
        print_help();
        return CLI_OK;
    }
    struct grade_args a;
    int rc = parse_args(cmd, argc, argv, &a);
    if (rc != CLI_OK) return rc;
    const jr_cfg_field *tables[] = {jr_judge_cfg, jr_protocols_cfg, jr_reward_cfg, jr_sandbox_cfg, NULL};
    jr_config cfg;
    jr_status st = jr_config_load(&cfg, a.cfg_path, a.n_over, a.over, tables);
    if (!st && cfg.notes) fputs(cfg.notes, stderr); /* keys given under TRL / PEFT / verl names */
    free(a.over);
    if (st) return cli_fail(cmd, st);
    if (a.print_only) {
        char *t = jr_config_dump(&cfg);
        fputs(t ? t : "", stdout);
        free(t);
        jr_config_free(&cfg);
        return CLI_OK;
    }
    if (!a.cfg_path || !a.in_path || !a.out_path) {
        jr_config_free(&cfg);
        return cli_usage(cmd, "--config, --input and --output are required");
    }
    jr_reward_opts ro;
    if ((st = jr_reward_opts_from_config(&ro, &cfg))) { jr_config_free(&cfg); return cli_fail(cmd, st); }
    char cache_dir[4096];
    dir_of(a.out_path, cache_dir, sizeof cache_dir);
    ro.judge.cache_dir = cache_dir; /* the default cache lives beside the output */
    if (ro.n_components) /* reward registry (docs/PROTOCOLS.md) */
        rc = cli_grade_reward(cmd, &ro, a.in_path, a.out_path, a.quiet, a.retry_unscored);
    else
        rc = grade_with_judge(cmd, &ro, &a);
    jr_config_free(&cfg);
    return rc;
}
