/* dist.c - data-parallel ranks over MPI (dist.h): launch check, ordered tree sum, broadcast */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/clock.h"
#include "judgerl/dist.h"

#ifdef JR_MPI
#include <mpi.h>
#endif

static int g_init, g_rank, g_size = 1;
static uint64_t g_sent, g_recv;
static double g_secs;

#ifdef JR_MPI
static int g_mpi;
#endif

/* The world size a launcher announces (0: no launcher; -1: one whose size is only known after MPI_Init). */
static long launcher_size(const char **name) {
    const char *v;
    if ((v = getenv("OMPI_COMM_WORLD_SIZE")) && *v) { *name = "OMPI_COMM_WORLD_SIZE"; return atol(v); }
    if ((v = getenv("PMI_SIZE")) && *v) { *name = "PMI_SIZE"; return atol(v); }
    if ((v = getenv("PMIX_RANK")) && *v) { /* srun --mpi=pmix: Slurm tells the step's size */
        const char *t = getenv("SLURM_STEP_NUM_TASKS");
        *name = t && *t ? "SLURM_STEP_NUM_TASKS" : "PMIX_RANK";
        return t && *t ? atol(t) : -1;
    }
    *name = NULL;
    return 0;
}

long jr_dist_launcher_size(void) {
    const char *name;
    return launcher_size(&name);
}

int jr_dist_compiled(void) {
#ifdef JR_MPI
    return 1;
#else
    return 0;
#endif
}

int jr_dist_rank(void) { return g_rank; }
int jr_dist_size(void) { return g_size; }

#ifdef JR_MPI
static jr_status mpi_fail(int rc, const char *op, const char *what) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", rc);
    return jr_fail(JR_EIO, "rank %d of %d: %s of %s failed: %s (a rank died or the network failed; the last "
                           "checkpoint is intact: resume with trainer.resume=true)", g_rank, g_size, op, what, msg);
}
#endif

jr_status jr_dist_init(void) {
    if (g_init) return JR_OK;
    const char *name;
    long n = launcher_size(&name);
    if (n == 0 || n == 1) { g_init = 1; return JR_OK; }
#ifdef JR_MPI
    int rc = MPI_Init(NULL, NULL);
    if (rc != MPI_SUCCESS) return jr_fail(JR_EIO, "MPI_Init failed (launched with %s set)", name);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    g_mpi = 1;
    g_init = 1;
    return JR_OK;
#else
    if (n < 0)
        return jr_fail(JR_EUNSUPPORTED, "launched by an MPI launcher (%s is set) but this judgerl was built without "
                                        "MPI: install libopenmpi-dev, rebuild (make clean && make), or run one process",
                       name);
    return jr_fail(JR_EUNSUPPORTED, "launched as %ld ranks (%s=%ld) but this judgerl was built without MPI: every rank "
                                    "would train alone and write the same run directory; install libopenmpi-dev and "
                                    "rebuild (make clean && make), or run one process", n, name, n);
#endif
}

/* Elements per message: bounded so the temporary buffer stays small and counts fit in an int. */
#define CHUNK ((size_t)1 << 22)

#ifdef JR_MPI
/* The ordered tree sum of one chunk (n elements of size esz, MPI type t); add(acc, theirs, n). */
static jr_status tree_sum(void *buf, void *tmp, size_t n, size_t esz, MPI_Datatype t, void (*add)(void *, const void *, size_t),
                          const char *what) {
    for (int s = 1; s < g_size; s *= 2) {
        if (g_rank % (2 * s) == 0) {
            int from = g_rank + s;
            if (from >= g_size) continue;
            int rc = MPI_Recv(tmp, (int)n, t, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) return mpi_fail(rc, "receive", what);
            g_recv += n * esz;
            add(buf, tmp, n);
        } else if (g_rank % (2 * s) == s) {
            int rc = MPI_Send(buf, (int)n, t, g_rank - s, 7, MPI_COMM_WORLD);
            if (rc != MPI_SUCCESS) return mpi_fail(rc, "send", what);
            g_sent += n * esz;
            break; /* this rank's partial sum is handed on: it only waits for the broadcast now */
        }
    }
    int rc = MPI_Bcast(buf, (int)n, t, 0, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "broadcast", what);
    if (g_rank) g_recv += n * esz; else g_sent += n * esz;
    return JR_OK;
}

