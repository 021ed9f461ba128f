/* evalrun_dirs.c - `judgerl eval` over a model, checkpoint or a whole run directory (every
 * checkpoints/step-*, one row per step) (jr_eval_run_all, evalrun.h) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/evalrun.h"
#include "judgerl/fsutil.h"

int jr_eval_run_dirs(const jr_eval_opts *o) {
    char *cj = o->model ? jr_path_join(o->model, "config.json") : NULL;
    char *aj = o->adapter ? jr_path_join(o->adapter, "adapter_config.json") : NULL;
    int kind = (o->model && cj && !jr_path_exists(cj)) | (o->adapter && aj && !jr_path_exists(aj)) << 1;
    free(cj);
    free(aj);
    return kind;
}

/* One row per checkpoint: step, reward, each component's mean and first pass@k, IFEval. */
static void print_step_row(FILE *f, const char *ckpt, const json_t *sum, int header) {
    const char *base = strrchr(ckpt, '/');
    base = base ? base + 1 : ckpt;
    long long step = strtoll(base + 5, NULL, 10);
    json_t *r = json_object_get(sum, "reward"), *fv = json_object_get(sum, "ifeval");
    const char *cn, *k;
    json_t *cb, *v;
    if (header) {
        fprintf(f, "%8s", "step");
        if (r) {
            fprintf(f, " %9s %8s", "reward", "unscored");
            json_object_foreach(json_object_get(r, "components"), cn, cb) json_object_foreach(cb, k, v)
                if (json_is_real(v)) fprintf(f, " %s/%s", cn, k);
        }
        if (fv) fprintf(f, " %8s %8s %8s %8s", "Pr(S)", "Ins(S)", "Pr(L)", "Ins(L)");
        fprintf(f, "\n");
    }
    fprintf(f, "%8lld", step);
    if (r) {
        json_t *m = json_object_get(r, "mean");
        if (json_is_number(m)) fprintf(f, " %9.4f", json_number_value(m));
        else fprintf(f, " %9s", "n/a");
        fprintf(f, " %8lld", (long long)json_integer_value(json_object_get(r, "unscored")));
        json_object_foreach(json_object_get(r, "components"), cn, cb) json_object_foreach(cb, k, v)
            if (json_is_real(v)) fprintf(f, " %*.4f", (int)(strlen(cn) + strlen(k) + 1), json_real_value(v));
    }
    if (fv) {
        const char *names[4] = {"prompt_strict", "inst_strict", "prompt_loose", "inst_loose"};
        for (int i = 0; i < 4; i++) {
            v = json_object_get(fv, names[i]);
            if (json_is_number(v)) fprintf(f, " %8.4f", json_number_value(v));
            else fprintf(f, " %8s", "n/a");
        }
    }
    fprintf(f, "\n");
    fflush(f);
}

jr_status jr_eval_run_all(const jr_eval_opts *opts, FILE *f) {
    int kind = jr_eval_run_dirs(opts);
    if (kind == 3) return jr_fail(JR_EINVAL, "give one run directory: --model BASE --adapter RUN_DIR for LoRA runs");
    jr_eval_opts o = *opts;
    char **ckpts = NULL;
    int n_ckpt = 0;
    jr_status st = kind ? jr_eval_checkpoints(kind == 1 ? opts->model : opts->adapter, &ckpts, &n_ckpt) : JR_OK;
    for (int c = 0; !st && c < (kind ? n_ckpt : 1); c++) {
        char *sub = NULL;
        if (kind == 1) o.model = ckpts[c];
        if (kind == 2) o.adapter = ckpts[c];
        if (kind && opts->out_dir) {
            const char *base = strrchr(ckpts[c], '/');
            if (!(sub = jr_path_join(opts->out_dir, base ? base + 1 : ckpts[c]))) { st = jr_fail(JR_ENOMEM, "out of memory"); break; }
            o.out_dir = sub;
        }
        json_t *sum = NULL;
        if ((st = jr_eval_run(&o, &sum))) {
        } else if (kind) print_step_row(f, ckpts[c], sum, c == 0);
        else jr_eval_summary_print(sum, f);
        json_decref(sum);
        free(sub);
    }
    for (int c = 0; c < n_ckpt; c++) free(ckpts[c]);
    free(ckpts);
    return st;
}
