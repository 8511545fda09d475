// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * devmem_unpack on the CPU (what it does with host memory, and the
 * reference gpu_unpack compares the GPU with): the fp16/bf16 conversions at
 * known values, then every type and operation over random fragment layouts
 * (lengths 1-9000 bytes, any alignment, elements split across fragments and
 * batches; with linear bytes mixed in, as receives report bytes that did
 * not land in the dma-buf) and over the layout a devtcp devmem receive produced
 * (data/frags-devtcp.txt), the result compared byte for byte with the
 * element-by-element definition; then the errors.
 */
#include <errno.h>

#include "devtcp/check.h"
#include "unpack_check.h"

static void conversions(void)
{
	static const struct { float f; uint16_t h, bf; } v[] = {
		{ 1.0f, 0x3c00, 0x3f80 },
		{ -2.0f, 0xc000, 0xc000 },
		{ 65504.0f, 0x7bff, 0x4780 },
		{ 65520.0f, 0x7c00, 0x4780 },		/* half: rounds up to infinity */
		{ 0x1p-24f, 0x0001, 0x3380 },		/* the smallest half subnormal */
		{ 0x1p-25f, 0x0000, 0x3300 },		/* a tie: to even, zero */
		{ 0x1.8p-25f, 0x0001, 0x3340 },	/* above the tie: up */
		{ 1.0009765625f, 0x3c01, 0x3f80 },	/* bf16: a tie below 1 ulp, to even */
		{ 1.00048828125f, 0x3c00, 0x3f80 },	/* half: a tie, to even */
		{ 1.01171875f, 0x3c0c, 0x3f82 },	/* bf16: above the tie, up */
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		CHECK(dm_float_to_half(v[i].f) == v[i].h, "half(%a) = 0x%04x, want 0x%04x", v[i].f,
		      dm_float_to_half(v[i].f), v[i].h);
		CHECK(dm_float_to_bf16(v[i].f) == v[i].bf, "bf16(%a) = 0x%04x, want 0x%04x", v[i].f,
		      dm_float_to_bf16(v[i].f), v[i].bf);
	}
	for (uint32_t h = 0; h < 0x10000; h++) {
		uint16_t x = (uint16_t)h;
		float f = dm_half_to_float(x);

		/* every non-NaN half survives the round trip */
		if ((x & 0x7c00) != 0x7c00 || !(x & 0x3ff))
			CHECK(dm_float_to_half(f) == x, "half 0x%04x -> %a -> 0x%04x", x, f,
			      dm_float_to_half(f));
		if ((x & 0x7f80) != 0x7f80 || !(x & 0x7f))
			CHECK(dm_float_to_bf16(dm_bf16_to_float(x)) == x, "bf16 0x%04x round trip", x);
	}
}

/* Runs @L through devmem_unpack with @type and @op; the result against the
 * definition. */
static int put_image(void *image, uint64_t off, const void *p, uint32_t len)
{
	memcpy((unsigned char *)image + off, p, len);
	return 0;
}

static void run_case(const struct uc_layout *L, unsigned int type, unsigned int op,
		     const char *layout)
{
	struct devmem_frag *fr = malloc(L->nfrags * sizeof(*fr));
	unsigned int es = uc_size(type), avg_n = op == DEVMEM_UNPACK_AVG ? 3 : 1;
	size_t bytes = L->bytes, pos = 0;
	unsigned char *stream = malloc(bytes), *dst = aligned_alloc(64, (bytes + 127) & ~(size_t)63);
	unsigned char *want = malloc(bytes), *image = calloc(1, UC_IMAGE);
	struct devmem_unpack *u;
	int ret = -1, bad = 0;

	uc_values(stream, bytes / es, type);
	uc_values(dst, bytes / es, type);
	memcpy(want, dst, bytes);
	for (size_t i = 0; i < bytes; i += es) {
		if (op == DEVMEM_UNPACK_COPY)
			memcpy(want + i, stream + i, es);
		else
			uc_expect(want + i, stream + i, type, op, avg_n);
	}
	if (dm_unpack_open(&u, NULL, image, UC_IMAGE)) {
		CHECK(0, "open: %s", devmem_last_error());
		goto out;
	}
	CHECK(devmem_unpack_begin(u, dst, bytes, type, op, avg_n) == 0, "begin: %s",
	      devmem_last_error());
	for (unsigned int b = 0; b < L->nbatches && !bad; b++) {
		const struct uc_batch *B = &L->batches[b];

		uc_place(L, B, stream, &pos, fr, put_image, image);
		ret = devmem_unpack_add(u, fr, B->n);
		bad = ret != (int)b + 1;
	}
	CHECK(!bad, "%s %s %s: batch %d of %u: %s", layout, uc_type_name[type], uc_op_name[op], ret,
	      L->nbatches, devmem_last_error());
	CHECK(devmem_unpack_completed(u, true) == (int)L->nbatches, "all batches completed");
	CHECK(!memcmp(dst, want, bytes), "%s %s %s: %zu bytes in %u fragments, %u batches: as defined",
	      layout, uc_type_name[type], uc_op_name[op], bytes, L->nfrags, L->nbatches);
	devmem_unpack_close(u);
out:
	free(fr);
	free(stream);
	free(dst);
	free(want);
	free(image);
}

