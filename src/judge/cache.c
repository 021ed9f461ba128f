/* cache.c - the judge's response cache in SQLite (WAL), keyed by SHA-256 of model + request body */
#include "judge/cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>

#include "judgerl/fsutil.h"

/* ---- SHA-256 (FIPS 180-4) ---- */

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void block(uint32_t h[8], const unsigned char *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++) w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = hh + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void jr_sha256_hex(const void *data, size_t len, char out[65]) {
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    const unsigned char *p = data;
    size_t n = len;
    while (n >= 64) { block(h, p); p += 64; n -= 64; }
    unsigned char tail[128] = {0};
    memcpy(tail, p, n);
    tail[n] = 0x80;
    size_t tl = n + 1 + 8 <= 64 ? 64 : 128;
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++) tail[tl - 1 - i] = (unsigned char)(bits >> (8 * i));
    block(h, tail);
    if (tl == 128) block(h, tail + 64);
    for (int i = 0; i < 8; i++) snprintf(out + 8 * i, 9, "%08x", h[i]);
}

void jr_cache_key(const char *model, const char *body_canon, char key[65]) {
    size_t ml = strlen(model), bl = strlen(body_canon);
    char *buf = malloc(ml + bl + 2);
    if (!buf) { memset(key, '0', 64); key[64] = 0; return; }
    memcpy(buf, model, ml);
    buf[ml] = '\n';
    memcpy(buf + ml + 1, body_canon, bl + 1);
    jr_sha256_hex(buf, ml + 1 + bl, key);
    free(buf);
}

/* ---- SQLite ---- */

#define CACHE_APP_ID 0x4a524a43 /* "JRJC" */
#define CACHE_VERSION 1

struct jr_cache {
    sqlite3 *db;
    sqlite3_stmt *get, *put;
};

static jr_status dberr(jr_cache *c, const char *path, const char *what) {
    jr_status st = jr_fail(JR_EIO, "judge cache %s: %s: %s", path, what, c->db ? sqlite3_errmsg(c->db) : "cannot open");
    jr_cache_close(c);
    return st;
}

static int pragma_int(sqlite3 *db, const char *sql) {
    sqlite3_stmt *s;
    int v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) return -1;
    if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return v;
}

jr_status jr_cache_open(jr_cache **out, const char *path) {
    *out = NULL;
    jr_cache *c = jr_calloc(1, sizeof *c);
    if (!c) return JR_ENOMEM;
    char *dir = jr_strdup(path);
    if (!dir) { free(c); return JR_ENOMEM; }
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        jr_status st = jr_mkdirs(dir);
        if (st) { free(dir); free(c); return jr_fail_ctx(st, "judge cache %s", path); }
    }
    free(dir);
    if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
        return dberr(c, path, "cannot open");
    sqlite3_busy_timeout(c->db, 10000);
    int app = pragma_int(c->db, "PRAGMA application_id");
    int ver = pragma_int(c->db, "PRAGMA user_version");
    int tables = pragma_int(c->db, "SELECT count(*) FROM sqlite_master");
    if (app < 0 || tables < 0) return dberr(c, path, "not an SQLite database (judge.cache names another kind of file?)");
    if (tables > 0 && (app != CACHE_APP_ID || ver != CACHE_VERSION)) {
        jr_cache_close(c);
        return jr_fail(JR_EFORMAT, "judge cache %s: not a judgerl judge cache of version %d (application_id %d, version %d): point judge.cache at another file",
                       path, CACHE_VERSION, app, ver);
    }
    char *err = NULL;
    const char *init =
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
        "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, model TEXT NOT NULL, content TEXT NOT NULL,"
        " finish TEXT, logprobs TEXT, created INTEGER NOT NULL DEFAULT (strftime('%s','now')));";
    if (sqlite3_exec(c->db, init, NULL, NULL, &err) != SQLITE_OK) {
        sqlite3_free(err);
        return dberr(c, path, "cannot create the table");
    }
    if (tables == 0) {
        char sql[128];
        snprintf(sql, sizeof sql, "PRAGMA application_id=%d; PRAGMA user_version=%d;", CACHE_APP_ID, CACHE_VERSION);
        if (sqlite3_exec(c->db, sql, NULL, NULL, &err) != SQLITE_OK) { sqlite3_free(err); return dberr(c, path, "cannot stamp"); }
    }
    if (sqlite3_prepare_v2(c->db, "SELECT content, finish, logprobs FROM answers WHERE key = ?1", -1, &c->get, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(c->db, "INSERT OR REPLACE INTO answers (key, model, content, finish, logprobs) VALUES (?1, ?2, ?3, ?4, ?5)", -1,
                           &c->put, NULL) != SQLITE_OK)
        return dberr(c, path, "cannot prepare statements");
    *out = c;
    return JR_OK;
}

void jr_cache_close(jr_cache *c) {
    if (!c) return;
    sqlite3_finalize(c->get);
    sqlite3_finalize(c->put);
    sqlite3_close(c->db);
    free(c);
}

static char *col_dup(sqlite3_stmt *s, int i) {
    const unsigned char *t = sqlite3_column_text(s, i);
    return t ? strdup((const char *)t) : NULL;
}

int jr_cache_get(jr_cache *c, const char *key, char **content, char **finish, char **logprobs) {
    *content = *finish = *logprobs = NULL;
    sqlite3_reset(c->get);
    sqlite3_bind_text(c->get, 1, key, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(c->get), found = 0;
    if (rc == SQLITE_ROW) {
        *content = col_dup(c->get, 0);
        *finish = col_dup(c->get, 1);
        *logprobs = col_dup(c->get, 2);
        found = *content ? 1 : -1;
    } else if (rc != SQLITE_DONE) found = -1;
    sqlite3_reset(c->get);
    if (found < 0) { free(*content); free(*finish); free(*logprobs); *content = *finish = *logprobs = NULL; }
    return found;
}

int jr_cache_put(jr_cache *c, const char *key, const char *model, const char *content, const char *finish, const char *logprobs) {
    sqlite3_reset(c->put);
    sqlite3_bind_text(c->put, 1, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(c->put, 2, model, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(c->put, 3, content, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(c->put, 4, finish, -1, SQLITE_TRANSIENT);
    if (logprobs) sqlite3_bind_text(c->put, 5, logprobs, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(c->put, 5);
    int rc = sqlite3_step(c->put);
    sqlite3_reset(c->put);
    return rc == SQLITE_DONE ? 0 : -1;
}
