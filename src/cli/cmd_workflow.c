/* cmd_workflow.c - `judgerl workflow`: check a workflow, run it on problems against an executor
 * endpoint (answers and traces as JSONL), write synthetic tasks */
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/fsutil.h"
#include "judgerl/judge.h"
#include "judgerl/strbuf.h"
#include "judgerl/workflow.h"

static const char *cmd = "workflow";

static void usage_all(FILE *f) {
    fprintf(f, "usage: judgerl workflow run --workflow FILE --problems IN.jsonl --executor CFG.yaml [--output OUT.jsonl] [--grade] [key=value ...]\n"
               "       judgerl workflow check FILE [key=value ...]\n"
               "       judgerl workflow tasks --domain math|code|qa --n N [--seed S] [--output OUT.jsonl]\n"
               "       judgerl workflow train CONFIG.yaml [key=value ...]   (GRPO on a policy that writes workflows)\n"
               "run: executes the workflow on each row ({id, problem, type: math|code|qa, ...}) against the\n"
               "  executor endpoint of CFG (judge.* keys: endpoints, concurrency, retries, cache; workflow.*\n"
               "  keys: budgets, templates) and writes one line per row: {id, outcome: answer|failed,\n"
               "  answer|reason, n_calls, tokens, wall_s, trace}. A failed run is an outcome, never an answer.\n"
               "  --grade adds {correct, grade} by a verifier (the reference answer; code: hidden tests in the\n"
               "  sandbox) and prints the accuracy per domain.\n"
               "check: parses FILE and prints its static figures, or the first error as workflow:LINE:COL.\n"
               "tasks: seeded synthetic rows in the seed's shape (docs/WORKFLOWS.md).\n");
}

static const jr_cfg_field *const tables[] = {jr_judge_cfg, jr_workflow_cfg, jr_sandbox_cfg, NULL};

static int load_workflow(const char *path, const jr_workflow_limits *lim, jr_workflow **w) {
    char *text;
    size_t len;
    jr_status st = jr_read_file(path, &text, &len);
    if (st) return cli_fail(cmd, st);
    st = jr_workflow_parse(text, len, lim, w);
    free(text);
    if (st) return cli_fail(cmd, jr_fail_ctx(st, "%s", path));
    return CLI_OK;
}

static int do_check(int argc, char **argv) {
    if (argc < 2 || argv[1][0] == '-') return cli_usage(cmd, "check needs a workflow FILE");
    jr_config cfg;
    int print_only;
    int rc = cli_load_config(cmd, argc - 1, argv + 1, 0, tables, &cfg, &print_only);
    if (rc) return rc;
    jr_workflow_opts o;
    jr_workflow_opts_from_config(&o, &cfg);
    jr_workflow *w;
    rc = load_workflow(argv[1], &o.limits, &w);
    if (!rc) {
        printf("{\"statements\": %d, \"operators\": %d, \"max_calls\": %d}\n", w->n_stmts + 1, w->n_operators, w->max_calls);
        jr_workflow_free(w);
    }
    jr_config_free(&cfg);
    return rc;
}

/* ---- run ---- */
typedef struct {
    jr_wf_executor *e;
    const jr_workflow *w;
    json_t **rows;
    int n_rows, next;
    FILE *out;
    const jr_sandbox_opts *sb;
    int grade;
    pthread_mutex_t mu;
    int answers, failures, errors;
    int n_dom[3], right_dom[3];
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
        if (!st && j->grade && res.ok) st = jr_wf_grade(j->rows[i], res.answer, j->sb, &correct, why, sizeof why);
        if (!st && j->grade && !res.ok) snprintf(why, sizeof why, "no answer: the run failed");
        if (st) jr_wf_result_free(&res);
        pthread_mutex_lock(&j->mu);
        if (st) {
            if (!j->errors++) snprintf(j->error, sizeof j->error, "row %d: %s", i + 1, jr_errmsg());
        } else {
            json_t *o = json_pack("{s:O?, s:s, s:s*, s:s*, s:i, s:I, s:f, s:O}", "id", json_object_get(j->rows[i], "id"), "outcome",
                                  res.ok ? "answer" : "failed", "answer", res.answer, "reason", res.reason, "n_calls", res.n_calls,
                                  "tokens", (json_int_t)res.tokens, "wall_s", res.wall_s, "trace", res.trace);
            if (o && j->grade) {
                json_object_set_new(o, "correct", json_boolean(correct));
                json_object_set_new(o, "grade", json_string(why));
                const char *t = json_string_value(json_object_get(j->rows[i], "type"));
                int d = !strcmp(t, "math") ? 0 : !strcmp(t, "code") ? 1 : 2;
                j->n_dom[d]++;
                j->right_dom[d] += correct;
            }
            char *line = o ? json_dumps(o, JSON_COMPACT) : NULL;
            if (line) {
                fprintf(j->out, "%s\n", line);
                fflush(j->out);
            }
            free(line);
            json_decref(o);
            if (res.ok) j->answers++;
            else j->failures++;
            jr_wf_result_free(&res);
        }
        pthread_mutex_unlock(&j->mu);
    }
    return NULL;
}

