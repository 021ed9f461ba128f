/* protocols.h - judge protocols beyond pointwise: reference correctness, rubric (HealthBench /
 * RuscaRL), pairwise with swap, label with confidence; their verdict parsers and scoring math */
#ifndef JUDGERL_PROTOCOLS_H
#define JUDGERL_PROTOCOLS_H

#include <stddef.h>
#include <jansson.h>

#include "judgerl/judge.h"
#include "judgerl/status.h"

/* ---- verdict text helpers ---- */

/* Finds a JSON object in a judge's text: the whole text, a ```json fenced block, or the first
 * balanced {...} that parses. Returns a new reference, or NULL when there is none. */
json_t *jr_verdict_json(const char *text);

/* A row's text field: the first of `names` (NULL-terminated) that is a string; for a list of
 * chat messages, "role: content" lines. Returns a new string, or NULL when none is present (no
 * message is set) or memory ran out. */
char *jr_row_text(const json_t *row, const char *const *names);

/* The options of the protocols in this header (judge.reference.*, judge.rubric.*,
 * judge.pairwise.*, judge.label.*, judge.verif.*). Load it together with jr_judge_cfg. */
extern const jr_cfg_field jr_protocols_cfg[];

/* The protocols (registered in src/judge/protocol.c). Rows they read:
 *   reference: prompt (or question / problem), response, reference (or answer)
 *   rubric:    prompt, response, rubric (list, see jr_rubric_read), rule_met (list, for rule items)
 *   pairwise:  prompt, response, and judge.pairwise.other_field (default response_b)
 *   label:     prompt, response (optional)
 *   verif:     prompt (or instruction), response, constraints (see docs/PROTOCOLS.md), rule_met */
extern const jr_protocol jr_protocol_reference;
extern const jr_protocol jr_protocol_rubric;
extern const jr_protocol jr_protocol_pairwise;
extern const jr_protocol jr_protocol_label;
extern const jr_protocol jr_protocol_verif;

/* ---- reference correctness ---- */

/* Parses a reference-correctness verdict: a JSON object with "verdict" ("CORRECT" / "INCORRECT"),
 * "correct" or "equivalent" (bool); else the last "VERDICT: X" line; else a text that is only
 * CORRECT / INCORRECT (markdown and punctuation around it ignored). Sets *correct to 1 or 0.
 * JR_EFORMAT when none is found. */
jr_status jr_reference_parse(const char *text, int *correct);

/* ---- rubric (HealthBench / RuscaRL) ---- */

/* One rubric criterion. A criterion with a `rule` is checked by a verifier, not the judge. */
typedef struct jr_criterion {
    char *text;       /* the criterion as the judge reads it */
    double points;    /* negative for a pitfall: met means the undesirable behaviour is present */
    char *rule;       /* rule name for jr_rule_check (NULL: judged by the LLM) */
    json_t *params;   /* rule parameters (owned; NULL when none) */
} jr_criterion;

/* Reads a rubric from a row's JSON list. Each item: {"criterion": str, "points": number} with
 * optional "tags" (a list of "key:value" strings or an object; tags verifier=rule, function=NAME,
 * parameters=... make it a rule, as RuscaRL writes them) or "rule": NAME with "params". Sets
 * *items (caller frees with jr_rubric_free) and *n. Fails naming the item index and field. */
jr_status jr_rubric_read(const json_t *rubric, jr_criterion **items, size_t *n);
void jr_rubric_free(jr_criterion *items, size_t n);

/* The HealthBench score of one sample: sum of points of met criteria / sum of positive points.
 * met[i] is 1 (met / behaviour present), 0 (not met) or -1 (unknown: grading failed).
 * Returns 1 and sets *score when scored; 0 when no criterion has positive points (HealthBench's
 * None); -1 when some met[i] is -1 (unscored: never counted as not met). The score is not
 * clipped (negative criteria can take it below 0); clip_sample clips it to [0, 1]. */
int jr_rubric_score(const jr_criterion *items, size_t n, const int *met, int clip_sample, double *score);

/* The dataset-level figure HealthBench reports: the mean of the scored samples clipped to
 * [0, 1]. scored[i] == 0 excludes sample i. Returns the number of samples used (0: *mean = 0). */
size_t jr_rubric_aggregate(const double *scores, const int *scored, size_t n, double *mean);

/* Parses a per-criterion verdict {"explanation": str, "criteria_met": bool} (fenced or wrapped in
 * text). Sets *met. JR_EFORMAT when criteria_met is missing or not a boolean. */
jr_status jr_rubric_parse_one(const char *text, int *met);

/* Parses a batched verdict: a JSON object whose keys are the 1-based criterion numbers and whose
 * values are "PRESENT" / "NOT_PRESENT". Sets met[i] to 1 / 0, or -1 for a criterion missing or
 * unreadable. Returns JR_OK when every criterion was read, else JR_EFORMAT (met still filled). */
