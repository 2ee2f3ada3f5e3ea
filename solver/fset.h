/*
 * fset.h - the feasible-set engine: over the discrete grid of a bound search
 * space, decide whole sub-spaces at once by interval bounds of the query's
 * `feasible` expression (a box whose bound is [1, 1] is counted without
 * being listed, [0, 0] is pruned), split the others, and keep the counts so
 * that the k-th configuration, pages, cursors, uniform samples and the
 * reduced space are answered without searching again.
 *
 * Positions: each engine variable's values are sorted ascending by the
 * model value (a categorical by its index), position 0 first. The
 * deterministic order of configurations is lexicographic over the variables
 * in engine order. A configuration is a vector of positions.
 *
 * Counts are exact 128-bit integers (spaces up to 2^127, about 1.7e38
 * configurations; fs_init refuses a larger one);
 * when a deadline stops the search, the answer is a certified interval
 * [lower, upper] instead.
 */
#ifndef DN_FSET_H
#define DN_FSET_H

#include <stdint.h>

#include "expr_tape.h"
#include "query.h"

typedef unsigned __int128 fs_count;
struct fs_undo;
struct fs_par;
struct fs_box_proj;

struct fs_var {
	int dim;                /* the space dim */
	int hp;                 /* the model hyperparameter, or -1 (passes through) */
	int64_t n;              /* positions */
	union expr_val *vals;   /* model value per position (explicit grids), or NULL */
	int64_t *dim_index;     /* dim value index per position, or NULL (progression) */
	const struct sp_dim *d; /* huge grids: values come from the dim (ascending) */
	int real;               /* values are REAL (else INT) */
	int parent;             /* engine var of the enclosing choice, or -1 */
	int64_t active_pos;     /* the parent's position that activates this var */
	int has_children;
	int nested_sets;        /* a var or continuous var nested in it, at any
	                         * depth, sets a hyperparameter: its option
	                         * decides values of the model (fs_passthrough_only) */
};

/*
 * A continuous space dim (uniform, loguniform) bound to a REAL model
 * hyperparameter: not a position of configurations but a quantifier. A
 * configuration of the discrete variables is feasible when the cost model
 * admits it at SOME value of the continuous ones, decided exactly on a grid:
 * the range (its logarithm for loguniform) is cut into 2^bits cells, and
 * the grid is their ends (low and high included). Boxes are searched by
 * bisection of cells (fset_real.c): a cell whose bound is [1, 1] holds
 * feasible grid values for every configuration of the box, one whose bound
 * is [0, 0] no feasible value at all.
 */
struct fs_cvar {
	int dim;                /* the space dim */
	int hp;                 /* the model hyperparameter (REAL) */
	int parent;             /* engine var of the enclosing choice, or -1 */
	int64_t active_pos;     /* the parent's position that activates it */
	int logscale;           /* cells bisect log(value) (loguniform) */
	int bits;               /* the finest cells are 2^-bits of the range */
	double L, H;            /* the dim's range */
	double lo, hi;          /* the current cell (the whole range between searches) */
	double rlo, rhi;        /* the values searches may take: [L, H], or a range of it
	                         * (fs_real_restrict); its ends count as grid values */
};

enum fs_status { FS_EMPTY, FS_FULL, FS_MIXED, FS_UNKNOWN };

/* A node of the search tree: the box of its parent with var `var`
 * restricted to [lo, hi]. Children are stored contiguously. */
struct fs_node {
	fs_count count;         /* exact feasible count (FULL, MIXED) */
	fs_count upper;         /* feasible upper bound (UNKNOWN: the box size) */
	int64_t lo, hi;
	int32_t var;
	int32_t parent;         /* -1 for the root */
	int32_t first_child;
	int32_t nchildren;
	uint8_t status;
};

/* A top-level space parameter as fs_from_args reads it: its name and the
 * name's hash, its engine var (-1: not discrete, its value passes through). */
struct fs_arg_key {
	uint32_t hash;
	int32_t var;
	int32_t dim;            /* its dim in the space */
	const char *key;
};

