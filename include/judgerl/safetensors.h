/* safetensors.h - safetensors files: a validating mmap reader, fp16/bf16 conversion and an atomic writer */
#ifndef JUDGERL_SAFETENSORS_H
#define JUDGERL_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "judgerl/status.h"

/* Element types of the safetensors format. F32, F16 and BF16 convert to fp32; the others are
 * readable as raw bytes only (jr_st_tensor.data). */
typedef enum {
    JR_DT_F32 = 0,
    JR_DT_F16,
    JR_DT_BF16,
    JR_DT_F64,
    JR_DT_I64,
    JR_DT_I32,
    JR_DT_I16,
    JR_DT_I8,
    JR_DT_U8,
    JR_DT_BOOL,
    JR_DT_COUNT
} jr_dtype;

/* The format's name of a dtype ("F32", "BF16", ...). */
const char *jr_dtype_name(jr_dtype dt);
/* Bytes per element. */
size_t jr_dtype_size(jr_dtype dt);
/* Parses a format name ("F32") or a config spelling ("float32", "fp32", "f32", "float16", "fp16",
 * "half", "bfloat16", "bf16") into *out. Returns JR_EINVAL (with a message naming `name`) when
 * it is neither. */
jr_status jr_dtype_parse(const char *name, jr_dtype *out);

/* Exact conversions between fp32 and the 16-bit formats. Widening is exact for every input
 * (F16 subnormals, infinities and NaNs included). Narrowing rounds to nearest, ties to even;
 * values too large become +-inf, NaN stays NaN (quiet, sign kept). */
float jr_f16_to_f32(uint16_t h);
uint16_t jr_f32_to_f16(float f);
float jr_bf16_to_f32(uint16_t b);
uint16_t jr_f32_to_bf16(float f);

/* Converts n fp32 values to `dt` (F32, F16 or BF16) into dst (n * jr_dtype_size(dt) bytes,
 * little-endian, any alignment). Returns JR_EUNSUPPORTED for other dtypes. */
jr_status jr_convert_from_f32(void *dst, jr_dtype dt, const float *src, size_t n);
/* Converts n values of `dt` (F32, F16, BF16 or F64) at src (any alignment) to fp32. */
jr_status jr_convert_to_f32(float *dst, jr_dtype dt, const void *src, size_t n);

#define JR_ST_MAX_DIMS 8

/* One tensor of an open file. Everything points into the reader's mapping and is read-only. */
typedef struct jr_st_tensor {
    const char *name;
    jr_dtype dtype;
    int ndim;                        /* 0 for a scalar */
    int64_t shape[JR_ST_MAX_DIMS];
    int64_t numel;                   /* product of shape (1 for a scalar) */
    size_t nbytes;                   /* numel * jr_dtype_size(dtype) */
    size_t offset;                   /* byte offset from the start of the file */
    const void *data;                /* mapped bytes (little-endian; may be unaligned) */
} jr_st_tensor;

/* An open, validated safetensors file. Read-only for the caller; released by jr_st_close. */
typedef struct jr_safetensors {
    char *path;                      /* as given to jr_st_open */
    void *map;                       /* the whole file, mapped read-only */
    size_t size;                     /* file size in bytes */
    size_t header_len;               /* JSON header length (the 8-byte prefix) */
    int n;                           /* number of tensors */
    jr_st_tensor *tensors;           /* in file (data offset) order */
    int n_meta;                      /* __metadata__ entries */
    char **meta_keys, **meta_vals;
    int *by_name;                    /* tensor indices sorted by name (for lookup) */
} jr_safetensors;

/* Maps `path` and validates the whole header: the 8-byte length within the file, the JSON, every
 * entry's dtype/shape/data_offsets (no unknown fields), offsets in range, contiguous and
 * non-overlapping and covering the data region exactly, shape x dtype size == byte size, no
 * duplicate names, `__metadata__` a string-to-string map. Errors name the file and the tensor
 * ("x.safetensors: tensor 'a': data_offsets [0,64] past end of file (size 40)"). On error *st is
 * zeroed and nothing stays mapped or allocated. */
jr_status jr_st_open(jr_safetensors *st, const char *path);

/* Same checks on a buffer held by the caller (not copied: it must outlive *st; jr_st_close does
 * not free it). `name` is used in messages. Used by the fuzzer and tests. */
jr_status jr_st_open_buffer(jr_safetensors *st, const void *buf, size_t size, const char *name);

/* Unmaps and frees. Safe on a zeroed struct. */
void jr_st_close(jr_safetensors *st);

/* The tensor called `name`, or NULL. */
const jr_st_tensor *jr_st_find(const jr_safetensors *st, const char *name);

/* The __metadata__ value for `key`, or NULL. */
const char *jr_st_meta(const jr_safetensors *st, const char *key);

/* Reads tensor t as fp32 into out (t->numel floats). F32 is copied, F16/BF16/F64 converted.
 * Other dtypes give JR_EUNSUPPORTED naming the file and tensor; out is then untouched. */
jr_status jr_st_read_f32(const jr_safetensors *st, const jr_st_tensor *t, float *out);

/* One tensor to write. Either `data` (fp32, converted to the file dtype) or `raw` (bytes already
 * in `raw_dtype`, written as they are, e.g. I32 token ids) is set. */
typedef struct jr_st_entry {
    const char *name;
    int ndim;
    int64_t shape[JR_ST_MAX_DIMS];
    const float *data;
    const void *raw;
    jr_dtype raw_dtype;
} jr_st_entry;

/* Writes n tensors to `path` atomically (jr_afile: temp file, fsync, rename). fp32 tensors are
 * stored as `dtype` (F32, F16 or BF16, rounding to nearest even). The header holds
 * `__metadata__: {"format": "pt"}` then the tensors in the given order, packed in that order,
 * and is padded with spaces to a multiple of 8 bytes as the reference writer does. Names must be
 * unique and non-empty. On error the file at `path` is unchanged. */
jr_status jr_st_write(const char *path, const jr_st_entry *tensors, int n, jr_dtype dtype);

#endif
