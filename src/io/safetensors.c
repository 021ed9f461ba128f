/* safetensors.c - safetensors files: a validating mmap reader, fp16/bf16 conversion and an atomic writer */
#include "judgerl/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "judgerl/fsutil.h"

/* The reference implementation refuses headers above 100 MB; so do we. */
#define MAX_HEADER_LEN 100000000ull

static const struct { const char *name; size_t size; } dtypes[JR_DT_COUNT] = {
    [JR_DT_F32] = {"F32", 4}, [JR_DT_F16] = {"F16", 2}, [JR_DT_BF16] = {"BF16", 2},
    [JR_DT_F64] = {"F64", 8}, [JR_DT_I64] = {"I64", 8}, [JR_DT_I32] = {"I32", 4},
    [JR_DT_I16] = {"I16", 2}, [JR_DT_I8] = {"I8", 1},   [JR_DT_U8] = {"U8", 1},
    [JR_DT_BOOL] = {"BOOL", 1},
};

const char *jr_dtype_name(jr_dtype dt) { return (unsigned)dt < JR_DT_COUNT ? dtypes[dt].name : "?"; }
size_t jr_dtype_size(jr_dtype dt) { return (unsigned)dt < JR_DT_COUNT ? dtypes[dt].size : 0; }

static int dtype_from_format(const char *s, jr_dtype *out) {
    for (int i = 0; i < JR_DT_COUNT; i++)
        if (!strcmp(s, dtypes[i].name)) { *out = (jr_dtype)i; return 1; }
    return 0;
}

jr_status jr_dtype_parse(const char *name, jr_dtype *out) {
    static const struct { const char *alias; jr_dtype dt; } aliases[] = {
        {"float32", JR_DT_F32}, {"fp32", JR_DT_F32}, {"f32", JR_DT_F32}, {"float", JR_DT_F32},
        {"float16", JR_DT_F16}, {"fp16", JR_DT_F16}, {"f16", JR_DT_F16}, {"half", JR_DT_F16},
        {"bfloat16", JR_DT_BF16}, {"bf16", JR_DT_BF16},
    };
    if (name && dtype_from_format(name, out)) return JR_OK;
    for (size_t i = 0; name && i < sizeof aliases / sizeof *aliases; i++)
        if (!strcmp(name, aliases[i].alias)) { *out = aliases[i].dt; return JR_OK; }
    return jr_fail(JR_EINVAL, "unknown dtype '%s' (use float32, float16 or bfloat16)", name ? name : "(null)");
}

