/* progress.h - a progress bar: one redrawn line on a terminal, plain occasional lines otherwise */
#ifndef JUDGERL_PROGRESS_H
#define JUDGERL_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef enum {
    JR_PROGRESS_AUTO,  /* TTY when out is a terminal, else PLAIN; JR_PROGRESS=tty|plain|off overrides */
    JR_PROGRESS_TTY,   /* one line redrawn in place ("\r", at most ~10 times a second) */
    JR_PROGRESS_PLAIN, /* a full line every 10% of total, or every 30 s at the latest */
    JR_PROGRESS_OFF
} jr_progress_mode;

typedef struct jr_progress jr_progress;

/* Starts a bar labelled `label` counting to total (0 or less: unknown total, no percentage or
 * ETA) on out (usually stderr). Returns NULL only when out of memory (callers may then skip
 * progress: every function below accepts NULL). */
jr_progress *jr_progress_new(const char *label, int64_t total, FILE *out, jr_progress_mode mode);

/* Sets the count of finished items (absolute) or adds to it, and redraws when due. */
void jr_progress_set(jr_progress *p, int64_t done);
void jr_progress_add(jr_progress *p, int64_t n);

/* Sets an extra field shown after the rate and ETA as "key=value" (e.g. "loss", "%.3f"); fields
 * keep the order they were first set in; an empty value hides it. At most 8 fields. */
void jr_progress_field(jr_progress *p, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Same as jr_progress_set with an explicit monotonic time in seconds (tests, replay). */
void jr_progress_set_at(jr_progress *p, int64_t done, double now);

/* The current line's text without the "\r" or newline (count/total, percent, rate, ETA, fields) into
 * buf; returns buf. */
char *jr_progress_format(const jr_progress *p, double now, char *buf, size_t cap);

/* Prints the final line (ends it with a newline on a TTY) and frees p. NULL is fine. */
void jr_progress_finish(jr_progress *p);

#endif
