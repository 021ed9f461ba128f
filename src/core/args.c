/* args.c - command lines read against a table of flags (args.h) */
#include "judgerl/args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/strbuf.h"

char *jr_args_quoted(const char *key, const char *value) {
    size_t n = strlen(key) + 2 * strlen(value) + 4;
    char *s = malloc(n);
    if (!s) return NULL;
    char *p = s + sprintf(s, "%s='", key);
    for (const char *v = value; *v; v++) {
        if (*v == '\'') *p++ = '\'';
        *p++ = *v;
    }
    *p++ = '\'';
    *p = 0;
    return s;
}

/* The entry whose name (or one of its '|' alternatives) is arg, or arg's part before '=' (*inline_v
 * then points past the '='); NULL when none. */
static const jr_arg *find(const jr_arg *spec, const char *arg, const char **inline_v) {
    size_t eq = strcspn(arg, "=");
    for (const jr_arg *s = spec; s->name; s++)
        for (const char *n = s->name; *n;) {
            size_t len = strcspn(n, "|");
            if (len == strlen(arg) && !strncmp(n, arg, len)) { *inline_v = NULL; return s; }
            if (arg[eq] && len == eq && !strncmp(n, arg, len)) { *inline_v = arg + eq + 1; return s; }
            n += len + (n[len] == '|');
        }
    return NULL;
}

static jr_status add_over(jr_args *a, char *s, int owned) {
    if (!s) return jr_fail(JR_ENOMEM, "out of memory");
    if (owned) a->owned[a->n_owned++] = s;
    a->over[a->n_over++] = s;
    return JR_OK;
}

/* A number for LONG / DOUBLE / SECONDS into s->dst, checked against the range. */
static jr_status number(const jr_arg *s, const char *flag, const char *v) {
    char *end;
    errno = 0;
    if (s->kind == JR_ARG_LONG) {
        long x = strtol(v, &end, 10);
        if (errno || end == v || *end || x < (long)s->lo || x > (long)s->hi)
            return jr_fail(JR_EINVAL, "%s: expected an integer in [%ld, %ld], got '%s'", flag, (long)s->lo, (long)s->hi, v);
        *(long *)s->dst = x;
        return JR_OK;
    }
    double x = strtod(v, &end);
    double hi = s->kind == JR_ARG_SECONDS ? 1e7 : s->hi;
    if (errno || end == v || *end || !(x >= s->lo && x <= hi)) {
        if (s->kind == JR_ARG_SECONDS) return jr_fail(JR_EINVAL, "%s: expected seconds >= %g, got '%s'", flag, s->lo, v);
        return jr_fail(JR_EINVAL, "%s: expected a number in [%g, %g], got '%s'", flag, s->lo, s->hi, v);
    }
    *(double *)s->dst = x;
    return JR_OK;
}

/* One flag with its value v (NULL when it takes none); *i moves past what it consumed. */
static jr_status take(jr_args *a, const jr_arg *s, const char *flag, const char *v, int *i, int argc, char **argv) {
    switch (s->kind) {
    case JR_ARG_BOOL: *(int *)s->dst = s->ival; return JR_OK;
    case JR_ARG_SET: return add_over(a, (char *)s->key, 0);
    case JR_ARG_STR: *(const char **)s->dst = v; return JR_OK;
    case JR_ARG_LONG: case JR_ARG_DOUBLE: case JR_ARG_SECONDS: return number(s, flag, v);
    case JR_ARG_KEYQ: return add_over(a, jr_args_quoted(s->key, v), 1);
    case JR_ARG_KEY: return add_over(a, jr_strfmt("%s=%s", s->key, v), 1);
    case JR_ARG_MULTI:
        for (;;) {
            if (*s->count >= s->cap) return jr_fail(JR_EINVAL, "%s: at most %d values", flag, s->cap);
            ((const char **)s->dst)[(*s->count)++] = v;
            if (!s->ival || *i + 1 >= argc || argv[*i + 1][0] == '-') return JR_OK;
            v = argv[++*i];
        }
    }
    return JR_OK;
}

jr_status jr_args_parse(jr_args *a, const jr_arg *spec, int argc, char **argv, int max_pos, int overrides) {
    *a = (jr_args){0};
    size_t n = (size_t)(argc > 0 ? argc : 0) + 1;
    a->over = calloc(n, sizeof *a->over);
    a->pos = calloc(n, sizeof *a->pos);
    a->owned = calloc(n, sizeof *a->owned);
    if (!a->over || !a->pos || !a->owned) return jr_fail(JR_ENOMEM, "out of memory");
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *v = NULL;
        const jr_arg *s = arg[0] == '-' ? find(spec, arg, &v) : NULL;
        if (!s) {
            if (arg[0] != '-' && overrides && strchr(arg, '=')) a->over[a->n_over++] = argv[i];
            else if (arg[0] != '-' && a->n_pos < max_pos) a->pos[a->n_pos++] = argv[i];
            else { a->bad = arg; return JR_ENOTFOUND; }
            continue;
        }
        char flag[128];
        snprintf(flag, sizeof flag, "%.*s", (int)strcspn(arg, "="), arg);
        int needs = s->kind != JR_ARG_BOOL && s->kind != JR_ARG_SET;
        if (!needs && v) return jr_fail(JR_EINVAL, "%s takes no value (got '%s')", flag, v);
        if (needs && !v) {
            if (i + 1 >= argc) return jr_fail(JR_EINVAL, "%s needs a value", flag);
            v = argv[++i];
        }
        jr_status st = take(a, s, flag, v, &i, argc, argv);
        if (st) return st;
    }
    return JR_OK;
}

void jr_args_free(jr_args *a) {
    for (int i = 0; i < a->n_owned; i++) free(a->owned[i]);
    free(a->owned);
    free(a->over);
    free(a->pos);
    *a = (jr_args){0};
}

int jr_args_ints(const char *s, int32_t **out, int *n) {
    int cap = 16;
    *n = 0;
    *out = malloc(sizeof(int32_t) * (size_t)cap);
    if (!*out) return -1;
    while (*s) {
        while (*s == ' ' || *s == ',' || *s == '\t' || *s == '\n') s++;
        if (!*s) break;
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno || v < -1 || v > 0x7fffffff) return -1;
        if (*n == cap) {
            int32_t *p = realloc(*out, sizeof(int32_t) * (size_t)(cap *= 2));
            if (!p) return -1;
            *out = p;
        }
        (*out)[(*n)++] = (int32_t)v;
        s = end;
    }
    return 0;
}