static void add_f32(void *a, const void *b, size_t n) {
    float *x = a;
    const float *y = b;
    for (size_t i = 0; i < n; i++) x[i] += y[i];
}
static void add_f64(void *a, const void *b, size_t n) {
    double *x = a;
    const double *y = b;
    for (size_t i = 0; i < n; i++) x[i] += y[i];
}

static void max_f64(void *a, const void *b, size_t n) {
    double *x = a;
    const double *y = b;
    for (size_t i = 0; i < n; i++) x[i] = y[i] > x[i] ? y[i] : x[i];
}

static jr_status sum_any(void *buf, size_t n, size_t esz, MPI_Datatype t, void (*add)(void *, const void *, size_t),
                         const char *what) {
    if (g_size < 2 || !n) return JR_OK;
    double t0 = jr_now_s();
    size_t c = n < CHUNK ? n : CHUNK;
    void *tmp = malloc(c * esz);
    if (!tmp) return jr_fail(JR_ENOMEM, "%s: cannot allocate the %zu-byte reduction buffer", what, c * esz);
    jr_status st = JR_OK;
    for (size_t i = 0; i < n && !st; i += c)
        st = tree_sum((char *)buf + i * esz, tmp, n - i < c ? n - i : c, esz, t, add, what);
    free(tmp);
    g_secs += jr_now_s() - t0;
    return st;
}
#endif

jr_status jr_dist_sum_f32(float *buf, size_t n, const char *what) {
#ifdef JR_MPI
    return sum_any(buf, n, sizeof *buf, MPI_FLOAT, add_f32, what);
#else
    (void)buf; (void)n; (void)what;
    return JR_OK;
#endif
}

jr_status jr_dist_sum_f64(double *buf, size_t n, const char *what) {
#ifdef JR_MPI
    return sum_any(buf, n, sizeof *buf, MPI_DOUBLE, add_f64, what);
#else
    (void)buf; (void)n; (void)what;
    return JR_OK;
#endif
}

jr_status jr_dist_bcast(void *buf, size_t bytes, int root, const char *what) {
#ifdef JR_MPI
    if (g_size < 2 || !bytes) return JR_OK;
    double t0 = jr_now_s();
    for (size_t i = 0; i < bytes; i += CHUNK) {
        size_t c = bytes - i < CHUNK ? bytes - i : CHUNK;
        int rc = MPI_Bcast((char *)buf + i, (int)c, MPI_BYTE, root, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) return mpi_fail(rc, "broadcast", what);
        if (g_rank == root) g_sent += c; else g_recv += c;
    }
    g_secs += jr_now_s() - t0;
    return JR_OK;
#else
    (void)buf; (void)bytes; (void)root; (void)what;
    return JR_OK;
#endif
}

jr_status jr_dist_max_f64(double *buf, size_t n, const char *what) {
#ifdef JR_MPI
    return sum_any(buf, n, sizeof *buf, MPI_DOUBLE, max_f64, what);
#else
    (void)buf; (void)n; (void)what;
    return JR_OK;
#endif
}

void jr_dist_traffic(uint64_t *sent, uint64_t *received, double *seconds) {
    if (sent) *sent = g_sent;
    if (received) *received = g_recv;
    if (seconds) *seconds = g_secs;
}

void jr_dist_abort(int code) {
#ifdef JR_MPI
    if (g_mpi) MPI_Abort(MPI_COMM_WORLD, code);
#endif
    (void)code;
}

void jr_dist_finalize(void) {
#ifdef JR_MPI
    if (g_mpi) MPI_Finalize();
    g_mpi = 0;
#endif
}
