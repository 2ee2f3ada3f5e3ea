/*
 * space.h - NNI search spaces: parsing the JSON format (every _type, nested
 * _name choices), the exact grids of the discrete types, and binding each
 * parameter to the model hyperparameter it sets (docs/search-space.md).
 *
 *   space_parse.c   JSON -> struct sp_space, grids, limits, errors
 *   space_bind.c    dims -> the model's hyperparameters, type and range checks
 *   space_value.c   the i-th value of a grid, and the exact count of the space
 *   space_draw.c    continuous values: seeded draws from each parameter's own
 *                   distribution, and one representative value per parameter
 *
 * Invariants of a parsed space:
 *  - dims[] lists every parameter, a nested one after the choice that holds
 *    it (parent < child), depth-first in the JSON's key order;
 *  - a discrete dim has nvalues >= 1 distinct values; its grid is either an
 *    explicit list (choice) or an arithmetic progression (randint, quniform,
 *    qloguniform, ...) so that huge grids cost no memory;
 *  - a nested dim is active only when its parent choice takes parent_option.
 * After sp_bind, hp >= 0 names the model hyperparameter a dim sets (or -1:
 * the dim passes through untouched, e.g. a learning rate).
 *
 * A parsed space borrows the listed choice values from the JSON it holds a
 * reference to: the caller must not modify that JSON while the space lives.
 * Nothing here keeps global state; distinct spaces may be used from distinct
 * threads, and a bound space may be read (sp_value_*, sp_count_total) from
 * several threads at once.
 */
#ifndef DN_SPACE_H
#define DN_SPACE_H

#include <stdint.h>

#include <jansson.h>

#include "costmodel.h"

/* Limits enforced by sp_parse (absurd inputs are DN_ERANGE errors). */
#define SP_MAX_DIMS 4096        /* parameters, nested ones included */
#define SP_MAX_DEPTH 16         /* choices of sub-spaces inside each other */
#define SP_MAX_VALUES 1000000   /* listed choice values over the whole space */

enum sp_type {
	SP_CHOICE, SP_RANDINT, SP_UNIFORM, SP_QUNIFORM, SP_LOGUNIFORM,
	SP_QLOGUNIFORM, SP_NORMAL, SP_QNORMAL, SP_LOGNORMAL, SP_QLOGNORMAL
};

struct sp_dim {
	char *name;             /* address: "lr", "layer0", "layer0/Conv/kernel_size"
	                         * (a nested dim: its parent's address, the "_name"
	                         * of the option that holds it, its key); unique */
	char *short_name;       /* the address without option names: "layer0/kernel_size"
	                         * (accepted by sp_dim_lookup when unambiguous) */
	char *key;              /* the key in its JSON object: "kernel_size" */
	enum sp_type type;
	int discrete;           /* 1: a finite grid of values; 0: a continuous range */
	/* discrete grid */
	int64_t nvalues;
	json_t **values;        /* choice: the listed values (borrowed from root); else NULL */
	double start, step;     /* progression grids: value i = start + i * step (exact for integers) */
	int integer;            /* every grid value is an integer (randint, integral q) */
	/* continuous range (uniform, loguniform) and the raw parameters */
	double lo, hi, q, mu, sigma;
	/* nesting */
	int parent;             /* index of the enclosing choice dim, or -1 */
	int parent_option;      /* which option of the parent activates this dim */
	/* binding (sp_bind) */
	int hp;                 /* model hyperparameter, or -1 (passes through) */
	union expr_val *hp_vals;/* explicit grids: the model value of each option */
	char *path;             /* JSON path for errors: "$.layer0._value[1].kernel_size" */