/* The tabulated nodes the check reads that depend on the same variables
 * (at most FS_FILL_VARS of them, maybe none; fset_check.c): fills
 * [first, first + count) of check_fill, whose values at the combination of
 * positions pos are the row r = sum of pos[var[j]] * stride[j], at
 * check_tab[off + r * count ...]; fault[r] marks a row where one of them
 * overflows (fault NULL: none does). */
#define FS_FILL_VARS 4
struct fs_fill_group {
	int32_t nv, var[FS_FILL_VARS];
	int64_t n[FS_FILL_VARS];        /* positions of each */
	int64_t stride[FS_FILL_VARS];
	int32_t first, count;
	int64_t rows, off;
	uint8_t *fault;
};

struct fs_engine {
	struct sq_query *q;
	const struct expr_graph *g;
	expr_id root;                   /* the boolean node decided: q->feasible, or one part */
	struct expr_tape tape;          /* exact evaluation of the whole graph */
	struct fs_var *vars;
	int nvars;
	/* bounding */
	struct expr_ival *hpiv;         /* per hyperparameter: current interval */
	struct expr_ival *iv;           /* per node */
	uint8_t *cone;                  /* node needed by `feasible` */
	int32_t **dep;                  /* per hyperparameter: cone nodes depending on it, in order */
	int32_t *ndep;
	int32_t *cone_list, ncone;
	union expr_val *point;          /* scratch for exact evaluation */
	union expr_val *config;         /* per hyperparameter */
	/* the search tree */
	struct fs_node *nodes;
	int32_t nnodes, capnodes;
	int32_t max_nodes;              /* beyond it, subtrees are searched on demand */
	int expand_only;                /* fs_count_box splits one level, no deeper */
	int threads;                    /* counting threads (fs_count_all, fs_count_more); fs_init
	                                 * sets 1. The stored tree, and so every answer read from it,
	                                 * is the same at any number; bound_calls and evals are not
	                                 * (fset_par.c) */
	struct fs_par *par;             /* private: the parallel count this engine works for, or NULL */
	int par_force_steals;           /* tests: the first this many times a parallel count's only
	                                 * busy worker has boxes left, it waits for an idle worker
	                                 * and gives it some (fset_par.c); 0 (fs_init) = never */
	struct fs_box_proj **job_proj;  /* private: per stored node, the projection its distributed
	                                 * job sent (fset_jobdata.c), or NULL; njob_proj entries */
	int32_t njob_proj;
	void (*on_decided)(void *ctx, struct fs_engine *e, int d, int full);  /* private: fs_count_box
	                                 * calls it for every box it decides (at active var d, full
	                                 * or empty) when set (fset_project.c: a job's projection) */
	void *decided_ctx;
	/* current box */
	int64_t *lo, *hi;
	/* statistics and limits */
	int64_t bound_calls, evals;
	int64_t steals;                 /* boxes parallel counts' workers gave to idle ones */
	double cpu_span;                /* CPU seconds on the longest thread of the parallel counts so
	                                 * far (fset_par.c: collecting the leaves and the graft plus
	                                 * the busiest worker),
	                                 * what they take on idle cores; 0 on one thread */
	double deadline;                /* CLOCK_MONOTONIC seconds, 0 = none */
	int64_t work_limit;             /* stop as at a deadline once bound_calls reaches it, 0 = none
	                                 * (deterministic slices of work; the caller clears it) */
	void (*progress)(void *ctx, const struct fs_engine *e);  /* called about every 0.25 s, may be NULL */
	void *progress_ctx;
	double next_progress;
	int timed_out;
	fs_count total;                 /* all configurations of the grid */
	fs_count lower, upper;          /* feasible count bounds (equal when exact) */
	int counted;
	/* private (fset_*.c) */
	fs_count *full;                 /* per var: size of its subtree over all positions */
	int *dim_var;                   /* space dim -> engine var, or -1 */
	union expr_val **tab;           /* per node: exact value per position of tab_var, or NULL */
	uint32_t *stamp;                /* per node: pass in which its bound last changed */
	int32_t nnodes_graph;           /* g->n at fs_init: the per-node arrays' length */
	uint32_t pass;
	int32_t *tab_var;               /* per node: the one engine var it depends on, or -1 */
	struct fs_undo *undo;           /* changes to roll back when leaving a box */
	int64_t nundo, capundo;
	int64_t clock_at;               /* bound_calls at which fs_past_deadline reads the clock next */
	struct fs_cvar *cvars;          /* continuous hyperparameters (quantified, fset_real.c) */
	int ncvars;
	int *dim_cvar;                  /* space dim -> continuous var, or -1 */
	/* the per-trial check (answer_check.c, fset_check.c): a partial tape of
	 * what a check reads, and the tabulated nodes it reads, copied from
	 * their tables before it runs. Like the tape, the tables and the space,
	 * immutable after fs_init (fs_init_root builds none). */
	struct expr_tape check_tape;
	int32_t *check_fill, ncheck_fill;       /* the tabulated nodes it reads, grouped by variables */
	struct fs_fill_group *check_groups;     /* per set of variables: its nodes and their table */
	int ncheck_groups;
	union expr_val *check_tab;      /* the groups' tables, one block: a row per combination */
	uint8_t *check_part_real;       /* per query part: its value is REAL */
	/* reading a configuration's text pairs (fs_from_args): top-level dims
	 * by name (open addressing, -1 empty), and each var's numeric value
	 * per position (NULL where the grid is not a plain list of numbers) */
	struct fs_arg_key *arg_keys;
	int32_t *arg_slot;              /* index into arg_keys, or -1 */
	uint32_t arg_mask;
	int arg_required;               /* top-level discrete dims, each to be given once */
	int arg_plain;                  /* the text reading applies (no nested dims) */
	double **var_num;
	int nav_plain;                  /* tests and benchmarks: fs_kth, fs_next and fs_walk take
	                                 * the search that predates fs_walk (bounds narrowed on every
	                                 * step, each configuration searched from the root) */
};

