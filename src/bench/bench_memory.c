/* bench_memory.c - `judgerl bench memory`: streaming-read bandwidth, the bound a decode step that reads
 * every weight once cannot beat (bytes per token / bandwidth) */
#include <omp.h>
#include <stdlib.h>

#include "judgerl/bench.h"
#include "judgerl/clock.h"

typedef float v16 __attribute__((vector_size(64)));

/* Sums the buffer 64 bytes at a time with 4 independent accumulators per thread (the loads, not the
 * adds, are the limit); returns the sum so the reads cannot be optimised away. */
static float read_all(const v16 *p, long n) {
    float total = 0;
#pragma omp parallel reduction(+ : total)
    {
        v16 a = {0}, b = {0}, c = {0}, d = {0};
#pragma omp for schedule(static)
        for (long i = 0; i < n; i += 4) {
            a += p[i];
            b += p[i + 1];
            c += p[i + 2];
            d += p[i + 3];
        }
        v16 s = a + b + c + d;
        for (int k = 0; k < 16; k++) total += s[k];
    }
    return total;
}

static void sort_desc(double *x, long n) { /* insertion sort: a handful of values */
    for (long i = 1; i < n; i++)
        for (long j = i; j > 0 && x[j] > x[j - 1]; j--) { double t = x[j]; x[j] = x[j - 1]; x[j - 1] = t; }
}

jr_status jr_bench_memory(long mib, long reps, json_t **out) {
    *out = NULL;
    if (mib < 1 || reps < 1) return jr_fail(JR_EINVAL, "bench memory: --mib and --reps must be positive");
    size_t bytes = (size_t)mib << 20;
    long n = (long)(bytes / sizeof(v16)) & ~3L;
    v16 *p = jr_malloc_weights((size_t)n * sizeof(v16)); /* as the weights: huge pages where THP allows */
    if (!p) return jr_fail(JR_ENOMEM, "cannot allocate %ld MiB", mib);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) p[i] = (v16){(float)(i & 7)}; /* touched by the threads that read it */
    double *gbs = malloc(sizeof(double) * (size_t)reps * 2), *cgbs = gbs ? gbs + reps : NULL;
    float sink = 0;
    int T = omp_get_max_threads();
    for (long r = 0; gbs && r < reps; r++) {
        double t0 = jr_now_s(), c0 = jr_cpu_s();
        sink += read_all(p, n);
        gbs[r] = (double)n * sizeof(v16) / (jr_now_s() - t0) / 1e9;
        cgbs[r] = (double)n * sizeof(v16) / ((jr_cpu_s() - c0) / T) / 1e9; /* per thread-second, times the threads */
    }
    free(p);
    if (!gbs) return jr_fail(JR_ENOMEM, "out of memory");
    sort_desc(gbs, reps);
    sort_desc(cgbs, reps);
    *out = json_pack("{s:I,s:I,s:i,s:f,s:f,s:f,s:f,s:f}", "mib", (json_int_t)mib, "reps", (json_int_t)reps, "omp_threads", T,
                     "best_gb_per_s", gbs[0], "median_gb_per_s", gbs[reps / 2], "best_gb_per_cpu_s", cgbs[0],
                     "median_gb_per_cpu_s", cgbs[reps / 2], "checksum", (double)sink);
    free(gbs);
    return *out ? JR_OK : jr_fail(JR_EINTERNAL, "cannot format the result");
}
