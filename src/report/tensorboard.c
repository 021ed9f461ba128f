/* tensorboard.c - TensorBoard event files: TFRecord framing with masked CRC-32C, Event protobufs encoded by hand */
#include "judgerl/tensorboard.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "judgerl/crc32c.h"
#include "judgerl/fsutil.h"
#include "judgerl/metrics.h"
#include "judgerl/strbuf.h"

struct jr_tb_writer {
    int fd;
    char *path;
};

/* One protobuf message is built in a jr_strbuf (bytes). */
static void put(jr_strbuf *b, const void *d, size_t n) { jr_strbuf_addn(b, d, n); }

static void put_varint(jr_strbuf *b, uint64_t v) {
    unsigned char t[10];
    size_t n = 0;
    do {
        t[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v) t[n] |= 0x80;
        n++;
    } while (v);
    put(b, t, n);
}

static void put_le(jr_strbuf *b, uint64_t v, int bytes) {
    unsigned char t[8];
    for (int i = 0; i < bytes; i++) t[i] = (unsigned char)(v >> (8 * i));
    put(b, t, (size_t)bytes);
}

/* field number + wire type (0 varint, 1 fixed64, 2 length-delimited, 5 fixed32) */
static void put_key(jr_strbuf *b, unsigned field, unsigned wire) { put_varint(b, (uint64_t)(field << 3 | wire)); }

static void put_bytes_field(jr_strbuf *b, unsigned field, const void *d, size_t n) {
    put_key(b, field, 2);
    put_varint(b, n);
    put(b, d, n);
}

static void put_double_field(jr_strbuf *b, unsigned field, double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    put_key(b, field, 1);
    put_le(b, u, 8);
}

static void put_float_field(jr_strbuf *b, unsigned field, float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    put_key(b, field, 5);
    put_le(b, u, 4);
}

size_t jr_tfrecord_frame(unsigned char *out, const void *data, size_t len) {
    for (int i = 0; i < 8; i++) out[i] = (unsigned char)((uint64_t)len >> (8 * i));
    uint32_t c = jr_crc32c_mask(jr_crc32c(0, out, 8));
    for (int i = 0; i < 4; i++) out[8 + i] = (unsigned char)(c >> (8 * i));
    memcpy(out + 12, data, len);
    c = jr_crc32c_mask(jr_crc32c(0, data, len));
    for (int i = 0; i < 4; i++) out[12 + len + i] = (unsigned char)(c >> (8 * i));
    return len + 16;
}

static jr_status write_record(jr_tb_writer *w, const jr_strbuf *ev) {
    if (ev->oom) return jr_fail(JR_ENOMEM, "%s: out of memory encoding an event", w->path);
    unsigned char *rec = jr_malloc(ev->n + 16);
    if (!rec) return JR_ENOMEM;
    size_t n = jr_tfrecord_frame(rec, ev->p, ev->n), done = 0;
    while (done < n) {
        ssize_t put_n = write(w->fd, rec + done, n - done);
        if (put_n < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            free(rec);
            return jr_fail(JR_EIO, "%s: write failed: %s", w->path, strerror(e));
        }
        done += (size_t)put_n;
    }
    free(rec);
    return JR_OK;
}

jr_status jr_tb_open(jr_tb_writer **w, const char *dir) {
    *w = NULL;
    jr_status st = jr_mkdirs(dir);
    if (st) return st;
    char host[256] = "localhost";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0]) strcpy(host, "localhost");
    host[sizeof host - 1] = 0;
    for (char *c = host; *c; c++)
        if (*c == '/') *c = '_';
    long long now = (long long)time(NULL);
    size_t cap = strlen(dir) + strlen(host) + 80;
    char *path = jr_malloc(cap);
    if (!path) return JR_ENOMEM;
    int fd = -1;
    for (int k = 0; k < 1000 && fd < 0; k++) {
        if (k == 0) snprintf(path, cap, "%s/events.out.tfevents.%lld.%s", dir, now, host);
        else snprintf(path, cap, "%s/events.out.tfevents.%lld.%s.%d", dir, now, host, k);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) {
            int e = errno;
            st = jr_fail(JR_EIO, "%s: cannot create: %s", path, strerror(e));
            free(path);
            return st;
        }
    }
    if (fd < 0) { st = jr_fail(JR_EIO, "%s: cannot find a free event file name", dir); free(path); return st; }
    jr_tb_writer *x = jr_calloc(1, sizeof *x);
    if (!x) { close(fd); unlink(path); free(path); return JR_ENOMEM; }
    x->fd = fd;
    x->path = path;
    jr_strbuf ev = {0};
    put_double_field(&ev, 1, jr_wall_time());
    put_key(&ev, 2, 0);
    put_varint(&ev, 0);
    put_bytes_field(&ev, 3, "brain.Event:2", 13);
    st = write_record(x, &ev);
    free(ev.p);
    if (st) {
        close(fd);
        unlink(path);
        free(path);
        free(x);
        return st;
    }
    *w = x;
    return JR_OK;
}

jr_status jr_tb_scalars(jr_tb_writer *w, int64_t step, double wall_time, size_t n, const char *const *tags,
                        const double *values) {
    jr_strbuf summary = {0}, value = {0}, ev = {0};
    for (size_t i = 0; i < n; i++) {
        jr_strbuf_reset(&value);
        put_bytes_field(&value, 1, tags[i], strlen(tags[i]));
        double v = values[i];
        float fv = v > FLT_MAX ? INFINITY : v < -FLT_MAX ? -INFINITY : (float)v; /* NaN stays NaN */
        put_float_field(&value, 2, fv);
        if (value.oom) break;
        put_bytes_field(&summary, 1, value.p, value.n);
    }
    put_double_field(&ev, 1, wall_time);
    put_key(&ev, 2, 0);
    put_varint(&ev, (uint64_t)step);
    if (!summary.oom && !value.oom) put_bytes_field(&ev, 5, summary.p ? summary.p : "", summary.n);
    ev.oom |= summary.oom | value.oom;
    jr_status st = write_record(w, &ev);
    free(summary.p);
    free(value.p);
    free(ev.p);
    return st;
}

jr_status jr_tb_session_start(jr_tb_writer *w, int64_t step) {
    jr_strbuf ev = {0}, log = {0};
    put_key(&log, 1, 0); /* SessionLog.status = START (1) */
    put_varint(&log, 1);
    put_double_field(&ev, 1, jr_wall_time());
    put_key(&ev, 2, 0);
    put_varint(&ev, (uint64_t)step);
    if (!log.oom) put_bytes_field(&ev, 7, log.p, log.n); /* Event.session_log = 7 */
    ev.oom |= log.oom;
    jr_status st = write_record(w, &ev);
    free(log.p);
    free(ev.p);
    return st;
}

jr_status jr_tb_scalar(jr_tb_writer *w, int64_t step, const char *tag, double value) {
    return jr_tb_scalars(w, step, jr_wall_time(), 1, &tag, &value);
}

const char *jr_tb_path(const jr_tb_writer *w) { return w->path; }

jr_status jr_tb_close(jr_tb_writer *w) {
    if (!w) return JR_OK;
    jr_status st = JR_OK;
    if (fsync(w->fd) != 0) st = jr_fail(JR_EIO, "%s: fsync failed: %s", w->path, strerror(errno));
    if (close(w->fd) != 0 && !st) st = jr_fail(JR_EIO, "%s: close failed: %s", w->path, strerror(errno));
    free(w->path);
    free(w);
    return st;
}
