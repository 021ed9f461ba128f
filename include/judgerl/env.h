/* env.h - the environment interface: where a trainer's samples get their rewards. submit returns at once,
 * results come back through a completion queue (any order, any thread), the trainer bounds what is in
 * flight, waits up to a deadline, cancels on stop and consumes results in sample-id order */
#ifndef JUDGERL_ENV_H
#define JUDGERL_ENV_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "judgerl/status.h"

/* What scoring one sample cost. */
typedef struct jr_env_cost {
    int model_calls;        /* judge / policy / tool model calls made for it (0 when cached) */
    int64_t tokens;         /* tokens those calls used (0 when unknown) */
    double seconds;         /* wall time from submit to result */
} jr_env_cost;

/* One sample's result. Owned fields are freed by jr_env_result_free. */
typedef struct jr_env_result {
    uint64_t id;            /* the sample id given to submit */
    int scored;             /* 1: reward is set; 0: UNSCORED, reason says why */
    double reward;          /* the total (NAN when unscored) */
    char *reason;           /* why unscored ("deadline", "canceled", the environment's reason) */
    int n_parts;            /* per-component scores (the environment's n_parts) */
    double *parts;          /* (n_parts) */
    uint8_t *parts_scored;  /* (n_parts) */
    json_t *detail;         /* a JSON object (may be NULL): judge verdicts, workflow trace, ... */
    jr_env_cost cost;
} jr_env_result;

void jr_env_result_free(jr_env_result *r);

/* Allocates r->parts / parts_scored for n components (zeroed) and sets r->n_parts. */
jr_status jr_env_result_parts(jr_env_result *r, int n);

/* The completion queue a trainer owns; environments push results into it from any thread. */
typedef struct jr_env_queue jr_env_queue;

/* Moves *r into the queue (r is zeroed). Thread-safe. */
void jr_env_queue_push(jr_env_queue *q, jr_env_result *r);

/* An environment: a table of functions over a context.
 *  submit: starts scoring `completion` (len bytes) for task row `row` (borrowed for the call only: copy
 *          what you keep; the GRPO trainer's rows hold the dataset's fields, "id", "prompt" and
 *          "sample_index", the sample's place in its prompt's group) as sample `id`; returns at once; the result is pushed to q exactly once
 *          (unless cancel is called first). May make several model calls, run code, fan out to
 *          several judges: the trainer only sees the pushed result.
 *  flush:  (may be NULL) the trainer has submitted everything it will wait for: an environment that
 *          batches (the reward registry) finishes and pushes its pending results now.
 *  cancel: drop everything in flight; when it returns, nothing more is pushed to any queue.
 *  close:  frees the context. */
typedef struct jr_env_ops {
    const char *name;
    jr_status (*submit)(void *ctx, const json_t *row, const char *completion, size_t len, uint64_t id,
                        jr_env_queue *q);
    jr_status (*flush)(void *ctx, jr_env_queue *q);
    void (*cancel)(void *ctx);
    void (*close)(void *ctx);
} jr_env_ops;

typedef struct jr_env {
    const jr_env_ops *ops;
    void *ctx;
    int n_parts;             /* components each result carries */
    const char *const *part_names;
    const double *part_weights;
} jr_env;

void jr_env_close(jr_env *e);

/* An environment over a plain function: fn scores a sample at submit time, on the caller's thread
 * (returns the reward; sets *scored = 0 and may set *reason, a static string, to leave it unscored). */
typedef double (*jr_env_fn)(void *ud, const json_t *row, const char *completion, size_t len, int *scored,
                            const char **reason);
jr_status jr_env_from_fn(jr_env *e, jr_env_fn fn, void *ud);

/* The reward registry (judges + verifiers) as an environment: rows get "response" = completion and
 * go to jr_reward_batch_add (rules now, judge calls submitted now); flush waits for the judge
 * results and pushes every result. cap: sample ids are < cap. The registry stays the caller's. */
struct jr_reward;
jr_status jr_env_from_reward(jr_env *e, struct jr_reward *rw, size_t cap);

/* ---- the trainer's side: one step's samples ---- */

typedef struct jr_env_batch_opts {
    int max_in_flight;       /* back-pressure: submit waits while this many are unfinished (0 = no bound) */
    double deadline_s;       /* wait at most this long after the last submit (0 = forever) */
    volatile sig_atomic_t *stop; /* set: cancel what is in flight (reason "canceled") */
} jr_env_batch_opts;

typedef struct jr_env_batch jr_env_batch;

/* A batch of n samples with ids 0..n-1 whose results go to out[0..n) (zeroed here). */
jr_status jr_env_batch_open(jr_env_batch **b, jr_env *env, size_t n, jr_env_result *out, const jr_env_batch_opts *o);

/* Submits sample i (waits first while max_in_flight are unfinished, draining the queue). */
jr_status jr_env_batch_submit(jr_env_batch *b, size_t i, const json_t *row, const char *completion, size_t len);

/* Flushes the environment and waits for every submitted sample up to the deadline; results are
 * stored by sample id, so what the trainer reads never depends on arrival order. Past the deadline
 * the environment is canceled and the missing samples are UNSCORED with reason "deadline"; on *stop
 * reason "canceled" and the call returns JR_ECANCELED; samples never submitted: "not submitted".
 * Frees the batch. */
jr_status jr_env_batch_finish(jr_env_batch *b);

#endif
