/*
 * api_reduction_read.c - reading a reduction's feasible set, all on solver
 * workers under the query's write lock (they move the engine's box):
 *   GET  /v1/reductions/{id}/configurations?limit=&cursor=|offset=  a page
 *   GET  /v1/reductions/{id}/configurations?format=jsonl   every one, streamed
 *   GET  /v1/reductions/{id}/samples?n=&seed=&count_timeout=  seeded samples
 *        (uniform with an exact count; else approximate, drawn within the
 *        deadline after count_timeout seconds spent on the count)
 *   GET  /v1/reductions/{id}/explain?param=&value=         why a value is gone
 *   POST /v1/reductions/{id}/explain {"config"}            one configuration
 *   GET  /v1/reductions/{id}/max?param=&per=               largest values
 *   GET  /v1/reductions/{id}/min?param=&per=               smallest values
 *   GET  /v1/reductions/{id}/heatmap?x=&y=                 feasibility over two
 * A stream walks with a cursor of its own, a chunk per callback, taking the
 * lock per chunk; the whole walk is bounded by --max-space.
 */
#include "srv_registry.h"
#include "dn_number.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An integer query parameter in [lo, hi], default dflt; -1 with a 400. */
static int
int_arg(struct srv_request *r, const char *name, int64_t lo, int64_t hi, int64_t dflt, int64_t *out)
{
	const char *v = srv_query_arg(r, name);
	char *end;
	long long x;

	*out = dflt;
	if (v == NULL)
		return 0;
	errno = 0;
	x = strtoll(v, &end, 10);
	if (end == v || *end != '\0' || errno != 0 || x < lo || x > hi) {
		srv_reply_problem(r, 400, "bad-parameter", "Bad parameter", name, "%s must be a whole number from %lld "
		    "to %lld", name, (long long)lo, (long long)hi);
		return -1;
	}
	*out = x;
	return 0;
}

/* A number of seconds in [0, hi] (query parameter `name`), default dflt;
 * -1 with a 400 naming the parameter and the range. */
static int
seconds_arg(struct srv_request *r, const char *name, double hi, double dflt, double *out)
{
	const char *v = srv_query_arg(r, name);
	double x;

	*out = dflt;
	if (v == NULL)
		return 0;
	if (dn_decimal_all(v, &x) != 0 || x < 0 || x > hi) {
		srv_reply_problem(r, 400, "bad-parameter", "Bad parameter", name, "%s must be a number of seconds "
		    "from 0 to %g (the request's timeout)", name, hi);
		return -1;
	}
	*out = x;
	return 0;
}

/* Makes sure the count is exact (counting up to the deadline); 0, or -1
 * with a reply (503 when the deadline passed first, 409 when the count
 * stopped for good at --max-compute). Lock held. */
static int
need_exact(struct srv_request *r, struct srv_query *sq, double timeout, const char *why)
{
	struct dn_error err;

	memset(&err, 0, sizeof err);
	if (api_reduction_count(r->srv, sq, timeout, &err) != 0) {
		srv_reply_error(r, &err);
		return -1;
	}
	if (sq->e.lower != sq->e.upper && sq->solve_seconds >= r->srv->cfg.max_compute) {
		/* status "bounds": the count stopped for good, a retry gets the
		 * same answer (no Retry-After) */
		srv_reply_problem(r, 409, "count-stopped", "The count stopped with bounds", NULL, "%s needs the exact "
		    "count, and this reduction's count stopped with bounds after the server's compute limit "
		    "(--max-compute %g s): page with cursors, or ask a smaller space", why, r->srv->cfg.max_compute);
		return -1;
	}
	if (sq->e.lower != sq->e.upper) {
		r->retry_after = 5;
		srv_reply_problem(r, 503, "deadline", "Solver deadline passed", NULL, "%s needs the exact count, which "
		    "did not finish in %g s: retry (the count goes on), or page with cursors", why, timeout);
		return -1;
	}
	return 0;
}

/* The start of every read below: looks up the request's reduction (a
 * reply, and NULL, when there is none), takes its lock for writing (a
 * 503 reply, and NULL, when another request holds it past this one's
 * deadline: srv_query_lock) and clears err. Paired with release or reply_and_release. */
static struct srv_query *
acquire(struct srv_request *r, struct dn_error *err)
{
	struct srv_query *sq = api_reduction_query(r);

	memset(err, 0, sizeof *err);
	if (sq != NULL && srv_query_lock(r, sq, 1) != 0) {
		srv_registry_release(r->srv->registry, sq);
		return NULL;
	}
	return sq;
}

