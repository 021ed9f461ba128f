/* logprob.c - per-token log-probabilities of target tokens (with temperature) and their backward */
#include <math.h>
#include <string.h>

#include "judgerl/nn.h"

// lp (N), logits (N,V), targets (N)
void jr_logprob_forward(float *lp, const float *logits, const int32_t *targets, int N, int V, float inv_temp) {
#pragma omp parallel for schedule(static) if((long)N * V > JR_PAR_MIN)
    for (int n = 0; n < N; n++) {
        if (targets[n] < 0) { lp[n] = 0; continue; }
        const float *z = logits + (long)n * V;
        float mx = -INFINITY;
        for (int i = 0; i < V; i++) if (z[i] > mx) mx = z[i];
        double s = 0;
        for (int i = 0; i < V; i++) s += expf((z[i] - mx) * inv_temp);
        lp[n] = (float)((double)((z[targets[n]] - mx) * inv_temp) - log(s));
    }
}

// logits (N,V) -> dlogits in place, dlp (N), targets (N)
void jr_logprob_backward_inplace(float *logits, const float *dlp, const int32_t *targets, int N, int V,
                                 float inv_temp) {
#pragma omp parallel for schedule(static) if((long)N * V > JR_PAR_MIN)
    for (int n = 0; n < N; n++) {
        float *z = logits + (long)n * V;
        if (targets[n] < 0 || dlp[n] == 0.0f) { memset(z, 0, sizeof(float) * (size_t)V); continue; }
        float mx = -INFINITY;
        for (int i = 0; i < V; i++) if (z[i] > mx) mx = z[i];
        double s = 0;
        for (int i = 0; i < V; i++) {
            float e = expf((z[i] - mx) * inv_temp);
            z[i] = e;
            s += e;
        }
        float k = dlp[n] * inv_temp, is = (float)(1.0 / s);
        for (int i = 0; i < V; i++) z[i] = -k * z[i] * is;
        z[targets[n]] += k;
    }
}

// ent (N), logits (N,V), targets (N)
void jr_entropy_forward(float *ent, const float *logits, const int32_t *targets, int N, int V, float inv_temp) {
    double inv = inv_temp;
#pragma omp parallel for schedule(static) if((long)N * V > JR_PAR_MIN)
    for (int n = 0; n < N; n++) {
        if (targets[n] < 0) { ent[n] = 0; continue; }
        const float *z = logits + (long)n * V;
        double mx = -INFINITY;
        for (int v = 0; v < V; v++) if (z[v] * inv > mx) mx = z[v] * inv;
        double se = 0, sez = 0;
        for (int v = 0; v < V; v++) {
            double u = z[v] * inv - mx, e = exp(u);
            se += e;
            sez += e * u;
        }
        ent[n] = (float)(log(se) - sez / se);
    }
}
