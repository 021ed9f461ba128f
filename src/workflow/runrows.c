/* runrows.c - a workflow run on many problem rows at once (`judgerl workflow run`): the rows read,
 * parallel runs on one executor, one JSON line per row, optional gold grading */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/dataset.h"
#include "judgerl/fsutil.h"
#include "judgerl/workflow.h"

jr_status jr_workflow_parse_file(const char *path, const jr_workflow_limits *lim, jr_workflow **w) {
    char *text;
    size_t len;
    jr_status st = jr_read_file(path, &text, &len);
    if (st) return st;
    st = jr_workflow_parse(text, len, lim, w);
    free(text);
    if (st) return jr_fail_ctx(st, "%s", path);
    return JR_OK;
}

jr_status jr_workflow_check_file(const char *path, const jr_workflow_limits *lim, FILE *out) {
    jr_workflow *w;
    jr_status st = jr_workflow_parse_file(path, lim, &w);
    if (st) return st;
    fprintf(out, "{\"statements\": %d, \"operators\": %d, \"max_calls\": %d}\n", w->n_stmts + 1, w->n_operators, w->max_calls);
    jr_workflow_free(w);
    return JR_OK;
}

jr_status jr_wf_read_problems(const char *path, json_t ***rows, int *n) {
    *rows = NULL;
    *n = 0;
    jr_jsonl_reader *rd;
    jr_status st = jr_jsonl_open(&rd, path, JR_BAD_LINE_FAIL, NULL, NULL);
    if (st) return st;
    for (;;) {
        json_t *r;
        int64_t lineno;
        if ((st = jr_jsonl_next(rd, &r, &lineno, NULL)) || !r) break;
        if (!json_is_string(json_object_get(r, "problem")))
            st = jr_fail(JR_EINVAL, "%s:%lld: field 'problem' must be a string", path, (long long)lineno);
        json_t **nr = st ? NULL : realloc(*rows, (size_t)(*n + 1) * sizeof *nr);
        if (!st && !nr) st = jr_fail(JR_ENOMEM, "out of memory");
        if (st) { json_decref(r); break; }
        *rows = nr;
        (*rows)[(*n)++] = r;
    }
    jr_jsonl_close(rd);
    if (st) {
        for (int i = 0; i < *n; i++) json_decref((*rows)[i]);
        free(*rows);
        *rows = NULL;
        *n = 0;
    }
    return st;
}

typedef struct {
    jr_wf_executor *e;
    const jr_workflow *w;
    json_t **rows;
    int n_rows, next;
    FILE *out;
    const jr_sandbox_opts *sb;
    pthread_mutex_t mu;
    int errors;
    jr_wf_run_counts c;
    char error[1024];
} job;

static void *worker(void *arg) {
    job *j = arg;
    for (;;) {
        pthread_mutex_lock(&j->mu);
        int i = j->next < j->n_rows && !j->errors ? j->next++ : -1;
        pthread_mutex_unlock(&j->mu);
        if (i < 0) break;
        jr_wf_result res;
        jr_status st = jr_workflow_run(j->e, j->w, j->rows[i], (uint64_t)i, &res);
        int correct = 0;
        char why[600] = "";
        if (!st && j->sb && res.ok) st = jr_wf_grade(j->rows[i], res.answer, j->sb, &correct, why, sizeof why);
        if (!st && j->sb && !res.ok) snprintf(why, sizeof why, "no answer: the run failed");
        if (st) jr_wf_result_free(&res);
        pthread_mutex_lock(&j->mu);
        if (st) {
            if (!j->errors++) snprintf(j->error, sizeof j->error, "row %d: %s", i + 1, jr_errmsg());
        } else {
            json_t *o = json_pack("{s:O?, s:s, s:s*, s:s*, s:i, s:I, s:f, s:O}", "id", json_object_get(j->rows[i], "id"), "outcome",
                                  res.ok ? "answer" : "failed", "answer", res.answer, "reason", res.reason, "n_calls", res.n_calls,
                                  "tokens", (json_int_t)res.tokens, "wall_s", res.wall_s, "trace", res.trace);
            if (o && j->sb) {
                json_object_set_new(o, "correct", json_boolean(correct));
                json_object_set_new(o, "grade", json_string(why));
                const char *t = json_string_value(json_object_get(j->rows[i], "type"));
                int d = !strcmp(t, "math") ? 0 : !strcmp(t, "code") ? 1 : 2;
                j->c.n_dom[d]++;
                j->c.right_dom[d] += correct;
            }
            char *line = o ? json_dumps(o, JSON_COMPACT) : NULL;
            if (line) {
                fprintf(j->out, "%s\n", line);
                fflush(j->out);
            }
            free(line);
            json_decref(o);
            if (res.ok) j->c.answers++;
            else j->c.failures++;
            jr_wf_result_free(&res);
        }
        pthread_mutex_unlock(&j->mu);
    }
    return NULL;
}

