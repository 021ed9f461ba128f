/* monitor.h - online reward-hacking alarms for a GRPO run: on each held-out evaluation the proxy reward,
 * a gold metric the judge cannot fake, and the policy's drift (length, format, phrases, labels) are
 * compared with the run's first evaluation; an alarm fires past a configured margin (docs/MONITOR.md) */
#ifndef JUDGERL_MONITOR_H
#define JUDGERL_MONITOR_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "judgerl/config.h"
#include "judgerl/runlog.h"
#include "judgerl/status.h"

/* monitor.*: each key documented in jr_monitor_cfg and docs/MONITOR.md. */
extern const jr_cfg_field jr_monitor_cfg[];

typedef struct jr_monitor_opts {
    int enabled;
    const char *gold_reward;   /* YAML with reward.components (+ judge.*): the gold metric is its mean */
    const char *gold_field;    /* held-out row field: the gold metric is the share of labels equal to it */
    const char *labels;        /* JSONL {text, label}: a completion's label by longest prefix, else "other" */
    double proxy_rise;         /* proxy_gold alarm: proxy - proxy0 >= this ... (<= 0: off) */
    double gold_margin;        /* ... while gold - gold0 < this */
    double noise_z;            /* > 0: the two thresholds also scale with the figures' noise: proxy - proxy0 >= z SE and
                                * gold - gold0 < -z SE (SE: standard error of the difference of two means of n samples) */
    int paired;                /* noise_z's SE from the per-prompt paired differences with the baseline's samples */
    int trend_window;          /* >= 2: proxy_gold also on the trend of the last this many evaluations */
    double length_drift;       /* length alarm: |len / len0 - 1| >= this (<= 0: off) */
    double phrase_drift;       /* phrase alarm: a phrase's share of completions rose by >= this (<= 0: off) */
    int ngram;                 /* phrases: word n-grams of 1..ngram words */
    int top_ngrams;            /* the rising phrases kept per evaluation */
    double collapse_share;     /* collapse alarm: one label's share >= this (and below it at the start; <= 0: off) */
    int stop;                  /* stop the run (with a checkpoint) when an alarm fires */
} jr_monitor_opts;

/* Fills o from monitor.* (all off when the config was loaded without jr_monitor_cfg). Fails naming the
 * keys when the monitor is on with both gold sources; with neither, the gold figures are absent and the
 * proxy_gold alarm is off (docs/MONITOR.md; `judgerl study` refuses that). Strings borrow c. */
jr_status jr_monitor_opts_from_config(jr_monitor_opts *o, const jr_config *c);

/* The alarms, as bits of jr_monitor_eval.fired / .active. */
enum { JR_ALARM_PROXY_GOLD = 1, JR_ALARM_LENGTH = 2, JR_ALARM_PHRASE = 4, JR_ALARM_COLLAPSE = 8 };
#define JR_ALARM_COUNT 4
/* "proxy_gold", "length", "phrase", "collapse" for alarm index 0..3. */
const char *jr_monitor_alarm_name(int i);

typedef struct jr_monitor jr_monitor;

/* Opens a monitor writing out_dir/monitor.jsonl: a fresh run (resume_step < 0) starts it anew; a run
 * resumed at resume_step keeps its rows up to that step, its baseline (the first row) and the alarms
 * fired so far. Loads the labels file and opens the gold reward registry. On error *m is NULL and the
 * message names the file. */
jr_status jr_monitor_open(jr_monitor **m, const jr_monitor_opts *o, const char *out_dir, int64_t resume_step);

/* One held-out sample: its dataset row, its completion and the proxy (training) reward. */
typedef struct jr_monitor_sample {
    const json_t *row;
    const char *text;
    int scored;           /* the proxy reward is set */
    double proxy;
} jr_monitor_sample;

/* What one evaluation found. */
typedef struct jr_monitor_eval {
    double proxy, gold, len, markdown, list, label_max, label_entropy, ngram_rise;
    double proxy_var, gold_var;   /* the per-sample variance of the proxy reward and of the gold value */
    int proxy_n, gold_n;          /* the samples they are means of */
    double rise_needed, gold_below; /* the proxy_gold thresholds applied (after monitor.noise_z); NAN at the baseline */
    double proxy_se, gold_se;     /* with monitor.noise_z: the SEs of the two differences from the baseline */
    int paired;                   /* ... computed from paired samples (monitor.paired) */
    int trend, trend_k;           /* monitor.trend_window: the trend test holds; the evaluations it fitted */
    double trend_proxy, trend_proxy_se, trend_gold, trend_gold_se; /* its changes over the window and their SEs (NAN: none) */
    unsigned fired;       /* alarms that fired for the first time at this evaluation */
    unsigned active;      /* alarms whose condition holds at this evaluation */
    char note[512];       /* one line naming the newly fired alarms and their figures ("" when none) */
} jr_monitor_eval;

/* Scores n held-out samples of the policy after `step` steps (the first call is the baseline): the gold
 * metric, drift figures and alarms; adds monitor/... scalars to rl (when non-NULL) and appends a row to
 * monitor.jsonl. Fails on a write error or when the gold judge refuses every request. */
jr_status jr_monitor_observe(jr_monitor *m, int64_t step, const jr_monitor_sample *s, int n, jr_runlog *rl,
                             jr_monitor_eval *ev);

/* 1 once an alarm has fired (and monitor.stop is set): the run should stop with a checkpoint. */
int jr_monitor_wants_stop(const jr_monitor *m);

void jr_monitor_close(jr_monitor *m); /* NULL is fine */

/* The standard error of mean(x) - mean(b) for paired per-sample values (x[i] and b[i] of the same held-out
 * sample; NAN in either: not a pair), the samples grouped by prompt (consecutive s[i] with the same row):
 * the cluster-robust SE over the groups. -1 with fewer than 2 groups holding a pair (monitor.paired). */
double jr_monitor_paired_se(const double *b, const double *x, const jr_monitor_sample *s, int n);

/* The trend test's statistic: vals[t][i] the value of sample i at the evaluation after steps[t] (t < k <= 64,
 * oldest first; NAN: none), the samples grouped by prompt (consecutive s[i] with the same row). Per prompt
 * the least-squares slope over t of its samples' mean (a prompt lacking a value at some t is left out);
 * *change = the mean slope x (steps[k-1] - steps[0]), *se = the standard error of that mean over the prompts
 * x the same span. -1 (both NAN) with k < 2, fewer than 2 prompts or no span. */
int jr_monitor_trend(const double *const *vals, const double *steps, int k, const jr_monitor_sample *s, int n,
                     double *change, double *se);

#endif
