/* sampler.c - next-token sampling (temperature, top-k, top-p, min-p, logit bias, masks) and log-probs */
#include "judgerl/sampler.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "judgerl/nn.h"
#include "sample/sampler_internal.h"

jr_sample_params jr_sample_params_default(void) {
    jr_sample_params p = {0};
    p.temperature = 1.0f;
    p.top_p = 1.0f;
    return p;
}

void jr_sample_scratch_free(jr_sample_scratch *w) {
    free(w->z);
    free(w->idx);
    w->z = NULL;
    w->idx = NULL;
    w->cap = 0;
}

static jr_status scratch_grow(jr_sample_scratch *w, int n) {
    if (w->cap >= n) return JR_OK;
    float *z = realloc(w->z, (size_t)n * sizeof *z);
    if (!z) return jr_fail(JR_ENOMEM, "sampler: out of memory for %d logits", n);
    w->z = z;
    int32_t *idx = realloc(w->idx, (size_t)n * sizeof *idx);
    if (!idx) return jr_fail(JR_ENOMEM, "sampler: out of memory for %d logits", n);
    w->idx = idx;
    w->cap = n;
    return JR_OK;
}

double jr_sample_exp_sum(float *z, int n, float zmax, float inv_t) {
    jr_expf_shifted(z, n, zmax, inv_t); /* the level's vector expf, bitwise glibc's */
    double total = 0;
    for (int i = 0; i < n; i++) total += z[i];
    return total;
}

/* Orders candidate ids by score, highest first, lower id first on ties (deterministic). */
static int cmp_desc(const void *a, const void *b, void *ctx) {
    const float *z = ctx;
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    if (z[i] > z[j]) return -1;
    if (z[i] < z[j]) return 1;
    return (i > j) - (i < j);
}

jr_status jr_sample(const float *logits, int n_valid, const jr_sample_params *p, const uint8_t *allowed,
                    jr_rng *rng, jr_sample_scratch *w, int32_t *out) {
    if (n_valid <= 0) return jr_fail(JR_EINVAL, "sampler: empty vocabulary");
    jr_status st = scratch_grow(w, n_valid);
    if (st) return st;
    float *z = w->z;
    for (int i = 0; i < n_valid; i++) z[i] = (allowed && !allowed[i]) ? -INFINITY : logits[i];
    for (int b = 0; b < p->n_bias; b++) {
        int32_t id = p->bias_ids[b];
        if (id >= 0 && id < n_valid && isfinite(z[id])) z[id] += p->bias_vals[b];
    }
    /* The largest score (NaN and -inf are never candidates; the first id of the largest on ties), in
     * vector steps: over 151,936 logits the scalar scan was a third of a draw. */
    float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
    for (int i = 0; i < n_valid; i++) mx = z[i] > mx ? z[i] : mx;
    if (!(mx > -INFINITY)) return jr_fail(JR_EINVAL, "sampler: no token is allowed (every id masked)");
    int best = 0;
    while (!(z[best] == mx)) best++;
    if (p->temperature <= 0.0f || p->top_k == 1) {
        *out = best;
        return JR_OK;
    }
    /* Candidates and their unnormalised probabilities exp((z - zmax) / T), stored over z. */
    float zmax = z[best], inv_t = 1.0f / p->temperature;
    int32_t *idx = w->idx;
    int n = 0;
#pragma omp simd reduction(+ : n)
    for (int i = 0; i < n_valid; i++) n += z[i] > -INFINITY;
    int plain = p->top_k <= 0 && !(p->top_p > 0.0f && p->top_p < 1.0f) && !(p->min_p > 0.0f);
    if (plain && n == n_valid) { /* every id a candidate, no truncation: one pass, then the draw */
        double total = jr_sample_exp_sum(z, n, zmax, inv_t);
        double u = jr_rng_double(rng) * total, cum = 0;
        for (int i = 0; i < n; i++) {
            cum += z[i];
            if (u < cum) { *out = i; return JR_OK; }
        }
        *out = n - 1;
        return JR_OK;
    }
    n = 0;
    for (int i = 0; i < n_valid; i++) {
        if (z[i] > -INFINITY) idx[n++] = i;
    }
    for (int c = 0; c < n; c++) z[idx[c]] = expf((z[idx[c]] - zmax) * inv_t);
    int use_k = p->top_k > 0 && p->top_k < n, use_p = p->top_p > 0.0f && p->top_p < 1.0f;
    double all = 0;
    if (use_p && !use_k)
        for (int c = 0; c < n; c++) all += z[idx[c]];
    if (use_k || use_p) {
        /* Only the head of the distribution needs sorting: move the tokens with p >= t (in units of
         * p_max) to the front, lowering t until they hold the top-k, or (no top-k) at least top_p
         * of the mass. Everything left behind is less likely than everything moved, so the sorted
         * prefix is exactly what sorting all candidates would give. */
        int m = n;
        for (double t = 1.0 / 16; t > 1e-30; t /= 16) {
            double mass = 0;
            m = 0;
            for (int c = 0; c < n; c++)
                if (z[idx[c]] >= t) {
                    int32_t x = idx[m]; idx[m] = idx[c]; idx[c] = x;
                    mass += z[idx[m++]];
                }
            if (use_k ? m >= p->top_k : mass >= p->top_p * all) break;
            m = n;
        }
        qsort_r(idx, (size_t)m, sizeof *idx, cmp_desc, z);
        if (use_k) n = p->top_k;
        else n = m;
    }
    if (use_p) {
        double total = use_k ? 0 : all, cum = 0;
        for (int c = 0; use_k && c < n; c++) total += z[idx[c]];
        int keep = n;
        for (int c = 0; c < n; c++) {
            cum += z[idx[c]];
            if (cum >= p->top_p * total) { keep = c + 1; break; }
        }
        n = keep;
    }
    if (p->min_p > 0.0f) {
        /* The most likely token has probability 1 in these units (z = zmax). */
        int m = 0;
        for (int c = 0; c < n; c++)
            if (z[idx[c]] >= p->min_p) idx[m++] = idx[c];
        n = m > 0 ? m : 1;
    }
    double total = 0;
    for (int c = 0; c < n; c++) total += z[idx[c]];
    double u = jr_rng_double(rng) * total, cum = 0;
    for (int c = 0; c < n; c++) {
        cum += z[idx[c]];
        if (u < cum) { *out = idx[c]; return JR_OK; }
    }
    *out = idx[n - 1];
    return JR_OK;
}