/* Copies the check's tabulated values for the configuration at pos into
 * vals (indexed by node). 0, or -1 when a position is off the grid or a
 * tabulated value overflows there (the caller then evaluates the whole
 * tape). */
int fs_check_fill(const struct fs_engine *e, const int64_t *pos, union expr_val *vals);

/* Prepares the engine for a parsed query (which must outlive it), deciding
 * q->feasible, with the per-trial check's tape and tables; fs_init_root
 * decides any boolean node of the same graph (one budget alone, for
 * explanations) and builds no check (engines that only search). */
int fs_init(struct fs_engine *e, struct sq_query *q, struct dn_error *err);
int fs_init_root(struct fs_engine *e, struct sq_query *q, expr_id root, struct dn_error *err);
void fs_free(struct fs_engine *e);

/* Counts the feasible configurations, building the search tree, on
 * e->threads threads (the same tree at any number, fset_par.c). With a
 * deadline (seconds from now, 0 = none), an unfinished count leaves
 * e->lower < e->upper and e->timed_out set. Returns 0 or -1. */
int fs_count_all(struct fs_engine *e, double seconds, struct dn_error *err);

/* Continues an unfinished count (fs_count_all whose deadline passed, or
 * fs_progress_load) for up to `seconds` more (0 = until exact), refining
 * the stored tree rather than starting over; results as fs_count_all's
 * (e->lower, e->upper, e->timed_out). A no-op on an exact count. -1 with
 * err when there is no count to continue or memory runs out. */
int fs_count_more(struct fs_engine *e, double seconds, struct dn_error *err);

/*
 * Saved progress of a count: the search tree (which boxes are decided, and
 * the counts of those that are), lower, upper, total and a fingerprint of
 * the engine (its variables and their grids, the expression graph with the
 * budgets, the fixed hyperparameters), as a compact, versioned binary blob
 * with a fixed byte order and a checksum (format: fset_progress.c).
 * fs_progress_save mallocs *buf (the caller frees it). fs_progress_load,
 * on an engine fs_init'ed for the same query, restores the count so that
 * fs_count_more continues it and, once exact, fs_kth, fs_next and the
 * projections answer as after an uninterrupted count. A truncated,
 * corrupted or foreign blob (another query, model or engine version) is
 * rejected with err, the engine unchanged and usable. 0 or -1.
 */
int fs_progress_save(const struct fs_engine *e, void **buf, size_t *len, struct dn_error *err);
int fs_progress_load(struct fs_engine *e, const void *buf, size_t len, struct dn_error *err);

