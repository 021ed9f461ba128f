/* hfdir.h - Hugging Face model directories: config.json, generation_config.json and the weights
 * (model.safetensors or shards), opened and written */
#ifndef JUDGERL_HFDIR_H
#define JUDGERL_HFDIR_H

#include <stddef.h>

#include "judgerl/hfconfig.h"
#include "judgerl/safetensors.h"
#include "judgerl/status.h"

/* ---- model directories ---------------------------------------------------------------------- */

/* An open model directory: its config, generation config, and every tensor of the list mapped. */
typedef struct jr_hfdir {
    char *dir;
    jr_model_config cfg;
    int has_gen;                 /* generation_config.json was present */
    jr_generation_config gen;
    int n_tensors;
    jr_model_tensor *tensors;    /* jr_model_tensors(&cfg) order */
    const jr_st_tensor **st;     /* st[i]: the file's tensor for tensors[i] (right shape checked) */
    int *file_of;                /* file_of[i]: index into files[] */
    int n_files;
    jr_safetensors *files;       /* model.safetensors, or the shards of the index in name order */
} jr_hfdir;

/* Opens a model directory: config.json (validated), generation_config.json when present, and the
 * weights: model.safetensors, else model.safetensors.index.json (weight_map) and its shards.
 * Every expected tensor must be present with the expected shape in F32/F16/BF16; a tensor the
 * config does not imply is an error naming the file and tensor, except a tied lm_head.weight
 * (some exporters write it; it is ignored) and rotary_emb.inv_freq buffers of old checkpoints.
 * On error *d is zeroed and nothing stays open. */
jr_status jr_hfdir_open(jr_hfdir *d, const char *dir);

/* Reads tensor i of d->tensors as fp32 into out (d->tensors[i].numel floats). */
jr_status jr_hfdir_read_f32(const jr_hfdir *d, int i, float *out);

/* Drops the mapped pages of tensor i from memory once read (they are read again from the file if
 * touched again), so loading a model does not also hold the whole file in RSS. */
void jr_hfdir_release(const jr_hfdir *d, int i);

/* The file holding tensor i (for messages and inspection). */
const char *jr_hfdir_file_of(const jr_hfdir *d, int i);

void jr_hfdir_close(jr_hfdir *d);

/* Writes a model directory (created when missing): config.json (cfg->json kept, torch_dtype set to
 * `dtype`), generation_config.json when gen is not NULL, and the weights: tensors[i] holds the fp32
 * values of the i-th entry of jr_model_tensors(cfg), stored as `dtype` (F32, F16 or BF16). When the
 * weights exceed max_shard_bytes (0 = never shard) they are split, in list order, into
 * model-00001-of-0000N.safetensors files plus model.safetensors.index.json (metadata.total_size,
 * weight_map), as transformers' save_pretrained names them; else one model.safetensors. A tied
 * lm_head is not written. Each file is written atomically; weight files of an earlier layout that
 * the new one does not use (model.safetensors / index / shards) are removed after the new files
 * are in place. A directory as a whole is not replaced atomically: write to a new directory and
 * rename it for that. */
jr_status jr_hfdir_write(const char *dir, const jr_model_config *cfg, const jr_generation_config *gen,
                         const float *const *tensors, jr_dtype dtype, size_t max_shard_bytes);

#endif
