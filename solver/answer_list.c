/*
 * answer_list.c - counts, pages, cursors, walks and seeded samples of the
 * feasible set as JSON (see answer.h). A cursor carries the query's
 * fingerprint and the position vector of the next configuration (0 for
 * vars it leaves inactive), so a page resumes with fs_walk without any
 * server-side state; one fs_walk lists a whole page or stream chunk.
 */
#include "answer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *
ans_count(const struct fs_engine *e)
{
	char total[64], lo[64], hi[64];
	json_t *j;

	fs_count_str(e->total, total, sizeof total);
	fs_count_str(e->lower, lo, sizeof lo);
	fs_count_str(e->upper, hi, sizeof hi);
	j = json_pack("{s:s,s:b,s:s,s:s,s:f}", "total", total, "exact", e->lower == e->upper,
	    "feasible_lower", lo, "feasible_upper", hi,
	    "ratio", e->total ? (double)e->lower / (double)e->total : 0.0);
	if (j != NULL && e->lower == e->upper)
		json_object_set_new(j, "feasible", json_string(lo));
	if (j != NULL && e->q != NULL) {
		json_object_set_new(j, "budgets", sq_budgets_json(e->q));
		json_object_set_new(j, "warnings", sq_warnings_json(e->q));
	}
	return j;
}

uint64_t
ans_fingerprint(const json_t *req)
{
	char *s = json_dumps(req, JSON_SORT_KEYS | JSON_COMPACT);
	uint64_t h = 1469598103934665603ULL;

	for (const char *p = s; p && *p; p++) {
		h ^= (unsigned char)*p;
		h *= 1099511628211ULL;
	}
	free(s);
	return h;
}

char *
ans_cursor_make(const struct fs_engine *e, uint64_t fp, const int64_t *pos)
{
	size_t len = 24 + 17 * ((size_t)e->nvars + 1), n;
	char *s = malloc(len);

	if (s == NULL)
		return NULL;
	n = (size_t)snprintf(s, len, "c1.%016" PRIx64 ".", fp);
	for (int v = 0; v < e->nvars && n < len; v++)
		n += (size_t)snprintf(s + n, len - n, "%s%" PRIx64, v ? "-" : "",
		    (uint64_t)(pos[v] < 0 ? 0 : pos[v]));
	return s;
}

int
ans_cursor_parse(const struct fs_engine *e, uint64_t fp, const char *c, int64_t *pos,
    struct dn_error *err)
{
	char head[32];
	const char *p;

	snprintf(head, sizeof head, "c1.%016" PRIx64 ".", fp);
	if (strncmp(c, head, strlen(head)) != 0) {
		/* a cursor of another query has the same form, "c1.", 16 hex digits, "." */
		int formed = strncmp(c, "c1.", 3) == 0 && strlen(c) > 20 && c[19] == '.';
		for (int i = 3; formed && i < 19; i++)
			formed = (c[i] >= '0' && c[i] <= '9') || (c[i] >= 'a' && c[i] <= 'f');
		return dn_error_set(err, DN_EINVAL, "cursor", formed ? "this cursor belongs to another query" :
		    "malformed cursor (give the next cursor of an earlier page as it came)");
	}
	p = c + strlen(head);
	for (int v = 0; v < e->nvars; v++) {
		char *end;
		unsigned long long x;
		if (*p < '0' || (*p > '9' && *p < 'a') || *p > 'f')
			return dn_error_set(err, DN_EINVAL, "cursor", "malformed cursor");
		x = strtoull(p, &end, 16);
		if ((v + 1 < e->nvars && *end != '-') || (v + 1 == e->nvars && *end != '\0'))
			return dn_error_set(err, DN_EINVAL, "cursor", "malformed cursor");
		if (x >= (unsigned long long)e->vars[v].n)
			return dn_error_set(err, DN_EINVAL, "cursor", "the cursor is past the grid");
		pos[v] = (int64_t)x;
		p = end + 1;
	}
	return 0;
}

/* ans_walk's state in fs_walk's callback: `max` samples emitted, then the
 * position after the last one kept in `next` for the cursor. */
struct walk_emit {
	struct fs_engine *e;
	int (*emit)(void *ctx, json_t *sample);
	void *ctx;
	int64_t max, done;
	int64_t *next;
	int stopped, have_next, oom;
};

static int
walk_emit(void *ctx, const int64_t *pos)
{
	struct walk_emit *w = ctx;
	json_t *j;

	if (w->stopped || (w->max >= 0 && w->done >= w->max)) {
		memcpy(w->next, pos, sizeof *pos * (size_t)w->e->nvars);
		w->have_next = 1;
		return 1;
	}
	j = fs_to_json(w->e, pos);
	if (j == NULL) {
		w->oom = 1;
		return 1;
	}
	w->stopped = w->emit(w->ctx, j) != 0;
	w->done++;
	return 0;
}

