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

int cli_grade_read_row(const char *in_path, long lineno, const char *line, size_t len, json_t *seen,
                       const json_t *done, json_t **row, int *skipped_done) {
    *row = NULL;
    *skipped_done = 0;
    size_t k = 0;
    while (k < len && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r')) k++;
    if (k == len) return 0; /* blank line */
    json_error_t je;
    json_t *r = json_loadb(line, len, 0, &je);
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
            json_t *o = json_loadb(text + i, j - i, 0, &je);
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

static char *out_line(const jr_judge_result *r, json_t *id) {
    json_t *o = json_object();
    json_object_set(o, "id", id);
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

int cmd_grade(int argc, char **argv) {
    const char *cmd = "grade";
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl grade --config JUDGE.yaml --input IN.jsonl --output OUT.jsonl [key=value ...]\n"
               "                     [--retry-unscored] [--quiet] [--progress] [--print-config]\n"
               "Grades rows {id, prompt, response[, reference][, rubric]} with the judge of the config (judge.*,\n"
               "see docs/JUDGE.md), or with reward.components when the config lists them (docs/PROTOCOLS.md).\n"
               "Each finished row is appended to OUT.jsonl and fsynced:\n"
               "  {id, reward (null when unscored), scores, status: ok|unscored, attempts, cached, latency_s, error, detail}\n"
               "Rerunning resumes: rows already in OUT.jsonl are skipped (a torn last line is dropped), so every\n"
               "row is written exactly once; unscored rows are graded again (replaced) unless --keep-unscored.\n"
               "judge.cache: true keeps the judge's answers in judge_cache.sqlite beside OUT.jsonl (docs/JUDGE.md).\n"
               "Prints a JSON summary on stdout; a progress bar on stderr when it is a terminal (--progress forces it).\n"
               "Stops with exit 1 when judge.max_unscored_frac of the rows are unscored, and at once, writing no row\n"
               "for it, on a configuration error: the server is not running, refuses the key, model or URL (HTTP\n"
               "401/403/404), or the first prompts do not fit its context.\n");
        return CLI_OK;
    }
    const char *cfg_path = NULL, *in_path = NULL, *out_path = NULL;
    int print_only = 0, quiet = 0, force_progress = 0, retry_unscored = 1, n_over = 0;
    char **over = calloc((size_t)argc + 1, sizeof *over);
    if (!over) return cli_fail(cmd, jr_fail(JR_ENOMEM, "out of memory"));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "--config") || !strcmp(a, "--input") || !strcmp(a, "--output")) && i + 1 >= argc) {
            free(over);
            return cli_usage(cmd, "%s needs a value", a);
        }
        if (!strcmp(a, "--config")) cfg_path = argv[++i];
        else if (!strcmp(a, "--input")) in_path = argv[++i];
        else if (!strcmp(a, "--output")) out_path = argv[++i];
        else if (!strcmp(a, "--print-config")) print_only = 1;
        else if (!strcmp(a, "--quiet")) quiet = 1;
        else if (!strcmp(a, "--progress")) force_progress = 1;
        else if (!strcmp(a, "--retry-unscored")) retry_unscored = 1; /* the default; kept for old scripts */
        else if (!strcmp(a, "--keep-unscored")) retry_unscored = 0;
        else if (a[0] != '-' && strchr(a, '=')) over[n_over++] = argv[i];
        else { free(over); return cli_usage(cmd, "unexpected argument '%s'", a); }
    }
    const jr_cfg_field *tables[] = {jr_judge_cfg, jr_protocols_cfg, jr_reward_cfg, jr_sandbox_cfg, NULL};
    jr_config cfg;
    jr_status st = jr_config_load(&cfg, cfg_path, n_over, over, tables);
    free(over);
    if (st) return cli_fail(cmd, st);
    if (print_only) {
        char *t = jr_config_dump(&cfg);
        fputs(t ? t : "", stdout);
        free(t);
        jr_config_free(&cfg);
        return CLI_OK;
    }
    if (!cfg_path || !in_path || !out_path) {
        jr_config_free(&cfg);
        return cli_usage(cmd, "--config, --input and --output are required");
    }
    jr_reward_opts ro;
    if ((st = jr_reward_opts_from_config(&ro, &cfg))) { jr_config_free(&cfg); return cli_fail(cmd, st); }
    char cache_dir[4096];
    const char *slash = strrchr(out_path, '/');
    snprintf(cache_dir, sizeof cache_dir, "%.*s", slash ? (int)(slash - out_path) : 1, slash ? out_path : ".");
    if (!cache_dir[0]) snprintf(cache_dir, sizeof cache_dir, "/");
    ro.judge.cache_dir = cache_dir; /* the default cache lives beside the output */
    if (ro.n_components) { /* reward registry (docs/PROTOCOLS.md) */
        int r = cli_grade_reward(cmd, &ro, in_path, out_path, quiet, retry_unscored);
        jr_config_free(&cfg);
        return r;
    }
    char *input = NULL;
    size_t in_len = 0;
    json_t *done = json_object(), *seen = json_object(), *ids = json_array(); /* ids: owns each submitted row's id */
    jr_judge *j = NULL;
    jr_reason_tally *why = jr_reason_tally_new();
    int fd = -1, rc = CLI_OK;
    long n_prev_unscored = 0, n_dropped = 0;
    st = jr_read_file(in_path, &input, &in_len);
    if (!st) st = cli_grade_load_done(out_path, done, &n_prev_unscored, retry_unscored, &n_dropped);
    if (!st && !why) st = jr_fail(JR_ENOMEM, "out of memory");
    if (st) { rc = cli_fail(cmd, st); goto out; }
    long total = 0;
    for (size_t i = 0; i < in_len; i++) if (input[i] == '\n' || (i + 1 == in_len)) total++;
    st = jr_judge_open_opts(&j, &ro.judge);
    if (st) { rc = cli_fail(cmd, st); goto out; }
    fd = open(out_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) { rc = cli_fail(cmd, jr_fail(JR_EIO, "%s: cannot open for appending: %s", out_path, strerror(errno))); goto out; }
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int show = force_progress || (!quiet && isatty(2));
    long conc_total = jr_judge_capacity(j);
    for (int e = 0; !quiet && e < jr_judge_n_endpoints(j); e++) fprintf(stderr, "judgerl grade: judge %s\n", jr_judge_endpoint_info(j, e));
    uint64_t window = (uint64_t)(conc_total * 4 < 64 ? 64 : conc_total * 4);
    double max_frac = ro.judge.max_unscored_frac;
    long n_unreliable = 0, n_skipped = 0, n_done = 0, n_unscored = n_prev_unscored, n_ok = 0, n_rows = 0, lineno = 0;
    size_t pos = 0;
    double t0 = mono(), last_draw = 0;
    enum { BATCH = 256 };
    jr_judge_result res[BATCH];
    const char *stop_msg = NULL;
    char stop_buf[2000];
    for (;;) {
        /* submit while the window has room */
        while (pos < in_len && jr_judge_pending(j) < window && !interrupted) {
            size_t e = pos;
            while (e < in_len && input[e] != '\n') e++;
            lineno++;
            size_t s0 = pos;
            pos = e < in_len ? e + 1 : e;
            json_t *row;
            int skipped_done, got = cli_grade_read_row(in_path, lineno, input + s0, e - s0, seen, done, &row, &skipped_done);
            if (got < 0) { rc = cli_fail(cmd, JR_EINVAL); goto out; }
            if (got == 0) { n_rows += skipped_done; n_skipped += skipped_done; continue; }
            n_rows++;
            json_t *idv = json_object_get(row, "id");
            char id[1024];
            cli_grade_id_text(idv, id, sizeof id);
            json_array_append(ids, idv);
            st = jr_judge_submit(j, row, idv, NULL);
            json_decref(row);
            if (st) {
                rc = cli_fail(cmd, jr_fail_ctx(st, "%s: line %ld (id %s)", in_path, lineno, id));
                goto out;
            }
        }
        if (interrupted) { stop_msg = "interrupted"; break; }
        if (pos >= in_len && jr_judge_pending(j) == 0) break;
        int n = jr_judge_collect(j, res, BATCH, 200);
        if (n > 0) {
            /* one write per row (O_APPEND: a row is never interleaved), one fdatasync per batch; after a
             * configuration error the unscored rows are not written (a rerun grades them) */
            int werr = 0, config_error = jr_judge_fatal(j) != NULL;
            for (int i = 0; i < n; i++) {
                json_t *idv = res[i].user;
                if (config_error && res[i].status != JR_SCORE_OK) { jr_judge_result_free(&res[i]); continue; }
                char *line = werr ? NULL : out_line(&res[i], idv);
                if (line && !werr) {
                    size_t ll = strlen(line);
                    line[ll] = '\n';
                    ssize_t w = write(fd, line, ll + 1);
                    if (w != (ssize_t)(ll + 1)) werr = errno ? errno : EIO;
                    free(line);
                } else if (!werr) werr = ENOMEM;
                n_unreliable += cli_grade_unreliable(res[i].detail);
                if (res[i].status == JR_SCORE_OK) n_ok++;
                else {
                    n_unscored++;
                    jr_reason_tally_add(why, res[i].error);
                    if (!quiet) {
                        if (show) fputc('\n', stderr);
                        fprintf(stderr, "judgerl grade: unscored id=%s: %s\n", res[i].id, res[i].error ? res[i].error : "?");
                    }
                }
                n_done++;
                jr_judge_result_free(&res[i]);
            }
            if (!werr && fdatasync(fd) != 0) werr = errno;
            if (werr) { rc = cli_fail(cmd, jr_fail(JR_EIO, "%s: write failed: %s", out_path, strerror(werr))); goto out; }
        }
        const char *fatal = jr_judge_fatal(j);
        if (fatal) {
            snprintf(stop_buf, sizeof stop_buf, "configuration error: %.1200s (check judge.endpoints, judge.api_key_env and the "
                     "judge's context); no row was written for it", fatal);
            stop_msg = stop_buf;
            break;
        }
        if (total > 0 && (double)n_unscored > max_frac * (double)total) {
            snprintf(stop_buf, sizeof stop_buf, "judge.max_unscored_frac=%g exceeded: %ld of %ld rows unscored (%.1500s)", max_frac,
                     n_unscored, total, jr_reason_tally_count(why) ? jr_reason_tally_summary(why) : "unscored in an earlier run: see their error fields");
            stop_msg = stop_buf;
            break;
        }
        if (show && mono() - last_draw > 0.25) {
            jr_judge_stats s;
            jr_judge_stats_get(j, &s);
            progress(t0, n_done, total - n_skipped, n_unscored, &s, 0);
            last_draw = mono();
        }
    }
    jr_judge_stats s;
    jr_judge_stats_get(j, &s);
    if (show) progress(t0, n_done, total - n_skipped, n_unscored, &s, 1);
    if (stop_msg) {
        rc = cli_fail(cmd, jr_fail(JR_ECANCELED, "%s; %ld rows in %s, rerun the same command to resume (unscored rows are graded "
                                   "again unless --keep-unscored)", stop_msg, n_done + n_skipped, out_path));
        goto out;
    }
    printf("{\"rows\": %ld, \"graded\": %ld, \"skipped\": %ld, \"ok\": %ld, \"unscored\": %ld, \"torn_lines_dropped\": %ld, "
           "\"logprobs_unreliable\": %ld, \"requests\": %llu, \"retries\": %llu, \"cache_lookups\": %llu, \"cache_hits\": %llu, \"cache_hit_rate\": %.4f, "
           "\"elapsed_s\": %.3f}\n",
           n_rows, n_done, n_skipped, n_ok, n_unscored - n_prev_unscored, n_dropped, n_unreliable, (unsigned long long)s.requests,
           (unsigned long long)s.retries, (unsigned long long)s.cache_lookups, (unsigned long long)s.cache_hits,
           s.cache_lookups ? (double)s.cache_hits / (double)s.cache_lookups : 0.0, mono() - t0);
out:
    jr_judge_close(j);
    jr_reason_tally_free(why);
    json_decref(ids);
    if (fd >= 0) close(fd);
    free(input);
    json_decref(done);
    json_decref(seen);
    jr_config_free(&cfg);
    return rc;
}
