/* grade.c - jr_grade_file (grade.h): opens the files, then grades through the reward registry
 * (grade_registry.c) or, with no component configured, the judge alone (grade_judge.c) */
#include "reward/grade_internal.h"

void jr_grade_opts_init(jr_grade_opts *o, const jr_reward_opts *reward) {
    *o = (jr_grade_opts){.reward = reward, .retry_unscored = 1, .log_prefix = "judgerl grade"};
}

jr_status jr_grade_file(const jr_grade_opts *o, const char *in_path, const char *out_path, char **summary) {
    *summary = NULL;
    if (!o->reward) return jr_fail(JR_EINVAL, "jr_grade_file: no reward options (jr_grade_opts.reward)");
    jr_grade_io g;
    jr_status st = jr_grade_io_open(&g, o, in_path, out_path);
    if (!st) st = o->reward->n_components ? jr_grade_by_registry(&g, summary) : jr_grade_by_judge(&g, summary);
    jr_grade_io_close(&g);
    return st;
}
