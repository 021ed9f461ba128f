/* grade_internal.h - what jr_grade_file's engines share (grade_io.c): the input read row by row, the
 * resume set, the durable output; the two engines (grade_judge.c, grade_registry.c) */
#ifndef JUDGERL_GRADE_INTERNAL_H
#define JUDGERL_GRADE_INTERNAL_H

#include <stdint.h>
#include <jansson.h>

#include "judgerl/dataset.h"
#include "judgerl/grade.h"

/* One grading run's files: the input, the ids done in an earlier run, the output being appended. */
typedef struct jr_grade_io {
    const jr_grade_opts *o;
    const char *in_path, *out_path;
    jr_jsonl_reader *in;
    int eof;                      /* the input is read to its end */
    long total;                   /* lines in the input (the denominator of max_unscored_frac) */
    json_t *done, *seen;          /* id text -> true: finished in out_path; read so far */
    jr_jsonl_writer *out;
    long n_prev_unscored;         /* unscored rows out_path keeps (kept when not retried) */
    long n_dropped;               /* torn last lines cut (0 or 1) */
    long lineno;                  /* line of the row last read */
} jr_grade_io;

/* Opens the input, cuts a torn last line of out_path and reads its finished ids (dropping unscored
 * rows with retry_unscored). Close with jr_grade_io_close whatever it returns. */
jr_status jr_grade_io_open(jr_grade_io *g, const jr_grade_opts *o, const char *in_path, const char *out_path);
/* Opens out_path for appending (creating it): after the scorer opened, so a configuration error
 * leaves no file behind. */
jr_status jr_grade_io_open_output(jr_grade_io *g);
/* The next row to grade: 1 with *row (caller decrefs), 0 for a row done in an earlier run
 * (*skipped_done = 1) or the end of the input (g->eof), -1 on a bad row (message set). */
int jr_grade_io_next(jr_grade_io *g, json_t **row, int *skipped_done);
/* Appends one output line (no newline) as one write. */
jr_status jr_grade_io_append(jr_grade_io *g, const char *line);
/* After every row: closes the output (fsync) and rewrites it atomically in the input's order. */
jr_status jr_grade_io_finish(jr_grade_io *g);
void jr_grade_io_close(jr_grade_io *g);

/* The id of a row as text; 0 when it is neither a string nor an integer. */
int jr_grade_id_text(const json_t *v, char *out, size_t n);
/* 1 when a verdict's detail says its log-probs could not give an honest confidence (label). */
int jr_grade_unreliable(const json_t *detail);
/* Writes "PREFIX: unscored id=ID: WHY" to the log (a newline first when a bar is drawn). */
void jr_grade_log_unscored(const jr_grade_opts *o, const char *id, const char *why);
/* The two stops both engines make, as text in buf (returned): a configuration error of the judge (why), and
 * more than max_frac of the total rows unscored (reasons: the tally's summary; NULL when every unscored
 * row came from an earlier run). */
const char *jr_grade_stop_config(char *buf, size_t n, const char *why);
const char *jr_grade_stop_unscored(char *buf, size_t n, double max_frac, long n_unscored, long total, const char *reasons);

/* The engines: grade every row of g (opened) and return the summary text. */
jr_status jr_grade_by_judge(jr_grade_io *g, char **summary);
jr_status jr_grade_by_registry(jr_grade_io *g, char **summary);

#endif
