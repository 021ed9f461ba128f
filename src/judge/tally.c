/* tally.c - why samples are unscored: the last reason and the most frequent one, for every message
 * about unscored rows */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/judge.h"

enum { MAX_GROUPS = 64, REASON_MAX = 600 };

typedef struct {
    char *key;  /* the reason with digit runs masked */
    char *text; /* its first text */
    long count;
} group;

struct jr_reason_tally {
    group g[MAX_GROUPS];
    int n;
    long total, other; /* other: reasons past MAX_GROUPS distinct groups */
    char last[REASON_MAX];
    char summary[2 * REASON_MAX + 80];
};

jr_reason_tally *jr_reason_tally_new(void) { return jr_calloc(1, sizeof(jr_reason_tally)); }

static char *mask(const char *s) {
    size_t n = strlen(s);
    if (n > REASON_MAX) n = REASON_MAX;
    char *k = jr_malloc(n + 1), *o = k;
    if (!k) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (isdigit((unsigned char)s[i])) {
            *o++ = '#';
            while (i + 1 < n && isdigit((unsigned char)s[i + 1])) i++;
        } else {
            *o++ = s[i];
        }
    }
    *o = 0;
    return k;
}

void jr_reason_tally_add(jr_reason_tally *t, const char *reason) {
    if (!t) return;
    if (!reason || !*reason) reason = "(no reason given)";
    t->total++;
    snprintf(t->last, sizeof t->last, "%s", reason);
    char *k = mask(reason);
    if (!k) { t->other++; return; }
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->g[i].key, k)) { t->g[i].count++; free(k); return; }
    if (t->n == MAX_GROUPS) { t->other++; free(k); return; }
    t->g[t->n].key = k;
    t->g[t->n].text = jr_strdup(t->last);
    t->g[t->n].count = 1;
    t->n++;
}

long jr_reason_tally_count(const jr_reason_tally *t) { return t ? t->total : 0; }

static const group *top(const jr_reason_tally *t) {
    const group *b = NULL;
    for (int i = 0; i < t->n; i++)
        if (!b || t->g[i].count > b->count) b = &t->g[i];
    return b;
}

const char *jr_reason_tally_summary(jr_reason_tally *t) {
    if (!t || !t->total) return "";
    const group *b = top(t);
    if (b && b->text && strcmp(b->text, t->last))
        snprintf(t->summary, sizeof t->summary, "last: %s; most frequent (%ld of %ld): %s", t->last, b->count, t->total, b->text);
    else if (b)
        snprintf(t->summary, sizeof t->summary, "last and most frequent (%ld of %ld): %s", b->count, t->total, t->last);
    else
        snprintf(t->summary, sizeof t->summary, "last: %s", t->last);
    return t->summary;
}

static int by_count(const void *a, const void *b) {
    const group *x = *(const group *const *)a, *y = *(const group *const *)b;
    return (x->count < y->count) - (x->count > y->count);
}

json_t *jr_reason_tally_json(const jr_reason_tally *t) {
    json_t *o = json_object(), *list = json_array();
    if (!o || !list) { json_decref(o); json_decref(list); return NULL; }
    json_object_set_new(o, "unscored", json_integer(t ? t->total : 0));
    json_object_set_new(o, "last", t && t->total ? json_string(t->last) : json_null());
    const group *b = t ? top(t) : NULL;
    json_object_set_new(o, "most_frequent", b ? json_pack("{s:s,s:I}", "reason", b->text ? b->text : "", "count", (json_int_t)b->count)
                                              : json_null());
    const group *v[MAX_GROUPS];
    int n = t ? t->n : 0;
    for (int i = 0; i < n; i++) v[i] = &t->g[i];
    qsort(v, (size_t)n, sizeof *v, by_count);
    for (int i = 0; i < n && i < 10; i++)
        json_array_append_new(list, json_pack("{s:s,s:I}", "reason", v[i]->text ? v[i]->text : "", "count", (json_int_t)v[i]->count));
    json_object_set_new(o, "top", list);
    return o;
}

void jr_reason_tally_free(jr_reason_tally *t) {
    if (!t) return;
    for (int i = 0; i < t->n; i++) {
        free(t->g[i].key);
        free(t->g[i].text);
    }
    free(t);
}
