/* probe_dir.c - `judgerl probe`'s run: rows in, probes run, probe.json and probe.html out */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/fsutil.h"
#include "judgerl/probe.h"
#include "judgerl/report.h"

/* Writes res as out_dir/probe.json and its page as out_dir/probe.html, then the table. */
static jr_status write_outputs(json_t *res, const char *out_dir, const char *judge_name, FILE *table) {
    json_object_set_new(json_object_get(res, "judge"), "config", json_string(judge_name));
    char *text = json_dumps(res, JSON_INDENT(1) | JSON_REAL_PRECISION(8));
    char *jp = jr_path_join(out_dir, "probe.json"), *hp = jr_path_join(out_dir, "probe.html");
    jr_status st = text && jp && hp ? jr_write_atomic(jp, text, strlen(text)) : jr_fail(JR_ENOMEM, "out of memory");
    const json_t *r1 = res;
    if (!st) st = jr_probe_html_write(hp, "judgerl probe", &judge_name, &r1, 1);
    if (!st) {
        jr_probe_table(table, &judge_name, &r1, 1);
        fprintf(table, "probe.json: %s\nprobe.html: %s\n", jp, hp);
    }
    free(text);
    free(jp);
    free(hp);
    return st;
}

jr_status jr_probe_run_dir(const jr_config *judge_cfg, const jr_probe_opts *o, const char *data, const char *out_dir,
                           const char *judge_name, FILE *table) {
    json_t *rows = NULL, *res = NULL;
    jr_status st = jr_probe_load_rows(data, &rows);
    if (!st && !json_array_size(rows)) st = jr_fail(JR_EINVAL, "%s: no rows", data);
    if (!st) st = jr_mkdirs(out_dir);
    if (!st) st = jr_probe_run(judge_cfg, o, rows, &res);
    json_decref(rows);
    if (!st) st = write_outputs(res, out_dir, judge_name, table);
    json_decref(res);
    return st;
}
