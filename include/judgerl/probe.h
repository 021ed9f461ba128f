/* probe.h - judge probes: how biased is a judge? Variants of the user's rows are sent through the
 * judge client with the configured protocol; each bias becomes figures with 95% intervals and a
 * flag decided by thresholds fixed in docs/PROBES.md */
#ifndef JUDGERL_PROBE_H
#define JUDGERL_PROBE_H

#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "judgerl/config.h"
#include "judgerl/status.h"

/* The probes, in report order. */
enum {
    JR_PROBE_POSITION,
    JR_PROBE_VERBOSITY,
    JR_PROBE_MASTER_KEY,
    JR_PROBE_LABEL_PRIOR,
    JR_PROBE_AGREEMENT,
    JR_PROBE_CONSISTENCY,
    JR_PROBE_INJECTION,
    JR_PROBE_FORMAT,
    JR_PROBE_SCALE_USE,
    JR_PROBE_COUNT
};

/* The probe's name ("position", ...), or NULL out of range. */
const char *jr_probe_name(int probe);

/* The options of `judgerl probe` (probe.*). Load them with jr_judge_cfg and jr_protocols_cfg. */
extern const jr_cfg_field jr_probe_cfg[];

#define JR_PROBE_MAX_LABELS 16

/* What a probe run needs: which probes, its statistics, and the judge's protocol as configured
 * (its scale, labels and values, used to normalise verdicts; docs/PROBES.md). */
typedef struct jr_probe_opts {
    unsigned probes;        /* bit (1u << JR_PROBE_X) set: run probe X */
    uint64_t seed;          /* bootstrap and row-shuffle seed (probe.seed) */
    int bootstrap;          /* bootstrap resamples (probe.bootstrap) */
    int repeats;            /* consistency: judgements per row (probe.repeats, >= 2) */
    int max_rows;           /* rows used at all, 0 = every row (probe.max_rows) */
    int max_variant_rows;   /* rows the multiplying probes use (probe.max_variant_rows), 0 = all */
    /* the judge (judge.*) */
    char protocol[32];
    int scale;                                /* pointwise: 1..scale */
    int n_labels;                             /* label */
    char labels[JR_PROBE_MAX_LABELS][64];
    double values[JR_PROBE_MAX_LABELS];
    double correct, incorrect;                /* reference */
    double win, tie, loss;                    /* pairwise */
    int swap;
    char other_field[64];
} jr_probe_opts;

/* Fills o from a config loaded with jr_probe_cfg, jr_judge_cfg and jr_protocols_cfg. Fails naming
 * the key when probe.probes names an unknown probe or the labels do not fit. */
jr_status jr_probe_opts_from_config(jr_probe_opts *o, const jr_config *cfg);

/* Parses "position,verbosity" (names separated by commas, "all" for every probe) into a mask. */
jr_status jr_probe_parse_list(const char *list, unsigned *mask);

/* Runs the selected probes against the judge of `judge_cfg` (opened here with jr_judge_open; the
 * consistency probe opens further clients with the cache off) on `rows` (an array of objects
 * {id, prompt, response, reference?, gold?, response_b?}). *out gets the probe.json object
 * {"judge": {...}, "rows": n, "probes": {name: {"flag", "skipped", "figures", ...}}}. Judge
 * failures are counted per probe, never verdicts. Fails (nothing in *out) when the judge cannot
 * be opened or refuses the key, model or URL (HTTP 401/403/404). */
jr_status jr_probe_run(const jr_config *judge_cfg, const jr_probe_opts *o, const json_t *rows, json_t **out);

/* Reads a JSONL file of rows into a new array (a bad line is an error naming FILE:LINE). */
jr_status jr_probe_load_rows(const char *path, json_t **rows);

/* `judgerl probe`: the rows of `data` (at least one) through jr_probe_run, then out_dir/probe.json (the
 * result, with judge.config = judge_name) and out_dir/probe.html written atomically (out_dir made if
 * missing), the table and both paths printed to `table`. */
jr_status jr_probe_run_dir(const jr_config *judge_cfg, const jr_probe_opts *o, const char *data, const char *out_dir,
                           const char *judge_name, FILE *table);

/* ---- statistics (exposed for the tests) ---- */

/* Wilson score interval of k successes in n trials, z = 1.959964; n = 0 gives [0, 1]. */
void jr_probe_wilson(double k, double n, double *lo, double *hi);
/* Cohen's kappa of two label vectors with values 0..k-1: (p_o - p_e) / (1 - p_e); NaN when n = 0,
 * 1 when p_e = 1 and they agree everywhere. */
double jr_probe_kappa(const int *a, const int *b, int n, int k);
/* Expected calibration error over 10 equal-width bins of conf (the last bin includes 1.0). */
double jr_probe_ece(const double *conf, const int *correct, int n);
/* Multi-class Brier score: mean over items of sum_l (p[i*k+l] - [l == gold[i]])^2. */
double jr_probe_brier(const double *p, const int *gold, int n, int k);
/* Percentile bootstrap (2.5%, 97.5%) of a statistic over n items: stat(ctx, idx, n) is evaluated on
 * `resamples` index vectors drawn with replacement from jr_rng seeded with `seed`. */
void jr_probe_bootstrap(double (*stat)(void *ctx, const int *idx, int n), void *ctx, int n, int resamples,
                        uint64_t seed, double *lo, double *hi);

#endif
