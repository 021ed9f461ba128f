/* dist.h - data-parallel ranks over MPI (OpenMPI): the launch check, rank and size, an ORDERED sum of
 * buffers (a fixed binary tree over ranks, never MPI_Allreduce's size- and count-dependent algorithm, so
 * a result never depends on timing), broadcast and abort. Without MPI compiled in (no libopenmpi-dev at
 * build time) there is one rank and a multi-rank launch is refused. docs/SCALE.md. */
#ifndef JUDGERL_DIST_H
#define JUDGERL_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "judgerl/status.h"

/* Reads the launcher's environment (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK with Slurm's
 * SLURM_STEP_NUM_TASKS): without one, a single
 * rank and MPI is never initialised. Under a launcher, MPI_Init (MPI builds; errors returned, not
 * fatal) or, in a build without MPI, JR_EUNSUPPORTED naming the launcher's world size. Idempotent. */
jr_status jr_dist_init(void);

/* The world size the launcher's environment announces before any MPI call: 0 without a launcher,
 * -1 for a launcher that tells it only to MPI_Init (PMIX_RANK without SLURM_STEP_NUM_TASKS). */
long jr_dist_launcher_size(void);

/* 1 when this binary has MPI compiled in. */
int jr_dist_compiled(void);
int jr_dist_rank(void);
int jr_dist_size(void);

/* buf[0..n) := the sum over ranks of every rank's buf, the same bits on every rank: rank r adds the
 * partial sum of rank r + s at stage s = 1, 2, 4, ... (acc = acc + theirs), then rank 0 broadcasts.
 * With one rank nothing happens. what names the buffer in an error. */
jr_status jr_dist_sum_f32(float *buf, size_t n, const char *what);
jr_status jr_dist_sum_f64(double *buf, size_t n, const char *what);
/* buf[i] := the largest buf[i] over ranks (the same tree). */
jr_status jr_dist_max_f64(double *buf, size_t n, const char *what);

/* Copies rank root's buf to every rank. */
jr_status jr_dist_bcast(void *buf, size_t bytes, int root, const char *what);

/* Bytes this rank sent and received through jr_dist_* so far, and the seconds spent in them. */
void jr_dist_traffic(uint64_t *sent, uint64_t *received, double *seconds);

/* Ends every rank at once (MPI_Abort) after an error on this one; a plain return with one rank. */
void jr_dist_abort(int code);
void jr_dist_finalize(void);

#endif
