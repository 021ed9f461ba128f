/* bench_memory.c - `judgerl bench memory`: streaming-read bandwidth, the bound a decode step that reads
 * every weight once cannot beat (bytes per token / bandwidth), as one JSON object */
#include <jansson.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
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

int cmd_bench_memory(int argc, char **argv) {
    const char *cmd = "bench memory";
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl bench memory [--mib 512] [--reps 5]\n"
               "Reads a buffer of --mib MiB (far larger than the caches) --reps times with the OpenMP threads\n"
               "(OMP_NUM_THREADS) and prints the best and median read bandwidth in GB/s (10^9 bytes/s) of wall\n"
               "time and of CPU time (per thread, times the threads: what the reads get while they run on a\n"
               "shared machine, comparable with bench generate's decode_cpu figures with one thread): the\n"
               "bound of a decode step that streams every weight once (tokens/s <= GB/s / GB of weights).\n");
        return CLI_OK;
    }
    long mib = 512, reps = 5;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) return cli_usage(cmd, "%s needs a value", argv[i]);
        const char *a = argv[i], *v = argv[++i];
        char *end;
        long x = strtol(v, &end, 10);
        if (*end || x < 1) return cli_usage(cmd, "%s: expected a positive integer, got '%s'", a, v);
        if (!strcmp(a, "--mib")) mib = x;
        else if (!strcmp(a, "--reps")) reps = x;
        else return cli_usage(cmd, "unknown option '%s'", a);
    }
    size_t bytes = (size_t)mib << 20;
    long n = (long)(bytes / sizeof(v16)) & ~3L;
    v16 *p = aligned_alloc(64, (size_t)n * sizeof(v16));
    if (!p) return cli_fail(cmd, jr_fail(JR_ENOMEM, "cannot allocate %ld MiB", mib));
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
    if (!gbs) { free(p); return cli_fail(cmd, jr_fail(JR_ENOMEM, "out of memory")); }
    for (int k = 0; k < 2; k++) {
        double *x = k ? cgbs : gbs;
        for (long i = 1; i < reps; i++) /* insertion sort, descending */
            for (long j = i; j > 0 && x[j] > x[j - 1]; j--) { double t = x[j]; x[j] = x[j - 1]; x[j - 1] = t; }
    }
    json_t *j = json_pack("{s:I,s:I,s:i,s:f,s:f,s:f,s:f,s:f}", "mib", (json_int_t)mib, "reps", (json_int_t)reps,
                          "omp_threads", T, "best_gb_per_s", gbs[0], "median_gb_per_s", gbs[reps / 2],
                          "best_gb_per_cpu_s", cgbs[0], "median_gb_per_cpu_s", cgbs[reps / 2], "checksum", (double)sink);
    char *txt = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
    printf("%s\n", txt);
    free(txt);
    json_decref(j);
    free(gbs);
    free(p);
    return CLI_OK;
}