/* ---- conversions ---------------------------------------------------------------------------- */

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float jr_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp == 0) {                              /* zero or subnormal: mant * 2^-24, exact */
        float v = (float)mant * 0x1p-24f;
        return u2f(f2u(v) | sign);
    }
    if (exp == 31) return u2f(sign | 0x7f800000u | (mant << 13)); /* inf, nan (payload kept) */
    return u2f(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t jr_f32_to_f16(float f) {
    uint32_t x = f2u(f), sign = (x >> 16) & 0x8000, a = x & 0x7fffffff;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00 | ((a >> 13) & 0x3ff)); /* quiet NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* >= 65520 rounds past 65504: inf */
    if (a >= 0x38800000u) {                      /* normal half: exponent >= -14 */
        uint32_t mant = a & 0x7fffff, h = ((((a >> 23) - 127 + 15)) << 10) | (mant >> 13);
        uint32_t rem = mant & 0x1fff;
        if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++; /* a carry into the exponent is right */
        return (uint16_t)(sign | h);
    }
    if (a <= 0x33000000u) return (uint16_t)sign; /* <= 2^-25 (a tie at 2^-25 goes to even 0) */
    uint32_t e = a >> 23, mant = (a & 0x7fffff) | 0x800000; /* value = mant * 2^(e-150) */
    uint32_t shift = 126 - e;                    /* units of 2^-24: mant >> (126 - e), 14..24 */
    uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

float jr_bf16_to_f32(uint16_t b) { return u2f((uint32_t)b << 16); }

uint16_t jr_f32_to_bf16(float f) {
    uint32_t x = f2u(f);
    if ((x & 0x7fffffff) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
    x += 0x7fff + ((x >> 16) & 1);               /* round to nearest even; overflow gives inf */
    return (uint16_t)(x >> 16);
}

jr_status jr_convert_from_f32(void *dst, jr_dtype dt, const float *src, size_t n) {
    unsigned char *d = dst;
    switch (dt) {
    case JR_DT_F32: memcpy(d, src, n * 4); return JR_OK;
    case JR_DT_F16:
        for (size_t i = 0; i < n; i++) { uint16_t h = jr_f32_to_f16(src[i]); memcpy(d + 2 * i, &h, 2); }
        return JR_OK;
    case JR_DT_BF16:
        for (size_t i = 0; i < n; i++) { uint16_t h = jr_f32_to_bf16(src[i]); memcpy(d + 2 * i, &h, 2); }
        return JR_OK;
    default:
        return jr_fail(JR_EUNSUPPORTED, "cannot store fp32 values as %s (use F32, F16 or BF16)", jr_dtype_name(dt));
    }
}

jr_status jr_convert_to_f32(float *dst, jr_dtype dt, const void *src, size_t n) {
    const unsigned char *s = src;
    switch (dt) {
    case JR_DT_F32: memcpy(dst, s, n * 4); return JR_OK;
    case JR_DT_F16:
        for (size_t i = 0; i < n; i++) { uint16_t h; memcpy(&h, s + 2 * i, 2); dst[i] = jr_f16_to_f32(h); }
        return JR_OK;
    case JR_DT_BF16: { /* in blocks through an aligned buffer, so the shift loop vectorizes */
        uint16_t blk[1024];
        uint32_t w[1024];
        for (size_t at = 0; at < n; at += 1024) {
            size_t k = n - at < 1024 ? n - at : 1024;
            memcpy(blk, s + 2 * at, 2 * k);
            for (size_t i = 0; i < k; i++) w[i] = (uint32_t)blk[i] << 16;
            memcpy(dst + at, w, 4 * k);
        }
        return JR_OK;
    }
    case JR_DT_F64:
        for (size_t i = 0; i < n; i++) { double v; memcpy(&v, s + 8 * i, 8); dst[i] = (float)v; }
        return JR_OK;
    default:
        return jr_fail(JR_EUNSUPPORTED, "cannot read %s values as fp32", jr_dtype_name(dt));
    }
}

/* ---- reader --------------------------------------------------------------------------------- */

void jr_st_close(jr_safetensors *st) {
    if (!st) return;
    if (st->map && st->path && st->size) munmap(st->map, st->size);
    /* a buffer given to jr_st_open_buffer is not ours: path marks a mapping we own */
    for (int i = 0; i < st->n; i++) free((char *)st->tensors[i].name);
    for (int i = 0; i < st->n_meta; i++) { free(st->meta_keys[i]); free(st->meta_vals[i]); }
    free(st->tensors); free(st->meta_keys); free(st->meta_vals); free(st->by_name); free(st->path);
    memset(st, 0, sizeof *st);
}

static int cmp_offset(const void *a, const void *b) {
    const jr_st_tensor *x = a, *y = b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->nbytes != y->nbytes) return x->nbytes < y->nbytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_name(const void *a, const void *b, void *ctx) {
    const jr_st_tensor *t = ctx;
    return strcmp(t[*(const int *)a].name, t[*(const int *)b].name);
}

/* Reads one non-negative JSON integer; 0 when v is not one. */
static int get_u64(const json_t *v, uint64_t *out) {
    if (!json_is_integer(v) || json_integer_value(v) < 0) return 0;
    *out = (uint64_t)json_integer_value(v);
    return 1;
}

/* Parses and checks one tensor entry (everything but its place among the others). */
static jr_status parse_entry(jr_st_tensor *t, uint64_t *begin, uint64_t *end, const char *name, json_t *e,
                             const char *file) {
    if (!json_is_object(e)) return jr_fail(JR_EFORMAT, "%s: tensor '%s': entry is not an object", file, name);
    const char *key;
    json_t *v;
    json_object_foreach(e, key, v) {
        if (strcmp(key, "dtype") && strcmp(key, "shape") && strcmp(key, "data_offsets"))
            return jr_fail(JR_EFORMAT, "%s: tensor '%s': unknown field '%s' (expected dtype, shape, data_offsets)",
                           file, name, key);
    }
    json_t *dt = json_object_get(e, "dtype"), *sh = json_object_get(e, "shape"), *off = json_object_get(e, "data_offsets");
    if (!dt) return jr_fail(JR_EFORMAT, "%s: tensor '%s': missing dtype", file, name);
    if (!sh) return jr_fail(JR_EFORMAT, "%s: tensor '%s': missing shape", file, name);
    if (!off) return jr_fail(JR_EFORMAT, "%s: tensor '%s': missing data_offsets", file, name);
    if (!json_is_string(dt)) return jr_fail(JR_EFORMAT, "%s: tensor '%s': dtype is not a string", file, name);
    if (!dtype_from_format(json_string_value(dt), &t->dtype))
        return jr_fail(JR_EUNSUPPORTED, "%s: tensor '%s': unsupported dtype '%s' (judgerl reads F32, F16, BF16, F64, "
                       "I64, I32, I16, I8, U8, BOOL)", file, name, json_string_value(dt));
    if (!json_is_array(sh)) return jr_fail(JR_EFORMAT, "%s: tensor '%s': shape is not a list", file, name);
    size_t nd = json_array_size(sh);
    if (nd > JR_ST_MAX_DIMS)
        return jr_fail(JR_EUNSUPPORTED, "%s: tensor '%s': %zu dimensions (at most %d)", file, name, nd, JR_ST_MAX_DIMS);
    t->ndim = (int)nd;
    uint64_t numel = 1;
    int overflow = 0;
    for (size_t i = 0; i < nd; i++) {
        uint64_t d;
        if (!get_u64(json_array_get(sh, i), &d))
            return jr_fail(JR_EFORMAT, "%s: tensor '%s': shape[%zu] is not a non-negative integer", file, name, i);
        t->shape[i] = (int64_t)d;
        if (d && numel > UINT64_MAX / d) overflow = 1;
        else numel *= d;
    }
    size_t esz = jr_dtype_size(t->dtype);
    if (overflow || numel > (uint64_t)INT64_MAX / esz)
        return jr_fail(JR_EFORMAT, "%s: tensor '%s': shape is too large", file, name);
    if (!json_is_array(off) || json_array_size(off) != 2 || !get_u64(json_array_get(off, 0), begin) ||
        !get_u64(json_array_get(off, 1), end))
        return jr_fail(JR_EFORMAT, "%s: tensor '%s': data_offsets is not a list of two non-negative integers", file, name);
    if (*end < *begin)
        return jr_fail(JR_EFORMAT, "%s: tensor '%s': data_offsets [%llu,%llu] end before begin", file, name,
                       (unsigned long long)*begin, (unsigned long long)*end);
    t->numel = (int64_t)numel;
    t->nbytes = (size_t)(numel * esz);
    if (*end - *begin != numel * esz) {
        char shp[160] = "";
        size_t p = 0;
        for (int i = 0; i < t->ndim && p < sizeof shp - 24; i++)
            p += (size_t)snprintf(shp + p, sizeof shp - p, "%s%lld", i ? "," : "", (long long)t->shape[i]);
        return jr_fail(JR_EFORMAT, "%s: tensor '%s': shape [%s] of %s needs %llu bytes but data_offsets [%llu,%llu] "
                       "hold %llu", file, name, shp, jr_dtype_name(t->dtype), (unsigned long long)(numel * esz),
                       (unsigned long long)*begin, (unsigned long long)*end, (unsigned long long)(*end - *begin));
    }
    return JR_OK;
}

static jr_status parse_metadata(jr_safetensors *st, json_t *m, const char *file) {
    if (!json_is_object(m)) return jr_fail(JR_EFORMAT, "%s: __metadata__ is not an object", file);
    size_t n = json_object_size(m);
    st->meta_keys = jr_calloc(n + 1, sizeof(char *));
    st->meta_vals = jr_calloc(n + 1, sizeof(char *));
    if (!st->meta_keys || !st->meta_vals) return JR_ENOMEM;
    const char *key;
    json_t *v;
    json_object_foreach(m, key, v) {
        if (!json_is_string(v)) return jr_fail(JR_EFORMAT, "%s: __metadata__ value of '%s' is not a string", file, key);
        st->meta_keys[st->n_meta] = jr_strdup(key);
        st->meta_vals[st->n_meta] = jr_strdup(json_string_value(v));
        if (!st->meta_keys[st->n_meta] || !st->meta_vals[st->n_meta]) {
            free(st->meta_keys[st->n_meta]); free(st->meta_vals[st->n_meta]);
            return JR_ENOMEM;
        }
        st->n_meta++;
    }
    return JR_OK;
}

/* Validates st->map (st->size bytes) and fills the tensor table. `file` names it in messages. */
static jr_status parse_file(jr_safetensors *st, const char *file) {
    const unsigned char *buf = st->map;
    if (st->size < 8)
        return jr_fail(JR_EFORMAT, "%s: file is %zu bytes, too short for a safetensors header (truncated?)", file, st->size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | buf[i];
    if (hlen > st->size - 8)
        return jr_fail(JR_EFORMAT, "%s: header length %llu past end of file (size %zu): truncated or not a safetensors "
                       "file", file, (unsigned long long)hlen, st->size);
    if (hlen > MAX_HEADER_LEN)
        return jr_fail(JR_EFORMAT, "%s: header length %llu is larger than the 100 MB limit", file, (unsigned long long)hlen);
    if (hlen < 2 || buf[8] != '{')
        return jr_fail(JR_EFORMAT, "%s: header does not start with '{': corrupt or not a safetensors file", file);
    st->header_len = (size_t)hlen;
    json_error_t jerr;
    json_t *root = json_loadb((const char *)buf + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        const char *q = strstr(jerr.text, "duplicate object key near '\"");
        if (q) { /* jansson says: duplicate object key near '"NAME"' */
            q += strlen("duplicate object key near '\"");
            int k = (int)strlen(q);
            if (k >= 2 && q[k - 1] == '\'' && q[k - 2] == '"') k -= 2;
            return jr_fail(JR_EFORMAT, "%s: header: duplicate tensor name '%.*s'", file, k, q);
        }
        return jr_fail(JR_EFORMAT, "%s: header is not valid JSON: %s at byte %d", file, jerr.text, jerr.position + 8);
    }
    jr_status rc = JR_OK;
    if (!json_is_object(root)) { rc = jr_fail(JR_EFORMAT, "%s: header is not a JSON object", file); goto done; }
    size_t n = json_object_size(root);
    st->tensors = jr_calloc(n + 1, sizeof *st->tensors);
    uint64_t *ends = jr_calloc(n + 1, sizeof *ends);
    if (!st->tensors || !ends) { free(ends); rc = JR_ENOMEM; goto done; }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (!strcmp(key, "__metadata__")) {
            if ((rc = parse_metadata(st, v, file))) break;
            continue;
        }
        if (!*key) { rc = jr_fail(JR_EFORMAT, "%s: header has a tensor with an empty name", file); break; }
        jr_st_tensor *t = &st->tensors[st->n];
        uint64_t b = 0, e = 0;
        if ((rc = parse_entry(t, &b, &e, key, v, file))) break;
        if (!(t->name = jr_strdup(key))) { rc = JR_ENOMEM; break; }
        t->offset = (size_t)b; /* relative for now; made absolute below */
        ends[st->n] = e;
        st->n++;
    }
    free(ends);
    if (rc) goto done;
    /* Offsets: in data order every tensor starts where the previous one ended, the first at 0,
     * and the last ends at the end of the file (the reference's rules). */
    qsort(st->tensors, (size_t)st->n, sizeof *st->tensors, cmp_offset);
    size_t data_start = 8 + st->header_len, avail = st->size - data_start, pos = 0;
    for (int i = 0; i < st->n; i++) {
        jr_st_tensor *t = &st->tensors[i];
        size_t b = t->offset, e = t->offset + t->nbytes; /* nbytes == e - b was checked */
        if (b < pos)
            rc = jr_fail(JR_EFORMAT, "%s: tensor '%s': data_offsets [%zu,%zu] overlap tensor '%s'", file, t->name, b, e,
                         st->tensors[i - 1].name);
        else if (b > pos)
            rc = jr_fail(JR_EFORMAT, "%s: tensor '%s': data_offsets [%zu,%zu] leave a gap of %zu bytes before it", file,
                         t->name, b, e, b - pos);
        else if (e > avail)
            rc = jr_fail(JR_EFORMAT, "%s: tensor '%s': data_offsets [%zu,%zu] past end of file (size %zu, data region %zu "
                         "bytes): truncated?", file, t->name, b, e, st->size, avail);
        if (rc) goto done;
        pos = e;
        t->offset = data_start + b;
        t->data = buf + t->offset;
    }
    if (pos != avail) {
        rc = jr_fail(JR_EFORMAT, "%s: %zu bytes after the last tensor's data (data region %zu bytes, tensors cover %zu)",
                     file, avail - pos, avail, pos);
        goto done;
    }
    st->by_name = jr_calloc((size_t)st->n + 1, sizeof *st->by_name);
    if (!st->by_name) { rc = JR_ENOMEM; goto done; }
    for (int i = 0; i < st->n; i++) st->by_name[i] = i;
    qsort_r(st->by_name, (size_t)st->n, sizeof *st->by_name, cmp_name, st->tensors);
done:
    json_decref(root);
    return rc;
}

jr_status jr_st_open(jr_safetensors *st, const char *path) {
    memset(st, 0, sizeof *st);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return jr_fail(errno == ENOENT ? JR_ENOTFOUND : JR_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        jr_status rc = jr_fail(JR_EIO, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return rc;
    }
    if (!S_ISREG(sb.st_mode)) { close(fd); return jr_fail(JR_EINVAL, "%s: not a regular file", path); }
    size_t size = (size_t)sb.st_size;
    if (size < 8) {
        close(fd);
        return jr_fail(JR_EFORMAT, "%s: file is %zu bytes, too short for a safetensors header (truncated?)", path, size);
    }
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = errno;
    close(fd);
    if (map == MAP_FAILED) return jr_fail(JR_EIO, "%s: cannot map: %s", path, strerror(err));
    st->map = map;
    st->size = size;
    if (!(st->path = jr_strdup(path))) { munmap(map, size); memset(st, 0, sizeof *st); return JR_ENOMEM; }
    jr_status rc = parse_file(st, path);
    if (rc) jr_st_close(st);
    return rc;
}

jr_status jr_st_open_buffer(jr_safetensors *st, const void *buf, size_t size, const char *name) {
    memset(st, 0, sizeof *st);
    st->map = (void *)buf;
    st->size = size;
    jr_status rc = parse_file(st, name ? name : "<buffer>");
    if (rc) jr_st_close(st);
    return rc;
}

const jr_st_tensor *jr_st_find(const jr_safetensors *st, const char *name) {
    int lo = 0, hi = st->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(name, st->tensors[st->by_name[mid]].name);
        if (c == 0) return &st->tensors[st->by_name[mid]];
        if (c < 0) hi = mid - 1;
        else lo = mid + 1;
    }
    return NULL;
}

const char *jr_st_meta(const jr_safetensors *st, const char *key) {
    for (int i = 0; i < st->n_meta; i++)
        if (!strcmp(st->meta_keys[i], key)) return st->meta_vals[i];
    return NULL;
}

jr_status jr_st_read_f32(const jr_safetensors *st, const jr_st_tensor *t, float *out) {
    if (t->dtype != JR_DT_F32 && t->dtype != JR_DT_F16 && t->dtype != JR_DT_BF16 && t->dtype != JR_DT_F64)
        return jr_fail(JR_EUNSUPPORTED, "%s: tensor '%s': dtype %s cannot be read as floating point (expected F32, "
                       "F16 or BF16)", st->path ? st->path : "<buffer>", t->name, jr_dtype_name(t->dtype));
    return jr_convert_to_f32(out, t->dtype, t->data, (size_t)t->numel);
}

/* ---- writer --------------------------------------------------------------------------------- */

static jr_status entry_size(const jr_st_entry *e, jr_dtype dtype, const char *path, jr_dtype *dt, size_t *nbytes) {
    if (!e->name || !*e->name) return jr_fail(JR_EINVAL, "%s: a tensor has no name", path);
    if (!strcmp(e->name, "__metadata__")) return jr_fail(JR_EINVAL, "%s: '__metadata__' is not a tensor name", path);
    if (e->ndim < 0 || e->ndim > JR_ST_MAX_DIMS)
        return jr_fail(JR_EINVAL, "%s: tensor '%s': %d dimensions (0..%d)", path, e->name, e->ndim, JR_ST_MAX_DIMS);
    if (!e->data == !e->raw) return jr_fail(JR_EINVAL, "%s: tensor '%s': set exactly one of data and raw", path, e->name);
    *dt = e->raw ? e->raw_dtype : dtype;
    if ((unsigned)*dt >= JR_DT_COUNT) return jr_fail(JR_EINVAL, "%s: tensor '%s': bad dtype", path, e->name);
    if (e->data && *dt != JR_DT_F32 && *dt != JR_DT_F16 && *dt != JR_DT_BF16)
        return jr_fail(JR_EINVAL, "%s: fp32 tensors are written as F32, F16 or BF16, not %s", path, jr_dtype_name(*dt));
    uint64_t numel = 1;
    for (int d = 0; d < e->ndim; d++) {
        if (e->shape[d] < 0) return jr_fail(JR_EINVAL, "%s: tensor '%s': negative dimension", path, e->name);
        if (e->shape[d] && numel > (uint64_t)INT64_MAX / 8 / (uint64_t)e->shape[d])
            return jr_fail(JR_EINVAL, "%s: tensor '%s': shape too large", path, e->name);
        numel *= (uint64_t)e->shape[d];
    }
    *nbytes = (size_t)numel * jr_dtype_size(*dt);
    return JR_OK;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Builds the padded header text; *hlen gets its length (a multiple of 8). */
static jr_status build_header(const char *path, const jr_st_entry *ts, int n, jr_dtype dtype, char **out, size_t *hlen) {
    *out = NULL;
    json_t *root = json_object(), *meta = json_object();
    const char **names = jr_calloc((size_t)n + 1, sizeof *names);
    jr_status rc = JR_OK;
    if (!root || !meta || !names) { json_decref(root); json_decref(meta); free(names); return jr_fail(JR_ENOMEM, "out of memory"); }
    json_object_set_new(meta, "format", json_string("pt"));
    json_object_set_new(root, "__metadata__", meta);
    uint64_t pos = 0;
    for (int i = 0; i < n && !rc; i++) {
        jr_dtype dt;
        size_t nb;
        if ((rc = entry_size(&ts[i], dtype, path, &dt, &nb))) break;
        names[i] = ts[i].name;
        json_t *shape = json_array(), *e = json_object(), *off = json_array();
        for (int d = 0; d < ts[i].ndim; d++) json_array_append_new(shape, json_integer(ts[i].shape[d]));
        json_array_append_new(off, json_integer((json_int_t)pos));
        json_array_append_new(off, json_integer((json_int_t)(pos + nb)));
        json_object_set_new(e, "dtype", json_string(jr_dtype_name(dt)));
        json_object_set_new(e, "shape", shape);
        json_object_set_new(e, "data_offsets", off);
        if (!json_is_object(e) || json_object_size(e) != 3 || !json_is_array(shape) || !json_is_array(off) ||
            json_object_set_new(root, ts[i].name, e) != 0)
            rc = jr_fail(JR_EINVAL, "%s: tensor '%s': name is not valid UTF-8 (or out of memory)", path, ts[i].name);
        pos += nb;
    }
    if (!rc) {
        qsort(names, (size_t)n, sizeof *names, cmp_str);
        for (int i = 1; i < n; i++)
            if (!strcmp(names[i], names[i - 1])) { rc = jr_fail(JR_EINVAL, "%s: duplicate tensor name '%s'", path, names[i]); break; }
    }
    free(names);
    if (rc) { json_decref(root); return rc; }
    /* compact separators, keys in insertion order: what the reference (serde_json) writes */
    char *txt = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!txt) return jr_fail(JR_ENOMEM, "out of memory");
    size_t len = strlen(txt), padded = (len + 7) / 8 * 8;
    char *h = jr_realloc(txt, padded + 1);
    if (!h) { free(txt); return JR_ENOMEM; }
    memset(h + len, ' ', padded - len);
    h[padded] = 0;
    *out = h;
    *hlen = padded;
    return JR_OK;
}

jr_status jr_st_write(const char *path, const jr_st_entry *ts, int n, jr_dtype dtype) {
    if (n < 0) return jr_fail(JR_EINVAL, "%s: negative tensor count", path);
    if (dtype != JR_DT_F32 && dtype != JR_DT_F16 && dtype != JR_DT_BF16)
        return jr_fail(JR_EINVAL, "%s: weights are written as F32, F16 or BF16, not %s", path, jr_dtype_name(dtype));
    char *header = NULL;
    size_t hlen = 0;
    jr_status rc = build_header(path, ts, n, dtype, &header, &hlen);
    if (rc) return rc;
    jr_afile af;
    if ((rc = jr_afile_open(&af, path))) { free(header); return rc; }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    int ok = fwrite(len8, 1, 8, af.f) == 8 && fwrite(header, 1, hlen, af.f) == hlen;
    free(header);
    enum { CHUNK = 16384 };
    unsigned char *buf = ok ? jr_malloc(CHUNK * 4) : NULL;
    if (ok && !buf) { jr_afile_abort(&af); return JR_ENOMEM; }
    for (int i = 0; ok && i < n; i++) {
        jr_dtype dt;
        size_t nb;
        entry_size(&ts[i], dtype, path, &dt, &nb); /* checked by build_header */
        if (ts[i].raw) { ok = !nb || fwrite(ts[i].raw, 1, nb, af.f) == nb; continue; }
        size_t numel = nb / jr_dtype_size(dt), es = jr_dtype_size(dt);
        for (size_t at = 0; ok && at < numel; at += CHUNK) {
            size_t k = numel - at < CHUNK ? numel - at : CHUNK;
            jr_convert_from_f32(buf, dt, ts[i].data + at, k);
            ok = fwrite(buf, es, k, af.f) == k;
        }
    }
    free(buf);
    if (!ok) {
        int e = jr_afile_errno(&af);
        rc = jr_fail(JR_EIO, "%s: write failed: %s", path, strerror(e ? e : errno));
        jr_afile_abort(&af);
        return rc;
    }
    return jr_afile_commit(&af);
}
