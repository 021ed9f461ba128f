/* grpo_math.c - GRPO-family math: group-relative advantages (GRPO, RLOO) and the clipped policy loss */
#include "judgerl/grpo.h"

#include <math.h>
#include <string.h>

static void stats_begin(jr_adv_stats *s, const float *rewards, const uint8_t *scored, int n, int n_groups) {
    double sum = 0, sq = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (scored[i]) { sum += rewards[i]; k++; }
    double mean = k ? sum / k : 0;
    for (int i = 0; i < n; i++)
        if (scored[i]) sq += (rewards[i] - mean) * (rewards[i] - mean);
    memset(s, 0, sizeof *s);
    s->groups = n_groups;
    s->scored = k;
    s->unscored = n - k;
    s->reward_mean = mean;
    s->reward_std = k > 1 ? sqrt(sq / (k - 1)) : 0;
}

/* Mean and unbiased std of the scored samples of one group; returns how many are scored. */
static int group_moments(const float *r, const uint8_t *scored, int G, double *mean, double *std) {
    double sum = 0, sq = 0;
    int k = 0;
    for (int j = 0; j < G; j++)
        if (scored[j]) { sum += r[j]; k++; }
    *mean = k ? sum / k : 0;
    for (int j = 0; j < G; j++)
        if (scored[j]) sq += (r[j] - *mean) * (r[j] - *mean);
    *std = k > 1 ? sqrt(sq / (k - 1)) : 0;
    return k;
}

void jr_grpo_advantages(float *adv, uint8_t *active, jr_adv_stats *stats, const float *rewards,
                        const uint8_t *scored, int n_groups, int G, jr_scale_rewards mode) {
    jr_adv_stats s;
    stats_begin(&s, rewards, scored, n_groups * G, n_groups);
    int zero_std = 0;
    for (int g = 0; g < n_groups; g++) {
        const float *r = rewards + (size_t)g * G;
        const uint8_t *sc = scored + (size_t)g * G;
        double mean, std;
        int k = group_moments(r, sc, G, &mean, &std);
        int used = k >= 2;
        if (used) {
            s.groups_used++;
            if (std == 0) zero_std++;
        }
        double denom = mode == JR_SCALE_GROUP ? std + 1e-4 : mode == JR_SCALE_BATCH ? s.reward_std + 1e-4 : 1.0;
        for (int j = 0; j < G; j++) {
            size_t i = (size_t)g * G + j;
            int on = used && sc[j];
            adv[i] = on ? (float)((r[j] - mean) / denom) : 0.0f;
            if (active) active[i] = (uint8_t)on;
        }
    }
    s.frac_zero_std = s.groups_used ? (double)zero_std / s.groups_used : 0;
    if (stats) *stats = s;
}

void jr_rloo_advantages(float *adv, uint8_t *active, jr_adv_stats *stats, const float *rewards,
                        const uint8_t *scored, int n_groups, int G) {
    jr_adv_stats s;
    stats_begin(&s, rewards, scored, n_groups * G, n_groups);
    int zero_std = 0;
    for (int g = 0; g < n_groups; g++) {
        const float *r = rewards + (size_t)g * G;
        const uint8_t *sc = scored + (size_t)g * G;
        double mean, std, sum = 0;
        int k = group_moments(r, sc, G, &mean, &std);
        for (int j = 0; j < G; j++)
            if (sc[j]) sum += r[j];
        int used = k >= 2;
        if (used) {
            s.groups_used++;
            if (std == 0) zero_std++;
        }
        for (int j = 0; j < G; j++) {
            size_t i = (size_t)g * G + j;
            int on = used && sc[j];
            adv[i] = on ? (float)(r[j] - (sum - r[j]) / (k - 1)) : 0.0f;
            if (active) active[i] = (uint8_t)on;
        }
    }
    s.frac_zero_std = s.groups_used ? (double)zero_std / s.groups_used : 0;
    if (stats) *stats = s;
}

double jr_overlong_penalty(int len, int max_len, int cache) {
    int expected = max_len - cache;
    if (len <= expected) return 0.0;
    if (len <= max_len) return (double)(expected - len) / cache;
    return -1.0;
}