static int read_rows(const char *path, json_t ***rows, int *n) {
    FILE *f = fopen(path, "r");
    if (!f) return cli_fail(cmd, jr_fail(JR_EIO, "%s: cannot open", path));
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long lineno = 0;
    *rows = NULL;
    *n = 0;
    int rc = CLI_OK;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        size_t k = 0;
        while (k < (size_t)len && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r' || line[k] == '\n')) k++;
        if (k == (size_t)len) continue;
        json_error_t je;
        json_t *r = json_loadb(line, (size_t)len, 0, &je);
        if (!json_is_object(r)) {
            json_decref(r);
            rc = cli_fail(cmd, jr_fail(JR_EFORMAT, "%s: line %ld: not a JSON object (%s)", path, lineno, je.text));
            break;
        }
        if (!json_is_string(json_object_get(r, "problem"))) {
            json_decref(r);
            rc = cli_fail(cmd, jr_fail(JR_EINVAL, "%s: line %ld: field 'problem' must be a string", path, lineno));
            break;
        }
        json_t **nr = realloc(*rows, (size_t)(*n + 1) * sizeof *nr);
        if (!nr) { json_decref(r); rc = cli_fail(cmd, jr_fail(JR_ENOMEM, "out of memory")); break; }
        *rows = nr;
        (*rows)[(*n)++] = r;
    }
    free(line);
    fclose(f);
    return rc;
}

static int do_run(int argc, char **argv) {
    const char *wf_path = NULL, *in_path = NULL, *cfg_path = NULL, *out_path = NULL;
    int grade = 0;
    char **over = calloc((size_t)argc + 1, sizeof *over);
    int n_over = 0;
    if (!over) return cli_fail(cmd, jr_fail(JR_ENOMEM, "out of memory"));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "--workflow") && has) wf_path = argv[++i];
        else if (!strcmp(a, "--problems") && has) in_path = argv[++i];
        else if (!strcmp(a, "--executor") && has) cfg_path = argv[++i];
        else if (!strcmp(a, "--output") && has) out_path = argv[++i];
        else if (!strcmp(a, "--grade")) grade = 1;
        else if (a[0] != '-' && strchr(a, '=')) over[n_over++] = argv[i];
        else { free(over); return cli_usage(cmd, "unexpected argument '%s' (see judgerl workflow --help)", a); }
    }
    if (!wf_path || !in_path || !cfg_path) { free(over); return cli_usage(cmd, "run needs --workflow, --problems and --executor"); }
    jr_config cfg;
    jr_status st = jr_config_load(&cfg, cfg_path, n_over, over, tables);
    free(over);
    if (st) return cli_fail(cmd, st);
    jr_workflow_opts o;
    jr_workflow_opts_from_config(&o, &cfg);
    jr_workflow *w = NULL;
    json_t **rows = NULL;
    int n_rows = 0;
    jr_wf_executor *e = NULL;
    FILE *out = stdout;
    int rc = load_workflow(wf_path, &o.limits, &w);
    if (!rc) rc = read_rows(in_path, &rows, &n_rows);
    if (!rc) {
        char *dup = strdup(cfg_path);
        jr_judge_opts jo;
        st = jr_judge_opts_from_config(&jo, &cfg);
        if (!st) st = dup ? jr_wf_executor_open(&e, &jo, dirname(dup), &o) : jr_fail(JR_ENOMEM, "out of memory");
        free(dup);
        if (st) rc = cli_fail(cmd, st);
    }
    if (!rc && out_path && !(out = fopen(out_path, "w"))) rc = cli_fail(cmd, jr_fail(JR_EIO, "%s: cannot open for writing", out_path));
    if (!rc) {
        job j = {.e = e, .w = w, .rows = rows, .n_rows = n_rows, .out = out, .sb = &o.sandbox, .grade = grade};
        pthread_mutex_init(&j.mu, NULL);
        int nt = o.parallel < n_rows ? o.parallel : n_rows;
        pthread_t th[1024];
        int started = 0;
        for (int t = 0; t < nt; t++)
            if (!pthread_create(&th[started], NULL, worker, &j)) started++;
        if (!started && n_rows) worker(&j);
        for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
        pthread_mutex_destroy(&j.mu);
        if (j.errors) rc = cli_fail(cmd, jr_fail(JR_EINVAL, "%s: %s", in_path, j.error));
        else {
            fprintf(stderr, "judgerl workflow: %d rows: %d answers, %d failed runs\n", n_rows, j.answers, j.failures);
            static const char *const dn[3] = {"math", "code", "qa"};
            for (int d = 0; d < 3 && grade; d++)
                if (j.n_dom[d])
                    fprintf(stderr, "judgerl workflow: %s accuracy %.1f%% (%d of %d; failed runs count as wrong)\n", dn[d],
                            100.0 * j.right_dom[d] / j.n_dom[d], j.right_dom[d], j.n_dom[d]);
        }
    }
    if (out && out != stdout && fclose(out) && !rc) rc = cli_fail(cmd, jr_fail(JR_EIO, "%s: write failed", out_path));
    jr_wf_executor_close(e);
    for (int i = 0; i < n_rows; i++) json_decref(rows[i]);
    free(rows);
    jr_workflow_free(w);
    jr_config_free(&cfg);
    return rc;
}

