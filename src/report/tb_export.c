/* tb_export.c - `judgerl tb-export`: a metrics.jsonl written as a TensorBoard event file */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "judgerl/dataset.h"
#include "judgerl/metrics.h"
#include "judgerl/tensorboard.h"

/* One row as one event: its numeric fields but step and wall_time. */
static jr_status export_row(jr_tb_writer *tb, const char *in, json_t *row, int64_t line) {
    json_t *step = json_object_get(row, "step"), *wt = json_object_get(row, "wall_time");
    if (!json_is_integer(step)) return jr_fail(JR_EFORMAT, "%s:%lld: missing integer field \"step\"", in, (long long)line);
    size_t n = json_object_size(row), k = 0;
    const char **tags = calloc(n + 1, sizeof *tags);
    double *vals = calloc(n + 1, sizeof *vals);
    jr_status st = tags && vals ? JR_OK : jr_fail(JR_ENOMEM, "out of memory");
    const char *key;
    json_t *v;
    json_object_foreach(row, key, v) {
        if (st || !strcmp(key, "step") || !strcmp(key, "wall_time") || !json_is_number(v)) continue;
        tags[k] = key;
        vals[k++] = json_number_value(v);
    }
    if (!st)
        st = jr_tb_scalars(tb, json_integer_value(step), json_is_number(wt) ? json_number_value(wt) : jr_wall_time(), k, tags, vals);
    free(tags);
    free(vals);
    return st;
}

jr_status jr_tb_export(const char *metrics, const char *out_dir, char **path, long long *events) {
    *path = NULL;
    *events = 0;
    char *dir = NULL;
    if (!out_dir) {
        if (!(dir = strdup(metrics))) return jr_fail(JR_ENOMEM, "out of memory");
        char *slash = strrchr(dir, '/');
        if (slash == dir) slash[1] = 0;
        else if (slash) *slash = 0;
        else strcpy(dir, ".");
        out_dir = dir;
    }
    jr_jsonl_reader *r = NULL;
    jr_tb_writer *tb = NULL;
    jr_status st = jr_jsonl_open(&r, metrics, JR_BAD_LINE_FAIL, NULL, NULL);
    if (!st) st = jr_tb_open(&tb, out_dir);
    while (!st) {
        json_t *row;
        int64_t line;
        st = jr_jsonl_next(r, &row, &line, NULL);
        if (st || !row) break;
        st = export_row(tb, metrics, row, line);
        json_decref(row);
        if (!st) ++*events;
    }
    jr_jsonl_close(r);
    if (tb && !st && !(*path = strdup(jr_tb_path(tb)))) st = jr_fail(JR_ENOMEM, "out of memory");
    jr_status st2 = jr_tb_close(tb);
    free(dir);
    if (!st) st = st2;
    if (st) { free(*path); *path = NULL; }
    return st;
}
