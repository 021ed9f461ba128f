/* response.c - decodes OpenAI-compatible answers: JSON bodies and SSE streams (chat and completions) */
#include "judge/response.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/strbuf.h"

typedef struct {
    jr_strbuf content, reasoning;
    char finish[32];
    json_t *logprobs;
    long total_tokens;
    int saw_choice;
} acc;

static json_t *lp_entry(const char *tok, double lp, json_t *top) {
    json_t *e = json_object();
    json_object_set_new(e, "token", json_string(tok ? tok : ""));
    json_object_set_new(e, "logprob", json_real(lp));
    json_object_set_new(e, "top_logprobs", top ? top : json_array());
    return e;
}

/* Appends a choice's logprobs (chat: {content: [...]}; completions: {tokens, token_logprobs,
 * top_logprobs: [{tok: lp}]}) to a->logprobs in the chat shape. */
static void add_logprobs(acc *a, json_t *lp) {
    if (!json_is_object(lp)) return;
    if (!a->logprobs) a->logprobs = json_array();
    json_t *content = json_object_get(lp, "content");
    if (json_is_array(content)) {
        size_t i;
        json_t *e;
        json_array_foreach(content, i, e) {
            json_t *top = json_array(), *t = json_object_get(e, "top_logprobs");
            size_t k;
            json_t *te;
            json_array_foreach(t, k, te)
                json_array_append_new(top, lp_entry(json_string_value(json_object_get(te, "token")),
                                                    json_number_value(json_object_get(te, "logprob")), NULL));
            json_array_append_new(a->logprobs, lp_entry(json_string_value(json_object_get(e, "token")),
                                                        json_number_value(json_object_get(e, "logprob")), top));
        }
        return;
    }
    json_t *toks = json_object_get(lp, "tokens"), *tlp = json_object_get(lp, "token_logprobs"), *tops = json_object_get(lp, "top_logprobs");
    for (size_t i = 0; i < json_array_size(toks); i++) {
        json_t *top = json_array(), *d = json_array_get(tops, i);
        const char *k;
        json_t *v;
        json_object_foreach(d, k, v) json_array_append_new(top, lp_entry(k, json_number_value(v), NULL));
        json_array_append_new(a->logprobs, lp_entry(json_string_value(json_array_get(toks, i)),
                                                    json_number_value(json_array_get(tlp, i)), top));
    }
}

/* Folds one response object (a whole body or one stream chunk) into a. Returns -1 when it is an
 * error object. */
static int fold(acc *a, json_t *obj, int chunk, char *why, size_t why_len) {
    json_t *err = json_object_get(obj, "error");
    if (err && !json_is_null(err)) {
        char msg[300];
        char *t = json_dumps(obj, JSON_COMPACT);
        jr_answer_error_message(t ? t : "", t ? strlen(t) : 0, msg, sizeof msg);
        free(t);
        snprintf(why, why_len, "error in the answer: %s", msg);
        return -1;
    }
    json_t *usage = json_object_get(obj, "usage");
    if (json_is_integer(json_object_get(usage, "total_tokens"))) a->total_tokens = (long)json_integer_value(json_object_get(usage, "total_tokens"));
    json_t *ch = json_array_get(json_object_get(obj, "choices"), 0);
    if (!json_is_object(ch)) return 0;
    a->saw_choice = 1;
    json_t *msg = json_object_get(ch, chunk ? "delta" : "message");
    const char *s;
    if (json_is_object(msg)) {
        if ((s = json_string_value(json_object_get(msg, "content")))) jr_strbuf_addn(&a->content, s, strlen(s));
        if ((s = json_string_value(json_object_get(msg, "reasoning_content")))) jr_strbuf_addn(&a->reasoning, s, strlen(s));
        else if ((s = json_string_value(json_object_get(msg, "reasoning")))) jr_strbuf_addn(&a->reasoning, s, strlen(s));
    }
    if ((s = json_string_value(json_object_get(ch, "text")))) jr_strbuf_addn(&a->content, s, strlen(s));
    if ((s = json_string_value(json_object_get(ch, "finish_reason")))) snprintf(a->finish, sizeof a->finish, "%s", s);
    add_logprobs(a, json_object_get(ch, "logprobs"));
    return 0;
}

/* Dispatches one SSE event's data. Returns 1 on [DONE], 0 on a folded chunk, -1 on a bad one. */
static int dispatch(acc *a, const char *d, const char *event, int n_event, char *why, size_t why_len) {
    if (!strcmp(d, "[DONE]")) return 1;
    json_t *o = json_loads(d, JSON_DECODE_ANY, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        snprintf(why, why_len, "stream event %d is not JSON: '%.60s'", n_event, d);
        return -1;
    }
    int rc = fold(a, o, 1, why, why_len);
    json_decref(o);
    if (!rc && !strcmp(event, "error")) { snprintf(why, why_len, "stream sent an error event"); rc = -1; }
    return rc;
}

/* Server-sent events: lines end with \n, \r\n or \r; "data:" lines of one event are joined with
 * \n; a blank line (or the end of the body) ends the event; ':' lines are comments; "[DONE]"
 * ends the stream. */
