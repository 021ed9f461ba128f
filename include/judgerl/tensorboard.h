/* tensorboard.h - TensorBoard event files (TFRecord framing, hand-encoded Event protobufs) holding scalars */
#ifndef JUDGERL_TENSORBOARD_H
#define JUDGERL_TENSORBOARD_H

#include <stddef.h>
#include <stdint.h>

#include "judgerl/status.h"

typedef struct jr_tb_writer jr_tb_writer;

/* Creates dir (and parents) and a new event file in it named events.out.tfevents.<unix time>.<host>
 * (".N" appended when that name exists), whose first record is an Event with
 * file_version "brain.Event:2". `tensorboard --logdir` on dir or a parent reads it. On error *w is
 * NULL and no file is left behind. */
jr_status jr_tb_open(jr_tb_writer **w, const char *dir);

/* Appends one Event {wall_time, step, summary {value {tag, simple_value} ...}} with n scalars and
 * flushes it to the file. Values are stored as float (what simple_value holds). */
jr_status jr_tb_scalars(jr_tb_writer *w, int64_t step, double wall_time, size_t n, const char *const *tags,
                        const double *values);

/* Appends an Event {wall_time now, step, session_log {status: START}}: TensorBoard then drops the
 * events of earlier files with step >= `step`, which a resumed run (from the checkpoint of step - 1)
 * writes again. */
jr_status jr_tb_session_start(jr_tb_writer *w, int64_t step);

/* One scalar at the current wall time. */
jr_status jr_tb_scalar(jr_tb_writer *w, int64_t step, const char *tag, double value);

/* The event file's path (owned by w). */
const char *jr_tb_path(const jr_tb_writer *w);

/* Flushes, fsyncs and closes; frees w in every case. NULL is fine. */
jr_status jr_tb_close(jr_tb_writer *w);

/* `judgerl tb-export`: every row of the metrics.jsonl `metrics` ({"step": N, "wall_time": T, name: number,
 * ...}) as one event with a scalar per numeric field, in a new event file in out_dir (NULL: the directory
 * of `metrics`). *path gets the event file's path (caller frees), *events the number of rows. */
jr_status jr_tb_export(const char *metrics, const char *out_dir, char **path, long long *events);

/* Frames `len` bytes of data as one TFRecord into out (capacity len + 16): uint64 length (LE),
 * masked CRC-32C of those 8 bytes, the data, masked CRC-32C of the data. Returns len + 16. */
size_t jr_tfrecord_frame(unsigned char *out, const void *data, size_t len);

#endif
