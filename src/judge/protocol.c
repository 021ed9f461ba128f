/* protocol.c - the registry of judge protocols and the call-list helpers protocols use */
#include <stdlib.h>
#include <string.h>

#include "judgerl/judge.h"
#include "judgerl/protocols.h"

/* Every protocol judge.protocol can name. Add a row per protocol. */
static const jr_protocol *const protocols[] = {
    &jr_protocol_pointwise,
    &jr_protocol_reference,
    &jr_protocol_rubric,
    &jr_protocol_pairwise,
    &jr_protocol_label,
    &jr_protocol_verif,
    NULL,
};

const jr_protocol *jr_protocol_find(const char *name) {
    if (!name) return NULL;
    for (int i = 0; protocols[i]; i++)
        if (!strcmp(protocols[i]->name, name)) return protocols[i];
    return NULL;
}

const char *jr_protocol_names(void) {
    static char buf[512];
    if (!buf[0]) {
        size_t off = 0;
        for (int i = 0; protocols[i] && off < sizeof buf - 1; i++) {
            size_t n = strlen(protocols[i]->name);
            if (off + n + 2 >= sizeof buf) break;
            if (i) buf[off++] = '|';
            memcpy(buf + off, protocols[i]->name, n);
            off += n;
            buf[off] = 0;
        }
    }
    return buf;
}

jr_status jr_judge_calls_add(jr_judge_calls *c, json_t *messages, json_t *params, const char *tag, jr_judge_call **out) {
    if (out) *out = NULL;
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 4;
        jr_judge_call *v = jr_realloc(c->v, sizeof *v * (size_t)cap);
        if (!v) { json_decref(messages); json_decref(params); return JR_ENOMEM; }
        c->v = v;
        c->cap = cap;
    }
    jr_judge_call *k = &c->v[c->n];
    memset(k, 0, sizeof *k);
    if (tag && !(k->tag = jr_strdup(tag))) { json_decref(messages); json_decref(params); return JR_ENOMEM; }
    k->messages = messages;
    k->params = params;
    c->n++;
    if (out) *out = k;
    return JR_OK;
}

void jr_judge_calls_free(jr_judge_calls *c) {
    for (int i = 0; i < c->n; i++) {
        json_decref(c->v[i].messages);
        json_decref(c->v[i].params);
        free(c->v[i].prompt);
        free(c->v[i].tag);
        json_decref(c->v[i].constraint);
    }
    free(c->v);
    memset(c, 0, sizeof *c);
}