static int decode_sse(acc *a, const char *b, size_t len, char *why, size_t why_len) {
    jr_strbuf data = {0};
    int have_data = 0, done = 0, events = 0, rc = 0;
    char event[32] = "";
    size_t i = 0;
    while (!done && !rc) {
        int at_end = i >= len;
        size_t j = i;
        while (j < len && b[j] != '\n' && b[j] != '\r') j++;
        size_t ll = j - i;
        const char *line = b + i;
        if (ll == 0) { /* blank line or end of body: dispatch */
            if (have_data) {
                events++;
                int r = dispatch(a, data.p ? data.p : "", event, events, why, why_len);
                if (r < 0) rc = -1;
                else if (r > 0) done = 1;
            }
            have_data = 0;
            data.n = 0;
            if (data.p) data.p[0] = 0;
            event[0] = 0;
        } else if (line[0] != ':') {
            size_t c = 0;
            while (c < ll && line[c] != ':') c++;
            const char *val = c < ll ? line + c + 1 : line + ll;
            size_t vl = c < ll ? ll - c - 1 : 0;
            if (vl && *val == ' ') { val++; vl--; }
            if (c == 4 && !memcmp(line, "data", 4)) {
                if (have_data) jr_strbuf_addn(&data, "\n", 1);
                jr_strbuf_addn(&data, val, vl);
                if (!data.p) jr_strbuf_addn(&data, "", 0);
                have_data = 1;
            } else if (c == 5 && !memcmp(line, "event", 5)) {
                snprintf(event, sizeof event, "%.*s", (int)(vl < 31 ? vl : 31), val);
            }
        }
        if (at_end) break;
        if (j < len && b[j] == '\r' && j + 1 < len && b[j + 1] == '\n') j++;
        i = j < len ? j + 1 : j;
    }
    int oom = data.oom;
    free(data.p);
    if (rc) return -1;
    if (oom) { snprintf(why, why_len, "out of memory"); return -1; }
    if (!done && !a->finish[0]) {
        snprintf(why, why_len, "stream ended before [DONE] or a finish_reason (%d events)", events);
        return -1;
    }
    if (!a->saw_choice) { snprintf(why, why_len, "stream had no choices"); return -1; }
    return 0;
}

int jr_answer_decode(const char *body, size_t len, jr_answer *out, char *why, size_t why_len) {
    memset(out, 0, sizeof *out);
    out->total_tokens = -1;
    acc a = {0};
    a.total_tokens = -1;
    size_t k = 0;
    while (k < len && isspace((unsigned char)body[k])) k++;
    int rc;
    if (k < len && body[k] == '{') {
        json_error_t je;
        json_t *o = json_loadb(body, len, 0, &je);
        if (!json_is_object(o)) {
            json_decref(o);
            snprintf(why, why_len, "unparsable JSON body (%s at byte %d)", je.text, je.position);
            return -1;
        }
        rc = fold(&a, o, 0, why, why_len);
        json_decref(o);
        if (!rc && !a.saw_choice) { snprintf(why, why_len, "JSON body has no choices"); rc = -1; }
    } else if (k < len && (body[k] == ':' || !strncmp(body + k, "data", 4) || !strncmp(body + k, "event", 5))) {
        rc = decode_sse(&a, body + k, len - k, why, why_len);
    } else {
        char shown[64];
        size_t n = 0;
        for (size_t i = k; i < len && n < 40; i++) shown[n++] = isprint((unsigned char)body[i]) ? body[i] : '?';
        shown[n] = 0;
        snprintf(why, why_len, len ? "unparsable body: '%s'" : "empty body%s", shown);
        rc = -1;
    }
    if (!rc && (a.content.oom || a.reasoning.oom)) { snprintf(why, why_len, "out of memory"); rc = -1; }
    if (rc) { free(a.content.p); free(a.reasoning.p); json_decref(a.logprobs); return -1; }
    out->content = a.content.p ? a.content.p : strdup("");
    out->reasoning = a.reasoning.p;
    memcpy(out->finish, a.finish, sizeof out->finish);
    out->logprobs = a.logprobs;
    out->total_tokens = a.total_tokens;
    if (!out->content) { jr_answer_free(out); snprintf(why, why_len, "out of memory"); return -1; }
    return 0;
}

void jr_answer_free(jr_answer *a) {
    free(a->content);
    free(a->reasoning);
    json_decref(a->logprobs);
    memset(a, 0, sizeof *a);
}

void jr_answer_error_message(const char *body, size_t len, char *out, size_t out_len) {
    out[0] = 0;
    json_t *o = len ? json_loadb(body, len, 0, NULL) : NULL;
    const char *m = NULL;
    if (json_is_object(o)) {
        json_t *e = json_object_get(o, "error");
        if (json_is_string(e)) m = json_string_value(e);
        else if (json_is_object(e)) m = json_string_value(json_object_get(e, "message"));
        if (!m) m = json_string_value(json_object_get(o, "message"));
        if (!m) m = json_string_value(json_object_get(o, "detail"));
    }
    const char *src = m ? m : body;
    size_t sl = m ? strlen(m) : len, n = 0;
    for (size_t i = 0; i < sl && n + 1 < out_len && n < 300; i++)
        out[n++] = (src[i] == '\n' || src[i] == '\r' || src[i] == '\t') ? ' ' : (isprint((unsigned char)src[i]) || (unsigned char)src[i] >= 0x80 ? src[i] : '?');
    out[n] = 0;
    if (!n) snprintf(out, out_len, "(empty body)");
    json_decref(o);
}
