/* modeltools.h - whole model directories and files as `judgerl inspect / forward / merge / convert /
 * export` use them: a printed summary, one forward/backward pass with a dump, a LoRA adapter merged
 * into a new directory, a rewrite in another dtype or shard size, a GGUF export */
#ifndef JUDGERL_MODELTOOLS_H
#define JUDGERL_MODELTOOLS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "judgerl/gguf.h"
#include "judgerl/safetensors.h"
#include "judgerl/status.h"

/* Prints to f a Hugging Face model directory's summary (validated as when loading): the config, the
 * generation config, the parameter count and every tensor's name, dtype and shape (and shard). */
jr_status jr_model_dir_describe(const char *dir, FILE *f);
/* Prints to f one safetensors file's size, header, metadata and every tensor. */
jr_status jr_st_file_describe(const char *path, FILE *f);

/* One forward pass of the model directory `model` over ids[0..n); with targets (one per id, -1 = not
 * scored) also the loss and the backward, the loss printed to out as "loss <value>". dump (or NULL):
 * a safetensors file with `logits` (1, n, vocab) and, with targets, every parameter's gradient under
 * its HF name. Ids outside the vocabulary, or targets all -1, are JR_EINVAL. */
typedef struct jr_forward_opts {
    const char *model, *dump;
    const int32_t *ids, *targets; /* targets NULL: forward only */
    int n;
} jr_forward_opts;
jr_status jr_model_forward_file(const jr_forward_opts *o, FILE *out);

/* Folds the PEFT LoRA adapter into the base model directory and writes the merged model (float32,
 * with the base's tokenizer files; *n_tok gets their count) to out, built beside it and swapped in
 * atomically. Unless force, the adapter's base_model_name_or_path must name `model` (the same
 * directory, or a hub name that model's last name or config.json _name_or_path matches). */
typedef struct jr_merge_opts {
    const char *model, *adapter, *out;
    int force;
} jr_merge_opts;
jr_status jr_lora_merge_dir(const jr_merge_opts *o, int *n_tok);

/* Rewrites the model directory `model` to out (atomically) with its config kept, the weights as dtype
 * (F32, F16 or BF16), split into shards past max_shard bytes (0: one file), its tokenizer files
 * copied. *n_tensors and *n_tok get the counts written. */
typedef struct jr_convert_opts {
    const char *model, *out;
    jr_dtype dtype;
    size_t max_shard;
} jr_convert_opts;
jr_status jr_model_dir_convert(const jr_convert_opts *o, int *n_tensors, int *n_tok);

/* "5GB", "500MB", "100kB", "12345" as bytes (decimal units, as transformers' max_shard_size): 1, or
 * 0 when s is not a size. */
int jr_shard_size_parse(const char *s, size_t *out);

/* Loads o->model_dir, merges the PEFT adapter (NULL: none) and writes it as GGUF (jr_gguf_export). */
jr_status jr_gguf_export_dir(const jr_gguf_opts *o, const char *adapter, jr_gguf_report *rep);

#endif
