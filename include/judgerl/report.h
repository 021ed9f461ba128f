/* report.h - the demo's run report: terminal summary and a self-contained HTML file with inline SVG plots */
#ifndef JUDGERL_REPORT_H
#define JUDGERL_REPORT_H

#include <stdio.h>

#include <jansson.h>

#include "judgerl/status.h"

/* Prints seed 1's results (the object jr_seed1_run returns) as a short table to out. */
void jr_report_seed1_text(FILE *out, const json_t *seed1);

/* Prints the summary of a demo run (RUN_DIR/summary.json as written by judgerl demo) to out:
 * the stages with their status and time, seed 1's logits, and per GRPO run the judge's mean
 * reward and P(Yes) before/after. */
void jr_report_text(FILE *out, const json_t *summary);

/* Reads run_dir/summary.json (and the metrics.jsonl files it names) and writes run_dir/report.html
 * atomically: one self-contained file (inline CSS and SVG, no external URL). *summary_out, when
 * non-NULL, receives the loaded summary (caller decrefs). On error nothing is written. */
jr_status jr_report_write(const char *run_dir, json_t **summary_out);

/* Appends an SVG line chart to buf: n_series series of (x, y) points (NaN y values are skipped),
 * with axes, ticks, a title and a legend; exposed for tests. Names and the title are XML-escaped. */
typedef struct jr_series {
    const char *name;
    const double *x, *y;
    int n;
} jr_series;
typedef struct jr_buf {
    char *s;
    size_t len, cap;
    int oom;
} jr_buf;
void jr_buf_printf(jr_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void jr_buf_xml(jr_buf *b, const char *text);
void jr_svg_lines(jr_buf *b, const char *title, const char *xlabel, const char *ylabel, const jr_series *s,
                  int n_series);
/* A grouped bar chart: n_groups groups (labels group[i]) of n_series bars (values v[series][group]);
 * negative values hang below the zero line. */
void jr_svg_bars(jr_buf *b, const char *title, const char *ylabel, const char *const *groups, int n_groups,
                 const char *const *series, int n_series, const double *const *v);

/* The report's style sheet (inline CSS). */
extern const char jr_report_css[];

/* ---- judge probes (probe.json objects of jr_probe_run, one per judge, side by side) ---- */

/* Prints a table: one line per figure, one column per judge (value [lo, hi] n), the threshold,
 * and per probe whether each judge is flagged or why the probe was skipped. */
void jr_probe_table(FILE *out, const char *const *names, const json_t *const *results, int n);
/* Appends an HTML table of the same and one bar chart per probe (its thresholded figures, one bar
 * per judge). */
void jr_probe_html(jr_buf *b, const char *const *names, const json_t *const *results, int n);
/* Writes a self-contained HTML page (inline CSS and SVG, no URL) of jr_probe_html to path,
 * atomically. */
jr_status jr_probe_html_write(const char *path, const char *title, const char *const *names,
                              const json_t *const *results, int n);

#endif
