/* dataset.h - JSONL datasets: a streaming line reader, indexed files, seeded shuffling, train/validation
 * splits with a resumable position, and an append-only durable JSONL writer */
#ifndef JUDGERL_DATASET_H
#define JUDGERL_DATASET_H

#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "judgerl/config.h"
#include "judgerl/status.h"

/* ---- streaming reader: one JSON object per line ---- */

/* What to do with a bad line (not JSON, not an object, invalid UTF-8). */
typedef enum {
    JR_BAD_LINE_SKIP, /* report it through the callback, count it, go on */
    JR_BAD_LINE_FAIL  /* stop: the read returns JR_EFORMAT with the message "FILE:LINE: ..." */
} jr_bad_line_policy;

/* Called once per skipped bad line with "FILE:LINE: what is wrong" (valid during the call only). */
typedef void (*jr_bad_line_fn)(void *ud, const char *msg);

typedef struct jr_jsonl_reader jr_jsonl_reader;

/* The longest line a reader accepts by default (bytes, line ending excluded); see
 * jr_jsonl_set_max_line. */
#define JR_JSONL_MAX_LINE_DEFAULT ((size_t)256 << 20)

/* Opens path for reading rows in order. Lines may be up to the reader's maximum line length
 * (JR_JSONL_MAX_LINE_DEFAULT unless set) and end in LF or CRLF; a longer line is a bad line
 * ("FILE:LINE: the line is longer than N bytes") read no further than the limit; a UTF-8
 * BOM on line 1 is ignored; blank (whitespace-only) lines are skipped silently and are not bad.
 * on_bad may be NULL (bad lines are then only counted). On error *r is NULL. */
jr_status jr_jsonl_open(jr_jsonl_reader **r, const char *path, jr_bad_line_policy policy, jr_bad_line_fn on_bad,
                        void *ud);

/* Sets the reader's maximum line length in bytes (0: the default). */
void jr_jsonl_set_max_line(jr_jsonl_reader *r, size_t max_bytes);

/* With on, string values may hold the escape \u0000 (a byte-level model's output); off (the
 * default) rejects it as jansson does. A raw NUL byte in a line stays a bad line either way. */
void jr_jsonl_set_allow_nul(jr_jsonl_reader *r, int on);

/* Reads the next row: *row gets a new reference to a JSON object (caller decrefs), *line_no its
 * 1-based line number (may be NULL), *offset the byte offset where the line starts (may be NULL).
 * At end of file returns JR_OK with *row NULL. With JR_BAD_LINE_FAIL a bad line returns JR_EFORMAT
 * ("FILE:LINE: ..."); I/O errors return JR_EIO. On error *row is NULL. */
jr_status jr_jsonl_next(jr_jsonl_reader *r, json_t **row, int64_t *line_no, int64_t *offset);

/* Length in bytes of the text of the row last returned (BOM and line ending excluded). */
int64_t jr_jsonl_last_len(const jr_jsonl_reader *r);
/* That text itself (not NUL-terminated; valid until the next jr_jsonl_next or jr_jsonl_close). */
const char *jr_jsonl_last_text(const jr_jsonl_reader *r);

/* Lines read so far, and how many of them were bad (skipped). */
int64_t jr_jsonl_lines(const jr_jsonl_reader *r);
int64_t jr_jsonl_bad_lines(const jr_jsonl_reader *r);

void jr_jsonl_close(jr_jsonl_reader *r); /* NULL is fine */

/* Parses one line's bytes (no line ending) into a JSON object; `where` ("FILE:LINE") prefixes the
 * message. Checks UTF-8 first. On error *row is NULL. */
jr_status jr_jsonl_parse_line(const char *line, size_t len, const char *where, json_t **row);

/* ---- append-only durable writer (graded outputs, metrics) ---- */

typedef struct jr_jsonl_writer jr_jsonl_writer;

/* Opens path for appending, creating it when absent. A torn last line (bytes after the last
 * newline, left by a crash mid-write) is truncated away; jr_jsonl_writer_torn_bytes says how many
 * bytes were dropped so the caller can warn. With fsync_each every append is flushed and fsynced
 * before it returns; else it is flushed only (fsynced on close). On error *w is NULL and the file is
 * unchanged (except for a torn tail that was already cut). */
jr_status jr_jsonl_writer_open(jr_jsonl_writer **w, const char *path, int fsync_each);

/* Appends one row (compact, keys in insertion order) as one line. On error the message names the
 * file; the file holds either the whole line or a torn tail the next open removes. */
jr_status jr_jsonl_writer_append(jr_jsonl_writer *w, const json_t *row);

/* Appends text (len bytes, one serialized JSON value without a newline) plus '\n' as one write. */
jr_status jr_jsonl_writer_append_line(jr_jsonl_writer *w, const char *text, size_t len);

/* fdatasyncs what was appended (for a writer opened without fsync_each that syncs a batch of
 * rows at once). */
jr_status jr_jsonl_writer_sync(jr_jsonl_writer *w);

/* Complete lines in the file (those present at open plus those appended). */
int64_t jr_jsonl_writer_rows(const jr_jsonl_writer *w);
/* Bytes of a torn last line that open removed (0 when the file was clean). */
int64_t jr_jsonl_writer_torn_bytes(const jr_jsonl_writer *w);
const char *jr_jsonl_writer_path(const jr_jsonl_writer *w);

/* Flushes, fsyncs and closes; frees w in every case. NULL is fine. */
jr_status jr_jsonl_writer_close(jr_jsonl_writer *w);

/* ---- one indexed JSONL file: rows by index, read back on demand ---- */

typedef struct jr_dataset jr_dataset;

