/*
 * onnx_wire.c - the protocol-buffers wire format (see onnx_wire.h).
 * Invariant: w->p never passes w->end; every length is compared with the
 * bytes left before anything is read.
 */
#include "onnx_wire.h"

void
onnx_wire_init(struct onnx_wire *w, const void *data, size_t len)
{
	w->p = data;
	w->end = w->p + len;
}

int
onnx_wire_varint(struct onnx_wire *w, uint64_t *out)
{
	uint64_t v = 0;

	if (w->p >= w->end)
		return 0;
	for (int shift = 0; shift < 70; shift += 7) {
		uint8_t b;

		if (w->p >= w->end)
			return -1;
		b = *w->p++;
		if (shift == 63 && (b & 0x7e) != 0)
			return -1;
		v |= (uint64_t)(b & 0x7f) << shift;
		if ((b & 0x80) == 0) {
			*out = v;
			return 1;
		}
	}
	return -1;
}

static int
fixed(struct onnx_wire *w, int n, uint64_t *out)
{
	uint64_t v = 0;

	if (w->end - w->p < n)
		return -1;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)w->p[i] << (8 * i);
	w->p += n;
	*out = v;
	return 1;
}

int
onnx_wire_next(struct onnx_wire *w, struct onnx_wire_field *f)
{
	uint64_t key, len;
	int r;

	r = onnx_wire_varint(w, &key);
	if (r <= 0)
		return r;
	if ((key >> 3) == 0 || (key >> 3) > 0x1fffffff)
		return -1;
	f->num = (uint32_t)(key >> 3);
	f->type = (enum onnx_wire_type)(key & 7);
	f->data = NULL;
	f->len = 0;
	f->u = 0;
	switch (key & 7) {
	case ONNX_WIRE_VARINT:
		return onnx_wire_varint(w, &f->u) == 1 ? 1 : -1;
	case ONNX_WIRE_I64:
		return fixed(w, 8, &f->u);
	case ONNX_WIRE_I32:
		return fixed(w, 4, &f->u);
	case ONNX_WIRE_LEN:
		if (onnx_wire_varint(w, &len) != 1 || len > (uint64_t)(w->end - w->p))
			return -1;
		f->data = w->p;
		f->len = (size_t)len;
		w->p += len;
		return 1;
	default:
		return -1;
	}
}