jr_status jr_rubric_parse_batch(const char *text, size_t n, int *met);

/* ---- pairwise with swap ---- */

enum { JR_PW_FIRST = 0, JR_PW_SECOND = 1, JR_PW_TIE = 2 };

/* Parses a pairwise verdict: "[[A]]" / "[[B]]" / "[[C]]" or "[[TIE]]" (the last one in the text),
 * or JSON {"winner": "A" | "B" | "tie"}, or "Winner: A|B|tie". Sets *verdict to JR_PW_FIRST (A),
 * JR_PW_SECOND (B) or JR_PW_TIE. JR_EFORMAT when none is found. */
jr_status jr_pairwise_parse(const char *text, int *verdict);

/* Combines the verdict with x shown first (v_xy) and the verdict with y shown first (v_yx).
 * Sets *winner to JR_PW_FIRST (x wins), JR_PW_SECOND (y wins) or JR_PW_TIE, and *consistent to 1
 * when both orders name the same winner (or both say tie). Disagreement is a tie. */
void jr_pairwise_combine(int v_xy, int v_yx, int *winner, int *consistent);

/* ---- label with confidence ---- */

/* Checks a label set: at least 2 labels, none empty, distinct ignoring ASCII case and leading
 * spaces, and no label a prefix of another (else their first tokens cannot be told apart).
 * Fails naming the offending labels. */
jr_status jr_label_check(const char *const *labels, size_t n);

/* Reads the chosen label from a verdict: JSON {"label": ..., "confidence": ...}; else a
 * "Label: X" line; else a text that starts with a label. A verbalised confidence ("Confidence:
 * 0.8", "80%", JSON "confidence") goes to *verbal (-1 when absent; values in (1, 100] read as
 * percentages). Sets *idx. JR_EFORMAT when no label is found or two labels are named. */
jr_status jr_label_parse(const char *text, const char *const *labels, size_t n, int *idx, double *verbal);

/* Confidence from log-probabilities (OpenAI's choices[0].logprobs.content: a list of {token,
 * logprob, top_logprobs: [{token, logprob}]}). At the first position whose token is not blank or
 * markup, each label's probability is the sum of exp(logprob) over the candidate tokens (the
 * sampled one and the top alternatives, each counted once) that are a non-empty prefix of that
 * label (ASCII case and leading spaces ignored). The chosen label is the one the sampled token
 * starts (*idx); confidence = p(chosen) / sum over labels, probs (may be NULL) gets the n
 * renormalised probabilities. The log-probs are unreliable, and *conf is NAN with the reason in
 * unreliable[ulen] (probs untouched), when a label has no candidate token (its probability is
 * unknown) or the sampled token's log-prob is more than max_gap below the best candidate's (the
 * server computed the log-probs before constraining the output): never renormalise a guess.
 * JR_ENOTFOUND when there are no log-probs, the token starts no label, or a candidate token starts
 * two labels (labels not told apart by their first tokens): fall back to the verbalised confidence. */
jr_status jr_label_logprob_confidence(const json_t *content, const char *const *labels, size_t n, double max_gap,
                                      int *idx, double *conf, double *probs, char *unreliable, size_t ulen);

/* ---- VerIF ---- */

/* One VerIF constraint: "[rule] ..." checked by a verifier, "[llm] ..." by the judge. */
typedef struct jr_constraint {
    char *text;     /* the constraint with its [rule] / [llm] tag removed */
    int is_rule;    /* 1: [rule], 0: [llm] */
    char *rule;     /* rule name (rules only) */
    json_t *params; /* rule parameters (owned, may be NULL) */
} jr_constraint;

/* Reads a row's constraints: "constraints": a list of strings "[llm] text" or objects
 * {"constraint": "[rule] text", "rule": NAME, "params": ...}; or VerIF's "checkers" (tagged
 * strings) with "functions" alongside (each {"rule": NAME, "params": ...}; Python source is not
 * run and is refused). Sets *items (free with jr_constraints_free) and *n. Fails naming the index
 * and field. */
jr_status jr_constraints_read(const json_t *row, jr_constraint **items, size_t *n);
void jr_constraints_free(jr_constraint *items, size_t n);

/* Parses VerIF's judge verdict: "[[1]]" (all [llm] constraints followed) or "[[0]]", the first one
 * in the text; also JSON {"score": 0|1}. JR_EFORMAT when none. */
jr_status jr_verif_parse(const char *text, int *followed);

/* VerIF's reward: reduce(rule results) x llm verdict, with reduce = mean (all_pass: 1 only when
 * every rule passed, as VerIF's released code does); no rules: 1; no [llm] constraint: verdict 1. */
double jr_verif_reward(const int *rule_met, size_t n_rules, int llm_verdict, int all_pass);

#endif
