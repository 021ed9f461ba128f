/* cache.c - the judge's response cache in SQLite (WAL), keyed by SHA-256 of model + request body */
#include "judge/cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>

#include "judgerl/fsutil.h"

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