static int do_tasks(int argc, char **argv) {
    const char *domain = NULL, *out_path = NULL;
    long n = -1, first = 0;
    unsigned long long seed = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        char *end = NULL;
        if (!strcmp(a, "--domain") && has) domain = argv[++i];
        else if (!strcmp(a, "--output") && has) out_path = argv[++i];
        else if (!strcmp(a, "--n") && has) { n = strtol(argv[++i], &end, 10); if (*end || n < 0) return cli_usage(cmd, "--n: expected a count >= 0"); }
        else if (!strcmp(a, "--first") && has) { first = strtol(argv[++i], &end, 10); if (*end || first < 0) return cli_usage(cmd, "--first: expected an index >= 0"); }
        else if (!strcmp(a, "--seed") && has) { seed = strtoull(argv[++i], &end, 10); if (*end) return cli_usage(cmd, "--seed: expected an integer"); }
        else return cli_usage(cmd, "unexpected argument '%s' (see judgerl workflow --help)", a);
    }
    if (!domain || n < 0) return cli_usage(cmd, "tasks needs --domain math|code|qa and --n N");
    json_t *rows;
    jr_status st = jr_wf_tasks(domain, n, seed, first, &rows);
    if (st) return cli_fail(cmd, st);
    jr_strbuf b = {0};
    for (size_t i = 0; i < json_array_size(rows); i++) {
        char *line = json_dumps(json_array_get(rows, i), JSON_COMPACT);
        if (line) jr_strbuf_add(&b, line), jr_strbuf_addc(&b, '\n');
        else b.oom = 1;
        free(line);
    }
    json_decref(rows);
    if (b.oom) { jr_strbuf_free(&b); return cli_fail(cmd, jr_fail(JR_ENOMEM, "out of memory")); }
    if (out_path) st = jr_write_atomic(out_path, b.p ? b.p : "", b.n);
    else if (b.n && fwrite(b.p, 1, b.n, stdout) != b.n) st = jr_fail(JR_EIO, "stdout: write failed");
    jr_strbuf_free(&b);
    return st ? cli_fail(cmd, st) : CLI_OK;
}

int cmd_workflow(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "train")) return cmd_workflow_train(argc - 1, argv + 1);
    if (argc < 2 || cli_wants_help(argc, argv)) {
        usage_all(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    if (!strcmp(argv[1], "run")) return do_run(argc - 1, argv + 1);
    if (!strcmp(argv[1], "check")) return do_check(argc - 1, argv + 1);
    if (!strcmp(argv[1], "tasks")) return do_tasks(argc - 1, argv + 1);
    return cli_usage(cmd, "unknown subcommand '%s' (run, check, tasks, train)", argv[1]);
}
