/* stage_seed1.c - the demo's stage seed1: seed 1 reproduced (seed1.c) from configs/eightball-seed1.yaml into OUT/seed1 */
#include <limits.h>
#include <stdio.h>

#include "eightball/eightball.h"
#include "eightball/seed1.h"
#include "judgerl/run.h"

jr_status eb_stage_seed1(eb_ctx *c, const void *arg, char *note, size_t cap) {
    (void)arg;
    static const jr_cfg_field *const tables[] = {jr_run_cfg, eb_seed1_cfg, NULL};
    char od[PATH_MAX + 32];
    snprintf(od, sizeof od, "run.out_dir=%s/seed1", c->out);
    char *over[1] = {od};
    jr_config cfg;
    jr_status st = jr_config_load(&cfg, "configs/eightball-seed1.yaml", 1, over, tables);
    if (st) return st;
    json_t *res = NULL;
    eb_seed1_opts o;
    st = eb_seed1_opts_from_config(&o, &cfg);
    if (!st) st = eb_seed1_run(&o, &res);
    jr_config_free(&cfg);
    if (st) return st;
    json_object_set_new(c->sum, "seed1", res);
    json_t *v = json_array_get(json_object_get(res, "variants"), 0);
    snprintf(note, cap, "classifier SFT + judges + distillation (2 variants); probe margin %+.4f -> %+.4f",
             json_number_value(json_object_get(v, "margin_before")), json_number_value(json_object_get(v, "margin_after")));
    return JR_OK;
}
