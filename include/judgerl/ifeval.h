/* ifeval.h - IFEval instruction checkers (the 25 instructions of Zhou et al. 2023), strict and loose */
#ifndef JUDGERL_IFEVAL_H
#define JUDGERL_IFEVAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "judgerl/status.h"

/* strict: the response as given; loose: followed if any of the 8 variants of the response (as
 * given, without its first and/or last line, each of those with every '*' removed) passes. In
 * both modes a response that is empty after stripping whitespace follows nothing. */
typedef enum { JR_IFEVAL_STRICT = 0, JR_IFEVAL_LOOSE = 1 } jr_ifeval_mode;

#define JR_IFEVAL_N_INSTRUCTIONS 25

/* The i-th known instruction id ("keywords:existence", ...), 0 <= i < JR_IFEVAL_N_INSTRUCTIONS;
 * NULL outside that range. */
const char *jr_ifeval_instruction_name(int i);

/* 1 when id is one of the 25 instruction ids, else 0. */
int jr_ifeval_instruction_known(const char *id);

/* One instruction with its validated kwargs (compiled patterns included): build once, check many
 * responses. */
typedef struct jr_ifeval_instr jr_ifeval_instr;

/* Builds an instruction from its id and kwargs object (NULL or {} when it takes none; a kwarg
 * whose value is null counts as absent). `prompt` is the row's prompt (may be NULL; no
 * instruction needs it today). Unknown ids, missing or extra kwargs, wrong types ("num_words must
 * be an integer") and out-of-range values fail with a message naming the instruction id and the
 * kwarg; *out is then NULL. Caller frees *out with jr_ifeval_instr_free. */
jr_status jr_ifeval_instr_new(const char *id, const json_t *kwargs, const char *prompt, jr_ifeval_instr **out);
void jr_ifeval_instr_free(jr_ifeval_instr *ins);

/* The instruction's id (owned by ins). */
const char *jr_ifeval_instr_id(const jr_ifeval_instr *ins);

/* true when `response` (UTF-8, len bytes) follows the instruction in the given mode. Never fails
 * (an allocation failure reads as not followed); an invalid UTF-8 byte counts as one character
 * that is neither a letter nor whitespace. */
bool jr_ifeval_instr_check(const jr_ifeval_instr *ins, const char *response, size_t len, jr_ifeval_mode mode);

/* Checks one row: instruction_ids is a JSON array of id strings, kwargs_list a JSON array of the
 * same length of kwargs objects (or null entries), prompt/response NUL-terminated UTF-8.
 * results must hold json_array_size(instruction_ids) entries; results[i] gets whether
 * instruction i is followed. On error (ids not an array of strings, length mismatch, unknown id,
 * bad kwargs) the message names the instruction index, id and kwarg, and results is unspecified. */
jr_status jr_ifeval_check_row(const json_t *instruction_ids, const json_t *kwargs_list, const char *prompt,
                              const char *response, jr_ifeval_mode mode, bool *results);

/* Scores one response against a dataset row (a JSON object with instruction_id_list, kwargs
 * and, optionally, prompt, as in IFEval's input_data.jsonl): *pass_rate gets the share of
 * followed instructions, *all_pass 1 when every one is followed (either may be NULL). Errors
 * as jr_ifeval_check_row, or a missing/ill-typed field named; outputs untouched on error. */
jr_status jr_ifeval_score(const json_t *row, const char *response, jr_ifeval_mode mode, double *pass_rate,
                          int *all_pass);

/* Share of followed instructions (0..1; 0 when n == 0): the per-instruction pass-rate reward. */
double jr_ifeval_pass_rate(const bool *results, size_t n);

/* 1 when every instruction is followed (and n > 0), else 0: the all-pass reward. */
int jr_ifeval_all_pass(const bool *results, size_t n);

/* --- a responses file scored like the official tool (ifeval_file.c, `judgerl ifeval`) --- */

/* One scored row: its instruction ids and kwargs, prompt and response (borrowed from the rows read)
 * and whether each instruction is followed, strict (res[0]) and loose (res[1]). */
typedef struct jr_ifeval_row {
    const json_t *ids, *kwargs;
    const char *prompt, *response;
    bool *res[2];
    size_t n;
} jr_ifeval_row;

typedef struct jr_ifeval_file {
    jr_ifeval_row *rows; /* the scored rows, in file order */
    size_t n_rows;
    size_t n_bad;        /* malformed rows skipped (each reported) */
    json_t **in, **pr;   /* the rows read (owned; NULL for a line that is not a JSON object) */
    size_t nin, npr;
    size_t n_alloc;      /* slots of rows */
} jr_ifeval_file;

/* Scores `input` (JSONL rows with prompt, response, instruction_id_list, kwargs; with `prompts`, the
 * benchmark's input_data.jsonl, rows with prompt and response joined by prompt text) strict and loose.
 * A malformed row is reported on `warn` as "PREFIXFILE:LINE: why" and skipped. Fails when a file
 * cannot be read or no row could be scored; then *f is empty. Free with jr_ifeval_file_free. */
jr_status jr_ifeval_file_score(jr_ifeval_file *f, const char *input, const char *prompts, FILE *warn, const char *prefix);

/* Prompt-level (every instruction followed) and instruction-level counts; mode 0 strict, 1 loose. */
void jr_ifeval_file_accuracy(const jr_ifeval_file *f, int mode, size_t *p_ok, size_t *i_ok, size_t *i_tot);

/* Prints the accuracy per instruction group and per instruction id ("strict NAME ACC (OK/TOTAL)"),
 * each sorted by name, as the official report prints them. */
void jr_ifeval_file_breakdown(FILE *out, const jr_ifeval_file *f, int mode);

/* `judgerl ifeval`'s report: "strict prompt-level: ACC (OK/N)" and instruction-level, then loose; with
 * breakdown also jr_ifeval_file_breakdown of both modes. */
void jr_ifeval_file_print(FILE *out, const jr_ifeval_file *f, int breakdown);

/* Writes dir/eval_results_strict.jsonl and dir/eval_results_loose.jsonl (the official tool's
 * format, Python json.dumps of each field), each atomically; dir is created. */
jr_status jr_ifeval_file_write(const jr_ifeval_file *f, const char *dir);

void jr_ifeval_file_free(jr_ifeval_file *f);

/* --- text primitives, exposed for tests and other verifiers ------------------------------ */

/* Number of sentences in text according to judgerl's re-implementation of NLTK's Punkt
 * sentence tokenizer with approximated English parameters (docs/IFEVAL.md). */
size_t jr_ifeval_count_sentences(const char *text, size_t len);

/* Number of words: maximal runs of Unicode letters, digits and '_' (nltk RegexpTokenizer(\w+)). */
size_t jr_ifeval_count_words(const char *text, size_t len);

/* Number of all-uppercase tokens as nltk.word_tokenize would produce them (approximation). */
size_t jr_ifeval_count_capital_words(const char *text, size_t len);

/* Detects the language of text with CLD2; writes a langdetect-style code ("en", "zh-cn", "he",
 * ...) to code (size >= 16) and returns 1; "und" when the text has letters but CLD2 cannot place
 * it (very short text, lists of names). Returns 0 (code "") when detection fails the way
 * langdetect fails: the text has no letters at all. */
int jr_ifeval_detect_language(const char *text, size_t len, char *code);

#endif
