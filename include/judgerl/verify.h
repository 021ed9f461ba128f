/* verify.h - rule verifiers that need no judge: answer normalisation and math equivalence, exact
 * match, regex/format, length, efficiency and simplicity from row fields, n-gram repetition */
#ifndef JUDGERL_VERIFY_H
#define JUDGERL_VERIFY_H

#include <jansson.h>

#include "judgerl/status.h"

/* The final answer of a response, as a new string (caller frees; NULL only when out of memory):
 * the content of the last \boxed{...} or \fbox{...} (balanced braces), else what follows the last
 * "answer is" / "Answer:" on its line, else the whole text. */
char *jr_answer_extract(const char *response);

/* The final answer of a response, GSM8K-aware (caller frees; NULL only when out of memory): what
 * follows the last "####" on its line, else jr_answer_extract's \boxed{} / "answer is" /
 * "Answer:", else the last number of the text (sign, thousands commas, decimals), else the text. */
char *jr_answer_extract_final(const char *response);

/* 1 when the final answer of response (jr_answer_extract_final) is equivalent to reference
 * (reduced to what follows its "####" when it has one, so a raw GSM8K solution works): by
 * jr_answer_equiv, or, for a numeric reference, by the first number of the extracted answer
 * ("$18 per day." matches 18). *got (may be NULL) gets the extracted answer (caller frees). */
int jr_answer_final_match(const char *response, const char *reference, char **got);

/* The canonical form of an answer (caller frees; NULL only when out of memory). Applied in order:
 * last \boxed{} content; $, \(\), \[\] delimiters dropped; \left \right, spacing commands (\, \!
 * \; \: ~) dropped; \dfrac \tfrac -> \frac and \frac12 -> \frac{1}{2}; \text{x} \textbf{x}
 * \mathrm{x} \mathbf{x} \mbox{x} -> x; \% -> %; ^\circ and "degrees" dropped; currency $ dropped;
 * thousands separators dropped (1,234,567 -> 1234567); a trailing unit word after a number dropped
 * ("12 cm" -> 12); a leading "x =" with a short left side dropped; trailing . , ; ! dropped;
 * lower case; all whitespace removed. */
char *jr_answer_normalize(const char *answer);

/* Parses a normalised answer as a number: integer, decimal, a/b, \frac{a}{b}, \sqrt-free, with an
 * optional sign and an optional trailing % (then *is_percent is set and *v is the number before
 * the %). Returns 1 and sets *v when it is one, else 0. */
int jr_answer_number(const char *norm, double *v, int *is_percent);

/* 1 when two answers are equivalent: equal canonical forms, or equal numbers (relative tolerance
 * 1e-6; a percentage p% also matches p/100), or top-level comma-separated lists of the same length
 * whose elements are pairwise equivalent (brackets must match). Else 0. Never fails. */
int jr_answer_equiv(const char *a, const char *b);

/* Exact match after trimming surrounding whitespace; with `casefold`, ASCII case is ignored. */
int jr_verify_exact(const char *response, const char *reference, int casefold);

/* Matches a PCRE2 pattern (UTF-8) against text; *match gets 1 or 0. Fails with the pattern's
 * compile error and offset when the pattern is invalid. */
jr_status jr_verify_regex(const char *text, const char *pattern, int *match);

/* Words in text (runs of non-whitespace). */
size_t jr_count_words(const char *text);

/* The n-gram repetition rate of text: 1 - distinct / total over word n-grams (ASCII lower-cased),
 * in [0, 1); 0 when the text has fewer than n words. */
double jr_repetition_rate(const char *text, int n);

/* Length score in [0, 1]: 1 inside [lo, hi] (hi <= 0: no upper bound), falling linearly to 0 at
 * lo - slack below and hi + slack above (slack <= 0: a hard step). */
double jr_length_score(double length, double lo, double hi, double slack);

/* Efficiency in [0, 1] from a cost and a latency against budgets:
 * w * max(0, 1 - cost/cost_budget) + (1 - w) * max(0, 1 - latency/latency_budget).
 * A negative cost or latency means absent: the other term alone (with weight 1) is used; with both
 * absent the result is -1 (not scorable). */
double jr_efficiency_score(double cost, double cost_budget, double latency, double latency_budget, double w);

/* Simplicity in [0, 1] from an operator count: 1 at or below min_ops, 0 at or above max_ops,
 * linear between. */
double jr_simplicity_score(double n_ops, double min_ops, double max_ops);

/* A named rule check on a response, as rubric rule criteria and VerIF [rule] constraints use it:
 *   math_verify {answer}          answer equivalence (jr_answer_equiv on the extracted answer)
 *   word_count_range {min_count, max_count}
 *   regex {pattern}               the pattern matches somewhere
 *   exact {answer, casefold?}     exact match
 *   contains {text | texts[], casefold?}  every text occurs
 *   max_repetition {n?, max_rate} n-gram repetition rate at most max_rate
 *   ifeval:ID {kwargs}            the IFEval instruction ID is followed (strict)
 *   ifeval {instruction_id, kwargs, loose?}
 * `params` may also be a bare string for the one-parameter rules (math_verify, regex).
 * Sets *pass to 1 or 0. Fails (JR_EINVAL, naming the rule and the parameter) on an unknown name or
 * bad parameters; *pass is then 0. */
jr_status jr_rule_check(const char *name, const json_t *params, const char *response, int *pass);

/* 1 when jr_rule_check knows the rule name. */
int jr_rule_known(const char *name);

#endif