/*
 * A count cut into jobs for other processes (fset_jobs.c; the service's
 * distributed count). fs_jobs_start counts as fs_count_all with a deadline
 * of `seconds`, but depth first only: an unfinished count leaves few,
 * large undecided boxes (0 or -1 with err). fs_jobs_split splits the undecided leaves of an
 * unfinished count's stored tree a level at a time, largest first, until
 * at least `want` are undecided (or none splits further: the node cap, or
 * boxes of one configuration); the tree and its bounds stay valid. 0, or
 * -1 with err (no count, out of memory). fs_jobs_leaves lists the
 * undecided leaves into *leaves (malloc'd, largest box first; *n of them,
 * 0 when the count is exact); node numbers are those of this engine's
 * tree: fs_progress_save and fs_progress_load lay a tree out anew, so a
 * job list meant for a saved tree is taken from the tree loaded back.
 * fs_jobs_path: a node's box as text, the "var:lo:hi" narrowings from the
 * root joined by '/' (malloc'd; NULL out of memory or no such node).
 * fs_jobs_count, on an engine fs_init'ed for the same query (in its base
 * box; any tree of its own untouched): the exact count of that box into
 * *count; 0, 1 when it stopped first (e->timed_out set, by a deadline or
 * by e->progress), -1 with err (a malformed path names "path").
 * fs_jobs_graft puts a job's count into undecided leaf `node` (an exact
 * leaf whose subtree is not stored; the same count again is a no-op,
 * another is an error); fs_jobs_sum then sums the tree (e->lower,
 * e->upper, e->timed_out as after a count).
 */
int fs_jobs_start(struct fs_engine *e, double seconds, struct dn_error *err);
int fs_jobs_split(struct fs_engine *e, int want, struct dn_error *err);
int fs_jobs_leaves(const struct fs_engine *e, int32_t **leaves, int *n, struct dn_error *err);
char *fs_jobs_path(const struct fs_engine *e, int32_t node);
int fs_jobs_count(struct fs_engine *e, const char *path, fs_count *count, struct dn_error *err);
int fs_jobs_graft(struct fs_engine *e, int32_t node, fs_count count, struct dn_error *err);
/* 1 when leaf `node` holds its count already (grafted, with or without
 * data, or decided by the count itself), 0 when it is undecided, -1 when
 * it is not a leaf of the tree: a follower grafts each done job once. */
int fs_jobs_grafted(const struct fs_engine *e, int32_t node);
/*
 * A job's data (fset_jobdata.c): what the final answer needs of its box
 * besides the count, so that no replica searches the box again. fs_jobs_run
 * is fs_jobs_count that also projects the box as it counts it (no tree
 * stored): on 0, *data (malloc'd, *len bytes) is the
 * box's projection in the versioned format of fset_jobdata.c, bound to
 * that count. fs_jobs_graft_data grafts a count (as fs_jobs_graft) with
 * its job's data: the data is checked (checksum, version, this engine's
 * variables, the count, every position inside the leaf's box) before
 * anything changes; 0, or -1 with err naming "data" (malformed: nothing
 * grafted) or as fs_jobs_graft. fs_project then merges the data instead of
 * searching the box. fs_jobs_drop forgets every job's data (a new tree:
 * fs_count_all, fs_progress_load and fs_free call it).
 */
int fs_jobs_run(struct fs_engine *e, const char *path, fs_count *count, void **data, size_t *len,
    struct dn_error *err);
int fs_jobs_graft_data(struct fs_engine *e, int32_t node, fs_count count, const void *data, size_t len,
    struct dn_error *err);
void fs_jobs_drop(struct fs_engine *e);
void fs_jobs_sum(struct fs_engine *e);

/* The k-th feasible configuration (0-based) into pos[nvars] (-1 for
 * inactive vars). Needs an exact count, whose stored tree it walks without
 * bounding down to a FULL leaf. Returns 0, 1 when k is past the end, -1 on
 * error. */
int fs_kth(struct fs_engine *e, fs_count k, int64_t *pos, struct dn_error *err);

/* The first feasible configuration >= `from` in the order (from NULL: the
 * very first) into pos (-1 for inactive vars; pos may be from). Returns 0,
 * 1 when there is none, -1 on error. Needs no count: this is how cursors
 * resume (through the stored tree when there is one, as fs_walk). */
