/* jsonl.c - JSONL streaming reader (line numbers, CRLF, BOM, UTF-8 checks) and append-only durable writer */
#include "judgerl/dataset.h"
#include "judgerl/fsutil.h"
#include "judgerl/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- reader ---- */

struct jr_jsonl_reader {
    FILE *f;
    char *path;
    char *buf;
    size_t cap;
    int64_t line_no;   /* lines read so far */
    int64_t offset;    /* byte offset of the next line */
    int64_t bad;
    int64_t last_len;  /* length of the last row's text */
    const char *last_text;
    jr_bad_line_policy policy;
    jr_bad_line_fn on_bad;
    void *ud;
    size_t max_line;
    int allow_nul;     /* JSON_ALLOW_NUL for the rows */
};

void jr_jsonl_set_max_line(jr_jsonl_reader *r, size_t max_bytes) { r->max_line = max_bytes ? max_bytes : JR_JSONL_MAX_LINE_DEFAULT; }
void jr_jsonl_set_allow_nul(jr_jsonl_reader *r, int on) { r->allow_nul = on != 0; }

/* Reads one line (with its '\n' when present) into r->buf, keeping at most max_line + 2 bytes
 * (line ending room): the rest of a longer line is consumed and *too_long set. Returns the bytes
 * of the whole line read from the file, or -1 at end of file / on error (errno set). */
static ssize_t read_line(jr_jsonl_reader *r, size_t *kept, int *too_long) {
    size_t n = 0, total = 0, limit = r->max_line + 2;
    *too_long = 0;
    int c;
    while ((c = getc_unlocked(r->f)) != EOF) {
        total++;
        if (n < limit) {
            if (n + 2 > r->cap) {
                size_t cap = r->cap ? r->cap * 2 : 4096;
                if (cap > limit + 2) cap = limit + 2;
                char *b = realloc(r->buf, cap);
                if (!b) { errno = ENOMEM; return -1; }
                r->buf = b;
                r->cap = cap;
            }
            r->buf[n++] = (char)c;
        } else {
            *too_long = 1;
        }
        if (c == '\n') break;
    }
    if (total == 0) return -1;
    if (n) r->buf[n] = 0;
    *kept = n;
    return (ssize_t)total;
}

jr_status jr_jsonl_open(jr_jsonl_reader **r, const char *path, jr_bad_line_policy policy, jr_bad_line_fn on_bad,
                        void *ud) {
    *r = NULL;
    jr_jsonl_reader *x = jr_calloc(1, sizeof *x);
    if (!x) return JR_ENOMEM;
    x->path = jr_strdup(path);
    if (!x->path) { free(x); return JR_ENOMEM; }
    x->f = fopen(path, "rb");
    if (!x->f) {
        int e = errno;
        free(x->path);
        free(x);
        return jr_fail(e == ENOENT ? JR_ENOTFOUND : JR_EIO, "%s: cannot open: %s", path, strerror(e));
    }
    struct stat sb;
    if (fstat(fileno(x->f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fclose(x->f);
        free(x->path);
        free(x);
        return jr_fail(JR_EINVAL, "%s: is a directory, expected a JSONL file", path);
    }
    x->policy = policy;
    x->max_line = JR_JSONL_MAX_LINE_DEFAULT;
    x->on_bad = on_bad;
    x->ud = ud;
    *r = x;
    return JR_OK;
}

static const char *json_kind(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: case JSON_REAL: return "a number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    default: return "an object";
    }
}

static jr_status parse_line(const char *line, size_t len, const char *where, size_t flags, json_t **row) {
    *row = NULL;
    size_t bad = jr_utf8_invalid_at(line, len, 1);
    if (bad < len) {
        if (line[bad] == 0) return jr_fail(JR_EFORMAT, "%s: NUL byte at byte %zu of the line", where, bad + 1);
        return jr_fail(JR_EFORMAT, "%s: invalid UTF-8 at byte %zu of the line (byte 0x%02x)", where, bad + 1,
                       (unsigned char)line[bad]);
    }
    json_error_t err;
    json_t *v = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | flags, &err);
    if (!v) return jr_fail(JR_EFORMAT, "%s: invalid JSON at column %d: %s", where, err.column, err.text);
    if (!json_is_object(v)) {
        const char *k = json_kind(v);
        json_decref(v);
        return jr_fail(JR_EFORMAT, "%s: expected a JSON object per line, got %s", where, k);
    }
    *row = v;
    return JR_OK;
}

