/*
 * expr_tape_run.h - the evaluation loop of expr_tape.c: the runs of a tape
 * over operand arrays of one index width. expr_tape.c includes it twice,
 * with TAPE_IDX int32_t and int16_t (a small tape's arrays take half the
 * cache) and TAPE_RUN_FN the function's name; nothing else includes it.
 * Returns 1 when a value overflowed (evaluation stops at that run).
 */
/* A fold entry: acc starts as the first leaf's value and `step` takes in
 * each next leaf's, y, in order. */
#ifndef TAPE_FOLD
#define TAPE_FOLD(type, field, step) \
	for (j = s; j < e; j++) { \
		const TAPE_IDX *x_ = X + A[j]; \
		type acc = v[x_[0]].field; \
		for (int32_t k_ = 1; k_ < B[j]; k_++) { \
			type y = v[x_[k_]].field; \
			step; \
		} \
		v[D[j]].field = acc; \
	}
#endif

static int
TAPE_RUN_FN(const struct expr_tape *t, const TAPE_IDX *D, const TAPE_IDX *A, const TAPE_IDX *B,
    const TAPE_IDX *C, const TAPE_IDX *X, union expr_val *v)
{
	int of = 0;

	for (int32_t r = 0; r < t->nruns; r++) {
		int32_t s = t->runs[r].start, e = s + t->runs[r].count, j;
		switch (t->runs[r].op) {
		case OP(EK_ADD, EXPR_INT):
			for (j = s; j < e; j++)
				of |= __builtin_add_overflow(v[A[j]].i, v[B[j]].i, &v[D[j]].i);
			break;
		case OP(EK_ADD, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].r = v[A[j]].r + v[B[j]].r;
			break;
		case OP(EK_SUB, EXPR_INT):
			for (j = s; j < e; j++)
				of |= __builtin_sub_overflow(v[A[j]].i, v[B[j]].i, &v[D[j]].i);
			break;
		case OP(EK_SUB, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].r = v[A[j]].r - v[B[j]].r;
			break;
		case OP(EK_MUL, EXPR_INT):
			for (j = s; j < e; j++)
				of |= __builtin_mul_overflow(v[A[j]].i, v[B[j]].i, &v[D[j]].i);
			break;
		case OP(EK_MUL, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].r = v[A[j]].r * v[B[j]].r;
			break;
		case OP(EK_DIV, EXPR_INT):
			for (j = s; j < e; j++) {
				int64_t x = v[A[j]].i, y = v[B[j]].i;
				if (y > 0 && x >= 0)
					v[D[j]].i = x / y;
				else if (x == INT64_MIN && y == -1)
					of = 1;
				else
					v[D[j]].i = expr_floordiv_i64(x, y);
			}
			break;
		case TAPE_SHR:          /* floor division by 2^C: an arithmetic shift */
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].i >> C[j];
			break;
		case TAPE_CSHR:         /* ceiling: the floor, plus one for a remainder */
			for (j = s; j < e; j++) {
				int64_t x = v[A[j]].i;
				v[D[j]].i = (x >> C[j]) + ((x & (((int64_t)1 << C[j]) - 1)) != 0);
			}
			break;
		case OP(EK_DIV, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].r = v[B[j]].r == 0.0 ? 0.0 : v[A[j]].r / v[B[j]].r;
			break;
		case OP(EK_CDIV, EXPR_INT):
			for (j = s; j < e; j++) {
				int64_t x = v[A[j]].i, y = v[B[j]].i;
				if (y > 0 && x >= 0)
					v[D[j]].i = x / y + (x % y != 0);
				else if (x == INT64_MIN && y == -1)
					of = 1;
				else
					v[D[j]].i = expr_ceildiv_i64(x, y);
			}
			break;
		case OP(EK_MOD, EXPR_INT):
			for (j = s; j < e; j++)
				v[D[j]].i = expr_mod_i64(v[A[j]].i, v[B[j]].i);
			break;
		case OP(EK_MIN, EXPR_INT):
			for (j = s; j < e; j++) {
				int64_t x = v[A[j]].i, y = v[B[j]].i;
				v[D[j]].i = x < y ? x : y;
			}
			break;
		case OP(EK_MIN, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].r = min_real(v[A[j]].r, v[B[j]].r);
			break;
		case OP(EK_MAX, EXPR_INT):
			for (j = s; j < e; j++) {
				int64_t x = v[A[j]].i, y = v[B[j]].i;
				v[D[j]].i = x > y ? x : y;
			}
			break;
		case OP(EK_MAX, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].r = max_real(v[A[j]].r, v[B[j]].r);
			break;
		case OP(EK_EQ, EXPR_INT):
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].i == v[B[j]].i;
			break;
		case OP(EK_EQ, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].r == v[B[j]].r;
			break;
		case OP(EK_NE, EXPR_INT):
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].i != v[B[j]].i;
			break;
		case OP(EK_NE, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].r != v[B[j]].r;
			break;
		case OP(EK_LT, EXPR_INT):
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].i < v[B[j]].i;
			break;
		case OP(EK_LT, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].r < v[B[j]].r;
			break;
		case OP(EK_LE, EXPR_INT):
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].i <= v[B[j]].i;
			break;
		case OP(EK_LE, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].r <= v[B[j]].r;
			break;
		case OP(EK_AND, EXPR_INT):
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].i & v[B[j]].i;
			break;
		case OP(EK_OR, EXPR_INT):
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].i | v[B[j]].i;
			break;
		case OP(EK_NOT, EXPR_INT):
			for (j = s; j < e; j++)
				v[D[j]].i = !v[A[j]].i;
			break;
		case OP(EK_ITE, EXPR_INT):
		case OP(EK_ITE, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]] = v[v[A[j]].i ? B[j] : C[j]];  /* the index selected: no branch */
			break;
		case OP(EK_TOREAL, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].r = (double)v[A[j]].i;
			break;
		case TAPE_RUP:          /* ceil(x / 2^c) * 2^c, overflowing as the product would */
			for (j = s; j < e; j++)
				of |= rup_checked(v[A[j]].i, C[j], &v[D[j]].i);
			break;
		case TAPE_ALLOC:        /* x <= L ? rup(x, low byte of c) : rup(x, high byte); both checked */
			for (j = s; j < e; j++) {
				int64_t x = v[A[j]].i, lo, hi;
				int k1 = C[j] & 0xff, k2 = C[j] >> 8;
				of |= rup_checked(x, k1, &lo) | rup_checked(x, k2, &hi);
				v[D[j]].i = x <= v[B[j]].i ? lo : hi;
			}
			break;
		case TAPE_DIV_IR:
			for (j = s; j < e; j++)
				v[D[j]].r = v[B[j]].r == 0.0 ? 0.0 : (double)v[A[j]].i / v[B[j]].r;
			break;
		case TAPE_MUL_IR:
			for (j = s; j < e; j++)
				v[D[j]].r = (double)v[A[j]].i * v[B[j]].r;
			break;
		case TAPE_DIVK_R:
			for (j = s; j < e; j++)
				v[D[j]].r = v[A[j]].r / v[B[j]].r;
			break;
		case TAPE_DIVK_IR:
			for (j = s; j < e; j++)
				v[D[j]].r = (double)v[A[j]].i / v[B[j]].r;
			break;
		case TAPE_NADD_I:
			TAPE_FOLD(int64_t, i, of |= __builtin_add_overflow(acc, y, &acc));
			break;
		case TAPE_NADD_R:
			TAPE_FOLD(double, r, acc += y);
			break;
		case TAPE_NMUL_I:
			TAPE_FOLD(int64_t, i, of |= __builtin_mul_overflow(acc, y, &acc));
			break;
		case TAPE_NMUL_R:
			TAPE_FOLD(double, r, acc *= y);
			break;
		case TAPE_NMIN_I:
			TAPE_FOLD(int64_t, i, acc = y < acc ? y : acc);
			break;
		case TAPE_NMIN_R:
			TAPE_FOLD(double, r, acc = min_real(acc, y));
			break;
		case TAPE_NMAX_I:
			TAPE_FOLD(int64_t, i, acc = y > acc ? y : acc);
			break;
		case TAPE_NMAX_R:
			TAPE_FOLD(double, r, acc = max_real(acc, y));
			break;
		case TAPE_NAND:
			TAPE_FOLD(int64_t, i, acc &= y);
			break;
		case TAPE_NOR:
			TAPE_FOLD(int64_t, i, acc |= y);
			break;
		case OP(EK_FLOOR, EXPR_INT):
			for (j = s; j < e; j++)
				of |= r2i(floor(v[A[j]].r), &v[D[j]].i);
			break;
		case OP(EK_CEIL, EXPR_INT):
			for (j = s; j < e; j++)
				of |= r2i(ceil(v[A[j]].r), &v[D[j]].i);
			break;
		case OP(EK_ROUND, EXPR_INT):
			for (j = s; j < e; j++)
				of |= r2i(round(v[A[j]].r), &v[D[j]].i);
			break;
		default:
			of = 1;
			break;
		}
		if (of)
			break;
	}
	return of;
}
