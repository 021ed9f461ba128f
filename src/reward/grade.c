/* grade.c - jr_grade_file (grade.h): opens the files, then grades through the reward registry
 * (grade_registry.c) or, with no component configured, the judge alone (grade_judge.c) */
#include <stdio.h>
#include <string.h>

#include "reward/grade_internal.h"

void jr_grade_opts_init(jr_grade_opts *o, const jr_reward_opts *reward) {
    *o = (jr_grade_opts){.reward = reward, .retry_unscored = 1, .log_prefix = "judgerl grade"};
}

jr_status jr_grade_file(const jr_grade_opts *opts, const char *in_path, const char *out_path, char **summary) {
    *summary = NULL;
    if (!opts->reward) return jr_fail(JR_EINVAL, "jr_grade_file: no reward options (jr_grade_opts.reward)");
    /* the judge's default cache (judge.cache) lives beside the output unless the caller placed it */
    jr_grade_opts go = *opts, *o = &go;
    jr_reward_opts ro = *opts->reward;
    char dir[4096];
    if (!ro.judge.cache_dir) {
        const char *slash = strrchr(out_path, '/');
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - out_path) : 1, slash ? out_path : ".");
        if (!dir[0]) snprintf(dir, sizeof dir, "/");
        ro.judge.cache_dir = dir;
        go.reward = &ro;
    }
    jr_grade_io g;
    jr_status st = jr_grade_io_open(&g, o, in_path, out_path);
    if (!st) st = o->reward->n_components ? jr_grade_by_registry(&g, summary) : jr_grade_by_judge(&g, summary);
    jr_grade_io_close(&g);
    return st;
}
