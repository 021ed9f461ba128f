/* report.h - the demo's run report: terminal summary and a self-contained HTML file with inline SVG plots */
#ifndef JUDGERL_REPORT_H
#define JUDGERL_REPORT_H

#include <stdio.h>

#include <jansson.h>

#include "judgerl/status.h"
#include "judgerl/strbuf.h"

/* Prints seed 1's results (the object the 8-ball example's eb_seed1_run returns, examples/eightball/seed1.h) as a short table to out. */
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
    const char *name;       /* NULL: not in the legend (a raw curve under its smoothed one) */
    const double *x, *y;
    int n;
    const char *color;      /* NULL: the palette's colour of the series' index */
    int faint;              /* 1: thin and translucent (the raw curve under a smoothed one) */
} jr_series;
/* o[key] as a number; NAN when it is absent or not a number (the pages print NAN as "-" or "n/a"). */
double jr_report_num(const json_t *o, const char *key);
/* The palette: colour i is series (run, judge) i's identity on every chart of a page. */
const char *jr_report_color(int i);
#define JR_BEFORE_COLOR "#9ca3af" /* "before" beside an entity's colour for "after" */
/* Appends text with <, >, &, quotes escaped and control characters (but newline and tab) dropped:
 * safe inside HTML and SVG elements and attributes. */
void jr_html_escape(jr_strbuf *b, const char *text);
void jr_svg_lines(jr_strbuf *b, const char *title, const char *xlabel, const char *ylabel, const jr_series *s,
                  int n_series);
/* A grouped bar chart: n_groups groups (labels group[i]) of n_series bars (values v[series][group]);
 * negative values hang below the zero line. */
void jr_svg_bars(jr_strbuf *b, const char *title, const char *ylabel, const char *const *groups, int n_groups,
                 const char *const *series, int n_series, const double *const *v);
/* The same with a colour per series (NULL entries: the palette's). */
void jr_svg_bars_colored(jr_strbuf *b, const char *title, const char *ylabel, const char *const *groups, int n_groups,
                         const char *const *series, int n_series, const double *const *v, const char *const *colors);

/* `judgerl report RUN`: a page for any run: a training run directory (metrics.jsonl; SFT, GRPO,
 * RLOO, distill), an eval directory (summary.json, samples.jsonl), a `judgerl grade` output file or
 * a demo run (jr_report_write). Curves of every metric (raw and smoothed by a debiased EMA of
 * weight `smoothing`), the last logged samples, the hyperparameters and config.yaml, unscored
 * reasons; a grade output adds counts and a reward histogram. Written atomically to out_html
 * (NULL: RUN/report.html, or FILE.report.html beside a grade output); *written gets the path
 * (caller frees). A line per run goes to text when not NULL. */
jr_status jr_run_report(const char *run, const char *out_html, double smoothing, FILE *text, char **written);
/* `judgerl compare RUN...` (2 to 16 runs of any kind but demo): overlaid curves (run i in colour
 * i on every chart and table), the config diff and hyperparameters side by side, samples side by
 * side, grade counts; written atomically to out_html. */
jr_status jr_compare_report(const char *const *runs, int n, const char *out_html, double smoothing, FILE *text);

/* The report's style sheet (inline CSS). */
extern const char jr_report_css[];

/* ---- the demo's workflow stage (summary "workflow", src/report/wf_report.c) ---- */

/* Prints the held-out gold accuracy table (random workflows, fixed workflows, the policy before / after RL
 * per run), the best fixed workflow per domain, valid-workflow rates, operators per domain, buffer sizes
 * and the learning criteria. */
void jr_report_workflow_text(FILE *out, const json_t *wf);
/* The same as HTML, with a chart of the reward components over steps per run. */
void jr_report_workflow_html(jr_strbuf *b, const json_t *wf);

/* ---- judge probes (probe.json objects of jr_probe_run, one per judge, side by side) ---- */

/* Prints a table: one line per figure, one column per judge (value [lo, hi] n), the threshold,
 * and per probe whether each judge is flagged or why the probe was skipped. */
void jr_probe_table(FILE *out, const char *const *names, const json_t *const *results, int n);
/* Appends an HTML table of the same and one bar chart per probe (its thresholded figures, one bar
 * per judge). */
void jr_probe_html(jr_strbuf *b, const char *const *names, const json_t *const *results, int n);
/* Writes a self-contained HTML page (inline CSS and SVG, no URL) of jr_probe_html to path,
 * atomically. */
jr_status jr_probe_html_write(const char *path, const char *title, const char *const *names,
                              const json_t *const *results, int n);

#endif
