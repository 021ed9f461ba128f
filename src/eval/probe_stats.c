/* probe_stats.c - the probes' statistics: Wilson intervals, Cohen's kappa, calibration error, Brier
 * score and a seeded percentile bootstrap */
#include <math.h>
#include <stdlib.h>

#include "judgerl/probe.h"
#include "judgerl/rng.h"

void jr_probe_wilson(double k, double n, double *lo, double *hi) {
    if (!(n > 0)) { *lo = 0; *hi = 1; return; }
    const double z = 1.959964;
    double p = k / n, z2 = z * z, den = 1 + z2 / n;
    double mid = (p + z2 / (2 * n)) / den;
    double half = z * sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / den;
    *lo = fmax(0, mid - half);
    *hi = fmin(1, mid + half);
}

double jr_probe_kappa(const int *a, const int *b, int n, int k) {
    if (n <= 0 || k <= 0) return NAN;
    double *ma = calloc((size_t)k * 2, sizeof *ma);
    if (!ma) return NAN;
    double *mb = ma + k, agree = 0;
    for (int i = 0; i < n; i++) {
        if (a[i] >= 0 && a[i] < k) ma[a[i]]++;
        if (b[i] >= 0 && b[i] < k) mb[b[i]]++;
        agree += a[i] == b[i];
    }
    double po = agree / n, pe = 0;
    for (int c = 0; c < k; c++) pe += (ma[c] / n) * (mb[c] / n);
    free(ma);
    if (pe >= 1 - 1e-12) return po >= 1 - 1e-12 ? 1.0 : 0.0;
    return (po - pe) / (1 - pe);
}

double jr_probe_ece(const double *conf, const int *correct, int n) {
    if (n <= 0) return NAN;
    double cs[10] = {0}, as[10] = {0}, ns[10] = {0};
    for (int i = 0; i < n; i++) {
        int b = (int)floor(conf[i] * 10);
        if (b > 9) b = 9;
        if (b < 0) b = 0;
        cs[b] += conf[i];
        as[b] += correct[i] ? 1 : 0;
        ns[b]++;
    }
    double e = 0;
    for (int b = 0; b < 10; b++)
        if (ns[b] > 0) e += ns[b] / n * fabs(cs[b] / ns[b] - as[b] / ns[b]);
    return e;
}

double jr_probe_brier(const double *p, const int *gold, int n, int k) {
    if (n <= 0) return NAN;
    double s = 0;
    for (int i = 0; i < n; i++)
        for (int l = 0; l < k; l++) {
            double d = p[(size_t)i * k + l] - (l == gold[i] ? 1.0 : 0.0);
            s += d * d;
        }
    return s / n;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* The q-quantile of sorted v[0..n) with linear interpolation between order statistics. */
static double quantile(const double *v, int n, double q) {
    double h = q * (n - 1);
    int i = (int)floor(h);
    if (i >= n - 1) return v[n - 1];
    return v[i] + (h - i) * (v[i + 1] - v[i]);
}

void jr_probe_bootstrap(double (*stat)(void *ctx, const int *idx, int n), void *ctx, int n, int resamples,
                        uint64_t seed, double *lo, double *hi) {
    *lo = *hi = NAN;
    if (n <= 0 || resamples <= 0) return;
    int *idx = malloc((size_t)n * sizeof *idx);
    double *v = malloc((size_t)resamples * sizeof *v);
    if (!idx || !v) { free(idx); free(v); return; }
    jr_rng r;
    jr_rng_seed(&r, seed);
    int m = 0;
    for (int b = 0; b < resamples; b++) {
        for (int i = 0; i < n; i++) idx[i] = (int)jr_rng_below(&r, (uint64_t)n);
        double s = stat(ctx, idx, n);
        if (isfinite(s)) v[m++] = s;
    }
    if (m > 0) {
        qsort(v, (size_t)m, sizeof *v, cmp_double);
        *lo = quantile(v, m, 0.025);
        *hi = quantile(v, m, 0.975);
    }
    free(idx);
    free(v);
}