int fs_next(struct fs_engine *e, const int64_t *from, int64_t *pos, struct dn_error *err);

/*
 * Lists the feasible configurations >= `from` (NULL: from the first) in
 * order, calling cb(ctx, pos) for each until cb returns non-zero. pos is
 * the walker's, valid during the call, with -1 for vars the configuration
 * leaves inactive (from's values there are ignored, as by fs_next). Needs
 * no count; a stored count tree (even an unfinished one) is walked without
 * bounding: FULL leaves enumerate without evaluation, EMPTY ones are
 * skipped, and only undecided leaves are searched; without a tree, one
 * search under bounds goes on after each configuration. cb may evaluate
 * (fs_to_json, fs_feasible_at) but must leave the box as it found it. In
 * a box narrowed by fs_restrict, this is fs_next and fs_increment in a
 * loop. Returns 1 when cb stopped it, 0 at the end, -1 with err
 * (DN_ETIMEOUT once e->deadline passes, DN_ENOMEM, a `from` that does not
 * fit). The same configurations as fs_next and fs_increment in a loop, at
 * a fraction of the cost per configuration.
 */
int fs_walk(struct fs_engine *e, const int64_t *from, int (*cb)(void *ctx, const int64_t *pos), void *ctx,
    struct dn_error *err);

/* The first feasible configuration in the current box, after the caller
 * narrowed some variables (fs_restrict). 0 found, 1 none, -1 error. */
int fs_first_in_box(struct fs_engine *e, int64_t *pos, struct dn_error *err);

/* Restricts var v to positions [lo, hi] for the following calls (bounds
 * updated); fs_unrestrict returns to the box before. */
int64_t fs_restrict(struct fs_engine *e, int v, int64_t lo, int64_t hi);
void fs_unrestrict(struct fs_engine *e, int64_t mark);
/* fs_restrict of var v to [lo, hi] (within its current range) and of its
 * enclosing choices to the options that activate it, so that only the
 * configurations in which v takes part remain. Returns the mark for
 * fs_unrestrict, -2 when the box holds no such configuration (an enclosing
 * choice already narrowed to another option; nothing narrowed), -1 out of
 * memory (nothing narrowed). */
int64_t fs_restrict_active(struct fs_engine *e, int v, int64_t lo, int64_t hi);

/* Restricts continuous var c to the values [lo, hi] (L <= lo <= hi <= H)
 * for the following calls: the grid values inside, and lo and hi
 * themselves (lo == hi: exactly that value). Returns the mark to give
 * fs_real_unrestrict, -1 out of memory (nothing restricted). */
int64_t fs_real_restrict(struct fs_engine *e, int c, double lo, double hi);
void fs_real_unrestrict(struct fs_engine *e, int c, int64_t mark);
/* Do the interval bounds prove that no value of continuous var c in [lo, hi]
 * (on the grid or between it) fits any configuration of the current box?
 * 1 proven, 0 not (something fits, the bounds are too loose, or out of
 * memory). Leaves the box as it found it. */
int fs_real_none_in(struct fs_engine *e, int c, double lo, double hi);
/* The value at the end j of the 2^k cells of continuous var c's range (the
 * grid: k = bits, j in [0, 2^bits]); the same number at every depth. */
double fs_cell_value(const struct fs_cvar *c, int64_t j, int k);

/* The engine var of the choice that encloses space dim `dim` (-1: top
 * level, or a parent that is no engine var), and in *active_pos the
 * position of the option that activates the dim (-1 when none does). */
int fs_dim_parent(const struct fs_engine *e, int dim, int64_t *active_pos);

/* The engine var of a space parameter (its address "layer0/Conv/kernel_size"
 * or an unambiguous short form, as sp_dim_named), or -1; the
 * position of a JSON value on its grid, or -1. */
int fs_var_named(const struct fs_engine *e, const char *name);
int64_t fs_position_of(struct fs_engine *e, int v, const json_t *value);

/* The processors online (sysconf), at least 1: the default of the CLI's
 * --threads and dnnsatd's --count-threads. */
int fs_par_cores(void);

