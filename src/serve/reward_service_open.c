/* reward_service_open.c - `judgerl serve-reward`'s start: the registry, its state directory and the
 * service, described on a log */
#include <stdio.h>
#include <string.h>

#include "judgerl/fsutil.h"
#include "judgerl/judge.h"
#include "judgerl/reward_service.h"

void jr_rsvc_default_state_dir(const char *cfg_path, char *out, size_t n) {
    const char *slash = strrchr(cfg_path, '/'), *dot = strrchr(cfg_path, '.');
    size_t len = dot && (!slash || dot > slash) ? (size_t)(dot - cfg_path) : strlen(cfg_path);
    snprintf(out, n, "%.*s.state", (int)len, cfg_path);
}

jr_status jr_rsvc_open(jr_rsvc **s, jr_reward **r, jr_reward_opts ro, const jr_rsvc_opts *so, const char *sdir, FILE *log) {
    *s = NULL;
    *r = NULL;
    /* a code-running reward on an open port runs any client's code: only with a key or when asked */
    for (int i = 0; !so->api_key && !so->allow_code && i < ro.n_components; i++)
        if (ro.components[i].fn && !strcmp(ro.components[i].fn, "code_tests"))
            return jr_fail(JR_EINVAL, "reward.components[%d] (code_tests) runs generated code for any client: configure an API key "
                           "(--api-key-env NAME) or set service.allow_code: true", i);
    jr_status st = jr_mkdirs(sdir);
    if (st) return st;
    ro.judge.cache_dir = sdir; /* judge_cache.sqlite of this service, never a global file */
    if ((st = jr_reward_open_opts(r, &ro)) || (st = jr_rsvc_start(s, *r, so))) {
        jr_reward_close(*r);
        *r = NULL;
        return st;
    }
    jr_judge *j = jr_reward_judge(*r);
    for (int i = 0; j && i < jr_judge_n_endpoints(j); i++) fprintf(log, "judgerl serve-reward: judge: %s\n", jr_judge_endpoint_info(j, i));
    fprintf(log, "judgerl serve-reward: %d reward components, unscored rows: %s; state in %s\n", jr_reward_n_parts(*r),
            so->unscored_value_set ? "answered service.unscored_value (logged)" : "HTTP 503 (OpenRLHF, slime), null (batch API)", sdir);
    fprintf(log, "judgerl serve-reward: listening on http://%s:%d (%s, %s, /v1/rewards)\n", so->host, jr_rsvc_port(*s), so->openrlhf_path,
            so->slime_path);
    return JR_OK;
}