jr_status jr_jsonl_parse_line(const char *line, size_t len, const char *where, json_t **row) {
    return parse_line(line, len, where, 0, row);
}

static int is_blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\f' && s[i] != '\v') return 0;
    return 1;
}

jr_status jr_jsonl_next(jr_jsonl_reader *r, json_t **row, int64_t *line_no, int64_t *offset) {
    *row = NULL;
    for (;;) {
        errno = 0;
        size_t n;
        int too_long;
        ssize_t got = read_line(r, &n, &too_long);
        if (got < 0) {
            if (ferror(r->f)) return jr_fail(JR_EIO, "%s:%lld: read failed: %s", r->path, (long long)r->line_no + 1,
                                             strerror(errno ? errno : EIO));
            if (errno == ENOMEM) return jr_fail(JR_ENOMEM, "%s:%lld: out of memory reading the line", r->path,
                                                (long long)r->line_no + 1);
            return JR_OK; /* end of file */
        }
        int64_t start = r->offset;
        r->offset += got;
        r->line_no++;
        char *s = r->buf;
        if (n && s[n - 1] == '\n') n--;
        if (n && s[n - 1] == '\r') n--;
        if (too_long || n > r->max_line) {
            jr_fail(JR_EFORMAT, "%s:%lld: the line is longer than %zu bytes (the reader's maximum line length)", r->path,
                    (long long)r->line_no, r->max_line);
            if (r->policy == JR_BAD_LINE_FAIL) return JR_EFORMAT;
            r->bad++;
            if (r->on_bad) r->on_bad(r->ud, jr_errmsg());
            jr_err_clear();
            continue;
        }
        if (r->line_no == 1 && n >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3)) { s += 3; n -= 3; start += 3; }
        if (is_blank(s, n)) continue;
        char where[64 + 4096];
        snprintf(where, sizeof where, "%s:%lld", r->path, (long long)r->line_no);
        json_t *v;
        jr_status st = parse_line(s, n, where, r->allow_nul ? JSON_ALLOW_NUL : 0, &v);
        if (st == JR_EFORMAT) {
            if (r->policy == JR_BAD_LINE_FAIL) return st;
            r->bad++;
            if (r->on_bad) r->on_bad(r->ud, jr_errmsg());
            jr_err_clear();
            continue;
        }
        if (st) return st;
        *row = v;
        r->last_len = (int64_t)n;
        r->last_text = s;
        if (line_no) *line_no = r->line_no;
        if (offset) *offset = start;
        return JR_OK;
    }
}

int64_t jr_jsonl_lines(const jr_jsonl_reader *r) { return r->line_no; }
int64_t jr_jsonl_last_len(const jr_jsonl_reader *r) { return r->last_len; }
const char *jr_jsonl_last_text(const jr_jsonl_reader *r) { return r->last_text; }
int64_t jr_jsonl_bad_lines(const jr_jsonl_reader *r) { return r->bad; }

void jr_jsonl_close(jr_jsonl_reader *r) {
    if (!r) return;
    if (r->f) fclose(r->f);
    free(r->buf);
    free(r->path);
    free(r);
}

/* ---- durable writer ---- */

struct jr_jsonl_writer {
    int fd;
    int fsync_each;
    char *path;
    int64_t rows;
    int64_t torn;
};

/* Counts complete lines and finds the end of the last one (the size to keep). */
static jr_status scan_lines(int fd, const char *path, int64_t size, int64_t *rows, int64_t *keep) {
    char buf[1 << 16];
    int64_t pos = 0, last_nl_end = 0, n = 0;
    while (pos < size) {
        ssize_t got = pread(fd, buf, sizeof buf, pos);
        if (got < 0) {
            if (errno == EINTR) continue;
            return jr_fail(JR_EIO, "%s: read failed: %s", path, strerror(errno));
        }
        if (got == 0) break;
        for (ssize_t i = 0; i < got; i++)
            if (buf[i] == '\n') { n++; last_nl_end = pos + i + 1; }
        pos += got;
    }
    *rows = n;
    *keep = last_nl_end;
    return JR_OK;
}