int
ans_walk(struct fs_engine *e, int64_t *pos, int started, int64_t max,
    int (*emit)(void *ctx, json_t *sample), void *ctx, struct dn_error *err)
{
	struct walk_emit w = { e, emit, ctx, max, 0, NULL, 0, 0, 0 };
	int r;

	w.next = calloc((size_t)e->nvars + 1, sizeof *w.next);
	if (w.next == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	r = fs_walk(e, started ? pos : NULL, walk_emit, &w, err);
	if (r >= 0 && w.oom)
		r = dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	if (r >= 0 && pos != NULL && w.have_next)
		memcpy(pos, w.next, sizeof *pos * (size_t)e->nvars);
	free(w.next);
	if (r < 0)
		return -1;
	return w.have_next;
}

static int
emit_to_array(void *ctx, json_t *sample)
{
	json_array_append_new(ctx, sample);
	return 0;
}

json_t *
ans_page(struct fs_engine *e, uint64_t fp, const char *offset, const char *cursor, int64_t limit,
    struct dn_error *err)
{
	int64_t *pos = calloc((size_t)e->nvars + 1, sizeof *pos);
	json_t *items = json_array(), *out = NULL;
	int started = 0, r;

	if (pos == NULL || items == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		goto out;
	}
	if (offset != NULL) {
		fs_count k;
		if (fs_count_parse(offset, &k) != 0) {
			dn_error_set(err, DN_EINVAL, "offset", "must be a non-negative integer");
			goto out;
		}
		if (!e->counted || e->lower != e->upper) {
			dn_error_set(err, DN_ETIMEOUT, "offset", "the count is not exact yet: page with a cursor instead");
			goto out;
		}
		r = fs_kth(e, k, pos, err);
		if (r < 0)
			goto out;
		if (r == 1) {           /* past the end: an empty page */
			out = json_pack("{s:o,s:n}", "items", items, "next_cursor");
			items = NULL;
			goto out;
		}
		started = 1;
	} else if (cursor != NULL) {
		if (ans_cursor_parse(e, fp, cursor, pos, err) != 0)
			goto out;
		started = 1;
	}
	r = ans_walk(e, pos, started, limit, emit_to_array, items, err);
	if (r < 0)
		goto out;
	out = json_object();
	json_object_set_new(out, "items", items);
	items = NULL;
	if (r == 1) {
		char *c = ans_cursor_make(e, fp, pos);
		json_object_set_new(out, "next_cursor", c ? json_string(c) : json_null());
		free(c);
	} else
		json_object_set_new(out, "next_cursor", json_null());
out:
	json_decref(items);
	free(pos);
	return out;
}

/*
 * Continuous parameters that pass through take a value drawn from their own
 * distribution in each sample: dim k's values come from its own stream,
 * sp_draw_stream(seed, name), one draw per sample whether or not the dim is
 * active in it, so they depend on the seed and the sample's rank alone,
 * not on the discrete configuration drawn (that one comes from the seed's
 * own stream, as before).
 */
static int
is_drawn(const struct fs_engine *e, int k)
{
	const struct sp_dim *d = &e->q->space.dims[k];

	return !d->discrete && d->hp < 0;
}

/* The per-dim draw streams of a seed (0 for dims not drawn); NULL when out
 * of memory. The caller frees them. */
static uint64_t *
draw_streams(const struct fs_engine *e, uint64_t seed)
{
	int ndims = e->q->space.ndims;
	uint64_t *streams = calloc((size_t)ndims + 1, sizeof *streams);

	for (int k = 0; k < ndims && streams != NULL; k++)
		if (is_drawn(e, k))
			streams[k] = sp_draw_stream(seed, e->q->space.dims[k].name);
	return streams;
}

/* The next sample's values of the drawn dims, one draw per drawn dim. */
static void
draw_next(const struct fs_engine *e, uint64_t *streams, double *drawn)
{
	for (int k = 0; k < e->q->space.ndims; k++)
		if (is_drawn(e, k))
			drawn[k] = sp_value_draw(&e->q->space.dims[k], &streams[k]);
}
json_t *
ans_samples(struct fs_engine *e, int64_t n, uint64_t seed, struct dn_error *err)
{
	int ndims = e->q->space.ndims;
	int64_t *pos;
	json_t *items;
	uint64_t s = seed, *streams;
	double *drawn;

	if (!e->counted || e->lower != e->upper) {
		dn_error_set(err, DN_ETIMEOUT, NULL, "uniform sampling needs the exact count, which is not finished");
		return NULL;
	}
	if (e->lower == 0) {
		dn_error_set(err, DN_EINVAL, NULL, "no configuration fits: nothing to sample");
		return NULL;
	}
	pos = calloc((size_t)e->nvars + 1, sizeof *pos);
	streams = draw_streams(e, seed);
	drawn = calloc((size_t)ndims + 1, sizeof *drawn);
	items = json_array();
	for (int64_t i = 0; i < n && pos != NULL && items != NULL && streams != NULL && drawn != NULL; i++) {
		json_t *j;
		if (fs_kth(e, fs_rand_below(&s, e->lower), pos, err) != 0) {
			json_decref(items);
			items = NULL;
			goto out;
		}
		draw_next(e, streams, drawn);
		j = fs_to_json_drawn(e, pos, drawn);
		if (j == NULL)
			break;
		json_array_append_new(items, j);
	}
	if (items == NULL || (int64_t)json_array_size(items) != n) {
		json_decref(items);
		items = NULL;
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	}
out:
	free(pos);
	free(streams);
	free(drawn);
	return items != NULL ? json_pack("{s:o}", "items", items) : NULL;
}

/* Items and fields of an answer from the sampler (count unfinished). */
static json_t *
samples_approx(struct fs_engine *e, int64_t n, uint64_t seed, double deadline, struct dn_error *err)
{
	struct fs_sampler *sp;
	const struct fs_estimate *est;
	int64_t *pos = calloc((size_t)e->nvars + 1, sizeof *pos);
	json_t *items = json_array(), *out = NULL;
	double left = deadline > 0 ? deadline - fs_now() : 1.0;
	double *drawn = calloc((size_t)e->q->space.ndims + 1, sizeof *drawn);
	uint64_t s = seed, *streams = draw_streams(e, seed);
	int r = 0;

	if (pos == NULL || items == NULL || drawn == NULL || streams == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		goto out;
	}
	/* a fixed number of draws (the same weights for the same count), cut
	 * short only when a third of the time left has gone */
	if (fs_sampler_build(e, ANS_ESTIMATE_DRAWS, deadline <= 0 ? 0 : left > 0 ? left / 3 : 0.001, seed, &sp, err) != 0)
		goto out;
	est = fs_sampler_estimate(sp);
	for (int64_t i = 0; i < n && r == 0; i++) {
		json_t *j;
		if (deadline > 0 && fs_now() > deadline)
			break;
		r = fs_sampler_draw(e, sp, &s, pos, deadline);
		if (r != 0)
			break;
		draw_next(e, streams, drawn);
		j = fs_to_json_drawn(e, pos, drawn);
		if (j == NULL || json_array_append_new(items, j) != 0) {
			fs_sampler_free(sp);
			dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
			goto out;
		}
	}
	out = json_pack("{s:O,s:s,s:b,s:o}", "items", items, "distribution", "approximate",
	    "complete", (int64_t)json_array_size(items) == n, "estimate", ans_estimate(est));
	fs_sampler_free(sp);
	if (out == NULL)
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
out:
	json_decref(items);
	free(pos);
	free(drawn);
	free(streams);
	return out;
}

json_t *
ans_samples_any(struct fs_engine *e, int64_t n, uint64_t seed, double deadline, struct dn_error *err)
{
	json_t *out;

	if (!e->counted) {
		dn_error_set(err, DN_EINVAL, NULL, "sampling needs a count first");
		return NULL;
	}
	if (e->upper == 0) {
		/* nothing fits: no sample exists, and that is the whole answer
		 * (as a page of nothing), not a field in error */
		out = json_pack("{s:[],s:s,s:b}", "items", "distribution", "uniform", "complete", 1);
		if (out == NULL)
			dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		return out;
	}
	if (e->lower != e->upper)
		return samples_approx(e, n, seed, deadline, err);
	out = ans_samples(e, n, seed, err);
	if (out != NULL) {
		json_object_set_new(out, "distribution", json_string("uniform"));
		json_object_set_new(out, "complete", json_true());
	}
	return out;
}

json_t *
ans_estimate(const struct fs_estimate *est)
{
	return json_pack("{s:f,s:f,s:f,s:f,s:b,s:I,s:I,s:I}", "feasible", est->value, "low", est->low,
	    "high", est->high, "confidence", 0.95, "exact", est->exact, "draws", (json_int_t)est->draws,
	    "hits", (json_int_t)est->hits, "strata", (json_int_t)est->strata);
}

json_t *
ans_count_estimated(struct fs_engine *e, int64_t draws, double seconds, uint64_t seed, struct dn_error *err)
{
	struct fs_sampler *sp;
	json_t *j = ans_count(e);

	if (j == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	if (e->lower == e->upper || !e->counted)
		return j;
	if (fs_sampler_build(e, draws, seconds, seed, &sp, err) != 0) {
		json_decref(j);
		return NULL;
	}
	json_object_set_new(j, "estimate", ans_estimate(fs_sampler_estimate(sp)));
	fs_sampler_free(sp);
	return j;
}
