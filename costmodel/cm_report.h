/*
 * cm_report.h - cost-model results and configurations as JSON (cm_report.c).
 */
#ifndef DN_CM_REPORT_H
#define DN_CM_REPORT_H

#include <jansson.h>

#include "costmodel.h"
#include "json_text.h"

/* {"name": value} for every hyperparameter; new reference or NULL. */
json_t *cm_config_to_json(const struct cm_model_def *def, const union expr_val *config);

/* The whole result; with per_op, an "operators" list from the evaluation
 * held in scratch. New reference or NULL. */
json_t *cm_result_to_json(const struct cm_model *m, const union expr_val *config,
    const union expr_val *scratch, const struct cm_result *r, int per_op);

/* The same two, written as JSON text into w (no per-operator list; no
 * "hyperparameters" echo when config is NULL; the constant note on how
 * FLOPs are counted only with notes: the per-trial check leaves it out). */
void cm_config_write(struct jt *w, const struct cm_model_def *def, const union expr_val *config);
void cm_result_write(struct jt *w, const struct cm_model *m, const union expr_val *config,
    const struct cm_result *r, int notes);

#endif