	/*
	 * Additions, by type:
	 *  choice       nested: the options are sub-spaces (each has "_name");
	 *               values[i] is then the option object.
	 *  randint      [lo, hi) as given; value i = ibase + i exactly (start
	 *               and step hold the same progression as doubles).
	 *  q-grids      quniform, qloguniform: lo, hi, q as given. The grid is
	 *               clip(round(x / q) * q, lo, hi) over x in [lo, hi]: with
	 *               head, value 0 is lo (a clipped end, or a multiple of q
	 *               equal to lo within 1e-9); with tail, the last value is
	 *               hi likewise; the values between are (k0 + j) * q for
	 *               j = 0, 1, ... (start = k0 * q, step = q).
	 *  uniform, loguniform: lo, hi.  normal, lognormal: mu, sigma, and the
	 *               support in lo, hi ((-inf, inf) or (0, inf)).
	 *  qnormal, qlognormal: mu, sigma, q; unbounded, so not enumerable:
	 *               discrete = 0, they do not count, and sp_bind refuses
	 *               to bind them to a hyperparameter.
	 */
	int nested;
	int depth;              /* 0 at the top level, +1 per enclosing option */
	int64_t ibase;
	int head, tail;
	int64_t k0;
	enum cm_hp_type hp_type;/* type of the bound hyperparameter (hp >= 0) */
};

struct sp_space {
	json_t *root;           /* one reference */
	struct sp_dim *dims;
	int ndims;
};

/* Parses an NNI search space. Errors name the JSON path and the problem
 * (empty or duplicate domains, randint with low >= high, q <= 0, unknown
 * _type, two parameters with the same address, ...). Returns 0 or -1; free with sp_free either way. */
int sp_parse(const json_t *space, struct sp_space *out, struct dn_error *err);
/* Releases everything a space holds and zeroes it; safe to call twice. */
void sp_free(struct sp_space *sp);

/* Binds dims to the model's hyperparameters (by name; a nested dim "C/P"
 * binds to "C_P", else "P"), checks types (a string choice cannot set an
 * int hyperparameter, values must lie in the hyperparameter's range) and
 * fills hp_vals. A space that sets no hyperparameter of the model is an
 * error, and so are two dims that can be active together and set the same
 * hyperparameter. Returns 0 or -1; on error no dim stays bound. The space
 * keeps no reference to `def`. */
int sp_bind(struct sp_space *sp, const struct cm_model_def *def, struct dn_error *err);

/* One explicit binding: the space parameter at address `from` sets the
 * model hyperparameter `to`; `path` names the entry in errors
 * ("$.bind.hidden_size"). An address is a top-level parameter's key
 * ("hidden_size"), or a nested one's enclosing choice's key and its own
 * ("layer0/kernel_size"), optionally with the option's _name between them
 * ("layer0/conv/kernel_size"). */
struct sp_bind_pair {
	const char *from, *to, *path;
};

/* sp_bind with explicit bindings first: each addressed dim sets its `to`
 * instead of the hyperparameter its name would find; the others bind by
 * name as sp_bind does. An address that matches no parameter, or a `to`
 * that is no hyperparameter of the model, is an error at the pair's path
 * with the closest names ("did you mean"). */
int sp_bind_map(struct sp_space *sp, const struct cm_model_def *def, const struct sp_bind_pair *map,
    int nmap, struct dn_error *err);

/* After binding: the parameters that set nothing in the model, as "block,
 * width, opt/beta" in buf (truncated to fit; each by its address as
 * sp_bind_pair takes it), each followed by the hyperparameters of def
 * close to its key when there are some ("batch_sise (did you mean
 * batch_size?)": a misspelt name passes through and the answer is at the
 * default). A parameter with a well-known training knob's name (lr,
 * learning_rate, momentum, weight_decay, dropout, ..., see
 * docs/search-space.md) is not listed, nor a nested choice whose options
 * hold a bound parameter. Returns how many are listed. */