jr_status jr_workflow_run_rows(jr_wf_executor *e, const jr_workflow *w, json_t **rows, int n_rows, int parallel,
                               const jr_sandbox_opts *grade, FILE *out, jr_wf_run_counts *counts) {
    job j = {.e = e, .w = w, .rows = rows, .n_rows = n_rows, .out = out, .sb = grade};
    pthread_mutex_init(&j.mu, NULL);
    int nt = parallel < n_rows ? parallel : n_rows;
    if (nt > 1024) nt = 1024;
    pthread_t th[1024];
    int started = 0;
    for (int t = 0; t < nt; t++)
        if (!pthread_create(&th[started], NULL, worker, &j)) started++;
    if (!started && n_rows) worker(&j);
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
    pthread_mutex_destroy(&j.mu);
    j.c.rows = n_rows;
    *counts = j.c;
    if (j.errors) return jr_fail(JR_EINVAL, "%s", j.error);
    return JR_OK;
}

/* The run's counts on log: rows, answers, failed runs; with grading each domain's accuracy. */
static void log_counts(FILE *log, const char *prefix, int n_rows, const jr_wf_run_counts *c, int grade) {
    fprintf(log, "%s%d rows: %d answers, %d failed runs\n", prefix, n_rows, c->answers, c->failures);
    static const char *const dn[3] = {"math", "code", "qa"};
    for (int d = 0; d < 3 && grade; d++)
        if (c->n_dom[d])
            fprintf(log, "%s%s accuracy %.1f%% (%d of %d; failed runs count as wrong)\n", prefix, dn[d],
                    100.0 * c->right_dom[d] / c->n_dom[d], c->right_dom[d], c->n_dom[d]);
}

jr_status jr_workflow_run_file(const jr_workflow_file_opts *f, const struct jr_judge_opts *jo, const jr_workflow_opts *o) {
    jr_workflow *w = NULL;
    json_t **rows = NULL;
    int n_rows = 0;
    jr_wf_executor *e = NULL;
    FILE *out = stdout;
    jr_status st = jr_workflow_parse_file(f->workflow, &o->limits, &w);
    if (!st) st = jr_wf_read_problems(f->problems, &rows, &n_rows);
    if (!st) st = jr_wf_executor_open(&e, jo, f->cfg_dir, o);
    if (!st && f->output && !(out = fopen(f->output, "w"))) st = jr_fail(JR_EIO, "%s: cannot open for writing", f->output);
    if (!st) {
        jr_wf_run_counts c;
        if ((st = jr_workflow_run_rows(e, w, rows, n_rows, o->parallel, f->grade ? &o->sandbox : NULL, out, &c)))
            st = jr_fail_ctx(st, "%s", f->problems);
        else if (f->log)
            log_counts(f->log, f->prefix, n_rows, &c, f->grade);
    }
    if (out && out != stdout && fclose(out) && !st) st = jr_fail(JR_EIO, "%s: write failed", f->output);
    jr_wf_executor_close(e);
    for (int i = 0; i < n_rows; i++) json_decref(rows[i]);
    free(rows);
    jr_workflow_free(w);
    return st;
}
