/*
 * query_settings.h - the settings of the workload that a search space
 * searches, costed per configuration (private to solver/: query_parse.c
 * calls it between reading the workload and binding the space).
 *
 * A top-level space parameter in one of the forms below becomes a
 * hyperparameter of the query's model, of the parameter's name (a copy of
 * the model's definition with one more hyperparameter: templates are
 * shared), which the space then binds as any other; the workload gets the
 * hyperparameter that picks the setting, and the cost model writes each
 * value's costs under the condition that picks it:
 *
 *   optimizer, optim               a choice of optimizer names dnnsat
 *                                  models (Hugging Face's optim names
 *                                  among them), distinct, at most 16
 *                                  (wl->opt_hp, opt_choices; training)
 *   grad_accum,                    a choice of integers 1..65536 or a
 *   gradient_accumulation_steps,   randint from 1 (wl->accum_hp; training;
 *   accumulate_grad_batches        Lightning's name last)
 *   checkpointing,                 a choice of true/false or 1/0
 *   gradient_checkpointing         (wl->ckpt_hp, ckpt_on; training)
 *   attention,                     a choice of distinct kernel names, at
 *   attn_implementation            most 8 (wl->attn_hp, attn_choices;
 *                                  training and inference)
 *   lora_r, lora_rank, r           peft's LoraConfig.r: a choice of
 *                                  integers 1..65536 or a randint from 1,
 *                                  where the workload has LoRA of a fixed
 *                                  rank (wl->ft.rank_expr names it; the
 *                                  templates' lora_r is taken as it is)
 *   target_modules,                peft's target_modules, where the workload
 *   lora_target_modules,           has LoRA: a choice of comma-separated
 *   lora_targets                   selector lists (wl->ft.targets_hp)
 *   precision, dtype,              the precision: a choice of distinct names,
 *   mixed_precision                at most 8, Lightning's, the workload's or
 *                                  Accelerate's as the key says
 *                                  (cm_precision_parse_as; wl->prec_hp,
 *                                  prec_choices; training and inference)
 *   fp16, bf16                     Hugging Face's flags, one or both: each a
 *                                  choice of true/false or 1/0 (wl->fp16_hp,
 *                                  bf16_hp; cm_precision_alts)
 *   quantize                       the base weights' quantization: a choice
 *                                  of distinct mode names and "none"
 *                                  (wl->ft.qs.hp; training needs LoRA or
 *                                  frozen weights)
 *   load_in_4bit, load_in_8bit,    Hugging Face's BitsAndBytesConfig fields,
 *   bnb_4bit_quant_type,           any of them (wl->ft.qs; cm_quant_alts):
 *   bnb_4bit_use_double_quant      flags, and a choice of nf4/fp4
 *   lora_dropout                   peft's lora_dropout: a choice of numbers
 *                                  in [0, 1), or a uniform or quniform
 *                                  within it, where the workload has LoRA
 *                                  (wl->ft.dropout_hp)
 *   use_dora                       peft's use_dora: a choice of true/false
 *                                  or 1/0, where the workload has LoRA
 *                                  (wl->ft.dora_hp, dora_on)
 *   momentum, amsgrad, centered    torch.optim's, where an optimizer that
 *                                  has them runs (wl->momentum_hp,
 *                                  amsgrad_hp, centered_hp)
 *
 * Inside the options of a nested choice, where the top level does not name
 * them: checkpointing, attention, accumulation, and with LoRA the rank,
 * the dropout, the targets, use_dora, quantize and dtype by name, and
 * torch.optim's momentum, each a choice: taken as above over every option's values and the workload's,
 * the hyperparameter's default (a configuration whose option sets none
 * runs with the workload's); the nested parameters bind to it by key.
 *
 * A parameter in another form (values the setting does not take, a name
 * the model has as a hyperparameter) is left as it is: the query
 * parser's warning (sp_workload_names) says every configuration is costed
 * with the workload's setting. The templates' lora_r searched in a
 * training workload without LoRA is named in a warning: it changes
 * nothing.
 */
#ifndef DN_QUERY_SETTINGS_H
#define DN_QUERY_SETTINGS_H

#include "query.h"

/* Takes the settings `space` (the query's "space" object, or NULL)
 * searches into q->def and q->wl. 0, or -1 with err (out of memory; an
 * attention kernel the workload's PyTorch has not, at its value's path). */
int sq_space_settings(struct sq_query *q, const json_t *space, struct dn_error *err);

/* Adds a warning to q (printf-style; query_parse.c). -1 with err only
 * when out of memory. */
int sq_warn(struct sq_query *q, struct dn_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
