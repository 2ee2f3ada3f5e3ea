/*
 * onnx_wire.h - the protocol-buffers wire format, read with every length
 * checked against the bytes that remain: a cursor over one message's
 * bytes yields (field number, wire type, value) in turn. Nothing here
 * knows ONNX; onnx_model.c gives the fields their meaning.
 *
 * Why a hand-written reader rather than protobuf-c: the importer needs a
 * handful of messages and fields, reads them without copying weights, and
 * must stay bounded on hostile input; generated code would add a build step
 * and the whole schema for no gain.
 */
#ifndef DN_ONNX_WIRE_H
#define DN_ONNX_WIRE_H

#include <stddef.h>
#include <stdint.h>

enum onnx_wire_type { ONNX_WIRE_VARINT = 0, ONNX_WIRE_I64 = 1, ONNX_WIRE_LEN = 2, ONNX_WIRE_I32 = 5 };

struct onnx_wire {
	const uint8_t *p, *end;
};

/* One field: its number and wire type, and its value: `u` for VARINT, I64
 * and I32 (the raw bits), `data`/`len` for LEN (pointing into the input). */
struct onnx_wire_field {
	uint32_t num;
	enum onnx_wire_type type;
	uint64_t u;
	const uint8_t *data;
	size_t len;
};

/* A cursor over data[0..len). */
void onnx_wire_init(struct onnx_wire *w, const void *data, size_t len);
/* The next field into f: 1; 0 at the end of the message; -1 when the bytes
 * are not a valid message (a truncated value, a varint over 10 bytes, a
 * group or unknown wire type, field number 0). */
int onnx_wire_next(struct onnx_wire *w, struct onnx_wire_field *f);
/* Reads one varint of a packed repeated field from w: 1, 0 at the end,
 * -1 when truncated. */
int onnx_wire_varint(struct onnx_wire *w, uint64_t *out);

#endif
