// SPDX-License-Identifier: LGPL-2.1-or-later
/* devcoll-perf's Gloo backend (Debian libgloo-dev, TCP transport), run by
 * devcoll-perf --compare: GLOO_RANK, GLOO_SIZE, GLOO_STORE (a FileStore
 * directory) and GLOO_HOST (the address to use) come from the launcher. */
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/math.h>
#include <gloo/reduce.h>
#include <gloo/scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include "bench.h"

static std::shared_ptr<gloo::rendezvous::Context> ctx;
static const unsigned int kTag = 7;

template <typename T>
static int run(enum bcoll c, const void *s, void *r, size_t n, int root)
{
	T *in = const_cast<T *>(static_cast<const T *>(s)), *out = static_cast<T *>(r);

	switch (c) {
	case B_ALLREDUCE: {
		gloo::AllreduceOptions o(ctx);

		if (in != out)
			memcpy(static_cast<void *>(out), in, n * sizeof(T));
		o.setOutput(out, n);
		o.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
		o.setReduceFunction(static_cast<void (*)(void *, const void *, const void *, size_t)>(
			&gloo::sum<T>));
		o.setTag(kTag);
		gloo::allreduce(o);
		return 0;
	}
	case B_REDUCE: {
		gloo::ReduceOptions o(ctx);

		if (in != out)
			o.setInput(in, n);
		o.setOutput(out, n);
		o.setRoot(root);
		o.setReduceFunction(static_cast<void (*)(void *, const void *, const void *, size_t)>(
			&gloo::sum<T>));
		o.setTag(kTag);
		gloo::reduce(o);
		return 0;
	}
	case B_ALLGATHER: {
		gloo::AllgatherOptions o(ctx);

		o.setInput(in, n);
		o.setOutput(out, n * (size_t)ctx->size);
		o.setTag(kTag);
		gloo::allgather(o);
		return 0;
	}
	case B_ALLTOALL: {
		gloo::AlltoallOptions o(ctx);

		o.setInput(in, n * (size_t)ctx->size);
		o.setOutput(out, n * (size_t)ctx->size);
		o.setTag(kTag);
		gloo::alltoall(o);
		return 0;
	}
	case B_BROADCAST: {
		gloo::BroadcastOptions o(ctx);

		if (in != out && ctx->rank == root)
			o.setInput(in, n);
		o.setOutput(out, n);
		o.setRoot(root);
		o.setTag(kTag);
		gloo::broadcast(o);
		return 0;
	}
	case B_GATHER: {
		gloo::GatherOptions o(ctx);

		o.setInput(in, n);
		if (ctx->rank == root)
			o.setOutput(out, n * (size_t)ctx->size);
		o.setRoot(root);
		o.setTag(kTag);
		gloo::gather(o);
		return 0;
	}
	case B_SCATTER: {
		gloo::ScatterOptions o(ctx);
		std::vector<T *> blocks;

		for (int k = 0; ctx->rank == root && k < ctx->size; k++)
			blocks.push_back(in + (size_t)k * n);
		if (ctx->rank == root)
			o.setInputs(blocks, n);
		o.setOutput(out, n);
		o.setRoot(root);
		o.setTag(kTag);
		gloo::scatter(o);
		return 0;
	}
	case B_SENDRECV: {
		auto sb = ctx->createUnboundBuffer(in, n * sizeof(T));
		auto rb = ctx->createUnboundBuffer(out, n * sizeof(T));
		int np = ctx->size;

		rb->recv((ctx->rank + np - 1) % np, kTag);
		sb->send((ctx->rank + 1) % np, kTag);
		sb->waitSend();
		rb->waitRecv();
		return 0;
	}
	default:
		return -ENOTSUP;	/* no reduce_scatter in Gloo's options API */
	}
}

static int coll(enum bcoll c, const void *s, void *r, size_t n, enum btype t, int root)
{
	try {
		switch (t) {
		case BT_FLOAT: return run<float>(c, s, r, n, root);
		case BT_DOUBLE: return run<double>(c, s, r, n, root);
		case BT_HALF: return run<gloo::float16>(c, s, r, n, root);
		case BT_BF16:	/* no bfloat16 in Gloo: moved as 16-bit integers */
			if (c == B_ALLREDUCE || c == B_REDUCE)
				return -ENOTSUP;
			return run<uint16_t>(c, s, r, n, root);
		default: return run<int32_t>(c, s, r, n, root);
		}
	} catch (const std::exception &e) {
		fprintf(stderr, "gloo: %s\n", e.what());
		return -EIO;
	}
}

static int barrier(void)
{
	gloo::BarrierOptions o(ctx);

	o.setTag(kTag + 1);
	gloo::barrier(o);
	return 0;
}

static double dmax(double v)
{
	gloo::AllreduceOptions o(ctx);

	o.setOutput(&v, 1);
	o.setReduceFunction(static_cast<void (*)(void *, const void *, const void *, size_t)>(
		&gloo::max<double>));
	o.setTag(kTag + 2);
	gloo::allreduce(o);
	return v;
}

static long lsum(long v)
{
	gloo::AllreduceOptions o(ctx);
	int64_t x = v;

	o.setOutput(&x, 1);
	o.setReduceFunction(static_cast<void (*)(void *, const void *, const void *, size_t)>(
		&gloo::sum<int64_t>));
	o.setTag(kTag + 3);
	gloo::allreduce(o);
	return (long)x;
}

int main(int argc, char **argv)
{
	const char *rank = getenv("GLOO_RANK"), *size = getenv("GLOO_SIZE"), *store = getenv("GLOO_STORE");
	const char *host = getenv("GLOO_HOST");
	struct backend be = {};

	if (!rank || !size || !store) {
		fprintf(stderr, "devcoll-perf-gloo: run by devcoll-perf --compare (GLOO_RANK, GLOO_SIZE, "
			"GLOO_STORE)\n");
		return 2;
	}
	gloo::transport::tcp::attr attr;

	attr.hostname = host ? host : "127.0.0.1";
	auto dev = gloo::transport::tcp::CreateDevice(attr);
	gloo::rendezvous::FileStore fs(store);

	ctx = std::make_shared<gloo::rendezvous::Context>(atoi(rank), atoi(size));
	ctx->setTimeout(std::chrono::seconds(120));
	ctx->connectFullMesh(fs, dev);
	be.name = "gloo";
	be.rank = ctx->rank;
	be.size = ctx->size;
	be.coll = coll;
	be.barrier = barrier;
	be.max = dmax;
	be.sum = lsum;
	int ret = bench_main(&be, argc, argv);

	ctx.reset();
	return ret;
}