/* Now plus `seconds` on the engine's clock (for e->deadline); 0 when
 * seconds <= 0 (no deadline). The dim value index of var v's position p. */
double fs_now_plus(double seconds);
double fs_now(void);
int64_t fs_dim_index_of(const struct fs_engine *e, int v, int64_t p);

/* Increments a position vector to the next configuration of the grid (not
 * necessarily feasible). Returns 0, or 1 at the end. */
int fs_increment(const struct fs_engine *e, int64_t *pos);

/* Is this configuration feasible? (exact evaluation; with continuous
 * hyperparameters: at some value of their grids, see struct fs_cvar) */
int fs_feasible_at(struct fs_engine *e, const int64_t *pos);

/* With continuous hyperparameters: values of them on their grids at which
 * the configuration pos fits, into r[ncvars] (NAN for one that pos leaves
 * inactive); with one continuous var its largest feasible grid value. 1
 * found, 0 when pos is not feasible. */
int fs_real_witness(struct fs_engine *e, const int64_t *pos, double *r);

/* The model configuration (one value per hyperparameter) of a position vector. */
void fs_config_of(struct fs_engine *e, const int64_t *pos, union expr_val *config);

/* Does var v take part in the configuration at pos (every enclosing
 * choice at the option that holds it)? 1 or 0. */
int fs_var_active(const struct fs_engine *e, const int64_t *pos, int v);

/* NNI-style JSON sample of a position vector (nested choices as
 * {"_name": ...} objects); new reference. A complete NNI parameter set:
 * every active parameter is present, a continuous one that passes through
 * with its representative value (sp_value_typical), so that the result is
 * a function of pos alone; fs_to_json_drawn writes drawn[k] for such a dim
 * k instead (drawn is indexed by space dim; only those entries are read). */
json_t *fs_to_json(struct fs_engine *e, const int64_t *pos);
json_t *fs_to_json_drawn(struct fs_engine *e, const int64_t *pos, const double *drawn);
/* The user's key order back on answers computed on a canonical query
 * (keys sorted: dnnsatd and prune compile that, so that every process
 * enumerates in one order): a reduced space with its keys, and those of
 * nested choices' options, in the order of the user's `space`; a
 * configuration likewise. Keys `space` lacks come last. New references
 * (the input itself when either is not an object). */
json_t *fs_space_in_order(const json_t *reduced, const json_t *space);
json_t *fs_config_in_order(const json_t *config, const json_t *space);

/* Position vector of a JSON configuration (NNI sample). -1 with err naming
 * the field when a value is not on the grid. */
int fs_from_json(struct fs_engine *e, const json_t *obj, int64_t *pos, struct dn_error *err);

/* Checks a query string's name=value pairs for values it cannot carry:
 * a top-level choice that lists null, true or false, given a text that
 * fs_arg_value does not make one of its values. 0, or -1 with err naming
 * "$.config.NAME" and saying to POST the JSON form. */
int fs_args_readable(struct fs_engine *e, const char *const *names, const char *const *values, int n,
    struct dn_error *err);

/* A query-string value read as a number, as the service reads them: 1 an
 * integer (*i), 2 a real (*d), 0 not a number (text, JSON, empty). */
int fs_text_number(const char *text, int64_t *i, double *d);
/* The same value as JSON: a number, JSON text for a nested choice
 * ({"_name": ...}), null for a name without "=value", else a string. */
json_t *fs_text_value(const char *text);
/* The value of top-level space parameter `name` given as query-string
 * text: fs_text_value's, except that "true", "false" and "null" are those
 * JSON values where the parameter is a choice that lists the value and not
 * the same text as a string (gradient_checkpointing=true for a choice of
 * true and false). A new reference, or NULL (out of memory). */
json_t *fs_arg_value(const struct fs_engine *e, const char *name, const char *text);

/* Position vector of a configuration given as name=value text pairs (a
 * query string), without building JSON: 0 done, 1 when the pairs need
 * fs_from_json's reading (nested choices, continuous hyperparameters bound
 * to the model, an unknown, repeated or missing name, a name without a
 * value (NULL), a value not on its grid...), which then gives the same
 * answer or the error. */
