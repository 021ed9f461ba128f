/* classifier.h - seed 1's text classifier: whitespace vocabulary, embedding, one non-causal multi-head attention, mean pooling, ReLU MLP */
#ifndef JUDGERL_CLASSIFIER_H
#define JUDGERL_CLASSIFIER_H

#include <stddef.h>
#include <stdint.h>

#include "judgerl/rng.h"
#include "judgerl/status.h"

/* Whitespace vocabulary as seed 1 builds it: text lowercased (ASCII) and split on whitespace;
 * <pad> = 0, <unk> = 1, the words of the training texts from 2 on (sorted, so deterministic). */
typedef struct jr_vocab {
    char **words; /* n words, words[0] = "<pad>", words[1] = "<unk>"; owned */
    int n;
    int *slots;   /* open-addressing hash of word ids (cap slots, -1 empty) */
    int cap;
} jr_vocab;

/* Builds the vocabulary of n texts. On error *v is zeroed. */
jr_status jr_vocab_build(jr_vocab *v, const char *const *texts, int n);
/* Loads a vocabulary saved by jr_vocab_save (a JSON array of words, index = id). */
jr_status jr_vocab_load(jr_vocab *v, const char *path);
/* Writes the vocabulary atomically as a JSON array. */
jr_status jr_vocab_save(const jr_vocab *v, const char *path);
void jr_vocab_free(jr_vocab *v);
/* The id of a word (1 = <unk> when absent). */
int jr_vocab_id(const jr_vocab *v, const char *word);
/* Encodes text as seed 1 does: lowercased whitespace words, truncated to max_len, padded with 0.
 * ids has max_len entries. Returns the number of real words (<= max_len). */
int jr_vocab_encode(const jr_vocab *v, const char *text, int32_t *ids, int max_len);

/* Shape of the classifier (seed 1: E 16, heads 2, hidden 32, labels 3, max length 10). */
typedef struct jr_clf_dims {
    int vocab, embed, heads, hidden, labels, max_len;
} jr_clf_dims;

/* Parameters in one allocation, named as PyTorch's state_dict of seed 1's SimpleTransformer. */
enum {
    JR_CLF_EMB, JR_CLF_INW, JR_CLF_INB, JR_CLF_OUTW, JR_CLF_OUTB, JR_CLF_FC1W, JR_CLF_FC1B, JR_CLF_FC2W, JR_CLF_FC2B,
    JR_CLF_NT
};
extern const char *const jr_clf_names[JR_CLF_NT];

typedef struct jr_clf {
    jr_clf_dims d;
    size_t n_params;
    float *params, *grads;         /* n_params each; owned */
    float *p[JR_CLF_NT], *g[JR_CLF_NT]; /* views */
    size_t off[JR_CLF_NT], len[JR_CLF_NT];
    /* activations of the last forward (batch cap rows); owned */
    int cap, B;
    float *x, *qkv, *q, *k, *v, *att, *ao, *ax, *pooled, *h1, *logits;
    int32_t *ids;
} jr_clf;

/* Allocates a classifier with PyTorch's default initialisation (embedding N(0,1); in_proj Xavier
 * uniform, biases 0; out_proj, fc1, fc2 weights U(+-1/sqrt(fan_in)); fc biases U(+-1/sqrt(fan_in)))
 * drawn from rng. embed % heads must be 0. On error *c is zeroed. */
jr_status jr_clf_init(jr_clf *c, jr_clf_dims d, jr_rng *rng);
void jr_clf_free(jr_clf *c);

/* Forward over B rows of max_len ids (B*max_len, values in [0, vocab)). Returns the logits
 * (B, labels), owned by c and valid until the next forward. Activations are kept for backward. */
const float *jr_clf_forward(jr_clf *c, const int32_t *ids, int B);
/* Mean cross-entropy of the last forward against labels (B); when dlogits_out is non-NULL it
 * receives the gradient of that loss w.r.t. the logits (B, labels). */
double jr_clf_xent(const jr_clf *c, const int32_t *labels, float *dlogits_out);
/* Accumulates into c->grads the gradient of sum(dlogits * logits) for the last forward. */
void jr_clf_backward(jr_clf *c, const float *dlogits);
void jr_clf_zero_grad(jr_clf *c);

/* Adam / AdamW state (torch.optim semantics). adamw = 0: Adam with L2 (weight_decay added to the
 * gradient, torch.optim.Adam); adamw = 1: decoupled decay on every parameter (torch.optim.AdamW
 * applies it to all parameters by default). */
typedef struct jr_clf_adam {
    double beta1, beta2, eps, weight_decay;
    int adamw;
    int64_t t;
    float *m, *v; /* n_params each; owned */
} jr_clf_adam;
jr_status jr_clf_adam_init(jr_clf_adam *o, const jr_clf *c, int adamw, double weight_decay);
void jr_clf_adam_free(jr_clf_adam *o);
void jr_clf_adam_step(jr_clf_adam *o, jr_clf *c, double lr);

/* Saves params as model.safetensors + classifier.json (dims) + vocab.json in dir (atomically). */
jr_status jr_clf_save(const jr_clf *c, const jr_vocab *v, const char *dir);
/* Loads a directory written by jr_clf_save. On error *c and *v are zeroed. */
jr_status jr_clf_load(jr_clf *c, jr_vocab *v, const char *dir);

#endif
