/* runlog.c - a run's logs together: each committed step goes to metrics.jsonl and the TensorBoard file */
#include "judgerl/runlog.h"

#include <stdlib.h>
#include <string.h>

#include "judgerl/fsutil.h"

struct jr_runlog {
    jr_metrics *m;
    jr_tb_writer *tb;    /* NULL without TensorBoard */
    char **names;
    double *values;
    size_t n, cap;
};

jr_status jr_runlog_open(jr_runlog **out, const char *run_dir, int64_t resume_step, int tensorboard) {
    *out = NULL;
    jr_status st = jr_mkdirs(run_dir);
    if (st) return st;
    jr_runlog *rl = jr_calloc(1, sizeof *rl);
    char *path = jr_path_join(run_dir, "metrics.jsonl");
    if (!rl || !path) { free(rl); free(path); return JR_ENOMEM; }
    /* A log an earlier attempt left (the run resumed, maybe killed before its first checkpoint)
     * loses its rows after resume_step, every row for -1: this run writes them again, the step-0
     * evaluation included. */
    if (resume_step < -1) resume_step = -1;
    int resumed = resume_step >= 0 || jr_path_exists(path);
    st = resumed ? jr_jsonl_cut_after(path, resume_step) : JR_OK;
    if (!st) st = jr_metrics_open(&rl->m, path, -1);
    free(path);
    /* GRPO's sample log follows the same step rule */
    if (!st && resumed) {
        char *sp = jr_path_join(run_dir, "samples.jsonl");
        st = sp ? jr_jsonl_cut_after(sp, resume_step) : JR_ENOMEM;
        free(sp);
    }
    if (!st && tensorboard) st = jr_tb_open(&rl->tb, run_dir);
    if (!st && rl->tb && resumed) st = jr_tb_session_start(rl->tb, resume_step + 1);
    if (st) { jr_runlog_close(rl); return st; }
    *out = rl;
    return JR_OK;
}

jr_status jr_runlog_add(jr_runlog *rl, const char *name, double value) {
    if (!rl) return JR_OK; /* a rank other than 0 of a data-parallel run keeps no log */
    for (size_t i = 0; i < rl->n; i++)
        if (!strcmp(rl->names[i], name)) { rl->values[i] = value; return JR_OK; }
    if (rl->n == rl->cap) {
        size_t nc = rl->cap ? rl->cap * 2 : 16;
        char **nn = jr_realloc(rl->names, nc * sizeof *nn);
        if (!nn) return JR_ENOMEM;
        rl->names = nn;
        double *nv = jr_realloc(rl->values, nc * sizeof *nv);
        if (!nv) return JR_ENOMEM;
        rl->values = nv;
        rl->cap = nc;
    }
    char *s = jr_strdup(name);
    if (!s) return JR_ENOMEM;
    rl->names[rl->n] = s;
    rl->values[rl->n] = value;
    rl->n++;
    return JR_OK;
}

static void clear(jr_runlog *rl) {
    for (size_t i = 0; i < rl->n; i++) free(rl->names[i]);
    rl->n = 0;
}

jr_status jr_runlog_commit(jr_runlog *rl, int64_t step) {
    if (!rl || rl->n == 0) return JR_OK;
    const char *const *names = (const char *const *)rl->names;
    jr_status st = jr_metrics_log(rl->m, step, rl->n, names, rl->values);
    if (!st && rl->tb) st = jr_tb_scalars(rl->tb, step, jr_wall_time(), rl->n, names, rl->values);
    clear(rl);
    return st;
}

jr_status jr_runlog_close(jr_runlog *rl) {
    if (!rl) return JR_OK;
    jr_status st = jr_metrics_close(rl->m);
    jr_status st2 = jr_tb_close(rl->tb);
    clear(rl);
    free(rl->names);
    free(rl->values);
    free(rl);
    return st ? st : st2;
}