int fs_from_args(const struct fs_engine *e, const char *const *names, const char *const *values, int n,
    int64_t *pos);

/* The values a JSON configuration gives the continuous hyperparameters that
 * are active in pos, into the model configuration config (after
 * fs_config_of). Reads the engine only (like fs_from_json). -1 with err
 * when one is missing or outside its range. */
int fs_real_values_from_json(const struct fs_engine *e, const json_t *obj, const int64_t *pos,
    union expr_val *config, struct dn_error *err);

/*
 * Estimates and samples while a count is unfinished (fset_sample.c).
 *
 * The stored tree's leaves are FULL (every configuration fits), EMPTY,
 * undecided (an unfinished count), or counted but not stored (a tree
 * capped at max_nodes). The estimate is stratified Monte Carlo over the
 * undecided leaves: a leaf whose share of the undecided configurations
 * earns it at least FS_STRATUM_MIN of the draws is a stratum of its own
 * (draws in proportion to its size), the others are pooled into one
 * stratum (a leaf picked in proportion to its size, then a configuration
 * of it). Every draw is uniform in its leaf's box and evaluated exactly.
 * The estimate, lower + sum of stratum size x feasible fraction drawn, is
 * unbiased; its 95% interval is +-1.96 standard deviations, each
 * stratum's binomial variance taken at (hits + 1/2) / (draws + 1) (so a
 * stratum where no draw fit, or every one did, still counts), clipped to
 * the certified [lower, upper]. With an exact count: the count, no draws.
 */
#define FS_STRATUM_MIN 2

struct fs_estimate {
	int exact;              /* the count is exact: value = low = high = lower */
	double value;           /* the unbiased estimate of the feasible count */
	double low, high;       /* its 95% confidence interval, within [lower, upper] */
	int64_t draws, hits;    /* configurations drawn in undecided leaves, feasible among them */
	int64_t strata;         /* undecided leaves on their own, plus 1 when some are pooled */
	int64_t leaves;         /* undecided leaves */
};

struct fs_sampler;

/* Builds the sampler of an engine counted (exact or not, fs_count_all or
 * fs_count_more or fs_progress_load) over the whole grid, and the estimate
 * (draws > 0: that many draws, reproducible unless `seconds` > 0 passes
 * first; else as many as fit in about `seconds`), seeded; every stratum
 * gets FS_STRATUM_MIN draws whatever the time. The engine must not
 * count further while the sampler is used. 0, or -1 with err (no count,
 * a box narrowed by fs_restrict, out of memory). */
int fs_sampler_build(struct fs_engine *e, int64_t draws, double seconds, uint64_t seed, struct fs_sampler **out,
    struct dn_error *err);
const struct fs_estimate *fs_sampler_estimate(const struct fs_sampler *s);
void fs_sampler_free(struct fs_sampler *s);

/*
 * One feasible configuration into pos (-1 for inactive vars), verified by
 * exact evaluation, drawn from the sampler's distribution: a leaf picked
 * in proportion to its weight (FULL and counted leaves: their exact
 * counts; undecided ones: their estimated counts, size x the feasible
 * fraction drawn in their stratum), then uniformly among the feasible
 * configurations of that leaf (decoded in a FULL leaf; else uniform draws
 * in the box until one fits). With an exact count this is the uniform
 * distribution over the feasible set; otherwise uniform within each leaf,
 * leaves weighted by their estimated counts (unbiased up to the estimate's
 * error; undecided leaves where no draw fit are never picked). *rng is the
 * caller's seed state. 0 found, 1 none found before `deadline` (fs_now()
 * seconds, 0 = none) or none can be (no weight anywhere).
 */
int fs_sampler_draw(struct fs_engine *e, struct fs_sampler *s, uint64_t *rng, int64_t *pos, double deadline);

/* Seeded pseudo-random numbers (splitmix64) shared by every sampler: the
 * next 64 bits, a count uniform in [0, n) without modulo bias (n > 0). */
uint64_t fs_rand64(uint64_t *state);
fs_count fs_rand_below(uint64_t *state, fs_count n);

/* 128-bit counts as decimal text and back. */
void fs_count_str(fs_count c, char *buf, size_t len);
int fs_count_parse(const char *s, fs_count *out);

#endif