/* Gives up sq (lock and reference) after a reply was already made. */
static void
release(struct srv_request *r, struct srv_query *sq)
{
	pthread_rwlock_unlock(&sq->lock);
	srv_registry_release(r->srv->registry, sq);
}

/* The end of every read below: gives up sq (its lock held for writing)
 * and replies with out (stolen), or the error when out is NULL. */
static void
reply_and_release(struct srv_request *r, struct srv_query *sq, json_t *out, struct dn_error *err)
{
	release(r, sq);
	if (out == NULL) {
		if (!dn_error_isset(err))
			dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		srv_reply_error(r, err);
	} else
		srv_reply_json(r, 200, out);
}

/* ---- JSON lines stream ---- */

struct stream {
	struct srv *srv;
	struct srv_query *sq;
	int64_t *pos;
	int started, done;
	int failed;             /* the walk failed after a part was sent */
	int64_t left;           /* configurations still allowed (--max-space) */
	char *pending;          /* a line that did not fit the last buffer */
	size_t pending_len, pending_off;
};

struct chunk {
	char *buf;
	size_t len, max;
	struct stream *st;
	int64_t count;          /* configurations taken (written or pending) */
};

static int
emit_line(void *ctx, json_t *sample)
{
	struct chunk *c = ctx;
	char *line = json_dumps(sample, JSON_COMPACT | JSON_REAL_PRECISION(15));
	size_t n;

	json_decref(sample);
	if (line == NULL)
		return 1;
	c->count++;
	n = strlen(line);
	if (c->len + n + 1 <= c->max) {
		memcpy(c->buf + c->len, line, n);
		c->buf[c->len + n] = '\n';
		c->len += n + 1;
		free(line);
	} else {
		line[n] = '\n';         /* replaces the terminator: kept for the next call */
		c->st->pending = line;
		c->st->pending_len = n + 1;
		c->st->pending_off = 0;
		return 1;
	}
	return c->len + 256 > c->max;   /* stop when the buffer is nearly full */
}

static ssize_t
stream_read(void *cls, uint64_t offset, char *buf, size_t max)
{
	struct stream *st = cls;
	struct chunk c = { buf, 0, max, st, 0 };
	struct dn_error err;
	int r;

	(void)offset;
	if (st->pending != NULL) {
		size_t n = st->pending_len - st->pending_off;
		if (n > max)
			n = max;
		memcpy(buf, st->pending + st->pending_off, n);
		st->pending_off += n;
		if (st->pending_off == st->pending_len) {
			free(st->pending);
			st->pending = NULL;
		}
		return (ssize_t)n;
	}
	/* cut short (the server stops, the walk failed): no last chunk, so
	 * that the client sees an incomplete transfer, not all of the
	 * feasible set */
	if (st->failed || (!st->done && st->left > 0 && atomic_load(&st->srv->stopping)))
		return MHD_CONTENT_READER_END_WITH_ERROR;
	if (st->done || st->left <= 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	memset(&err, 0, sizeof err);
	pthread_rwlock_wrlock(&st->sq->lock);
	r = ans_walk(&st->sq->e, st->pos, st->started, st->left < 4096 ? st->left : 4096, emit_line, &c, &err);
	pthread_rwlock_unlock(&st->sq->lock);
	st->started = 1;
	if (r <= 0)
		st->done = 1;
	if (r < 0) {
		st->failed = 1;
		return c.len > 0 ? (ssize_t)c.len : MHD_CONTENT_READER_END_WITH_ERROR;
	}
	st->left -= c.count;
	if (c.len == 0 && st->pending != NULL)
		return stream_read(cls, offset, buf, max);
	return c.len > 0 ? (ssize_t)c.len : MHD_CONTENT_READER_END_OF_STREAM;
}

static void
stream_free(void *cls)
{
	struct stream *st = cls;

	srv_registry_release(st->srv->registry, st->sq);
	free(st->pending);
	free(st->pos);
	free(st);
}

/* Streams every configuration (sq locked for writing by the caller; the
 * lock is given up here, the reference passes to the stream). */
static void
reply_stream(struct srv_request *r, struct srv_query *sq, double timeout)
{
	struct stream *st;

	if (need_exact(r, sq, timeout, "streaming every configuration") != 0) {
		release(r, sq);
		return;
	}
	if ((double)sq->e.lower > r->srv->cfg.max_space) {
		char n[64];
		fs_count_str(sq->e.lower, n, sizeof n);
		release(r, sq);
		srv_reply_problem(r, 413, "space-too-large", "Too many configurations", "format",
		    "%s feasible configurations are more than this server streams (--max-space %g): page with cursors",
		    n, r->srv->cfg.max_space);
		return;
	}
	pthread_rwlock_unlock(&sq->lock);
	st = calloc(1, sizeof *st);
	if (st != NULL)
		st->pos = calloc((size_t)sq->e.nvars + 1, sizeof *st->pos);
	if (st == NULL || st->pos == NULL) {
		struct dn_error err;
		if (st)
			free(st);
		srv_registry_release(r->srv->registry, sq);
		memset(&err, 0, sizeof err);
		dn_error_set(&err, DN_ENOMEM, NULL, "out of memory");
		srv_reply_error(r, &err);
		return;
	}
	st->srv = r->srv;
	st->sq = sq;            /* the stream holds the reference now */
	st->left = (int64_t)r->srv->cfg.max_space;
	r->stream = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, stream_read, st, stream_free);
	if (r->stream == NULL) {
		stream_free(st);
		srv_reply_problem(r, 503, "out-of-memory", "Out of memory", NULL, "cannot start the stream");
		return;
	}
	r->status = 200;
	r->content_type = "application/x-ndjson";
}