double jr_logsumexp(const float *logits, int n_logits, float temperature) {
    double inv_t = temperature > 0.0f ? 1.0 / (double)temperature : 1.0;
    double m = -INFINITY;
    for (int i = 0; i < n_logits; i++)
        if ((double)logits[i] * inv_t > m) m = (double)logits[i] * inv_t;
    double s = 0;
    for (int i = 0; i < n_logits; i++) s += exp((double)logits[i] * inv_t - m);
    return m + log(s);
}

float jr_logprob_at(const float *logits, int n_logits, float temperature, int32_t tok) {
    double inv_t = temperature > 0.0f ? 1.0 / (double)temperature : 1.0;
    return (float)((double)logits[tok] * inv_t - jr_logsumexp(logits, n_logits, temperature));
}

double jr_logsumexp_allowed(const float *logits, int n_logits, float temperature, const uint8_t *allowed) {
    if (!allowed) return jr_logsumexp(logits, n_logits, temperature);
    double inv_t = temperature > 0.0f ? 1.0 / (double)temperature : 1.0;
    double m = -INFINITY;
    for (int i = 0; i < n_logits; i++)
        if (allowed[i] && (double)logits[i] * inv_t > m) m = (double)logits[i] * inv_t;
    if (m == -INFINITY) return m;
    double s = 0;
    for (int i = 0; i < n_logits; i++)
        if (allowed[i]) s += exp((double)logits[i] * inv_t - m);
    return m + log(s);
}

int jr_top_logprobs(const float *logits, int n_logits, int n_valid, const uint8_t *allowed, int k, int32_t *ids, float *lps) {
    if (k > n_valid) k = n_valid;
    if (k <= 0) return 0;
    int n = 0; /* ids[0..n) sorted descending by logit, ties lower id first (insertion into k slots) */
    for (int i = 0; i < n_valid; i++) {
        if (allowed && !allowed[i]) continue;
        float v = logits[i];
        if (n == k && !(v > logits[ids[n - 1]])) continue;
        int pos = n < k ? n++ : k - 1;
        while (pos > 0 && v > logits[ids[pos - 1]]) { ids[pos] = ids[pos - 1]; pos--; }
        ids[pos] = i;
    }
    double lse = allowed ? jr_logsumexp_allowed(logits, n_valid, 1.0f, allowed) : jr_logsumexp(logits, n_logits, 1.0f);
    for (int c = 0; c < n; c++) lps[c] = (float)((double)logits[ids[c]] - lse);
    return n;
}