/* Reads path once, validating every line and indexing the good rows (offset, length, line number and
 * CRC-32C of each; rows are not kept in memory, and a row read back that no longer matches its CRC
 * is an error: the file changed). Not thread-safe: one jr_dataset (or jr_data) per thread. Keeps at most max_rows good rows (0 = all). Bad lines follow `policy`.
 * A file with no rows is JR_EINVAL naming it. On error *ds is NULL. */
jr_status jr_dataset_open(jr_dataset **ds, const char *path, jr_bad_line_policy policy, int64_t max_rows,
                          jr_bad_line_fn on_bad, void *ud);

size_t jr_dataset_size(const jr_dataset *ds);     /* good rows indexed */
int64_t jr_dataset_lines(const jr_dataset *ds);    /* lines read (blank ones included) */
int64_t jr_dataset_bad_lines(const jr_dataset *ds);
const char *jr_dataset_path(const jr_dataset *ds);

/* Row i (0-based, file order): *row a new reference (caller decrefs), *line_no its line (may be
 * NULL). Fails (JR_EFORMAT/JR_EIO naming FILE:LINE) when the file changed since it was indexed. */
jr_status jr_dataset_get(jr_dataset *ds, size_t i, json_t **row, int64_t *line_no);

void jr_dataset_close(jr_dataset *ds); /* NULL is fine */

/* ---- training data: a split with a resumable, seeded order ---- */

/* Options (usually from the data.* config table with jr_data_opts_from_config). */
typedef struct jr_data_opts {
    const char *train;          /* training JSONL file (required) */
    const char *validation;     /* separate validation file, or NULL */
    double validation_frac;     /* else: this share of train's rows is held out (0 = none), < 1 */
    int shuffle;                /* shuffle the training order each epoch (by seed and epoch) */
    jr_bad_line_policy on_bad_line;
    int64_t max_rows;           /* keep the first max_rows good rows of each file (0 = all) */
    uint64_t seed;              /* run.seed */
    jr_bad_line_fn on_bad;      /* skipped-line callback (may be NULL) */
    void *ud;
} jr_data_opts;

/* Where the training stream stands: the next row to hand out is `index` (0-based) of epoch `epoch`'s
 * order. A checkpoint stores these two numbers; jr_data_seek to them continues with the exact next row. */
typedef struct jr_data_pos {
    int64_t epoch;
    int64_t index;
} jr_data_pos;

/* Facts about a row handed out. */
typedef struct jr_data_row_info {
    const char *path;   /* file it came from (owned by the jr_data) */
    int64_t line_no;    /* its line in that file */
    size_t row;         /* its index in that file (file order) */
    jr_data_pos pos;    /* its position in the training stream (validation rows: epoch 0, index i) */
} jr_data_row_info;

typedef struct jr_data jr_data;

/* Fills o from the data.* table (jr_data_cfg) and run.seed of a loaded config. Strings are borrowed
 * from c. on_bad/ud are left NULL. Fails naming a key the config lacks. */
jr_status jr_data_opts_from_config(jr_data_opts *o, const jr_config *c);

/* Opens the training file (and the validation file when given) and makes the split: with
 * validation_frac f > 0, round(f * n) rows (at least 1) chosen by the seed are held out, the rest
 * trains; both keep file order, so the split depends only on the seed and the file. Errors: a
 * missing or empty file, validation and validation_frac both set, a split leaving no training row.
 * The stream starts at epoch 0, index 0. On error *d is NULL. */
jr_status jr_data_open(jr_data **d, const jr_data_opts *o);

size_t jr_data_n_train(const jr_data *d);
size_t jr_data_n_val(const jr_data *d);
/* Bad lines skipped in the training and validation files together. */
int64_t jr_data_bad_lines(const jr_data *d);

/* The indexed training file, and the separate validation file (NULL when the split is by fraction);
 * owned by d. */
jr_dataset *jr_data_train_file(const jr_data *d);
jr_dataset *jr_data_val_file(const jr_data *d);

/* The next training row (epochs roll over forever: after the last row of epoch e comes row 0 of
 * epoch e+1, reshuffled). *row is a new reference (caller decrefs); info may be NULL. On error the
 * position is unchanged and *row is NULL. */
jr_status jr_data_next(jr_data *d, json_t **row, jr_data_row_info *info);

/* Position of the row jr_data_next hands out next, and a jump to one (index in [0, n_train]). */
jr_data_pos jr_data_tell(const jr_data *d);
jr_status jr_data_seek(jr_data *d, jr_data_pos pos);

/* The training row at `index` of `epoch`'s order, without moving the stream. */
jr_status jr_data_train_get(jr_data *d, int64_t epoch, size_t index, json_t **row, jr_data_row_info *info);

/* Validation row i (0 <= i < n_val), in file order. */
jr_status jr_data_val_get(jr_data *d, size_t i, json_t **row, jr_data_row_info *info);

void jr_data_close(jr_data *d); /* NULL is fine */

/* `judgerl dataset`: opens the data as training does (o's split, seed and bad-line policy), reads every
 * row and prints to out the files' line, row and bad-line counts, the fields seen with their types,
 * the split and the line numbers of the first `show` rows of epoch 0's training order; as one JSON
 * object with as_json. The first max_warn skipped bad lines are warned on `warn` (NULL: silent) as
 * "PREFIXwarning: FILE:LINE: problem (skipped)", then their count. */
typedef struct jr_data_check_opts {
    long show;
    int as_json, max_warn;
    FILE *out, *warn;
    const char *prefix;
} jr_data_check_opts;
jr_status jr_data_check(const jr_data_opts *o, const jr_data_check_opts *co);

/* The data.* options: data.train, data.validation, data.validation_frac, data.shuffle,
 * data.on_bad_line (skip|fail), data.max_rows. */
extern const jr_cfg_field jr_data_cfg[];

#endif
