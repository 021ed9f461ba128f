/* metrics.h - metrics.jsonl: one JSON object per step (step, wall time, named scalars), appended and flushed */
#ifndef JUDGERL_METRICS_H
#define JUDGERL_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "judgerl/status.h"

typedef struct jr_metrics jr_metrics;

/* Opens path (e.g. RUN/metrics.jsonl) for appending, creating it when absent; a torn last line is
 * cut. resume_step >= 0 (a run resumed from the checkpoint of that step) first drops the rows with
 * step > resume_step, rewriting the file atomically, so the resumed run's rows follow without
 * duplicates; -1 keeps every row. On error *m is NULL. */
jr_status jr_metrics_open(jr_metrics **m, const char *path, int64_t resume_step);
/* Rewrites the JSONL log at path (atomically; untouched when nothing goes) keeping the complete
 * lines whose "step" is <= resume_step and the lines without one; an absent file is fine. */
jr_status jr_jsonl_cut_after(const char *path, int64_t resume_step);

/* Appends {"step":S,"wall_time":UNIX_SECONDS,NAME:VALUE,...} (names in the order given) and flushes.
 * Non-finite values are written as null. A name "step" or "wall_time", or a repeated name, is
 * JR_EINVAL and nothing is written. */
jr_status jr_metrics_log(jr_metrics *m, int64_t step, size_t n, const char *const *names, const double *values);

const char *jr_metrics_path(const jr_metrics *m);

/* Flushes, fsyncs and closes; frees m in every case. NULL is fine. */
jr_status jr_metrics_close(jr_metrics *m);

/* Seconds since the Unix epoch, with sub-second precision (the wall_time of metrics and events). */
double jr_wall_time(void);

#endif
