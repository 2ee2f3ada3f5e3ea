/*
 * onnx_import.c - the import driver (see onnx_import.h): parses the file,
 * indexes every value by name with its producer and consumers, turns the
 * graph inputs' dimensions into hyperparameters, translates the nodes in
 * the file's order (ONNX requires a topological one) and writes the model
 * document. All memory but the JSON document is in one arena, freed at the
 * end of the import; a file is mapped, not read.
 */
#include "onnx_import_priv.h"
#include "dn_deadline.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_MEMORY ((size_t)256 << 20)
#define MAX_FILE ((size_t)2 << 30)

static size_t
hash(const char *s)
{
	size_t h = 5381;
	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

struct onnx_val *
onnx_imp_find(struct onnx_imp *im, const char *name)
{
	size_t i;

	if (name == NULL)       /* an input a node lacks (fuzz_onnx: a Transpose with none) */
		return NULL;
	i = hash(name) & (im->tabsize - 1);
	while (im->tab[i] != NULL) {
		if (strcmp(im->tab[i]->name, name) == 0)
			return im->tab[i];
		i = (i + 1) & (im->tabsize - 1);
	}
	return NULL;
}

struct onnx_val *
onnx_imp_val(struct onnx_imp *im, const char *name)
{
	size_t i = hash(name) & (im->tabsize - 1);
	struct onnx_val *v;

	while (im->tab[i] != NULL) {
		if (strcmp(im->tab[i]->name, name) == 0)
			return im->tab[i];
		i = (i + 1) & (im->tabsize - 1);
	}
	v = onnx_arena_alloc(im->ar, 1, sizeof *v);
	if (v == NULL)
		return NULL;
	v->name = name;
	v->producer = -1;
	im->tab[i] = v;
	return v;
}

int
onnx_imp_fail(struct onnx_imp *im, enum dn_error_code code, const char *fmt, ...)
{
	const struct onnx_node *n = &im->m->graph.nodes[im->node];
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return dn_error_set(im->err, code, "", "node %d '%s' (%s): %s", im->node, n->name, n->op_type, msg);
}

void
onnx_imp_warn(struct onnx_imp *im, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (im->opts->warn == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	im->opts->warn(im->opts->warn_ctx, msg);
}

struct onnx_val *
onnx_imp_param_source(struct onnx_imp *im, const char *name)
{
	struct onnx_val *v = onnx_imp_find(im, name);

	for (int hops = 0; v != NULL && v->producer >= 0 && hops < 8; hops++) {
		const struct onnx_node *p = &im->m->graph.nodes[v->producer];
		if ((strcmp(p->op_type, "Unsqueeze") != 0 && strcmp(p->op_type, "Reshape") != 0 &&
		    strcmp(p->op_type, "Squeeze") != 0 && strcmp(p->op_type, "Identity") != 0 &&
		    strcmp(p->op_type, "Transpose") != 0 && strcmp(p->op_type, "Slice") != 0 &&
		    strcmp(p->op_type, "Split") != 0) || p->ninputs < 1)
			return NULL;
		v = onnx_imp_find(im, p->inputs[0]);
	}
	return v != NULL && v->t != NULL && v->param ? v : NULL;
}

static json_t *
dim_json(struct onnx_imp *im, struct onnx_dim d)
{
	return d.expr == NULL ? json_integer(d.v) : json_string(onnx_dim_text(im->ar, d));
}

static json_t *
shape_json(struct onnx_imp *im, const struct onnx_val *v)
{
	json_t *a = json_array();
	for (int i = 0; i < v->rank; i++)
		json_array_append_new(a, dim_json(im, v->shape[i]));
	return a;
}

#define MAX_REF 64

const char *
onnx_imp_ref(struct onnx_imp *im, const char *name)
{
	size_t len = strlen(name);
	char pre[24];
	int n;

	if (len > 0 && len <= MAX_REF)
		return name;
	n = dn_fmt(pre, sizeof pre, "t%d.", ++im->nrefs);
	if (len > (size_t)(MAX_REF - n))
		name += len - (size_t)(MAX_REF - n);
	return onnx_arena_printf(im->ar, "%s%s", pre, name);
}

int
onnx_imp_add_index_input(struct onnx_imp *im, struct onnx_val *v)
{
	json_t *in = json_object();

	v->ref = onnx_imp_ref(im, v->name);
	if (v->ref == NULL)
		return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
	json_object_set_new(in, "name", json_string(v->ref));
	json_object_set_new(in, "shape", shape_json(im, v));
	json_object_set_new(in, "dtype", json_string("int64"));
	if (v->iota)
		json_object_set_new(in, "id_range", dim_json(im, v->id_range));
	json_array_append_new(im->inputs, in);
	v->kind = ONNX_V_DATA;
	return 0;
}

/* A symbolic dimension's hyperparameter name: renamed by opts, else the
 * dim_param with characters outside [A-Za-z0-9_] replaced by '_'. */
static const char *
hp_name(struct onnx_imp *im, const char *param)
{
	const char *const *r = im->opts->renames;
	size_t len = strlen(param);
	char *s;

	for (; r != NULL && *r != NULL; r++)
		if (strncmp(*r, param, len) == 0 && (*r)[len] == '=')
			return *r + len + 1;
	s = onnx_arena_printf(im->ar, "%s%s", isdigit((unsigned char)param[0]) ? "d" : "", param);
	if (s == NULL)
		return NULL;
	for (char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			*p = '_';
	return s;
}

static int
add_hp(struct onnx_imp *im, const char *name, const char *input, int axis)
{
	json_t *h;

	if (json_object_get(im->hps, name) != NULL)
		return 0;
	h = json_pack("{s:s, s:i, s:i, s:i, s:s}", "type", "int", "default", 1, "min", 1, "max", 65536,
	    "description", "");
	if (h == NULL)
		return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
	json_object_set_new(h, "description",
	    json_string(onnx_arena_printf(im->ar, "symbolic dimension %d of ONNX input '%s'", axis, input)));
	return json_object_set_new(im->hps, name, h) == 0 ? 0 : -1;
}

static int
add_input(struct onnx_imp *im, const struct onnx_value_info *vi)
{
	struct onnx_val *v = onnx_imp_val(im, vi->name);
	json_t *in;

	if (v == NULL)
		return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
	if (vi->rank < 0)
		return dn_error_set(im->err, DN_EINVAL, "", "graph input '%s' has no shape", vi->name);
	v->kind = ONNX_V_DATA;
	v->ref = onnx_imp_ref(im, vi->name);
	if (v->ref == NULL)
		return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
	v->rank = vi->rank;
	for (int i = 0; i < vi->rank; i++) {
		if (vi->dim_param[i] != NULL && vi->dim_param[i][0] != '\0') {
			const char *n = hp_name(im, vi->dim_param[i]);
			if (n == NULL || add_hp(im, n, vi->name, i) < 0)
				return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
			v->shape[i] = onnx_dim_sym(n);
		} else if (vi->dim_value[i] > 0) {
			v->shape[i] = onnx_dim_int(vi->dim_value[i]);
		} else {
			const char *n = onnx_arena_printf(im->ar, "dim_%d_%d", im->m->graph.ninputs, i);
			if (n == NULL || add_hp(im, n, vi->name, i) < 0)
				return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
			v->shape[i] = onnx_dim_sym(n);
		}
	}
	in = json_object();
	json_object_set_new(in, "name", json_string(v->ref));
	json_object_set_new(in, "shape", shape_json(im, v));
	if (vi->elem_type == ONNX_INT64 || vi->elem_type == ONNX_INT32)
		json_object_set_new(in, "dtype", json_string("int64"));
	else if (vi->elem_type == ONNX_FLOAT || vi->elem_type == ONNX_FLOAT16 || vi->elem_type == ONNX_BFLOAT16 ||
	    vi->elem_type == ONNX_DOUBLE)
		json_object_set_new(in, "dtype", json_string("float"));
	else {
		json_decref(in);
		return dn_error_set(im->err, DN_EINVAL, "", "graph input '%s': element type %d is neither float nor integer",
		    vi->name, vi->elem_type);
	}
	json_array_append_new(im->inputs, in);
	return 0;
}

/* External data must be where the file says, long enough for the tensor. */
static int
check_external(struct onnx_imp *im, const struct onnx_tensor *t)
{
	struct stat st;
	char *path;

	if (t->location == NULL || t->location[0] == '\0')
		return dn_error_set(im->err, DN_EINVAL, "", "initializer '%s': external data without a location", t->name);
	if (strstr(t->location, "..") != NULL || t->location[0] == '/')
		return dn_error_set(im->err, DN_EINVAL, "", "initializer '%s': external data location '%s' leaves the model's folder",
		    t->name, t->location);
	if (im->opts->base_dir == NULL)
		return 0;
	path = onnx_arena_printf(im->ar, "%s/%s", im->opts->base_dir, t->location);
	if (path == NULL)
		return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
	if (stat(path, &st) != 0)
		return dn_error_set(im->err, DN_ENOENT, "", "initializer '%s': external data file '%s' is missing (%s)",
		    t->name, path, strerror(errno));
	if (t->ext_offset >= 0 && t->ext_length >= 0 &&
	    (t->ext_offset > (int64_t)st.st_size || t->ext_length > (int64_t)st.st_size - t->ext_offset))
		return dn_error_set(im->err, DN_EINVAL, "", "initializer '%s': external data file '%s' is shorter than the tensor",
		    t->name, path);
	return 0;
}

static int
index_values(struct onnx_imp *im)
{
	const struct onnx_graph *g = &im->m->graph;
	size_t want = 16;
	size_t total = (size_t)g->ninits + (size_t)g->ninputs + 1;

	for (int i = 0; i < g->nnodes; i++)
		total += (size_t)g->nodes[i].noutputs + (size_t)g->nodes[i].ninputs;
	while (want < 2 * total)
		want *= 2;
	im->tabsize = want;
	im->tab = onnx_arena_alloc(im->ar, want, sizeof *im->tab);
	im->fuse = onnx_arena_alloc(im->ar, (size_t)g->nnodes + 1, sizeof *im->fuse);
	im->fuse_x = onnx_arena_alloc(im->ar, (size_t)g->nnodes + 1, sizeof *im->fuse_x);
	im->fuse_affine = onnx_arena_alloc(im->ar, (size_t)g->nnodes + 1, sizeof *im->fuse_affine);
	im->fuse_groups = onnx_arena_alloc(im->ar, (size_t)g->nnodes + 1, sizeof *im->fuse_groups);
	im->embeddings = onnx_arena_alloc(im->ar, (size_t)g->nnodes + 1, sizeof *im->embeddings);
	if (im->tab == NULL || im->fuse == NULL || im->fuse_x == NULL || im->fuse_affine == NULL || im->fuse_groups == NULL ||
	    im->embeddings == NULL)
		return dn_error_set(im->err, DN_ETOOBIG, "", "ONNX graph too large for the import's memory limit");
	for (int i = 0; i < g->ninits; i++) {
		struct onnx_val *v = onnx_imp_val(im, g->inits[i].name);
		if (v == NULL)
			return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
		if (g->inits[i].external && check_external(im, &g->inits[i]) < 0)
			return -1;
		if (g->inits[i].rank > ONNX_MAX_RANK)
			return dn_error_set(im->err, DN_ETOOBIG, "", "initializer '%s' has too many dimensions", v->name);
		v->kind = ONNX_V_CONST;
		v->t = &g->inits[i];
		v->param = 1;
		v->rank = g->inits[i].rank;
		for (int d = 0; d < v->rank; d++)
			v->shape[d] = onnx_dim_int(g->inits[i].dims[d]);
	}
	for (int i = 0; i < g->ninputs; i++) {
		struct onnx_val *v = onnx_imp_find(im, g->inputs[i].name);
		if (v != NULL && v->kind == ONNX_V_CONST)
			continue; /* older exports list initializers as inputs */
		if (add_input(im, &g->inputs[i]) < 0)
			return -1;
	}
	for (int i = 0; i < g->nnodes; i++) {
		const struct onnx_node *n = &g->nodes[i];
		/* every operator has an output; the passes that look ahead
		 * (onnx_fuse.c, a bias Add folded into its linear layer, the
		 * RNN chains) read a reader's outputs[0] */
		if (n->noutputs < 1) {
			im->node = i;
			return onnx_imp_fail(im, DN_EINVAL, "the node has no output (every operator has at least one)");
		}
		for (int k = 0; k < n->noutputs; k++) {
			struct onnx_val *v = onnx_imp_val(im, n->outputs[k]);
			if (v == NULL)
				return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
			if (n->outputs[k][0] != '\0' && (v->producer >= 0 || v->kind != ONNX_V_NONE)) {
				im->node = i;
				return onnx_imp_fail(im, DN_EINVAL, "output '%s' is produced twice", n->outputs[k]);
			}
			v->producer = i;
		}
		for (int k = 0; k < n->ninputs; k++) {
			struct onnx_val *v;
			if (n->inputs[k][0] == '\0')
				continue;
			v = onnx_imp_val(im, n->inputs[k]);
			if (v == NULL)
				return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
			if (v->nconsumers < 4)
				v->consumers[v->nconsumers] = i;
			v->nconsumers++;
		}
	}
	/* torch's exporter keeps one initializer of parameters with equal
	 * values (a fresh model's LayerNorm weights, all ones) and gives the
	 * others as Identity nodes of it: each such output is that parameter,
	 * before onnx_fuse.c looks for a LayerNorm's scale and shift (it took
	 * them for activations, and the shift was counted twice) */
	for (int i = 0; i < g->nnodes; i++) {
		const struct onnx_node *n = &g->nodes[i];
		struct onnx_val *x, *o;
		if (strcmp(n->op_type, "Identity") != 0 || n->domain[0] != '\0' || n->ninputs != 1 ||
		    (x = onnx_imp_find(im, n->inputs[0])) == NULL || x->kind != ONNX_V_CONST || !x->param ||
		    (o = onnx_imp_find(im, n->outputs[0])) == NULL)
			continue;
		o->kind = ONNX_V_CONST;
		o->t = x->t;
		o->param = 1;
		o->transposed = x->transposed;
		o->rank = x->rank;
		memcpy(o->shape, x->shape, sizeof o->shape);
	}
	return 0;
}

/* torch.onnx.export's default (training=TrainingMode.EVAL) folds each
 * batch norm into the convolution before it, as a bias, and drops dropout:
 * the training dnnsat prices would then have neither. Warned where a
 * PyTorch graph has convolutions, every one with a bias, and no
 * BatchNormalization (a model that has no batch norm is warned too: the
 * graph cannot tell the two apart). */
static void
warn_folded_bn(struct onnx_imp *im)
{
	const struct onnx_graph *g = &im->m->graph;
	int convs = 0;

	if (im->m->producer == NULL || strcmp(im->m->producer, "pytorch") != 0)
		return;
	for (int i = 0; i < g->nnodes; i++) {
		const struct onnx_node *n = &g->nodes[i];
		if (strcmp(n->op_type, "BatchNormalization") == 0)
			return;
		if (strcmp(n->op_type, "Conv") == 0) {
			if (n->ninputs < 3 || n->inputs[2][0] == '\0')
				return;
			convs++;
		}
	}
	if (convs > 0)
		onnx_imp_warn(im, "no BatchNormalization, and each of the %d convolutions has a bias: if the model "
		    "has batch norm, this is an eval-mode export (torch.onnx.export's default), which folds it into "
		    "the convolutions and drops dropout, so training is priced without them; export with "
		    "training=torch.onnx.TrainingMode.TRAINING (docs/onnx.md)", convs);
}

static json_t *
new_doc(struct onnx_imp *im)
{
	const char *name = im->opts->name != NULL ? im->opts->name : im->m->graph.name;
	json_t *doc = json_object();

	if (name == NULL || name[0] == '\0')
		name = "imported";
	json_object_set_new(doc, "dnnsat_model", json_integer(1));
	json_object_set_new(doc, "name", json_string(name));
	json_object_set_new(doc, "description",
	    json_string(onnx_arena_printf(im->ar, "imported from ONNX (producer '%s', opset %lld, %d nodes)",
	        im->m->producer, (long long)im->m->opset, im->m->graph.nnodes)));
	im->hps = json_object();
	im->inputs = json_array();
	im->layers = json_array();
	json_object_set(doc, "hyperparameters", im->hps);
	json_object_set(doc, "inputs", im->inputs);
	json_object_set(doc, "layers", im->layers);
	json_decref(im->hps);
	json_decref(im->inputs);
	json_decref(im->layers);
	return doc;
}

json_t *
onnx_import(const void *data, size_t len, const struct onnx_import_opts *opts, struct dn_error *err)
{
	struct onnx_arena ar;
	struct onnx_model m;
	struct onnx_imp im;
	json_t *doc = NULL;

	memset(&im, 0, sizeof im);
	onnx_arena_init(&ar, opts->memory_limit ? opts->memory_limit : DEFAULT_MEMORY);
	if (onnx_model_parse(data, len, &ar, &m, err) < 0)
		goto out;
	if (m.opset != 0 && (m.opset < 7 || m.opset > 18)) {
		dn_error_set(err, DN_EINVAL, "", "ONNX opset %lld is not supported (7 to 18 are)", (long long)m.opset);
		goto out;
	}
	im.ar = &ar;
	im.m = &m;
	im.opts = opts;
	im.err = err;
	doc = new_doc(&im);
	if (index_values(&im) < 0)
		goto fail;
	if (json_array_size(im.inputs) == 0) {
		dn_error_set(err, DN_EINVAL, "", "the ONNX graph has no input that is not an initializer");
		goto fail;
	}
	warn_folded_bn(&im);
	onnx_fuse_find(&im);
	for (int i = 0; i < m.graph.nnodes; i++) {
		im.node = i;
		/* the server's request deadline (dn_deadline.h; none in the CLI) */
		if ((i & 63) == 0 && dn_deadline_check(err, "", "importing the ONNX graph") != 0)
			goto fail;
		if (onnx_ops_translate(&im, i) < 0 || dn_error_isset(err)) {
			/* the few arithmetic failures that return without a message */
			onnx_imp_fail(&im, DN_EINVAL, "shape arithmetic overflows, divides by zero or runs out of memory");
			goto fail;
		}
	}
	if (json_array_size(im.layers) == 0) {
		dn_error_set(err, DN_EINVAL, "", "the ONNX graph computes nothing from its inputs");
		goto fail;
	}
	goto out;
fail:
	json_decref(doc);
	doc = NULL;
out:
	for (int i = 0; i < im.nattns; i++)
		json_decref(im.attns[i].shadow);
	onnx_arena_free(&ar);
	return doc;
}

/* The file is mapped, not read: the weights' bytes are never touched (only
 * their dimensions count), so a 100 MB model costs the pages of its graph. */
json_t *
onnx_import_file(const char *path, const struct onnx_import_opts *opts, struct dn_error *err)
{
	struct onnx_import_opts o = *opts;
	struct stat st;
	char *dir, *slash;
	void *map;
	json_t *doc;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return dn_error_set(err, DN_ENOENT, "", "cannot open '%s': %s", path, strerror(errno)), NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return dn_error_set(err, DN_EINVAL, "", "cannot read '%s': not a regular file", path), NULL;
	}
	if ((size_t)st.st_size > MAX_FILE) {
		close(fd);
		return dn_error_set(err, DN_ETOOBIG, "", "'%s' is %lld bytes; ONNX files over 2 GiB keep weights as external data",
		    path, (long long)st.st_size), NULL;
	}
	if (st.st_size == 0) {
		close(fd);
		return dn_error_set(err, DN_EINVAL, "", "corrupt ONNX file: model: no graph (the file '%s' is empty)", path),
		    NULL;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return dn_error_set(err, DN_EINVAL, "", "cannot read '%s': %s", path, strerror(errno)), NULL;
	dir = strdup(path);
	if (dir == NULL) {
		munmap(map, (size_t)st.st_size);
		return dn_error_set(err, DN_ENOMEM, "", "out of memory"), NULL;
	}
	slash = strrchr(dir, '/');
	if (slash != NULL)
		*slash = '\0';
	else
		strcpy(dir, ".");
	if (o.base_dir == NULL)
		o.base_dir = dir;
	doc = onnx_import(map, (size_t)st.st_size, &o, err);
	free(dir);
	munmap(map, (size_t)st.st_size);
	return doc;
}
