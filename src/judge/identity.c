/* identity.c - who answers a judge's requests: GET {base}/models once per endpoint, turned into the
 * identity the cache keys carry */
#include "judge/identity.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "judgerl/strbuf.h"

typedef struct {
    char *data;
    size_t len;
} body;

static size_t on_data(char *p, size_t sz, size_t n, void *ud) {
    body *b = ud;
    size_t k = sz * n;
    if (b->len + k > (4u << 20)) return 0; /* a /models answer is small */
    char *d = realloc(b->data, b->len + k + 1);
    if (!d) return 0;
    memcpy(d + b->len, p, k);
    b->len += k;
    d[b->len] = 0;
    b->data = d;
    return k;
}

/* The API base of a POST URL (without /chat/completions or /completions), malloc'ed. */
static char *base_of(const char *url) {
    size_t ul = strlen(url);
    const char *sfx[] = {"/chat/completions", "/completions"};
    for (int i = 0; i < 2; i++) {
        size_t sl = strlen(sfx[i]);
        if (ul >= sl && !strcmp(url + ul - sl, sfx[i])) return strndup(url, ul - sl);
    }
    return strdup(url);
}

static void addf(jr_strbuf *b, const char *f, ...) __attribute__((format(printf, 2, 3)));
static void addf(jr_strbuf *b, const char *f, ...) {
    va_list ap;
    va_start(ap, f);
    char *s = NULL;
    if (vasprintf(&s, f, ap) < 0) s = NULL;
    va_end(ap);
    if (s) jr_strbuf_add(b, s);
    else b->oom = 1;
    free(s);
}

enum { GOT_MODELS, NO_MODELS, UNREACHABLE, NO_SERVER, REFUSED_KEY };

/* GET base/models: GOT_MODELS with *list (the JSON "data" array's owner) or another outcome. */
static int get_models(const char *base, struct curl_slist *hdrs, long connect_ms, long timeout_ms, json_t **root,
                      long *status, char *err, size_t err_len) {
    *root = NULL;
    *status = 0;
    CURL *e = curl_easy_init();
    if (!e) { snprintf(err, err_len, "cannot create an HTTP handle"); return UNREACHABLE; }
    char *url = NULL;
    if (asprintf(&url, "%s/models", base) < 0) url = NULL;
    body b = {0};
    curl_easy_setopt(e, CURLOPT_URL, url ? url : base);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
    CURLcode rc = curl_easy_perform(e);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
    curl_easy_cleanup(e);
    free(url);
    int out;
    if (rc != CURLE_OK) {
        snprintf(err, err_len, "%s", curl_easy_strerror(rc));
        out = rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ? NO_SERVER : UNREACHABLE;
    } else if (*status == 401 || *status == 403) {
        out = REFUSED_KEY;
    } else if (*status >= 200 && *status < 300 && b.data) {
        *root = json_loads(b.data, 0, NULL);
        out = json_is_array(json_object_get(*root, "data")) ? GOT_MODELS : NO_MODELS;
    } else {
        out = NO_MODELS;
    }
    free(b.data);
    return out;
}

jr_status jr_judge_identity(const char *const *post_urls, const char *const *models, int n, struct curl_slist *hdrs,
                            long connect_ms, long timeout_ms, char **identity, long *max_model_len, char **warning) {
    *identity = NULL;
    *warning = NULL;
    *max_model_len = 0;
    long probe_ms = timeout_ms < 10000 ? timeout_ms : 10000;
    jr_strbuf id = {0};
    char *fp = NULL, err[256] = "", first_err[400] = "";
    int n_refused = 0, all_fp = 1, n_answered = 0;
    jr_status st = JR_OK;
    for (int i = 0; i < n && !st; i++) {
        char *base = base_of(post_urls[i]);
        if (!base) { st = JR_ENOMEM; break; }
        json_t *root;
        long status;
        int got = get_models(base, hdrs, connect_ms, probe_ms, &root, &status, err, sizeof err);
        if (got == REFUSED_KEY) {
            st = jr_fail(JR_EINVAL, "judge.endpoints[%d]: GET %s/models: HTTP %ld: the server refused the key (check judge.api_key_env)",
                         i, base, status);
        } else if (got == UNREACHABLE || got == NO_SERVER) {
            n_refused += got == NO_SERVER;
            if (!first_err[0]) snprintf(first_err, sizeof first_err, "judge.endpoints[%d].url=%s: %s", i, base, err);
            addf(&id, "%s%s unreachable", i ? "\n" : "", base);
            all_fp = 0;
        } else if (got == NO_MODELS) {
            addf(&id, "%s%s model=%s", i ? "\n" : "", base, models[i]);
            all_fp = 0;
        } else {
            n_answered++;
            json_t *data = json_object_get(root, "data"), *pick = NULL, *m;
            size_t k;
            json_array_foreach(data, k, m) {
                const char *mid = json_string_value(json_object_get(m, "id"));
                if (mid && !strcmp(mid, models[i])) { pick = m; break; }
            }
            if (!pick && json_array_size(data)) {
                json_t *ids = json_array();
                json_array_foreach(data, k, m) json_array_append(ids, json_object_get(m, "id"));
                char *names = json_dumps(ids, JSON_COMPACT | JSON_ENCODE_ANY);
                json_decref(ids);
                if (!*warning && asprintf(warning, "judge.endpoints[%d].model=%s, but %s serves %s: requests name a model the "
                                                   "server does not list (llama-server ignores the name; judgerl serve and vLLM "
                                                   "answer 404); set the name the server lists or start it with "
                                                   "--served-model-name %s", i, models[i], base, names ? names : "?", models[i]) < 0)
                    *warning = NULL;
                free(names);
                pick = json_array_get(data, 0);
            }
            const char *f = json_string_value(json_object_get(pick, "judgerl_fingerprint"));
            if (!f) all_fp = 0;
            else if (!fp) fp = strdup(f);
            else if (strcmp(fp, f)) all_fp = 0;
            json_t *ml = json_object_get(pick, "max_model_len");
            if (json_is_integer(ml) && json_integer_value(ml) > 0 && (!*max_model_len || json_integer_value(ml) < *max_model_len))
                *max_model_len = (long)json_integer_value(ml);
            char *root_s = json_dumps(json_object_get(pick, "root"), JSON_COMPACT | JSON_ENCODE_ANY);
            char *mlen = json_dumps(ml, JSON_COMPACT | JSON_ENCODE_ANY);
            const char *pid = json_string_value(json_object_get(pick, "id"));
            addf(&id, "%s%s id=%s root=%s max_model_len=%s fingerprint=%s", i ? "\n" : "", base, pid ? pid : "?",
                           root_s ? root_s : "null", mlen ? mlen : "null", f ? f : "none");
            free(root_s);
            free(mlen);
        }
        json_decref(root);
        free(base);
    }
    if (!st && n_refused == n)
        st = jr_fail(JR_EIO, "%s: is the judge server running?%s", first_err, n > 1 ? " (no endpoint accepted a connection)" : "");
    if (!st && all_fp && fp && n_answered == n) {
        jr_strbuf_free(&id);
        id = (jr_strbuf){0};
        addf(&id, "fingerprint:%s", fp);
    }
    free(fp);
    if (st) {
        jr_strbuf_free(&id);
        free(*warning);
        *warning = NULL;
        return st;
    }
    *identity = jr_strbuf_take(&id);
    return *identity ? JR_OK : JR_ENOMEM;
}
