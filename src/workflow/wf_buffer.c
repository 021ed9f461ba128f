/* wf_buffer.c - seed 2's experience buffer (wfrl.h): high-reward workflows kept per domain in SQLite,
 * tagged with the step that added them, retrieved as few-shot examples by cosine similarity of
 * hashed word + bigram TF-IDF vectors unless their workflow's record of tries says it rarely works; the
 * Layer-1 prompt; the stratified domain mix */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/fsutil.h"
#include "judgerl/judge.h"
#include "judgerl/rng.h"
#include "judgerl/strbuf.h"
#include "judgerl/wfrl.h"

const jr_cfg_field jr_wf_buffer_cfg[] = {
    {"buffer.path", JR_CFG_STRING, "null", "experience buffer SQLite file (unset: RUN/buffer.sqlite)", NULL, NULL, 0, 0},
    {"buffer.threshold", JR_CFG_FLOAT, "8.0", "keep workflows whose reward is at least this (the seed's 10-point scale)",
     NULL, NULL, -1e9, 1e9},
    {"buffer.cap", JR_CFG_INT, "100", "entries kept per domain (the lowest reward is evicted)", NULL, NULL, 1, 1e7},
    {"buffer.top_k", JR_CFG_INT, "3", "few-shot examples retrieved per prompt", NULL, NULL, 0, 100},
    {"buffer.min_similarity", JR_CFG_FLOAT, "0.05", "cosine similarity below which an entry is not retrieved", NULL,
     NULL, 0, 1},
    {"buffer.min_win_rate", JR_CFG_FLOAT, "0.2",
     "an entry whose workflow, tried buffer.min_tries times or more in its domain, reached the threshold in less than "
     "this share of its tries is not retrieved, unless none of the domain's workflows wins more often: one lucky "
     "success of a workflow that rarely works is no example (0: off)",
     NULL, NULL, 0, 1},
    {"buffer.min_tries", JR_CFG_INT, "10", "tries of a workflow in a domain before buffer.min_win_rate applies to it", NULL,
     NULL, 1, 1e9},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

void jr_wf_buffer_opts_from_config(jr_wf_buffer_opts *o, const jr_config *c) {
    o->path = jr_cfg_str(c, "buffer.path");
    o->threshold = jr_cfg_float(c, "buffer.threshold");
    o->cap = (int)jr_cfg_int(c, "buffer.cap");
    o->top_k = (int)jr_cfg_int(c, "buffer.top_k");
    o->min_similarity = jr_cfg_float(c, "buffer.min_similarity");
    o->min_win_rate = jr_cfg_float(c, "buffer.min_win_rate");
    o->min_tries = (int)jr_cfg_int(c, "buffer.min_tries");
}

struct jr_wf_buffer {
    sqlite3 *db;
    jr_wf_buffer_opts o;
    char *path;
    pthread_mutex_t mu;
};

static jr_status db_fail(jr_wf_buffer *b, const char *what) {
    return jr_fail(JR_EIO, "experience buffer %s: %s: %s", b->path, what, sqlite3_errmsg(b->db));
}

jr_status jr_wf_buffer_open(jr_wf_buffer **out, const jr_wf_buffer_opts *o) {
    *out = NULL;
    if (!o->path) return jr_fail(JR_EINVAL, "experience buffer: buffer.path is unset");
    jr_wf_buffer *b = jr_calloc(1, sizeof *b);
    if (!b || !(b->path = jr_strdup(o->path))) { free(b); return JR_ENOMEM; }
    b->o = *o;
    b->o.path = b->path;
    pthread_mutex_init(&b->mu, NULL);
    jr_status st = JR_OK;
    if (sqlite3_open_v2(o->path, &b->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
        st = db_fail(b, "cannot open");
    if (!st) sqlite3_busy_timeout(b->db, 10000);
    if (!st && sqlite3_exec(b->db,
                            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                            "CREATE TABLE IF NOT EXISTS entries(id INTEGER PRIMARY KEY, domain TEXT NOT NULL, problem TEXT "
                            "NOT NULL, workflow TEXT NOT NULL, reward REAL NOT NULL, step INTEGER NOT NULL, "
                            "UNIQUE(domain, problem, workflow));"
                            "CREATE TABLE IF NOT EXISTS tries(domain TEXT NOT NULL, workflow TEXT NOT NULL, step INTEGER "
                            "NOT NULL, n INTEGER NOT NULL, wins INTEGER NOT NULL, PRIMARY KEY(domain, workflow, step));",
                            NULL, NULL, NULL) != SQLITE_OK)
        st = db_fail(b, "cannot create its tables");
    if (st) { jr_wf_buffer_close(b); return st; }
    *out = b;
    return JR_OK;
}

void jr_wf_buffer_close(jr_wf_buffer *b) {
    if (!b) return;
    if (b->db) sqlite3_close(b->db);
    pthread_mutex_destroy(&b->mu);
    free(b->path);
    free(b);
}

/* Ends a transaction begun with BEGIN IMMEDIATE, finalizing s: COMMIT when st is JR_OK, else (or when the commit
 * fails) ROLLBACK; returns the status. */
static jr_status txn_end(jr_wf_buffer *b, sqlite3_stmt *s, jr_status st) {
    sqlite3_finalize(s);
    if (!st && sqlite3_exec(b->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) st = db_fail(b, "commit");
    if (st) sqlite3_exec(b->db, "ROLLBACK", NULL, NULL, NULL);
    return st;
}

jr_status jr_wf_buffer_add(jr_wf_buffer *b, const char *domain, const char *problem, const char *workflow,
                           double reward, int64_t step, int *added) {
    if (added) *added = 0;
    if (!(reward >= b->o.threshold)) return JR_OK; /* NAN (unscored) is never kept */
    pthread_mutex_lock(&b->mu);
    jr_status st = JR_OK;
    sqlite3_stmt *s = NULL;
    sqlite3_int64 row = 0;
    if (sqlite3_exec(b->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) { st = db_fail(b, "begin"); goto out; }
    if (sqlite3_prepare_v2(b->db, "INSERT OR IGNORE INTO entries(domain, problem, workflow, reward, step) VALUES(?,?,?,?,?)",
                           -1, &s, NULL) != SQLITE_OK) { st = db_fail(b, "insert"); goto end; }
    sqlite3_bind_text(s, 1, domain, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, problem, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, workflow, -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 4, reward);
    sqlite3_bind_int64(s, 5, step);
    if (sqlite3_step(s) != SQLITE_DONE) { st = db_fail(b, "insert"); goto end; }
    if (sqlite3_changes(b->db) == 1) row = sqlite3_last_insert_rowid(b->db);
    sqlite3_finalize(s);
    s = NULL;
    /* cut the domain to cap: the lowest reward first, then the oldest */
    if (sqlite3_prepare_v2(b->db, "DELETE FROM entries WHERE id IN (SELECT id FROM entries WHERE domain = ?1 ORDER BY "
                                  "reward ASC, id ASC LIMIT max(0, (SELECT count(*) FROM entries WHERE domain = ?1) - ?2))",
                           -1, &s, NULL) != SQLITE_OK) { st = db_fail(b, "evict"); goto end; }
    sqlite3_bind_text(s, 1, domain, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, b->o.cap);
    if (sqlite3_step(s) != SQLITE_DONE) { st = db_fail(b, "evict"); goto end; }
    sqlite3_finalize(s);
    s = NULL;
    if (row && added) {
        if (sqlite3_prepare_v2(b->db, "SELECT count(*) FROM entries WHERE id = ?", -1, &s, NULL) != SQLITE_OK) { st = db_fail(b, "select"); goto end; }
        sqlite3_bind_int64(s, 1, row);
        *added = sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) == 1;
        sqlite3_finalize(s);
        s = NULL;
    }
end: /* txn_end commits when st is JR_OK, else rolls back */
    if ((st = txn_end(b, s, st)) && added) *added = 0;
out:
    pthread_mutex_unlock(&b->mu);
    return st;
}

jr_status jr_wf_buffer_truncate(jr_wf_buffer *b, int64_t step) {
    pthread_mutex_lock(&b->mu);
    sqlite3_stmt *s = NULL;
    jr_status st = JR_OK;
    for (int t = 0; t < 2 && !st; t++) {
        if (sqlite3_prepare_v2(b->db, t ? "DELETE FROM tries WHERE step >= ?" : "DELETE FROM entries WHERE step >= ?", -1, &s,
                               NULL) != SQLITE_OK) st = db_fail(b, "truncate");
        if (!st) {
            sqlite3_bind_int64(s, 1, step);
            if (sqlite3_step(s) != SQLITE_DONE) st = db_fail(b, "truncate");
        }
        sqlite3_finalize(s);
        s = NULL;
    }
    pthread_mutex_unlock(&b->mu);
    return st;
}

/* a workflow's key in `tries`: its text without trailing white space (the policy ends some with a newline) */
#define WF_KEY_TRIM "' ' || char(9, 10, 13)"

jr_status jr_wf_buffer_record(jr_wf_buffer *b, size_t n, const char *const *domains, const char *const *workflows,
                              const double *rewards, int64_t step) {
    pthread_mutex_lock(&b->mu);
    jr_status st = JR_OK;
    sqlite3_stmt *s = NULL;
    if (sqlite3_exec(b->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) { st = db_fail(b, "begin"); goto out; }
    if (sqlite3_prepare_v2(b->db, "INSERT INTO tries(domain, workflow, step, n, wins) VALUES(?1, rtrim(?2, " WF_KEY_TRIM "), ?3, 1, ?4) "
                                  "ON CONFLICT(domain, workflow, step) DO UPDATE SET n = n + 1, wins = wins + excluded.wins",
                           -1, &s, NULL) != SQLITE_OK) { st = db_fail(b, "record"); goto end; }
    for (size_t i = 0; i < n; i++) {
        if (isnan(rewards[i])) continue; /* unscored: no try */
        sqlite3_reset(s);
        sqlite3_bind_text(s, 1, domains[i], -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, workflows[i], -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, step);
        sqlite3_bind_int(s, 4, rewards[i] >= b->o.threshold);
        if (sqlite3_step(s) != SQLITE_DONE) { st = db_fail(b, "record"); goto end; }
    }
end: /* txn_end commits when st is JR_OK, else rolls back */
    st = txn_end(b, s, st);
out:
    pthread_mutex_unlock(&b->mu);
    return st;
}

jr_status jr_wf_buffer_count(jr_wf_buffer *b, const char *domain, int64_t *n) {
    pthread_mutex_lock(&b->mu);
    sqlite3_stmt *s = NULL;
    jr_status st = JR_OK;
    *n = 0;
    if (sqlite3_prepare_v2(b->db, domain ? "SELECT count(*) FROM entries WHERE domain = ?" : "SELECT count(*) FROM entries",
                           -1, &s, NULL) != SQLITE_OK) st = db_fail(b, "count");
    if (!st) {
        if (domain) sqlite3_bind_text(s, 1, domain, -1, SQLITE_STATIC);
        if (sqlite3_step(s) == SQLITE_ROW) *n = sqlite3_column_int64(s, 0);
        else st = db_fail(b, "count");
    }
    sqlite3_finalize(s);
    pthread_mutex_unlock(&b->mu);
    return st;
}

/* ---- the text representation: hashed word + bigram counts ---- */

#define WF_DIMS 4096

static uint32_t fnv(const char *p, size_t n, uint32_t h) {
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)p[i]; h *= 16777619u; }
    return h;
}

/* Term counts of text's lower-cased alphanumeric words and their bigrams, hashed into WF_DIMS bins. */
static void featurize(const char *text, float *v) {
    memset(v, 0, WF_DIMS * sizeof *v);
    char prev[64] = "", cur[64];
    const char *p = text;
    while (*p) {
        while (*p && !isalnum((unsigned char)*p)) p++;
        if (!*p) break;
        size_t n = 0;
        while (*p && isalnum((unsigned char)*p)) {
            if (n < sizeof cur - 1) cur[n++] = (char)tolower((unsigned char)*p);
            p++;
        }
        cur[n] = 0;
        v[fnv(cur, n, 2166136261u) % WF_DIMS] += 1;
        if (prev[0]) {
            uint32_t h = fnv(prev, strlen(prev), 2166136261u);
            h = fnv(" ", 1, h);
            v[fnv(cur, n, h) % WF_DIMS] += 1;
        }
        memcpy(prev, cur, n + 1);
    }
}

static double cosine(const float *a, const float *b, const float *idf) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < WF_DIMS; i++) {
        double w = idf ? idf[i] : 1, x = a[i] * w, y = b[i] * w;
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0;
}

double jr_wf_text_similarity(const char *a, const char *b) {
    float *va = jr_malloc(WF_DIMS * sizeof *va), *vb = jr_malloc(WF_DIMS * sizeof *vb);
    double s = va && vb ? (featurize(a, va), featurize(b, vb), cosine(va, vb, NULL)) : 0;
    free(va);
    free(vb);
    return s;
}

void jr_wf_examples_free(jr_wf_example *ex, int n) {
    for (int i = 0; ex && i < n; i++) { free(ex[i].problem); free(ex[i].workflow); }
    free(ex);
}

static int by_similarity(const void *x, const void *y) {
    const jr_wf_example *a = x, *b = y;
    if (a->similarity != b->similarity) return a->similarity > b->similarity ? -1 : 1;
    return a->reward > b->reward ? -1 : a->reward < b->reward;
}

jr_status jr_wf_buffer_retrieve(jr_wf_buffer *b, const char *domain, const char *problem, jr_wf_example **out, int *n_out) {
    *out = NULL;
    *n_out = 0;
    if (b->o.top_k <= 0) return JR_OK;
    pthread_mutex_lock(&b->mu);
    sqlite3_stmt *s = NULL;
    jr_status st = JR_OK;
    jr_wf_example *ex = NULL;
    int n = 0, cap = 0;
    /* entries whose workflow has no record of min_tries tries in the domain, or won min_win_rate of them, or has the
     * domain's best win rate (a domain where every workflow rarely wins keeps its best as examples) */
    if (sqlite3_prepare_v2(b->db, "WITH t AS (SELECT workflow, sum(n) AS n, sum(wins) AS w FROM tries WHERE domain = ?1 GROUP BY "
                                  "workflow) SELECT e.problem, e.workflow, e.reward FROM entries e LEFT JOIN t ON t.workflow = "
                                  "rtrim(e.workflow, " WF_KEY_TRIM ") WHERE e.domain = ?1 AND (t.n IS NULL OR t.n < ?2 OR "
                                  "t.w >= ?3 * t.n OR t.w * 1.0 / t.n >= (SELECT max(w * 1.0 / n) FROM t)) ORDER BY e.id",
                           -1, &s, NULL) != SQLITE_OK)
        st = db_fail(b, "retrieve");
    if (!st) {
        sqlite3_bind_text(s, 1, domain, -1, SQLITE_STATIC);
        sqlite3_bind_int(s, 2, b->o.min_tries);
        sqlite3_bind_double(s, 3, b->o.min_win_rate);
    }
    int rc;
    while (!st && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? 2 * cap : 32;
            jr_wf_example *nx = realloc(ex, (size_t)cap * sizeof *nx);
            if (!nx) { st = JR_ENOMEM; break; }
            ex = nx;
        }
        ex[n].problem = jr_strdup((const char *)sqlite3_column_text(s, 0));
        ex[n].workflow = jr_strdup((const char *)sqlite3_column_text(s, 1));
        ex[n].reward = sqlite3_column_double(s, 2);
        ex[n].similarity = 0;
        n++;
        if (!ex[n - 1].problem || !ex[n - 1].workflow) st = JR_ENOMEM;
    }
    if (!st && rc != SQLITE_DONE) st = db_fail(b, "retrieve");
    sqlite3_finalize(s);
    pthread_mutex_unlock(&b->mu);
    /* TF-IDF over the domain's entries: idf = ln((1 + N) / (1 + df)) + 1 */
    float *vecs = NULL, *q = NULL, *idf = NULL;
    if (!st && n) {
        vecs = jr_malloc((size_t)n * WF_DIMS * sizeof *vecs);
        q = jr_malloc(WF_DIMS * sizeof *q);
        idf = jr_calloc(WF_DIMS, sizeof *idf);
        if (!vecs || !q || !idf) st = JR_ENOMEM;
    }
    if (!st && n) {
        for (int i = 0; i < n; i++) {
            featurize(ex[i].problem, vecs + (size_t)i * WF_DIMS);
            for (int d = 0; d < WF_DIMS; d++) idf[d] += vecs[(size_t)i * WF_DIMS + d] > 0;
        }
        for (int d = 0; d < WF_DIMS; d++) idf[d] = (float)(log((1.0 + n) / (1.0 + idf[d])) + 1.0);
        featurize(problem, q);
        for (int i = 0; i < n; i++) ex[i].similarity = cosine(q, vecs + (size_t)i * WF_DIMS, idf);
        qsort(ex, (size_t)n, sizeof *ex, by_similarity);
    }
    free(vecs);
    free(q);
    free(idf);
    if (st) { jr_wf_examples_free(ex, n); return st == JR_ENOMEM ? jr_fail(JR_ENOMEM, "experience buffer: out of memory") : st; }
    int keep = 0;
    while (keep < n && keep < b->o.top_k && ex[keep].similarity >= b->o.min_similarity) keep++;
    for (int i = keep; i < n; i++) { free(ex[i].problem); free(ex[i].workflow); }
    if (!keep) { free(ex); ex = NULL; }
    *out = ex;
    *n_out = keep;
    return JR_OK;
}

/* ---- the Layer-1 prompt ---- */

jr_status jr_wf_layer1_render(const char *tmpl, const json_t *row, const jr_wf_example *ex, int n_ex, char **out) {
    *out = NULL;
    const char *problem = json_string_value(json_object_get(row, "problem"));
    const char *type = json_string_value(json_object_get(row, "type"));
    if (!problem) return jr_fail(JR_EINVAL, "layer-1 prompt: the row needs a string 'problem'");
    if (!type || (strcmp(type, "math") && strcmp(type, "code") && strcmp(type, "qa")))
        return jr_fail(JR_EINVAL, "layer-1 prompt: the row's 'type' must be math, code or qa");
    jr_strbuf eb = {0};
    for (int i = 0; i < n_ex; i++) {
        char *one = jr_strfmt("Example %d (reward %.2f)\nProblem:\n%s\nWorkflow:\n%s", i + 1, ex[i].reward, ex[i].problem,
                              ex[i].workflow);
        if (one) jr_strbuf_add(&eb, one);
        else eb.oom = 1;
        free(one);
        if (eb.n && eb.p[eb.n - 1] != '\n') jr_strbuf_addc(&eb, '\n');
        jr_strbuf_addc(&eb, '\n');
    }
    if (eb.oom) { jr_strbuf_free(&eb); return jr_fail(JR_ENOMEM, "layer-1 prompt: out of memory"); }
    char flag[16];
    snprintf(flag, sizeof flag, "is_%s", type);
    json_t *f = json_pack("{s:s,s:s,s:s,s:i,s:b}", "problem", problem, "type", type, "examples", eb.p ? eb.p : "",
                          "n_examples", n_ex, flag, 1);
    jr_strbuf_free(&eb);
    if (!f) return jr_fail(JR_ENOMEM, "layer-1 prompt: out of memory");
    jr_status st = jr_template_render(tmpl, f, out);
    json_decref(f);
    return st;
}

/* ---- the stratified mix ---- */

jr_status jr_wf_mix_counts(const double *w, int k, int n, uint64_t seed, int64_t step, int *counts) {
    if (k < 1 || k > 64 || n < 0) return jr_fail(JR_EINVAL, "data.mix: %d domains for %d draws", k, n);
    double sum = 0;
    for (int i = 0; i < k; i++) {
        if (!(w[i] >= 0) || isinf(w[i])) return jr_fail(JR_EINVAL, "data.mix: weight %d is %g (must be >= 0)", i, w[i]);
        sum += w[i];
    }
    if (!(sum > 0)) return jr_fail(JR_EINVAL, "data.mix: the weights sum to 0");
    double frac[64];
    uint32_t order[64];
    int given = 0;
    for (int i = 0; i < k; i++) {
        double q = n * w[i] / sum;
        counts[i] = (int)floor(q);
        frac[i] = q - counts[i];
        given += counts[i];
        order[i] = (uint32_t)i;
    }
    /* ties between equal fractional parts go by a seeded shuffle of this step */
    jr_rng r;
    jr_rng_seed2(&r, seed, (uint64_t)step);
    jr_rng_shuffle_idx(&r, order, (uint32_t)k);
    for (int a = 1; a < k; a++) { /* stable insertion sort by fractional part, descending */
        uint32_t x = order[a];
        int b = a - 1;
        while (b >= 0 && frac[order[b]] < frac[x] - 1e-12) { order[b + 1] = order[b]; b--; }
        order[b + 1] = x;
    }
    for (int i = 0; given < n; i++, given++) counts[order[i % k]]++;
    return JR_OK;
}
