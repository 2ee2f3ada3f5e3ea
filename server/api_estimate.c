/*
 * api_estimate.c - POST /v1/estimate: every cost of one configuration of a
 * model, and whether it fits the device's memory and the optional budgets.
 * The answer is solver/answer_estimate.c's, the one `dnnsat estimate
 * --json` prints; this file only replies (errors as problem+json naming
 * the field, "$.config.batch_size").
 */
#include "answer.h"
#include "srv.h"

#include <string.h>

void
api_estimate(struct srv_request *r)
{
	struct dn_error err;
	json_t *out;

	memset(&err, 0, sizeof err);
	out = ans_cost_estimate(r->json, &r->srv->catalog, &err);
	if (out == NULL) {
		srv_reply_error(r, &err);
		return;
	}
	srv_reply_json(r, 200, out);
}
