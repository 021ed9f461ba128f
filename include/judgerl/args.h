/* args.h - a command line read against a table of flags: values into typed slots (checked against
 * their range), flags that stand for config keys turned into key=value overrides, key=value
 * overrides and positional arguments collected in order. What every `judgerl` command parses with. */
#ifndef JUDGERL_ARGS_H
#define JUDGERL_ARGS_H

#include <stdint.h>

#include "judgerl/status.h"

typedef enum {
    JR_ARG_STR,     /* --flag VALUE: *(const char **)dst = VALUE */
    JR_ARG_BOOL,    /* --flag: *(int *)dst = ival */
    JR_ARG_LONG,    /* --flag N: *(long *)dst = N, an integer in [lo, hi] */
    JR_ARG_DOUBLE,  /* --flag X: *(double *)dst = X, a number in [lo, hi] */
    JR_ARG_SECONDS, /* --flag S: *(double *)dst = S, seconds in [lo, 1e7] */
    JR_ARG_MULTI,   /* --flag V (repeatable; with ival 1 also the values that follow, up to the next
                     * flag): appended to (const char **)dst, at most cap, *count updated */
    JR_ARG_KEY,     /* --flag V: the override "key=V" (V read as YAML) */
    JR_ARG_KEYQ,    /* --flag V: the override "key='V'" (V taken literally: paths, comma lists) */
    JR_ARG_SET,     /* --flag: the override `key` as it is ("eval.ifeval=true") */
} jr_arg_kind;

typedef struct jr_arg {
    const char *name; /* "--model"; alternatives separated by '|': "-o|--output" */
    jr_arg_kind kind;
    void *dst;        /* STR, BOOL, LONG, DOUBLE, SECONDS, MULTI */
    const char *key;  /* KEY, KEYQ, SET */
    double lo, hi;    /* LONG, DOUBLE: the range; SECONDS: the least */
    int ival;         /* BOOL: the value set; MULTI: 1 = greedy */
    int *count, cap;  /* MULTI */
} jr_arg;

/* Table entries, one per kind; JR_ARGS_END ends a table. */
#define JR_ARG_S(n, p) {.name = (n), .kind = JR_ARG_STR, .dst = (p)}
#define JR_ARG_B(n, p, v) {.name = (n), .kind = JR_ARG_BOOL, .dst = (p), .ival = (v)}
#define JR_ARG_L(n, p, l, h) {.name = (n), .kind = JR_ARG_LONG, .dst = (p), .lo = (l), .hi = (h)}
#define JR_ARG_D(n, p, l, h) {.name = (n), .kind = JR_ARG_DOUBLE, .dst = (p), .lo = (l), .hi = (h)}
#define JR_ARG_SEC(n, p, l) {.name = (n), .kind = JR_ARG_SECONDS, .dst = (p), .lo = (l)}
#define JR_ARG_M(n, arr, cnt, c, greedy) {.name = (n), .kind = JR_ARG_MULTI, .dst = (arr), .ival = (greedy), .count = (cnt), .cap = (c)}
#define JR_ARG_K(n, k) {.name = (n), .kind = JR_ARG_KEY, .key = (k)}
#define JR_ARG_KQ(n, k) {.name = (n), .kind = JR_ARG_KEYQ, .key = (k)}
#define JR_ARG_SETK(n, k) {.name = (n), .kind = JR_ARG_SET, .key = (k)}
#define JR_ARGS_END {.name = NULL}

typedef struct jr_args {
    char **over;     /* key=value overrides, given and made from KEY / KEYQ / SET flags, in order (room for one more) */
    int n_over;
    char **pos;      /* positional arguments (no leading '-'; no '=' when overrides are taken) */
    int n_pos;
    const char *bad; /* after JR_ENOTFOUND: the argument no flag matched */
    char **owned;    /* strings made here */
    int n_owned;
} jr_args;

/* Reads argv[1..argc) against spec (ended by a {NULL} entry). max_pos: how many positional
 * arguments are taken; overrides: 1 to collect "key=value" arguments. Returns JR_ENOTFOUND with
 * a->bad set for an unknown flag or an argument not taken; JR_EINVAL (the message names the flag) for
 * a missing or bad value, or a value given to a flag that takes none ("--quick=false"); JR_ENOMEM. Free a with jr_args_free (also after an error). */
jr_status jr_args_parse(jr_args *a, const jr_arg *spec, int argc, char **argv, int max_pos, int overrides);
void jr_args_free(jr_args *a);

/* "key='value'" with value quoted for YAML (a ' doubled), so any path or text survives the override
 * parser (caller frees; NULL when out of memory). */
char *jr_args_quoted(const char *key, const char *value);

/* Integers in [-1, 2^31) separated by spaces, tabs, newlines or commas (token ids: "1 2 3") into a new
 * array *out (caller frees, also on error) of *n: 0, or -1 when s holds anything else. */
int jr_args_ints(const char *s, int32_t **out, int *n);

#endif
