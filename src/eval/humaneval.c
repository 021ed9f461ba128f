/* humaneval.c - HumanEval-style functional correctness: every sample's program run in the
 * sandbox (several at once), a results file, pass@k */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/clock.h"
#include "judgerl/eval.h"
#include "judgerl/fsutil.h"
#include "judgerl/strbuf.h"

char *jr_humaneval_program(const char *prompt, const char *completion, const char *test, const char *entry_point) {
    jr_strbuf b = {0};
    jr_strbuf_add(&b, prompt);
    jr_strbuf_add(&b, completion);
    jr_strbuf_add(&b, "\n");
    jr_strbuf_add(&b, test);
    jr_strbuf_add(&b, "\ncheck(");
    jr_strbuf_add(&b, entry_point);
    jr_strbuf_add(&b, ")");
    char *s = jr_strbuf_take(&b);
    if (!s) jr_fail(JR_ENOMEM, "out of memory");
    return s;
}

typedef struct work {
    const jr_eval_code_opts *o;
    const jr_py_job *jobs;
    jr_py_result *res;
    size_t n, next, done;
    jr_status st;       /* first sandbox error */
    char msg[600];
    pthread_mutex_t mu;
} work;

static void *worker(void *arg) {
    work *w = arg;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        size_t i = w->st ? w->n : w->next++;
        pthread_mutex_unlock(&w->mu);
        if (i >= w->n) return NULL;
        jr_status st = jr_sandbox_python(&w->o->sandbox, &w->jobs[i], &w->res[i]);
        pthread_mutex_lock(&w->mu);
        if (st && !w->st) { w->st = st; snprintf(w->msg, sizeof w->msg, "%s", jr_errmsg()); }
        w->done++;
        if (!st && w->o->progress) w->o->progress(w->o->progress_ud, w->done, w->n);
        pthread_mutex_unlock(&w->mu);
    }
}

/* Runs jobs[0..n) with o->parallel workers; res[i] for each. */
static jr_status run_all(const jr_eval_code_opts *o, const jr_py_job *jobs, size_t n, jr_py_result *res) {
    work w = {.o = o, .jobs = jobs, .res = res, .n = n};
    pthread_mutex_init(&w.mu, NULL);
    int nt = o->parallel < 1 ? 1 : o->parallel;
    if ((size_t)nt > n) nt = (int)(n ? n : 1);
    pthread_t *th = jr_calloc((size_t)nt, sizeof *th);
    if (!th) return JR_ENOMEM;
    int started = 0;
    for (int t = 0; t < nt; t++)
        if (!pthread_create(&th[t], NULL, worker, &w)) started++;
        else break;
    if (!started) worker(&w);
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
    free(th);
    pthread_mutex_destroy(&w.mu);
    if (w.st) return jr_fail(w.st, "%s", w.msg);
    return JR_OK;
}

/* The problems file as {task_id: problem}, in file order in *order. */
static jr_status load_problems(const char *path, json_t **byid, json_t **order) {
    jr_status st = jr_jsonl_read_all(path, order);
    if (st) return st;
    *byid = json_object();
    size_t i;
    json_t *p;
    json_array_foreach(*order, i, p) {
        static const char *const need[] = {"task_id", "prompt", "test", "entry_point"};
        for (int k = 0; k < 4; k++)
            if (!json_is_string(json_object_get(p, need[k])))
                return jr_fail(JR_EFORMAT, "%s: problem %zu: field '%s' missing or not a string", path, i + 1, need[k]);
        json_object_set(*byid, json_string_value(json_object_get(p, "task_id")), p);
    }
    if (!json_array_size(*order)) return jr_fail(JR_EFORMAT, "%s: no problems", path);
    return JR_OK;
}