jr_status jr_policy_loss(jr_policy_loss_stats *st, float *dlp, const float *lp, const float *old, const float *ref,
                         const float *mask, const float *adv, const uint8_t *active, int N, int T,
                         const jr_policy_loss_cfg *cfg) {
    if (N < 0 || T < 0) return jr_fail(JR_EINVAL, "policy loss: negative shape (%d, %d)", N, T);
    if (cfg->beta != 0 && !ref) return jr_fail(JR_EINVAL, "policy loss: beta=%g needs reference log-probs", cfg->beta);
    if (cfg->eps_low < 0 || cfg->eps_high < 0)
        return jr_fail(JR_EINVAL, "policy loss: epsilon must be >= 0 (got %g, %g)", cfg->eps_low, cfg->eps_high);
    if (cfg->type == JR_LOSS_DR_GRPO && cfg->max_completion_length <= 0)
        return jr_fail(JR_EINVAL, "policy loss: dr_grpo needs max_completion_length > 0");
    if (cfg->type == JR_LOSS_DAPO && !(cfg->dapo_tokens > 0))
        return jr_fail(JR_EINVAL, "policy loss: dapo needs the accumulated batch's token count");

    /* Per-sequence token counts and the normaliser of each token's loss. */
    double tokens = 0, n_seq = 0;
    for (int i = 0; i < N; i++) {
        if (active && !active[i]) continue;
        double c = 0;
        for (int t = 0; t < T; t++) c += mask[(size_t)i * T + t];
        tokens += c;
        n_seq += 1;
    }
    double seqs = cfg->seq_count > 0 ? cfg->seq_count : n_seq;
    double loss = 0, kl_sum = 0, lo = 0, hi = 0, reg = 0;
    double lo_b = 1.0 - cfg->eps_low, hi_b = 1.0 + cfg->eps_high;
    if (dlp) memset(dlp, 0, sizeof(float) * (size_t)N * T);
    for (int i = 0; i < N; i++) {
        if (active && !active[i]) continue;
        double ntok = 0;
        for (int t = 0; t < T; t++) ntok += mask[(size_t)i * T + t];
        double w; /* weight of one token of this sequence in the loss */
        switch (cfg->type) {
        case JR_LOSS_GRPO: w = 1.0 / ((ntok > 1 ? ntok : 1) * (seqs > 0 ? seqs : 1)); break;
        case JR_LOSS_BNPO: w = 1.0 / (tokens > 1 ? tokens : 1); break;
        case JR_LOSS_DR_GRPO: w = 1.0 / ((seqs > 0 ? seqs : 1) * cfg->max_completion_length); break;
        default: w = 1.0 / cfg->dapo_tokens; break;
        }
        double A = adv[i];
        for (int t = 0; t < T; t++) {
            size_t k = (size_t)i * T + t;
            if (mask[k] == 0) continue;
            double m = mask[k];
            double x = lp[k];
            double r = old ? exp(x - old[k]) : 1.0;
            double rc = r < lo_b ? lo_b : r > hi_b ? hi_b : r;
            double s1 = r * A, s2 = rc * A;
            double l, g;
            if (s1 <= s2) { l = -s1; g = -A * r; }         /* unclipped term is the min */
            else { l = -s2; g = (r == rc) ? -A * r : 0; } /* clipped: constant in lp */
            if (cfg->beta != 0) {
                double d = ref[k] - x;
                double e = exp(d);
                l += cfg->beta * (e - d - 1);
                g += cfg->beta * (1 - e);
                kl_sum += m * (e - d - 1);
            } else if (ref) {
                double d = ref[k] - x;
                kl_sum += m * (exp(d) - d - 1);
            }
            loss += w * m * l;
            if (dlp) dlp[k] = (float)(w * m * g);
            int cl = r < lo_b && A < 0, ch = r > hi_b && A > 0;
            lo += m * cl;
            hi += m * ch;
            reg += m * (cl || ch);
        }
    }
    if (st) {
        st->loss = loss;
        st->tokens = tokens;
        st->kl = tokens > 0 ? kl_sum / tokens : 0;
        st->clip_low = tokens > 0 ? lo / tokens : 0;
        st->clip_high = tokens > 0 ? hi / tokens : 0;
        st->clip_region = tokens > 0 ? reg / tokens : 0;
    }
    return JR_OK;
}

void jr_grpo_advantages_nts(float *adv, uint8_t *active, jr_adv_stats *stats, const float *values,
                            const uint8_t *vscored, const float *weights, int K, const float *rewards,
                            const uint8_t *scored, int n_groups, int G) {
    int n = n_groups * G;
    jr_adv_stats s;
    stats_begin(&s, rewards, scored, n, n_groups);
    int zero_std = 0;
    /* per group: weighted sum of the per-component group-normalised values */
    for (int g = 0; g < n_groups; g++) {
        const uint8_t *sc = scored + (size_t)g * G;
        double rm, rs;
        int k = group_moments(rewards + (size_t)g * G, sc, G, &rm, &rs);
        int used = k >= 2;
        if (used) {
            s.groups_used++;
            if (rs == 0) zero_std++;
        }
        for (int j = 0; j < G; j++) {
            size_t i = (size_t)g * G + j;
            adv[i] = 0.0f;
            if (active) active[i] = (uint8_t)(used && sc[j]);
        }
        if (!used) continue;
        for (int c = 0; c < K; c++) {
            double sum = 0, sq = 0;
            int m = 0;
            for (int j = 0; j < G; j++) {
                size_t i = (size_t)g * G + j;
                if (sc[j] && vscored[i * K + c]) { sum += values[i * K + c]; m++; }
            }
            if (!m) continue;
            double mean = sum / m;
            for (int j = 0; j < G; j++) {
                size_t i = (size_t)g * G + j;
                if (sc[j] && vscored[i * K + c]) sq += (values[i * K + c] - mean) * (values[i * K + c] - mean);
            }
            double std = m > 1 ? sqrt(sq / (m - 1)) : 0;
            for (int j = 0; j < G; j++) {
                size_t i = (size_t)g * G + j;
                if (sc[j] && vscored[i * K + c]) adv[i] += (float)(weights[c] * (values[i * K + c] - mean) / (std + 1e-4));
            }
        }
    }
    /* then normalised over the batch (samples in the loss) */
    double sum = 0, sq = 0;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!active || active[i]) { sum += adv[i]; m++; }
    double mean = m ? sum / m : 0;
    for (int i = 0; i < n; i++)
        if (!active || active[i]) sq += (adv[i] - mean) * (adv[i] - mean);
    double std = m > 1 ? sqrt(sq / (m - 1)) : 0;
    for (int i = 0; i < n; i++)
        adv[i] = (!active || active[i]) && m ? (float)((adv[i] - mean) / (std + 1e-4)) : 0.0f;
    s.frac_zero_std = s.groups_used ? (double)zero_std / s.groups_used : 0;
    if (stats) *stats = s;
}
