/*
 * space_draw.c - values of continuous parameters that no grid enumerates:
 * a seeded draw from the parameter's own NNI distribution (samples), and
 * one fixed representative value (pages, cursors, the stream), so that a
 * configuration handed out is a complete NNI parameter set.
 *
 * Invariants: a draw reads only the dim and its own stream state (one
 * splitmix64 state per parameter, derived from the request's seed and the
 * parameter's name by sp_draw_stream), so the values of one parameter do
 * not depend on the other parameters nor on the discrete sample; each
 * draw consumes exactly two outputs of its stream, so the i-th draw is
 * fixed by the seed alone. Drawn values follow NNI's definitions (hyperopt
 * conventions): uniform(low, high); loguniform exp(uniform(log low,
 * log high)); q-types clip(round(x / q) * q, low, high) for the bounded
 * ones, round(x / q) * q for the normal ones; normal mu + sigma * z;
 * lognormal exp(mu + sigma * z), z standard normal (Box-Muller). Nothing
 * here keeps global state.
 */
#include "space.h"

#include <math.h>

uint64_t
sp_splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

uint64_t
sp_draw_stream(uint64_t seed, const char *name)
{
	uint64_t h = 1469598103934665603ULL, s;

	for (const char *p = name; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	s = seed ^ h;
	return sp_splitmix(&s);
}

/* Uniform in [0, 1), 53 random bits. */
static double
unit(uint64_t *s)
{
	return (double)(sp_splitmix(s) >> 11) * 0x1.0p-53;
}

/* round(x / q) * q, half to even as Python's round(). */
static double
quantize(double x, double q)
{
	return rint(x / q) * q;
}

static double
clip(double x, double lo, double hi)
{
	return x < lo ? lo : x > hi ? hi : x;
}

double
sp_value_draw(const struct sp_dim *d, uint64_t *state)
{
	double u = unit(state), w = unit(state), z;

	/* Box-Muller: 1 - u is in (0, 1], so its log is finite */
	z = sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * M_PI * w);
	switch (d->type) {
	case SP_UNIFORM:
		return clip(d->lo + u * (d->hi - d->lo), d->lo, d->hi);
	case SP_QUNIFORM:
		return clip(quantize(d->lo + u * (d->hi - d->lo), d->q), d->lo, d->hi);
	case SP_LOGUNIFORM:
		return clip(exp(log(d->lo) + u * (log(d->hi) - log(d->lo))), d->lo, d->hi);
	case SP_QLOGUNIFORM:
		return clip(quantize(exp(log(d->lo) + u * (log(d->hi) - log(d->lo))), d->q), d->lo, d->hi);
	case SP_NORMAL:
		return d->mu + d->sigma * z;
	case SP_QNORMAL:
		return quantize(d->mu + d->sigma * z, d->q);
	case SP_LOGNORMAL:
		return exp(d->mu + d->sigma * z);
	case SP_QLOGNORMAL:
		return quantize(exp(d->mu + d->sigma * z), d->q);
	case SP_RANDINT:
		return d->lo + floor(u * (d->hi - d->lo));
	case SP_CHOICE:
		break;
	}
	return NAN;
}

double
sp_value_typical(const struct sp_dim *d)
{
	switch (d->type) {
	case SP_UNIFORM:
		return d->lo + (d->hi - d->lo) / 2;
	case SP_QUNIFORM:
		return clip(quantize(d->lo + (d->hi - d->lo) / 2, d->q), d->lo, d->hi);
	case SP_LOGUNIFORM:
		return clip(sqrt(d->lo) * sqrt(d->hi), d->lo, d->hi);
	case SP_QLOGUNIFORM:
		return clip(quantize(sqrt(d->lo) * sqrt(d->hi), d->q), d->lo, d->hi);
	case SP_NORMAL:
		return d->mu;
	case SP_QNORMAL:
		return quantize(d->mu, d->q);
	case SP_LOGNORMAL:
		return exp(d->mu);
	case SP_QLOGNORMAL:
		return quantize(exp(d->mu), d->q);
	case SP_RANDINT:
	case SP_CHOICE:
		break;
	}
	return NAN;
}