void
api_reduction_configurations(struct srv_request *r)
{
	struct srv_query *sq;
	const char *format = srv_query_arg(r, "format"), *cursor = srv_query_arg(r, "cursor");
	const char *offset = srv_query_arg(r, "offset");
	double timeout = api_request_timeout(r);
	struct dn_error err;
	int64_t limit;
	json_t *page;

	if (timeout < 0 || int_arg(r, "limit", 0, 10000, 100, &limit) != 0)
		return;
	if (format != NULL && strcmp(format, "jsonl") != 0 && strcmp(format, "json") != 0) {
		srv_reply_problem(r, 400, "bad-parameter", "Bad parameter", "format", "format must be json or jsonl");
		return;
	}
	if (cursor != NULL && offset != NULL) {
		srv_reply_problem(r, 400, "bad-parameter", "Bad parameter", "cursor", "give a cursor or an offset, not both");
		return;
	}
	if (format != NULL && strcmp(format, "jsonl") == 0) {
		/* the stream is every configuration: a page's parameters would
		 * be ignored (offset=3000 got all of them from the first) */
		const char *paging = cursor != NULL ? "cursor" : offset != NULL ? "offset" :
		    srv_query_arg(r, "limit") != NULL ? "limit" : NULL;
		if (paging != NULL) {
			srv_reply_problem(r, 400, "bad-parameter", "Bad parameter", paging,
			    "format=jsonl streams every configuration; %s pages the JSON form (leave out format)", paging);
			return;
		}
	}
	sq = acquire(r, &err);
	if (sq == NULL)
		return;
	if (format != NULL && strcmp(format, "jsonl") == 0) {
		reply_stream(r, sq, timeout);
		return;
	}
	if (offset != NULL && need_exact(r, sq, timeout, "an offset") != 0) {
		release(r, sq);
		return;
	}
	sq->e.deadline = fs_now_plus(timeout);
	page = ans_page(&sq->e, sq->fp, offset, cursor, limit, &err);
	sq->e.deadline = 0;
	reply_and_release(r, sq, page, &err);
}

void
api_reduction_samples(struct srv_request *r)
{
	struct srv_query *sq;
	double timeout = api_request_timeout(r);
	struct dn_error err;
	int64_t n, seed;
	double end, count_s;
	json_t *out;

	/* count_timeout: how much of the deadline brings the count forward
	 * before drawing (half by default; 0: draw from the count as it stands,
	 * after a token slice, as a sampler of a space whose count never ends
	 * wants); approximate samples when the count is not exact by then.
	 * Checked against the full ?timeout= (or the --max-deadline cap), not
	 * against what the queue left of it. */
	if (timeout < 0 || int_arg(r, "n", 1, 100000, 10, &n) != 0 ||
	    int_arg(r, "seed", 0, INT64_MAX, 1, &seed) != 0 ||
	    seconds_arg(r, "count_timeout", srv_request_timeout_value(r), timeout / 2, &count_s) != 0)
		return;
	if (count_s > timeout)
		count_s = timeout;
	sq = acquire(r, &err);
	if (sq == NULL)
		return;
	end = fs_now() + timeout;
	if (api_reduction_count(r->srv, sq, count_s, &err) != 0) {
		reply_and_release(r, sq, NULL, &err);
		return;
	}
	out = ans_samples_any(&sq->e, n, (uint64_t)seed, end, &err);
	if (out != NULL) {
		const char *dist = json_string_value(json_object_get(out, "distribution"));
		json_object_set_new(out, "seed", json_integer(seed));
		/* uniform draws of an exact count with the seed asked for never
		 * change; approximate ones do as the count goes on */
		r->cache_control = srv_query_arg(r, "seed") != NULL && dist != NULL && strcmp(dist, "uniform") == 0 &&
		    !json_is_false(json_object_get(out, "complete")) ? SRV_CACHE_IMMUTABLE : SRV_CACHE_NO_STORE;
	}
	reply_and_release(r, sq, out, &err);
}

