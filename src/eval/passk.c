/* passk.c - the unbiased pass@k estimator (Chen et al. 2021) in HumanEval's exact product form */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "judgerl/eval.h"

double jr_pass_at_k(int n, int c, int k) {
    if (k < 1 || n < k || c < 0 || c > n) return NAN;
    if (n - c < k) return 1.0;
    double prod = 1.0;
    for (int i = n - c + 1; i <= n; i++) prod *= 1.0 - (double)k / (double)i;
    return 1.0 - prod;
}

/* numpy's pairwise summation (what HumanEval's .mean() does), so the means agree to the bit more
 * often than a plain loop would. */
static double pairwise_sum(const double *a, size_t n) {
    if (n < 8) {
        double s = 0.;
        for (size_t i = 0; i < n; i++) s += a[i];
        return s;
    }
    if (n <= 128) {
        double r[8];
        for (int j = 0; j < 8; j++) r[j] = a[j];
        size_t i;
        for (i = 8; i < n - n % 8; i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        double s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) s += a[i];
        return s;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

double jr_pass_at_k_mean(const int *n, const int *c, size_t m, int k) {
    if (!m) return NAN;
    double *p = malloc(m * sizeof *p);
    if (!p) return NAN;
    double mean = NAN;
    size_t i;
    for (i = 0; i < m; i++)
        if (isnan(p[i] = jr_pass_at_k(n[i], c[i], k))) break;
    if (i == m) mean = pairwise_sum(p, m) / (double)m;
    free(p);
    return mean;
}

void jr_fmt_double(char *buf, size_t len, double v) {
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    /* keep it a float to a JSON reader, as Python's repr does ("1.0", not "1") */
    int has_dot = 0;
    for (const char *p = buf; *p; p++)
        if (*p == '.' || *p == 'e' || *p == 'n' || *p == 'i') has_dot = 1;
    if (!has_dot) {
        size_t n = 0;
        while (buf[n]) n++;
        if (n + 2 < len) { buf[n] = '.'; buf[n + 1] = '0'; buf[n + 2] = 0; }
    }
}