jr_status jr_jsonl_writer_open(jr_jsonl_writer **w, const char *path, int fsync_each) {
    *w = NULL;
    int fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return jr_fail(errno == ENOENT ? JR_ENOTFOUND : JR_EIO, "%s: cannot open for appending: %s", path,
                               strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return jr_fail(JR_EIO, "%s: not a regular file", path);
    }
    int64_t rows = 0, keep = 0;
    jr_status st = scan_lines(fd, path, (int64_t)sb.st_size, &rows, &keep);
    if (st) { close(fd); return st; }
    int64_t torn = (int64_t)sb.st_size - keep;
    if (torn > 0) {
        if (ftruncate(fd, (off_t)keep) != 0 || fsync(fd) != 0) {
            int e = errno;
            close(fd);
            return jr_fail(JR_EIO, "%s: cannot cut the torn last line (%lld bytes): %s", path, (long long)torn,
                           strerror(e));
        }
    }
    if (sb.st_size == 0) { /* maybe just created: make its directory entry durable too */
        char *dir = jr_strdup(path);
        if (!dir) { close(fd); return JR_ENOMEM; }
        char *slash = strrchr(dir, '/');
        if (slash == dir) slash[1] = 0;
        else if (slash) *slash = 0;
        else strcpy(dir, ".");
        st = jr_fsync_dir(dir);
        free(dir);
        if (st) { close(fd); return st; }
    }
    jr_jsonl_writer *x = jr_calloc(1, sizeof *x);
    char *p = jr_strdup(path);
    if (!x || !p) { free(x); free(p); close(fd); return JR_ENOMEM; }
    x->fd = fd;
    x->fsync_each = fsync_each;
    x->path = p;
    x->rows = rows;
    x->torn = torn;
    *w = x;
    return JR_OK;
}

jr_status jr_jsonl_writer_append_line(jr_jsonl_writer *w, const char *text, size_t len) {
    if (memchr(text, '\n', len)) return jr_fail(JR_EINVAL, "%s: a JSONL row may not contain a newline", w->path);
    char *buf = jr_malloc(len + 1);
    if (!buf) return JR_ENOMEM;
    memcpy(buf, text, len);
    buf[len] = '\n';
    size_t done = 0;
    while (done < len + 1) {
        ssize_t put = write(w->fd, buf + done, len + 1 - done);
        if (put < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            free(buf);
            return jr_fail(JR_EIO, "%s: write failed: %s", w->path, strerror(e));
        }
        done += (size_t)put;
    }
    free(buf);
    if (w->fsync_each && fdatasync(w->fd) != 0) return jr_fail(JR_EIO, "%s: fsync failed: %s", w->path, strerror(errno));
    w->rows++;
    return JR_OK;
}

jr_status jr_jsonl_writer_append(jr_jsonl_writer *w, const json_t *row) {
    char *txt = json_dumps(row, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
    if (!txt) return jr_fail(JR_EINVAL, "%s: row cannot be encoded as JSON", w->path);
    jr_status st = jr_jsonl_writer_append_line(w, txt, strlen(txt));
    free(txt);
    return st;
}

jr_status jr_jsonl_writer_sync(jr_jsonl_writer *w) {
    if (fdatasync(w->fd) != 0) return jr_fail(JR_EIO, "%s: fsync failed: %s", w->path, strerror(errno));
    return JR_OK;
}

int64_t jr_jsonl_writer_rows(const jr_jsonl_writer *w) { return w->rows; }
int64_t jr_jsonl_writer_torn_bytes(const jr_jsonl_writer *w) { return w->torn; }
const char *jr_jsonl_writer_path(const jr_jsonl_writer *w) { return w->path; }

jr_status jr_jsonl_writer_close(jr_jsonl_writer *w) {
    if (!w) return JR_OK;
    jr_status st = JR_OK;
    if (fsync(w->fd) != 0) st = jr_fail(JR_EIO, "%s: fsync failed: %s", w->path, strerror(errno));
    if (close(w->fd) != 0 && !st) st = jr_fail(JR_EIO, "%s: close failed: %s", w->path, strerror(errno));
    free(w->path);
    free(w);
    return st;
}