static void layouts(void)
{
	struct uc_layout R = { 0 }, M = { 0 }, D = { 0 };
	unsigned int mlin = 0;
	int rec;

	uc_random(&R, 3 << 20, 7, 0, 64);
	uc_trim(&R);
	uc_random(&M, 3 << 20, 8, 1, 64);
	uc_trim(&M);
	for (unsigned int i = 0; i < M.nfrags; i++)
		mlin += !M.frags[i].dmabuf_id;
	rec = uc_recorded(&D, "data/frags-devtcp.txt", 0);

	CHECK(rec == 0, "the recorded devtcp layout (tests/data/frags-devtcp.txt) loads");
	if (!rec)
		uc_trim(&D);
	for (unsigned int t = DEVMEM_UNPACK_INT32; t <= DEVMEM_UNPACK_FP64; t++) {
		for (unsigned int o = DEVMEM_UNPACK_SUM; o <= DEVMEM_UNPACK_AVG; o++) {
			run_case(&R, t, o, "random");
			run_case(&M, t, o, "mixed");
			if (D.nfrags)
				run_case(&D, t, o, "recorded");
		}
	}
	run_case(&R, DEVMEM_UNPACK_INT32, DEVMEM_UNPACK_COPY, "random");
	run_case(&M, DEVMEM_UNPACK_INT32, DEVMEM_UNPACK_COPY, "mixed");
	if (D.nfrags)
		run_case(&D, DEVMEM_UNPACK_INT32, DEVMEM_UNPACK_COPY, "recorded");
	printf("random layout: %u fragments in %u batches; mixed: %u, %u of them linear; "
	       "recorded: %u in %u\n", R.nfrags, R.nbatches, M.nfrags, mlin, D.nfrags, D.nbatches);
	CHECK(mlin > M.nfrags / 8, "the mixed layout has linear fragments (%u)", mlin);
	free(R.frags);
	free(R.batches);
	free(M.frags);
	free(M.batches);
	free(D.frags);
	free(D.batches);
}

#define ERR(call, err, text) \
	CHECK((call) == (err) && strstr(devmem_last_error(), text), "%s: %s", #call, devmem_last_error())

static void errors(void)
{
	static unsigned char image[65536], dst[4096] __attribute__((aligned(8)));
	struct devmem_frag f[2] = { { .offset = 0, .len = 100, .dmabuf_id = 1 },
				    { .offset = 65500, .len = 100, .dmabuf_id = 1 } };
	struct devmem_frag lin = { .len = 10, .linear = NULL };
	struct devmem_unpack *u;

	if (dm_unpack_open(&u, NULL, image, sizeof(image))) {
		CHECK(0, "open: %s", devmem_last_error());
		return;
	}
	ERR(devmem_unpack_add(u, f, 1), -EINVAL, "no stream begun");
	ERR(devmem_unpack_begin(u, dst + 2, 64, DEVMEM_UNPACK_FP32, DEVMEM_UNPACK_SUM, 1), -EINVAL,
	    "multiples of the 4-byte element");
	ERR(devmem_unpack_begin(u, dst, 64, DEVMEM_UNPACK_FP32, DEVMEM_UNPACK_AVG, 0), -EINVAL,
	    "AVG divides by avg_n");
	ERR(devmem_unpack_begin(u, dst, 64, DEVMEM_UNPACK_FP32, 9, 1), -EINVAL, "unknown type");
	CHECK(devmem_unpack_begin(u, dst, 150, DEVMEM_UNPACK_INT32, DEVMEM_UNPACK_COPY, 1) == 0,
	      "begin");
	ERR(devmem_unpack_add(u, f + 1, 1), -EINVAL, "outside the 65536-byte dma-buf");
	ERR(devmem_unpack_add(u, &lin, 1), -EINVAL, "linear is NULL");
	f[1].offset = 200;
	ERR(devmem_unpack_add(u, f, 2), -EINVAL, "past the destination's 150");
	ERR(devmem_unpack_add(u, f, DEVMEM_UNPACK_MAX_FRAGS + 1), -E2BIG, "at most 4096");
	CHECK(devmem_unpack_add(u, f, 0) == 0, "an empty batch launches nothing");
	CHECK(devmem_unpack_add(u, f, 1) == 1, "a good batch after the refused ones is batch 1");
	CHECK(devmem_unpack_completed(u, false) == 1, "... and completed at once on the CPU");
	devmem_unpack_close(u);
	ERR(devmem_unpack_open(&u, NULL), -EINVAL, "must not be NULL");
}

int main(void)
{
	conversions();
	layouts();
	errors();
	return check_done("t_unpack");
}