int sp_unbound_names(const struct sp_space *sp, const struct cm_model_def *def, char *buf, size_t len);
/* The space's parameters, unbound to a hyperparameter, named as a setting
 * of the query's workload ("optimizer", "dtype", "gradient_checkpointing",
 * Hugging Face's "optim", ...: space_bind.c's list): their values change
 * the costs but are not costed, every configuration taking the
 * workload's. The settings of training alone (the optimizer,
 * checkpointing, accumulation) are left out of an inference workload's
 * (training 0), where they cost nothing. Lists them in buf as
 * sp_unbound_names does; returns how many (sp_unbound_names leaves them
 * all out). Keys in `skip` (NULL-terminated, or NULL) are left out too:
 * the query parser has warned about them with a reason of its own. */
int sp_workload_names(const struct sp_space *sp, int training, const char *const *skip, char *buf, size_t len);

/* The i-th grid value of a discrete dim as the model sees it (for bound
 * dims) and as NNI writes it (new JSON reference). Unbound dims: a choice
 * gives the option index in .i, an integer grid its value in .i, any other
 * grid its value in .r. sp_value_json returns NULL for a continuous dim, an
 * index out of range, or when out of memory. */
union expr_val sp_value_hp(const struct sp_dim *d, int64_t i);
json_t *sp_value_json(const struct sp_dim *d, int64_t i);

/* The i-th grid value as a number; NAN for a string, boolean or sub-space
 * option, a continuous dim or an index out of range. */
double sp_value_num(const struct sp_dim *d, int64_t i);

/* Total number of configurations of the space over its discrete dims
 * (nested choices sum over options), as a decimal string (beyond 64 bits).
 * Continuous dims do not multiply the count. The string is malloc'd (the
 * caller frees it); NULL when out of memory. */
char *sp_count_total(const struct sp_space *sp);

/*
 * Continuous parameters that no grid enumerates (uniform, loguniform,
 * normal, lognormal, qnormal, qlognormal that pass through) still belong in
 * every configuration handed out (docs/search-space.md, "Complete trials").
 *
 * sp_value_typical: the fixed value used in pages, cursors and the stream:
 * the middle of the range (uniform: (low + high) / 2; loguniform: the
 * geometric midpoint sqrt(low * high)), mu for normal, exp(mu) (the median)
 * for lognormal, and for the q-types that value rounded to a multiple of q
 * (then clipped to [low, high] for the bounded ones). NAN for a choice or
 * randint.
 *
 * sp_value_draw: one draw from the dim's own NNI distribution (every type
 * but choice), from the stream `*state`; each call consumes exactly two
 * outputs of sp_splitmix(state). sp_draw_stream gives the initial state of
 * parameter `name`'s stream for a request's seed: splitmix64 of (seed XOR
 * FNV-1a-64(name)). sp_splitmix is one step of splitmix64 (Steele, Lea and
 * Flood), the generator of every seeded sample.
 */
double sp_value_typical(const struct sp_dim *d);
double sp_value_draw(const struct sp_dim *d, uint64_t *state);
uint64_t sp_draw_stream(uint64_t seed, const char *name);
uint64_t sp_splitmix(uint64_t *state);


/*
 * The dim a parameter name designates: its address ("lr",
 * "layer0/Conv/kernel_size"), or the short form without option names
 * ("layer0/kernel_size") when exactly one dim has it. Returns the dim, or
 * -1 with err (path: `field`) DN_ENOENT "the space has no parameter" (with
 * the addresses close to the name: "did you mean batch_size?"), or
 * DN_EINVAL when the short form is ambiguous (the message lists every
 * address it may mean). err may be NULL.
 */
int sp_dim_lookup(const struct sp_space *sp, const char *name, const char *field, struct dn_error *err);
/* sp_dim_lookup without an error: the dim, or -1. */
int sp_dim_named(const struct sp_space *sp, const char *name);
/* The address of the dim `name` designates (as sp_dim_named), or `name`
 * itself when it designates none: what answers echo back. */
const char *sp_dim_address(const struct sp_space *sp, const char *name);

/* The NNI name of a type ("quniform"). */
const char *sp_type_name(enum sp_type t);

#endif