/* Writes the samples with result and passed, in input order, atomically. */
static jr_status write_results(const char *path, json_t *samples, const jr_py_result *res) {
    jr_afile af = {0};
    jr_status st = jr_afile_open(&af, path);
    if (st) return st;
    size_t i;
    json_t *s;
    json_array_foreach(samples, i, s) {
        json_object_set_new(s, "result", json_string(res[i].result));
        json_object_set_new(s, "passed", json_boolean(res[i].outcome == JR_SB_PASSED));
        char *line = json_dumps(s, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!line) { jr_afile_abort(&af); return jr_fail(JR_ENOMEM, "out of memory"); }
        fputs(line, af.f);
        fputc('\n', af.f);
        free(line);
    }
    return jr_afile_commit(&af);
}

/* pass@k per k over the problems' (n, c): {"pass@k": mean} for each k all problems allow. */
static json_t *passk_json(const jr_eval_code_opts *o, json_t *order, json_t *counts) {
    size_t m = json_array_size(order), j = 0;
    int *n = jr_calloc(m ? m : 1, sizeof *n), *c = jr_calloc(m ? m : 1, sizeof *c);
    json_t *out = json_object();
    size_t i;
    json_t *p;
    json_array_foreach(order, i, p) {
        json_t *nc = json_object_get(counts, json_string_value(json_object_get(p, "task_id")));
        if (!nc) continue;
        n[j] = (int)json_integer_value(json_array_get(nc, 0));
        c[j++] = (int)json_integer_value(json_array_get(nc, 1));
    }
    for (int k = 0; n && c && out && k < o->n_ks; k++) {
        double v = jr_pass_at_k_mean(n, c, j, o->ks[k]);
        if (v != v) continue; /* some problem has fewer than k samples: left out, as HumanEval does */
        char key[32];
        snprintf(key, sizeof key, "pass@%d", o->ks[k]);
        json_object_set_new(out, key, json_real(v));
    }
    free(n);
    free(c);
    return out;
}