void
api_reduction_explain(struct srv_request *r)
{
	struct srv_query *sq;
	double timeout = api_request_timeout(r);
	const char *param = srv_query_arg(r, "param"), *value = srv_query_arg(r, "value");
	const json_t *config = r->json ? json_object_get(r->json, "config") : NULL;
	struct dn_error err;
	json_t *out, *v;

	if (timeout < 0)
		return;
	if (r->json != NULL && !json_is_object(config)) {
		srv_reply_problem(r, 422, "invalid-field", "Invalid field",
		    "$.config", "$.config: the configuration to explain (an NNI sample object)");
		return;
	}
	if (r->json == NULL && (param == NULL || value == NULL)) {
		srv_reply_problem(r, 400, "bad-parameter", "Bad parameter", param ? "value" : "param",
		    "give param=NAME and value=V (or POST {\"config\": ...})");
		return;
	}
	sq = acquire(r, &err);
	if (sq == NULL)
		return;
	if (config != NULL) {
		union expr_val *scratch = malloc(sizeof *scratch * (size_t)ans_scratch_len(&sq->e));
		out = scratch ? ans_check(&sq->e, config, scratch, 1, &err) : NULL;
		free(scratch);
	} else {
		v = json_loads(value, JSON_DECODE_ANY, NULL);
		if (v == NULL)
			v = json_string(value);
		out = ans_explain_value(&sq->e, &sq->q, param, v, timeout, &err);
		json_decref(v);
	}
	reply_and_release(r, sq, out, &err);
}

/* /max and /min: {"param", "per", "rows"}; the same errors for both. */
static void
reply_extreme(struct srv_request *r, enum ans_goal goal)
{
	struct srv_query *sq;
	double timeout = api_request_timeout(r);
	const char *param = srv_query_arg(r, "param"), *per = srv_query_arg(r, "per");
	struct dn_error err;
	json_t *rows;

	if (timeout < 0)
		return;
	if (param == NULL || param[0] == '\0' || (per != NULL && per[0] == '\0')) {
		srv_reply_problem(r, 400, "bad-parameter", "Bad parameter", param && param[0] ? "per" : "param",
		    "give param=NAME (and per=OTHER for the %s value per value of OTHER)",
		    goal == ANS_LARGEST ? "largest" : "smallest");
		return;
	}
	sq = acquire(r, &err);
	if (sq == NULL)
		return;
	rows = ans_extreme(&sq->e, &sq->q, param, per, goal, timeout, &err);
	reply_and_release(r, sq, rows ? json_pack("{s:s,s:s?,s:o}", "param", sp_dim_address(&sq->q.space, param),
	    "per", per ? sp_dim_address(&sq->q.space, per) : NULL, "rows", rows) : NULL, &err);
}

void
api_reduction_max(struct srv_request *r)
{
	reply_extreme(r, ANS_LARGEST);
}

void
api_reduction_min(struct srv_request *r)
{
	reply_extreme(r, ANS_SMALLEST);
}

void
api_reduction_heatmap(struct srv_request *r)
{
	struct srv_query *sq;
	double timeout = api_request_timeout(r);
	const char *x = srv_query_arg(r, "x"), *y = srv_query_arg(r, "y");
	struct dn_error err;
	json_t *out;

	if (timeout < 0)
		return;
	if (x == NULL || y == NULL) {
		srv_reply_problem(r, 400, "bad-parameter", "Bad parameter", x ? "y" : "x",
		    "give x=NAME and y=NAME, two parameters of the space");
		return;
	}
	sq = acquire(r, &err);
	if (sq == NULL)
		return;
	out = ans_heatmap(&sq->e, &sq->q, x, y, timeout, &err);
	reply_and_release(r, sq, out, &err);
}
