/* checkpoint.h - training checkpoints: HF model directory + AdamW moments + trainer state, written atomically */
#ifndef JUDGERL_CHECKPOINT_H
#define JUDGERL_CHECKPOINT_H

#include <stdint.h>

#include "judgerl/dataset.h"
#include "judgerl/model.h"
#include "judgerl/optim.h"
#include "judgerl/rng.h"
#include "judgerl/status.h"

/* Everything besides weights and moments that a resumed run needs to continue bit-exactly. */
typedef struct jr_train_state {
    int64_t step;          /* optimizer updates done */
    jr_data_pos data;      /* the next training row */
    jr_rng rng;            /* the trainer's random stream */
    int64_t tokens;        /* scored tokens seen so far */
    char kernel_level[16]; /* read back: the kernel level (judgerl/cpu.h) the checkpoint was written at, ""
                            * for a checkpoint from before levels; written: always the level in use */
} jr_train_state;

/* Writes RUN_DIR/checkpoints/step-NNNNNNNN/ holding config.json + model.safetensors (an HF model
 * directory any tool can load), optimizer.safetensors (exp_avg.NAME / exp_avg_sq.NAME, F32) and
 * trainer_state.json (format "judgerl-trainer-state", version 1). The directory is built under a
 * temporary name, fsynced, renamed into place, then RUN_DIR/checkpoints/latest is replaced
 * atomically; a crash at any point leaves the previous latest checkpoint intact. Afterwards only
 * the newest `keep` checkpoints stay (keep <= 0: all). */
jr_status jr_ckpt_save(const char *run_dir, const jr_model *m, const jr_adamw *o, const jr_train_state *s, int keep);

/* The same with the checkpoint's model files written by write(ud, dir) instead of m's HF directory
 * (LoRA: the adapter only); m then only gives the names and layout of the trained tensors whose
 * moments are saved. write NULL = jr_ckpt_save. */
jr_status jr_ckpt_save_with(const char *run_dir, const jr_model *m, const jr_adamw *o, const jr_train_state *s,
                            int keep, jr_status (*write)(void *ud, const char *dir), void *ud);

/* Writes a run's final weights as RUN_DIR/NAME: through write(ud, dir) when write is set (LoRA: the
 * PEFT adapter), else m as an HF model directory with tok's tokenizer files (tok may be NULL).
 * The directory is built as RUN_DIR/.tmp-NAME and swapped in atomically (jr_adir), so a crash
 * leaves either the previous directory or the complete new one. */
struct jr_textcodec;
jr_status jr_ckpt_save_final(const char *run_dir, const char *name, const jr_model *m,
                             jr_status (*write)(void *ud, const char *dir), void *ud, const struct jr_textcodec *tok);

/* The directory of the latest complete checkpoint of run_dir into *path (caller frees), or NULL
 * when there is none. */
jr_status jr_ckpt_latest(const char *run_dir, char **path);

/* Loads a checkpoint directory: the model into *m (fresh; on error zeroed), the moments into *o
 * (initialised here with the given hyper-parameters) and the state into *s. */
jr_status jr_ckpt_load(const char *ckpt_dir, jr_model *m, jr_adamw *o, jr_train_state *s, double beta1, double beta2,
                       double eps, double weight_decay);

/* Reads only the moments (laid out as m's tensors) and the state of a checkpoint directory, for
 * trainers that load the model part themselves (LoRA adapters). On error *o is zeroed. */
jr_status jr_ckpt_load_state(const char *ckpt_dir, const jr_model *m, jr_adamw *o, jr_train_state *s, double beta1,
                             double beta2, double eps, double weight_decay);

#endif