jr_status jr_eval_code(const jr_eval_code_opts *o, json_t **passk) {
    *passk = NULL;
    jr_status st = jr_sandbox_opts_check(&o->sandbox);
    if (st) return st;
    for (int k = 0; k < o->n_ks; k++)
        if (o->ks[k] < 1) return jr_fail(JR_EINVAL, "k=%d: each k must be at least 1", o->ks[k]);
    json_t *byid = NULL, *order = NULL, *samples = NULL, *counts = json_object();
    char **programs = NULL;
    jr_py_job *jobs = NULL;
    jr_py_result *res = NULL;
    char *results_path = NULL;
    size_t n = 0;
    if ((st = load_problems(o->problems, &byid, &order))) goto done;
    if ((st = jr_jsonl_read_all(o->samples, &samples))) goto done;
    n = json_array_size(samples);
    programs = jr_calloc(n ? n : 1, sizeof *programs);
    jobs = jr_calloc(n ? n : 1, sizeof *jobs);
    res = jr_calloc(n ? n : 1, sizeof *res);
    if (!programs || !jobs || !res) { st = JR_ENOMEM; goto done; }
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_array_get(samples, i);
        const char *tid = json_string_value(json_object_get(s, "task_id"));
        const char *comp = json_string_value(json_object_get(s, "completion"));
        json_t *p = tid ? json_object_get(byid, tid) : NULL;
        if (!tid || !comp) { st = jr_fail(JR_EFORMAT, "%s: sample %zu: needs string fields 'task_id' and 'completion'", o->samples, i + 1); goto done; }
        if (!p) { st = jr_fail(JR_EFORMAT, "%s: sample %zu: task_id '%s' is not in %s", o->samples, i + 1, tid, o->problems); goto done; }
        /* the program is prompt + completion; HumanEval's test and check(entry_point) run apart from it */
        jr_strbuf b = {0};
        jr_strbuf_add(&b, json_string_value(json_object_get(p, "prompt")));
        jr_strbuf_add(&b, comp);
        if (!(programs[i] = jr_strbuf_take(&b))) { st = jr_fail(JR_ENOMEM, "out of memory"); goto done; }
        jobs[i] = (jr_py_job){programs[i], json_string_value(json_object_get(p, "test")),
                              json_string_value(json_object_get(p, "entry_point")), 0,
                              json_string_value(json_object_get(p, "prompt"))};
    }
    if (!o->ignore_incomplete) {
        size_t i;
        json_t *p;
        json_t *seen = json_object();
        for (size_t k = 0; k < n; k++) json_object_set_new(seen, json_string_value(json_object_get(json_array_get(samples, k), "task_id")), json_true());
        json_array_foreach(order, i, p) {
            const char *tid = json_string_value(json_object_get(p, "task_id"));
            if (!json_object_get(seen, tid)) {
                st = jr_fail(JR_EINVAL, "%s: problem '%s' has no sample (%zu of %zu problems attempted; HumanEval requires all)",
                             o->samples, tid, json_object_size(seen), json_array_size(order));
                break;
            }
        }
        json_decref(seen);
        if (st) goto done;
    }
    if ((st = run_all(o, jobs, n, res))) goto done;
    for (size_t i = 0; i < n; i++) {
        const char *tid = json_string_value(json_object_get(json_array_get(samples, i), "task_id"));
        json_t *nc = json_object_get(counts, tid);
        if (!nc) json_object_set_new(counts, tid, nc = json_pack("[i,i]", 0, 0));
        json_array_set_new(nc, 0, json_integer(json_integer_value(json_array_get(nc, 0)) + 1));
        json_array_set_new(nc, 1, json_integer(json_integer_value(json_array_get(nc, 1)) + (res[i].outcome == JR_SB_PASSED)));
    }
    if (o->results) results_path = jr_strdup(o->results);
    else {
        results_path = jr_calloc(strlen(o->samples) + 20, 1);
        if (results_path) sprintf(results_path, "%s_results.jsonl", o->samples);
    }
    if (!results_path) { st = JR_ENOMEM; goto done; }
    if ((st = write_results(results_path, samples, res))) goto done;
    *passk = passk_json(o, order, counts);
    if (!*passk) st = jr_fail(JR_ENOMEM, "out of memory");
done:
    for (size_t i = 0; programs && i < n; i++) free(programs[i]);
    free(jobs);
    for (size_t i = 0; res && i < n; i++) jr_py_result_free(&res[i]);
    free(programs);
    free(res);
    free(results_path);
    json_decref(byid);
    json_decref(order);
    json_decref(samples);
    json_decref(counts);
    if (st == JR_ENOMEM && !*jr_errmsg()) jr_fail(JR_ENOMEM, "out of memory");
    return st;
}

void jr_eval_passk_print(const json_t *passk, FILE *f) {
    fputc('{', f);
    const char *k;
    json_t *v;
    int first = 1;
    json_object_foreach((json_t *)passk, k, v) {
        char num[40];
        jr_fmt_double(num, sizeof num, json_real_value(v));
        fprintf(f, "%s\"%s\": %s", first ? "" : ", ", k, num);
        first = 0;
    }
    fprintf(f, "}\n");
}

jr_status jr_eval_code_report(const jr_eval_code_opts *o, FILE *out, FILE *log, const char *prefix) {
    if (o->sandbox.unsafe && log) fprintf(log, "%swarning: sandbox.unsafe=true: the samples run WITHOUT bubblewrap\n", prefix);
    double t0 = jr_now_s();
    json_t *passk = NULL;
    jr_status st = jr_eval_code(o, &passk);
    if (st) return st;
    jr_eval_passk_print(passk, out);
    json_decref(passk);
    if (log)
        fprintf(log, "%s%.1f s with %d sandboxes at once; results in %s%s\n", prefix, jr_now_s() - t0, o->parallel,
                o->results ? o->results : o->samples, o->results ? "" : "_results.jsonl");
    return JR_OK;
}
