/* dialect.h - what kind of server a judge endpoint is (vLLM, llama.cpp, SGLang, ollama, OpenAI,
 * judgerl), found from its /v1/models, /version and /props; and judge.constraint translated into
 * each kind's request fields (internal to src/judge/) */
#ifndef JUDGERL_JUDGE_DIALECT_H
#define JUDGERL_JUDGE_DIALECT_H

#include <stddef.h>
#include <jansson.h>

#include "judgerl/judge.h"
#include "judgerl/status.h"


/* "vllm", "llamacpp", ... ("auto", "unknown"). */
const char *jr_server_kind_name(jr_server_kind k);
/* The kind named s (auto|vllm|llamacpp|sglang|ollama|openai|judgerl), or -1. */
int jr_server_kind_parse(const char *s);

typedef struct jr_server_info {
    jr_server_kind kind;
    int ver[3];           /* vLLM's version (0.10.2 -> {0, 10, 2}); all 0 when unknown */
    char version[64];     /* the version text (vLLM, ollama) or llama.cpp's build_info; "" unknown */
    int slots;            /* llama.cpp's total_slots (-np); 0 when unknown */
    char how[256];        /* what answered, for the log line ("GET /v1/models: owned_by vllm, ...") */
} jr_server_info;

/* Asks the server behind `api_base` (".../v1") what it is: GET {api_base}/models (owned_by), then
 * GET {root}/version (vLLM's version), {root}/props (llama.cpp's total_slots, build_info) or
 * {root}/api/version (ollama), root being api_base without a trailing /v1. `headers` (a struct
 * curl_slist *, may be NULL) are sent with each GET (the API key); secret (the key, may be NULL) is
 * redacted from every text the answers give (judge/redact.h). Never fails: a server that answers
 * none of these is JR_KIND_UNKNOWN with the reason in out->how. */
void jr_server_detect(const char *api_base, const void *headers, const char *secret, long timeout_ms,
                      jr_server_info *out);

/* judge.constraint: one of {choice: [...]}, {regex: "..."}, {json_schema: {...}}. */
typedef enum { JR_CONSTRAINT_NONE = 0, JR_CONSTRAINT_CHOICE, JR_CONSTRAINT_REGEX, JR_CONSTRAINT_JSON } jr_constraint_type;

typedef struct jr_judge_constraint {
    jr_constraint_type type;
    json_t *choices;   /* CHOICE: array of non-empty strings (owned) */
    char *regex;       /* REGEX: the PCRE2 pattern (owned) */
    json_t *schema;    /* JSON: the schema (owned) */
    void *re;          /* REGEX: compiled, anchored at both ends (pcre2_code, owned) */
} jr_judge_constraint;

/* Reads the config value v (null: no constraint). `where` names it in messages. On error *c is
 * empty and the message names the member. */
jr_status jr_judge_constraint_parse(const json_t *v, const char *where, jr_judge_constraint *c);
void jr_judge_constraint_free(jr_judge_constraint *c);

/* The request fields that ask server `s` for constraint c (a new object in *fields, NULL when c
 * is NONE). *wrapped is set when the server can only take the constraint as a JSON schema whose
 * answer is {"answer": "<choice>"} (OpenAI, ollama): the caller unwraps it. Fails, naming the
 * kind, when the server has no way to take it (a regex for OpenAI or ollama, a JSON schema for
 * judgerl serve, a regex llama.cpp's grammar cannot express, an unknown server). */
jr_status jr_judge_constraint_fields(const jr_judge_constraint *c, const jr_server_info *s, json_t **fields, int *wrapped);

/* 1 when text (surrounding whitespace ignored) satisfies c: equals a choice, fully matches the
 * regex, or parses as JSON (the schema itself is the server's to enforce). Else 0 with a reason. */
int jr_judge_constraint_check(const jr_judge_constraint *c, const char *text, char *why, size_t why_len);

/* A llama.cpp GBNF grammar (`root ::= ...`) accepting exactly the given strings. Owned; NULL on
 * ENOMEM. */
char *jr_gbnf_from_choices(const json_t *choices);
/* A GBNF grammar accepting the strings the regex fully matches, for the subset llama.cpp's
 * grammar can express (literals, ., classes, \d \w \s and their negations, groups, alternation,
 * * + ? {m,n}, lazy quantifiers; ^ and $ at the ends). Anything else (look-around, back
 * references, anchors inside, possessive quantifiers, flags) returns NULL with the reason and
 * offset in err[err_len]. */
char *jr_gbnf_from_regex(const char *re, char *err, size_t err_len);

#endif
