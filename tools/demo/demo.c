/*
 * nnc-demo: trains the reference network (shared/reference-net.md) on
 * Fashion-MNIST through NNC's model API, the way a libnnc user would:
 *
 *   conv 5x5 32 pad 2 - ReLU - max-pool 2x2 - conv 5x5 64 pad 2 - ReLU -
 *   max-pool 2x2 - flatten - dense 256 - ReLU - dense 10, softmax cross-entropy,
 *   SGD lr 0.01 momentum 0.9, batch 64.
 *
 * Data order and initial weights come from the splitmix64 streams of the
 * reference (seeds 1234 and 42), so the run follows PyTorch's trajectory up
 * to rounding; the check values of the reference are printed beside ours.
 * Each epoch ends with the test accuracy, a checkpoint (parameters, momenta,
 * the data-order stream and the curves, in one SQLite transaction), and the
 * curves as CSV and SVG. Run again, it resumes from the checkpoint.
 *
 * Usage: nnc-demo [--epochs N] [--batch-size B] [--threads T] [--out DIR]
 *                 [--data DIR] [--layout nchw|nhwc] [--fresh] [--quiet] [--bench]
 *                 [--subset N]
 *
 * --subset N trains on the first N images of each epoch's order (the test
 * of the demo uses it to stay short).
 * Under mpirun (Open MPI) it trains data-parallel: each of N processes
 * takes its 1/N of every batch, the gradients are averaged across processes
 * (ccv_cnnp_model_set_comm), so the run follows the one-process trajectory
 * up to rounding; rank 0 reports the combined images/s and writes the
 * checkpoint. --threads is then the machine's total, shared among the
 * processes on it:
 *
 *   mpirun -np 2 build/release/tools/demo/nnc-demo --fresh
 *
 * --bench adds machine-readable "bench:" lines (epoch times, inference at
 * batch 1 and 256, peak RSS) for tools/bench-train, which sets them beside
 * PyTorch's.
 */
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

enum { IMAGE = 784, CLASSES = 10, MAX_EPOCHS = 100 };

static uint64_t splitmix64(uint64_t* state)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static float uniform01(uint64_t* state)
{
	return (float)(splitmix64(state) >> 40) * (1.0f / 16777216.0f);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Read a gzip-compressed IDX file: its payload after the header. */
static unsigned char* read_idx(const char* path, int expect_magic, int* count, size_t item_size)
{
	gzFile f = gzopen(path, "rb");
	if (!f)
	{
		fprintf(stderr, "nnc-demo: cannot open %s (install Debian's dataset-fashion-mnist, or pass --data)\n", path);
		return 0;
	}
	unsigned char header[16];
	const int header_size = expect_magic == 0x803 ? 16 : 8;
	if (gzread(f, header, header_size) != header_size)
	{
		fprintf(stderr, "nnc-demo: %s is too short\n", path);
		gzclose(f);
		return 0;
	}
	const int magic = (header[0] << 24) | (header[1] << 16) | (header[2] << 8) | header[3];
	const int n = (header[4] << 24) | (header[5] << 16) | (header[6] << 8) | header[7];
	if (magic != expect_magic || n <= 0 || n > 1000000)
	{
		fprintf(stderr, "nnc-demo: %s is not an IDX file of the expected kind (magic 0x%x)\n", path, magic);
		gzclose(f);
		return 0;
	}
	unsigned char* data = malloc((size_t)n * item_size);
	if (!data || gzread(f, data, (unsigned)((size_t)n * item_size)) != (int)((size_t)n * item_size))
	{
		fprintf(stderr, "nnc-demo: %s is truncated\n", path);
		free(data);
		gzclose(f);
		return 0;
	}
	gzclose(f);
	*count = n;
	return data;
}

/* The reference network. NCHW keeps PyTorch's flatten order; NHWC permutes
 * the first dense layer's weights to match (and the convolution weights to
 * [out, kh, kw, in]). */
static ccv_cnnp_model_t* reference_net(void)
{
	ccv_cnnp_model_t* layers[] = {
		ccv_cnnp_convolution(1, 32, DIM_ALLOC(5, 5), DIM_ALLOC(), 0, HINT((1, 1), (2, 2)), 0, 1, "conv1"),
		ccv_cnnp_relu(0),
		ccv_cnnp_max_pool(DIM_ALLOC(2, 2), HINT((2, 2), (0, 0)), 0),
		ccv_cnnp_convolution(1, 64, DIM_ALLOC(5, 5), DIM_ALLOC(), 0, HINT((1, 1), (2, 2)), 0, 1, "conv2"),
		ccv_cnnp_relu(0),
		ccv_cnnp_max_pool(DIM_ALLOC(2, 2), HINT((2, 2), (0, 0)), 0),
		ccv_cnnp_flatten(0),
		ccv_cnnp_dense(256, 0, 0, 1, "fc1"),
		ccv_cnnp_relu(0),
		ccv_cnnp_dense(CLASSES, 0, 0, 1, "fc2"),
	};
	return ccv_cnnp_sequential_new(layers, sizeof(layers) / sizeof(layers[0]), 1, "reference");
}

static ccv_nnc_tensor_param_t image_params(int nhwc, int n)
{
	return nhwc ? CPU_TENSOR_NHWC(32F, n, 28, 28, 1) : CPU_TENSOR_NCHW(32F, n, 1, 28, 28);
}

/* --gpu: the model lives on GPU 0. The host keeps the data; each batch is
 * copied into GPU buffers (kept for the largest batch seen) and the logits
 * copied back, so the rest of the program reads host memory as before. */
static int g_gpu = 0;
static ccv_nnc_tensor_t* g_staging[3]; /* images, labels, logits */

static ccv_nnc_tensor_param_t on_host(ccv_nnc_tensor_param_t p)
{
	p.type = CCV_TENSOR_CPU_MEMORY;
	return p;
}

static ccv_nnc_tensor_param_t on_model(ccv_nnc_tensor_param_t p)
{
	if (g_gpu)
		p.type = CCV_TENSOR_GPU_MEMORY | CCV_COMPUTE_DEVICE_000;
	return p;
}

/* A GPU tensor shaped as `host`, over staging buffer `slot`. */
static ccv_nnc_tensor_t staged(int slot, const ccv_nnc_tensor_t* host)
{
	const ccv_nnc_tensor_param_t p = on_model(host->info);
	if (!g_staging[slot] || g_staging[slot]->data_size < ccv_nnc_tensor_data_size(p))
	{
		if (g_staging[slot])
			ccv_nnc_tensor_free(g_staging[slot]);
		g_staging[slot] = ccv_nnc_tensor_new(0, p, 0);
	}
	return ccv_nnc_tensor(g_staging[slot] ? g_staging[slot]->data.u8 : 0, p, 0);
}

static void transfer(ccv_nnc_tensor_t* from, ccv_nnc_tensor_t* to)
{
	ccv_nnc_cmd_exec(CMD_DATA_TRANSFER_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(from), TENSOR_LIST(to), 0);
}

static void model_evaluate(ccv_cnnp_model_t* model, ccv_nnc_tensor_t* x, ccv_nnc_tensor_t* z)
{
	if (!g_gpu)
	{
		ccv_cnnp_model_evaluate(model, (ccv_cnnp_evaluate_param_t){ .is_test = 1 }, TENSOR_LIST(x), TENSOR_LIST(z), 0, 0);
		return;
	}
	ccv_nnc_tensor_t gx = staged(0, x), gz = staged(2, z);
	transfer(x, &gx);
	ccv_cnnp_model_evaluate(model, (ccv_cnnp_evaluate_param_t){ .is_test = 1 }, TENSOR_LIST(&gx), TENSOR_LIST(&gz), 0, 0);
	transfer(&gz, z);
}

/* One training step. On the GPU it is queued on g_stream: the batch copied
 * in, the step, the logits copied out (x, labels and z are pinned, so the
 * copies are queued too), then `done` emitted; the call returns at once and
 * the caller reads z after waiting for `done`. Meanwhile it prepares and
 * queues the next step (steps in flight). */
static ccv_nnc_stream_context_t* g_stream = 0;

static void model_fit(ccv_cnnp_model_t* model, ccv_nnc_tensor_t* x, ccv_nnc_tensor_t* labels, ccv_nnc_tensor_t* z, ccv_nnc_stream_signal_t* done)
{
	if (!g_gpu)
	{
		ccv_cnnp_model_fit(model, TENSOR_LIST(x), TENSOR_LIST(labels), TENSOR_LIST(z), 0, 0);
		return;
	}
	ccv_nnc_tensor_t gx = staged(0, x), gl = staged(1, labels), gz = staged(2, z);
	ccv_nnc_cmd_exec(CMD_DATA_TRANSFER_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(x, labels), TENSOR_LIST(&gx, &gl), g_stream);
	ccv_cnnp_model_fit(model, TENSOR_LIST(&gx), TENSOR_LIST(&gl), TENSOR_LIST(&gz), 0, g_stream);
	ccv_nnc_cmd_exec(CMD_DATA_TRANSFER_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(&gz), TENSOR_LIST(z), g_stream);
	ccv_nnc_stream_context_emit_signal(g_stream, done);
}

/* Initialise as reference-net.md says: one stream (seed 42), in PyTorch's
 * order and layouts; returns the values it set for the check. */
static int initialise(ccv_cnnp_model_t* model, int nhwc, float conv1_first[4], float fc2_bias_first[3])
{
	static const int shapes[8][4] = { { 32, 1, 5, 5 }, { 32 }, { 64, 32, 5, 5 }, { 64 }, { 256, 3136 }, { 256 }, { 10, 256 }, { 10 } };
	static const int fan_in[8] = { 25, 25, 800, 800, 3136, 3136, 256, 256 };
	uint64_t rng = 42;
	int i;
	for (i = 0; i < 8; i++)
	{
		const int n = shapes[i][0] * (shapes[i][1] ? shapes[i][1] : 1) * (shapes[i][2] ? shapes[i][2] : 1) * (shapes[i][3] ? shapes[i][3] : 1);
		float* v = malloc(sizeof(float) * (size_t)n);
		const float scale = 1.0f / sqrtf((float)fan_in[i]);
		int k;
		for (k = 0; k < n; k++)
			v[k] = (2 * uniform01(&rng) - 1) * scale;
		if (i == 0)
			memcpy(conv1_first, v, sizeof(float) * 4);
		if (i == 7)
			memcpy(fc2_bias_first, v, sizeof(float) * 3);
		ccv_cnnp_model_io_t p = ccv_cnnp_model_parameters(model, ALL_PARAMETERS, i);
		ccv_nnc_tensor_param_t info = on_host(ccv_cnnp_model_parameter_tensor_params(model, p));
		ccv_nnc_tensor_t* t = ccv_nnc_tensor_new(0, info, 0);
		if (nhwc && (i == 0 || i == 2))
		{
			/* [out, in, kh, kw] -> [out, kh, kw, in] */
			const int O = shapes[i][0], I = shapes[i][1];
			int o, c, y, x;
			for (o = 0; o < O; o++)
				for (c = 0; c < I; c++)
					for (y = 0; y < 5; y++)
						for (x = 0; x < 5; x++)
							t->data.f32[((o * 5 + y) * 5 + x) * I + c] = v[((o * I + c) * 5 + y) * 5 + x];
		} else if (nhwc && i == 4) {
			/* fc1 reads (c, h, w) in PyTorch, (h, w, c) here. */
			int o, c, y, x;
			for (o = 0; o < 256; o++)
				for (c = 0; c < 64; c++)
					for (y = 0; y < 7; y++)
						for (x = 0; x < 7; x++)
							t->data.f32[(size_t)o * 3136 + (y * 7 + x) * 64 + c] = v[(size_t)o * 3136 + (c * 7 + y) * 7 + x];
		} else
			memcpy(t->data.f32, v, sizeof(float) * (size_t)n);
		ccv_cnnp_model_set_parameter(model, p, t);
		ccv_nnc_tensor_free(t);
		free(v);
		if (ccv_nnc_error_message()[0])
		{
			fprintf(stderr, "nnc-demo: setting parameter %d: %s\n", i, ccv_nnc_error_message());
			return -1;
		}
	}
	return 0;
}

/* Softmax cross-entropy of a row of logits, in double. */
static double row_loss(const float* z, int label)
{
	double m = z[0], s = 0;
	int j;
	for (j = 1; j < CLASSES; j++)
		m = z[j] > m ? z[j] : m;
	for (j = 0; j < CLASSES; j++)
		s += exp(z[j] - m);
	return log(s) + m - z[label];
}

static int argmax_row(const float* z)
{
	int best = 0, j;
	for (j = 1; j < CLASSES; j++)
		if (z[j] > z[best])
			best = j;
	return best;
}

/* The reference's preprocessing, batch by batch (the data set stays in
 * bytes: 47 MB rather than 188 MB of floats). One channel: NCHW and NHWC
 * are the same bytes. index NULL: images first, first + 1, ... */
static void copy_images(float* dst, const unsigned char* pixels, const int* index, int first, int n)
{
	int i, k;
	for (i = 0; i < n; i++)
	{
		const unsigned char* p = pixels + (size_t)(index ? index[i] : first + i) * IMAGE;
		float* d = dst + (size_t)i * IMAGE;
		for (k = 0; k < IMAGE; k++)
			d[k] = ((float)p[k] / 255.f - 0.2860f) / 0.3530f;
	}
}

static double test_accuracy(ccv_cnnp_model_t* model, const unsigned char* test, const unsigned char* labels, int n_test, int nhwc)
{
	enum { EVAL = 100 };
	ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(0, image_params(nhwc, EVAL), 0);
	ccv_nnc_tensor_t* z = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, EVAL, CLASSES), 0);
	int correct = 0, first, i;
	for (first = 0; first + EVAL <= n_test; first += EVAL)
	{
		copy_images(x->data.f32, test, 0, first, EVAL);
		model_evaluate(model, x, z);
		for (i = 0; i < EVAL; i++)
			correct += argmax_row(z->data.f32 + i * CLASSES) == labels[first + i];
	}
	ccv_nnc_tensor_free(x);
	ccv_nnc_tensor_free(z);
	return (double)correct / (first ? first : 1);
}

/* Inference timings: batch 1 (microseconds per image) and batch 256 (images/s). */
static void inference_bench(ccv_cnnp_model_t* model, const unsigned char* test, int nhwc)
{
	static const int sizes[2] = { 1, 256 };
	int k, r;
	for (k = 0; k < 2; k++)
	{
		const int n = sizes[k], reps = n == 1 ? 200 : 10;
		ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(0, image_params(nhwc, n), 0);
		ccv_nnc_tensor_t* z = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, n, CLASSES), 0);
		copy_images(x->data.f32, test, 0, 0, n);
		for (r = 0; r < (n == 1 ? 20 : 1); r++)
			model_evaluate(model, x, z);
		const double t = now();
		for (r = 0; r < reps; r++)
			model_evaluate(model, x, z);
		const double dt = now() - t;
		if (n == 1)
			printf("bench: infer1_us %.1f\n", dt / reps * 1e6);
		else
			printf("bench: infer256_images_per_s %.0f\n", n * reps / dt);
		ccv_nnc_tensor_free(x);
		ccv_nnc_tensor_free(z);
	}
}

static void progress(int epoch, int epochs, int done, int total, double loss, double images_per_s, double eta)
{
	const int width = 28;
	const int filled = (int)((long)width * done / total);
	char bar[64];
	int i;
	for (i = 0; i < width; i++)
		bar[i] = i < filled ? '#' : '.';
	bar[width] = 0;
	fprintf(stderr, "%sepoch %d/%d [%s] %3d%%  %6.0f img/s  loss %.4f  ETA %3.0fs %s", isatty(2) ? "\r" : "", epoch, epochs, bar, 100 * done / total, images_per_s, loss, eta, isatty(2) ? "" : "\n");
	fflush(stderr);
}

/* The curves: per-epoch numbers, and the training loss averaged over every
 * `points` steps. */
typedef struct {
	int epochs;
	double loss[MAX_EPOCHS], accuracy[MAX_EPOCHS + 1], seconds[MAX_EPOCHS];
	int point_count;
	double points[MAX_EPOCHS * 20];
} curves_t;

static void write_csv(const char* path, const curves_t* c)
{
	FILE* f = fopen(path, "w");
	int i;
	if (!f)
	{
		fprintf(stderr, "nnc-demo: cannot write %s: %s\n", path, strerror(errno));
		return;
	}
	fprintf(f, "epoch,train_loss,test_accuracy,seconds\n");
	fprintf(f, "0,,%.4f,\n", c->accuracy[0]);
	for (i = 0; i < c->epochs; i++)
		fprintf(f, "%d,%.6f,%.4f,%.2f\n", i + 1, c->loss[i], c->accuracy[i + 1], c->seconds[i]);
	fclose(f);
}

static void write_svg(const char* path, const curves_t* c)
{
	FILE* f = fopen(path, "w");
	int i;
	if (!f)
	{
		fprintf(stderr, "nnc-demo: cannot write %s: %s\n", path, strerror(errno));
		return;
	}
	const int W = 360, H = 240, L = 50, T = 30, PW = 290, PH = 170;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"11\">\n", 2 * W, H);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	/* Left: training loss (points every 1/20 epoch), right: test accuracy per epoch. */
	double lmax = 0.1;
	for (i = 0; i < c->point_count; i++)
		lmax = c->points[i] > lmax ? c->points[i] : lmax;
	lmax = ceil(lmax * 2) / 2;
	const double xmax = c->epochs > 0 ? c->epochs : 1;
	int panel;
	for (panel = 0; panel < 2; panel++)
	{
		const int ox = panel * W + L;
		fprintf(f, "<text x=\"%d\" y=\"18\" font-size=\"13\">%s</text>\n", ox, panel ? "test accuracy" : "training loss");
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n", ox, T, PW, PH);
		const double lo = panel ? 0 : 0, hi = panel ? 1 : lmax;
		int k;
		for (k = 0; k <= 4; k++)
		{
			const double v = lo + (hi - lo) * k / 4;
			const double y = T + PH - PH * (v - lo) / (hi - lo);
			fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>\n", ox, y, ox + PW, y);
			fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.2f</text>\n", ox - 4, y + 4, v);
		}
		for (k = 0; k <= (int)xmax; k++)
			fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n", ox + PW * k / xmax, T + PH + 14, k);
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">epoch</text>\n", ox + PW / 2, T + PH + 28);
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", panel ? "#c0392b" : "#2e6fba");
		if (panel)
			for (i = 0; i <= c->epochs; i++)
				fprintf(f, "%.1f,%.1f ", ox + PW * i / xmax, T + PH - PH * c->accuracy[i]);
		else
			for (i = 0; i < c->point_count; i++)
				fprintf(f, "%.1f,%.1f ", ox + PW * (i + 1) / (20.0 * xmax), T + PH - PH * c->points[i] / lmax);
		fprintf(f, "\"/>\n");
		if (panel)
			for (i = 0; i <= c->epochs; i++)
				fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#c0392b\"/><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.4f</text>\n",
					ox + PW * i / xmax, T + PH - PH * c->accuracy[i], ox + PW * i / xmax, T + PH - PH * c->accuracy[i] - 7, c->accuracy[i]);
	}
	fprintf(f, "</svg>\n");
	fclose(f);
}

/* The checkpoint: the model's parameters and momenta, the data-order stream
 * and the curves, in one transaction. */
static int save_checkpoint(const char* path, ccv_cnnp_model_t* model, int epoch, uint64_t order_rng, const curves_t* c)
{
	sqlite3* db = 0;
	if (sqlite3_open(path, &db) != SQLITE_OK)
	{
		fprintf(stderr, "nnc-demo: cannot open %s: %s\n", path, sqlite3_errmsg(db));
		sqlite3_close(db);
		return -1;
	}
	sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", 0, 0, 0);
	int ok = sqlite3_exec(db, "BEGIN IMMEDIATE", 0, 0, 0) == SQLITE_OK;
	ok = ok && ccv_cnnp_model_write(model, db, "", 0) == CCV_IO_FINAL;
	ccv_nnc_tensor_t* state = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(64S, 2), 0);
	state->data.i64[0] = epoch;
	memcpy(&state->data.i64[1], &order_rng, sizeof(order_rng));
	ok = ok && ccv_nnc_tensor_write(state, db, "demo.state", 0) == CCV_IO_FINAL;
	ccv_nnc_tensor_free(state);
	ccv_nnc_tensor_t* curves = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(8U, (int)sizeof(curves_t)), 0);
	memcpy(curves->data.u8, c, sizeof(curves_t));
	ok = ok && ccv_nnc_tensor_write(curves, db, "demo.curves", 0) == CCV_IO_FINAL;
	ccv_nnc_tensor_free(curves);
	if (ok)
		ok = sqlite3_exec(db, "COMMIT", 0, 0, 0) == SQLITE_OK;
	else
		sqlite3_exec(db, "ROLLBACK", 0, 0, 0);
	if (!ok)
		fprintf(stderr, "nnc-demo: writing the checkpoint failed: %s %s\n", ccv_nnc_error_message(), sqlite3_errmsg(db));
	sqlite3_close(db);
	return ok ? 0 : -1;
}

/* Returns the epochs the checkpoint holds (0: none usable). */
static int load_checkpoint(const char* path, ccv_cnnp_model_t* model, uint64_t* order_rng, curves_t* c)
{
	if (access(path, F_OK) != 0)
		return 0;
	sqlite3* db = 0;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, 0) != SQLITE_OK)
	{
		fprintf(stderr, "nnc-demo: cannot open the checkpoint %s (%s); starting afresh\n", path, sqlite3_errmsg(db));
		sqlite3_close(db);
		return 0;
	}
	ccv_nnc_tensor_t* state = 0;
	ccv_nnc_tensor_t* curves = 0;
	int epoch = 0;
	if (ccv_nnc_tensor_read(db, "demo.state", 0, 0, 0, &state) == CCV_IO_FINAL && ccv_nnc_tensor_read(db, "demo.curves", 0, 0, 0, &curves) == CCV_IO_FINAL &&
		ccv_nnc_tensor_count(curves->info) == sizeof(curves_t) && state->data.i64[0] > 0 && state->data.i64[0] <= MAX_EPOCHS &&
		ccv_cnnp_model_read(db, "", 0, model) == CCV_IO_FINAL)
	{
		epoch = (int)state->data.i64[0];
		memcpy(order_rng, &state->data.i64[1], sizeof(*order_rng));
		memcpy(c, curves->data.u8, sizeof(curves_t));
	} else
		fprintf(stderr, "nnc-demo: the checkpoint %s is not usable (%s); starting afresh\n", path, ccv_nnc_error_message());
	if (state)
		ccv_nnc_tensor_free(state);
	if (curves)
		ccv_nnc_tensor_free(curves);
	sqlite3_close(db);
	return epoch;
}

static void check(const char* what, double got, double want, double tolerance)
{
	printf("  %-44s %10.6g  (reference %10.6g)  %s\n", what, got, want, fabs(got - want) <= tolerance ? "ok" : "MISMATCH");
}

int main(int argc, char** argv)
{
	/* NHWC by default: NNC's convolution and pooling kernels are fastest there
	 * (the first dense layer's weights are permuted to keep PyTorch's values). */
	int epochs = 3, batch = 64, threads = 2, fresh = 0, nhwc = 1, quiet = 0, bench = 0, subset = 0;
	const char* dir = "/usr/share/datasets/fashion-mnist";
	const char* out = "demo-out";
	int i, j;
	for (i = 1; i < argc; i++)
	{
		if (!strcmp(argv[i], "--epochs") && i + 1 < argc)
			epochs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--batch-size") && i + 1 < argc)
			batch = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--out") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(argv[i], "--data") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "--layout") && i + 1 < argc) {
			const char* l = argv[++i];
			if (strcmp(l, "nchw") && strcmp(l, "nhwc"))
			{
				fprintf(stderr, "nnc-demo: --layout is nchw or nhwc\n");
				return 2;
			}
			nhwc = !strcmp(l, "nhwc");
		} else if (!strcmp(argv[i], "--fresh"))
			fresh = 1;
		else if (!strcmp(argv[i], "--quiet"))
			quiet = 1;
		else if (!strcmp(argv[i], "--bench"))
			bench = 1;
		else if (!strcmp(argv[i], "--subset") && i + 1 < argc)
			subset = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--gpu"))
			g_gpu = 1;
		else {
			fprintf(stderr, "usage: nnc-demo [--epochs N] [--batch-size B] [--threads T] [--out DIR] [--data DIR] [--layout nchw|nhwc] [--fresh] [--quiet] [--bench] [--subset N] [--gpu]\n");
			return 2;
		}
	}
	if (epochs < 1 || epochs > MAX_EPOCHS || batch < 1 || batch > 4096 || threads < 1 || threads > 256 || subset < 0)
	{
		fprintf(stderr, "nnc-demo: --epochs must be 1 to %d, --batch-size 1 to 4096, --threads 1 to 256, --subset 0 (all) or more\n", MAX_EPOCHS);
		return 2;
	}
	if (g_gpu && ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU) < 1)
	{
		fprintf(stderr, "nnc-demo: --gpu: no GPU found (%s)\n", ccv_nnc_device_count(CCV_STREAM_CONTEXT_GPU) < 0 ? "no CUDA" : "ccv_nnc_device_count is 0");
		return 2;
	}
	/* Started by mpirun: data-parallel across its processes. */
	const int under_mpi = getenv("OMPI_COMM_WORLD_SIZE") != 0 || getenv("PMI_SIZE") != 0;
	const char* local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
	const int local_size = under_mpi && local && atoi(local) > 0 ? atoi(local) : 1;
	const int process_threads = threads / local_size > 0 ? threads / local_size : 1;
	char env[16];
	snprintf(env, sizeof(env), "%d", process_threads);
	setenv("NNC_NUM_THREADS", env, 1);
	setenv("OPENBLAS_NUM_THREADS", env, 1);
	ccv_nnc_init();
	ccv_nnc_comm_t* comm = 0;
	int rank = 0, size = 1;
	if (under_mpi)
	{
		comm = ccv_nnc_comm_new_mpi(0);
		if (!comm)
		{
			fprintf(stderr, "nnc-demo: started by mpirun, but no communicator: %s\n", ccv_nnc_error_message());
			return 1;
		}
		rank = ccv_nnc_comm_rank(comm);
		size = ccv_nnc_comm_size(comm);
		if (batch < size)
		{
			fprintf(stderr, "nnc-demo: batch %d cannot give each of %d processes a row\n", batch, size);
			return 2;
		}
		if (rank != 0)
			quiet = 1, bench = 0;
	}
	if (mkdir(out, 0755) != 0 && errno != EEXIST)
	{
		fprintf(stderr, "nnc-demo: cannot create %s: %s\n", out, strerror(errno));
		return 1;
	}
	char path[4096], ckpt[4096];
	int n_train = 0, n_test = 0, n_train_labels = 0, n_test_labels = 0;
	snprintf(path, sizeof(path), "%s/train-images-idx3-ubyte.gz", dir);
	unsigned char* train_pixels = read_idx(path, 0x803, &n_train, IMAGE);
	snprintf(path, sizeof(path), "%s/train-labels-idx1-ubyte.gz", dir);
	unsigned char* train_labels = read_idx(path, 0x801, &n_train_labels, 1);
	snprintf(path, sizeof(path), "%s/t10k-images-idx3-ubyte.gz", dir);
	unsigned char* test_pixels = read_idx(path, 0x803, &n_test, IMAGE);
	snprintf(path, sizeof(path), "%s/t10k-labels-idx1-ubyte.gz", dir);
	unsigned char* test_labels = read_idx(path, 0x801, &n_test_labels, 1);
	if (!train_pixels || !train_labels || !test_pixels || !test_labels || n_train != n_train_labels || n_test != n_test_labels)
		return 1;
	if (rank == 0)
	{
		printf("Fashion-MNIST: %d training and %d test images; batch %d, %d threads, %s%s\n", n_train, n_test, batch, threads, nhwc ? "NHWC" : "NCHW", g_gpu ? ", model on GPU 0" : "");
		if (size > 1)
			printf("data-parallel: %d processes (mpirun), %d thread%s each, %d or %d images of each batch per process\n", size, process_threads, process_threads > 1 ? "s" : "", batch / size, (batch + size - 1) / size);
	}

	ccv_cnnp_model_t* model = reference_net();
	const ccv_nnc_tensor_param_t input = image_params(nhwc, batch);
	/* The loss is a mean over the batch: SGD scales the summed gradient by
	 * 1 / batch. Across N processes each sums its own rows and the average
	 * over processes divides by N, so each scales by N / batch. */
	const ccv_nnc_tensor_param_t local_input = image_params(nhwc, (batch + size - 1) / size);
	const ccv_nnc_tensor_param_t model_input = on_model(size > 1 ? local_input : input);
	ccv_cnnp_model_compile(model, &model_input, 1, CMD_SGD_FORWARD(0, 0.01, (float)size / batch, 0, 0.9, 0), CMD_SOFTMAX_CROSSENTROPY_FORWARD());
	if (ccv_nnc_error_message()[0])
	{
		fprintf(stderr, "nnc-demo: compiling the model failed: %s\n", ccv_nnc_error_message());
		return 1;
	}
	float conv1_first[4], fc2_bias_first[3];
	if (initialise(model, nhwc, conv1_first, fc2_bias_first))
		return 1;
	curves_t curves;
	memset(&curves, 0, sizeof(curves));
	uint64_t order_rng = 1234;
	snprintf(ckpt, sizeof(ckpt), "%s/checkpoint.sqlite3", out);
	if (fresh)
	{
		unlink(ckpt);
		char side[4200];
		snprintf(side, sizeof(side), "%s-wal", ckpt);
		unlink(side);
		snprintf(side, sizeof(side), "%s-shm", ckpt);
		unlink(side);
	}
	const int done = fresh ? 0 : load_checkpoint(ckpt, model, &order_rng, &curves);
	/* Every process starts from rank 0's parameters. */
	if (comm)
	{
		ccv_cnnp_model_set_comm(model, comm, 0);
		if (ccv_nnc_error_message()[0])
		{
			fprintf(stderr, "nnc-demo: rank %d: %s\n", rank, ccv_nnc_error_message());
			return 1;
		}
	}
	ccv_nnc_tensor_t* loss_sums = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(64F, 1), 0);
	const ccv_nnc_cmd_t sum_across = ccv_nnc_cmd_set_comm(CMD_COMM_ALLREDUCE_FORWARD(), comm);
	int* order = malloc(sizeof(int) * (size_t)n_train);
	/* Host batches: one on the CPU; two on the GPU (pinned), the step being
	 * prepared and the one in flight, whose logits are read after the next is
	 * queued. */
	ccv_nnc_tensor_t* xs[2] = { 0 };
	ccv_nnc_tensor_t* labels_of[2] = { 0 };
	ccv_nnc_tensor_t* logits_of[2] = { 0 };
	ccv_nnc_stream_signal_t* step_done[2] = { 0 };
	const int lag = g_gpu ? 1 : 0;
	for (i = 0; i <= lag; i++)
	{
		xs[i] = ccv_nnc_tensor_new(0, image_params(nhwc, batch), 0);
		labels_of[i] = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, batch), 0);
		logits_of[i] = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, batch, CLASSES), 0);
		if (g_gpu && (ccv_nnc_tensor_pin_memory(xs[i]) || ccv_nnc_tensor_pin_memory(labels_of[i]) || ccv_nnc_tensor_pin_memory(logits_of[i]) ||
				!(step_done[i] = ccv_nnc_stream_signal_new(CCV_STREAM_CONTEXT_GPU | CCV_COMPUTE_DEVICE_000))))
		{
			fprintf(stderr, "nnc-demo: --gpu: %s\n", ccv_nnc_error_message());
			return 1;
		}
	}
	if (g_gpu && !(g_stream = ccv_nnc_stream_context_new(CCV_STREAM_CONTEXT_GPU | CCV_COMPUTE_DEVICE_000)))
	{
		fprintf(stderr, "nnc-demo: --gpu: %s\n", ccv_nnc_error_message());
		return 1;
	}
	ccv_nnc_tensor_t* x = xs[0];
	ccv_nnc_tensor_t* logits = logits_of[0];
	if (done > 0 && rank == 0)
		printf("resuming from %s after epoch %d (test accuracy %.4f); --fresh starts over\n", ckpt, done, curves.accuracy[done]);
	else if (rank == 0) {
		/* The reference's check values, from the first epoch's order and the initial model. */
		uint64_t probe = order_rng;
		for (i = 0; i < n_train; i++)
			order[i] = i;
		for (i = n_train - 1; i > 0; i--)
		{
			const int k = (int)(splitmix64(&probe) % (uint64_t)(i + 1));
			const int t = order[i];
			order[i] = order[k];
			order[k] = t;
		}
		printf("check values (shared/reference-net.md):\n");
		static const int first8[8] = { 25066, 49316, 58954, 12032, 39288, 45899, 44533, 11429 }, last4[4] = { 23277, 11448, 11571, 31195 };
		int order_ok = 1;
		for (i = 0; i < 8; i++)
			order_ok &= order[i] == first8[i];
		for (i = 0; i < 4; i++)
			order_ok &= order[n_train - 4 + i] == last4[i];
		printf("  %-44s %d %d %d ... %d  %s\n", "epoch 1 order (first, second, third ... last)", order[0], order[1], order[2], order[n_train - 1], order_ok ? "ok" : "MISMATCH");
		ccv_nnc_tensor_t* w = ccv_nnc_tensor_new(0, on_host(ccv_cnnp_model_parameter_tensor_params(model, ccv_cnnp_model_parameters(model, ALL_PARAMETERS, 0))), 0);
		ccv_cnnp_model_parameter_copy(model, ccv_cnnp_model_parameters(model, ALL_PARAMETERS, 0), w);
		static const double conv1_ref[4] = { 0.0966259, -0.1360358, -0.0885596, -0.0623237 }, fc2_ref[3] = { -0.0345103, 0.0178554, 0.0065721 };
		for (i = 0; i < 4; i++)
		{
			char what[64];
			snprintf(what, sizeof(what), "conv1.weight[0,0,0,%d]", i);
			/* Read back from the model: [0, 0, 0, i] is element i in both layouts for one input channel. */
			check(what, w->data.f32[i], conv1_ref[i], 5e-7);
		}
		ccv_nnc_tensor_free(w);
		ccv_nnc_tensor_t* b2 = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, CLASSES), 0);
		ccv_cnnp_model_parameter_copy(model, ccv_cnnp_model_parameters(model, ALL_PARAMETERS, 7), b2);
		for (i = 0; i < 3; i++)
		{
			char what[64];
			snprintf(what, sizeof(what), "fc2.bias[%d]", i);
			check(what, b2->data.f32[i], fc2_ref[i], 5e-7);
		}
		ccv_nnc_tensor_free(b2);
		double sum = 0;
		copy_images(x->data.f32, train_pixels, 0, 0, 1);
		for (i = 0; i < IMAGE; i++)
			sum += x->data.f32[i];
		check("sum of the first normalised training image", sum, 211.852, 5e-3);
		/* The first batch's loss at initialisation (batch 64 as the reference). */
		if (batch == 64)
		{
			copy_images(x->data.f32, train_pixels, order, 0, 64);
			model_evaluate(model, x, logits);
			double loss = 0;
			for (i = 0; i < 64; i++)
				loss += row_loss(logits->data.f32 + i * CLASSES, train_labels[order[i]]);
			check("loss of the first batch at initialisation", loss / 64, 2.31149, 5e-5);
		}
		curves.accuracy[0] = test_accuracy(model, test_pixels, test_labels, n_test, nhwc);
		check("test accuracy at initialisation", curves.accuracy[0], 0.0535, 5e-5);
		if (ccv_nnc_error_message()[0])
		{
			fprintf(stderr, "nnc-demo: %s\n", ccv_nnc_error_message());
			return 1;
		}
	}
	if (done >= epochs && rank == 0)
		printf("the checkpoint already holds %d epoch%s (asked for %d): nothing to train; --epochs %d continues, --fresh starts over\n", done, done > 1 ? "s" : "", epochs, done + 1);
	const int n_used = subset > 0 && subset < n_train ? subset : n_train;
	const int steps = (n_used + batch - 1) / batch;
	for (int epoch = done + 1; epoch <= epochs; epoch++)
	{
		for (i = 0; i < n_train; i++)
			order[i] = i;
		for (i = n_train - 1; i > 0; i--)
		{
			const int k = (int)(splitmix64(&order_rng) % (uint64_t)(i + 1));
			const int t = order[i];
			order[i] = order[k];
			order[k] = t;
		}
		double loss_sum = 0, point_sum = 0;
		int seen = 0, point_seen = 0, next_point = 1;
		const double start = now();
		/* Step s is queued in pass s and its loss read in pass s + lag. */
		for (int pass = 0; pass < steps + lag; pass++)
		{
			if (pass < steps)
			{
				const int slot = pass % (lag + 1);
				const int b = pass * batch + batch <= n_used ? batch : n_used - pass * batch;
				/* This process's rows of the batch: all of them on one process. */
				const int lo = (int)((long)rank * b / size), hi = (int)((long)(rank + 1) * b / size), nb = hi - lo;
				const int* rows = order + pass * batch + lo;
				ccv_nnc_tensor_t xb = ccv_nnc_tensor(xs[slot]->data.f32, image_params(nhwc, nb), 0);
				ccv_nnc_tensor_t lb = ccv_nnc_tensor(labels_of[slot]->data.f32, CPU_TENSOR_NHWC(32F, nb), 0);
				ccv_nnc_tensor_t zb = ccv_nnc_tensor(logits_of[slot]->data.f32, CPU_TENSOR_NHWC(32F, nb, CLASSES), 0);
				copy_images(xs[slot]->data.f32, train_pixels, rows, 0, nb);
				for (i = 0; i < nb; i++)
					labels_of[slot]->data.f32[i] = (float)train_labels[rows[i]];
				/* The loss is a mean over the batch: the step scales the summed gradient by size / b. */
				if (b != batch)
					ccv_cnnp_model_set_minimizer(model, CMD_SGD_FORWARD(0, 0.01, (float)size / b, 0, 0.9, 0), 0, 0, 0);
				model_fit(model, &xb, &lb, &zb, step_done[slot]);
				if (b != batch)
					ccv_cnnp_model_set_minimizer(model, CMD_SGD_FORWARD(0, 0.01, (float)size / batch, 0, 0.9, 0), 0, 0, 0);
				if (ccv_nnc_error_message()[0])
				{
					fprintf(stderr, "\nnnc-demo: training step %d failed: %s\n", pass, ccv_nnc_error_message());
					return 1;
				}
			}
			const int step = pass - lag;
			if (step < 0)
				continue;
			const int slot = step % (lag + 1);
			const int b = step * batch + batch <= n_used ? batch : n_used - step * batch;
			const int lo = (int)((long)rank * b / size), hi = (int)((long)(rank + 1) * b / size), nb = hi - lo;
			const int* rows = order + step * batch + lo;
			if (g_gpu)
				ccv_nnc_stream_context_wait_signal(0, step_done[slot]);
			double batch_loss = 0;
			for (i = 0; i < nb; i++)
				batch_loss += row_loss(logits_of[slot]->data.f32 + i * CLASSES, train_labels[rows[i]]);
			if (comm)
			{
				/* The whole batch's loss: the processes' sums added up. */
				loss_sums->data.f64[0] = batch_loss;
				if (ccv_nnc_cmd_exec(sum_across, ccv_nnc_no_hint, 0, TENSOR_LIST(loss_sums), TENSOR_LIST(loss_sums), 0) != CCV_NNC_EXEC_SUCCESS)
				{
					fprintf(stderr, "\nnnc-demo: rank %d: %s\n", rank, ccv_nnc_error_message());
					return 1;
				}
				batch_loss = loss_sums->data.f64[0];
			}
			loss_sum += batch_loss;
			point_sum += batch_loss;
			seen += b;
			point_seen += b;
			if (seen * 20 >= next_point * n_used && curves.point_count < MAX_EPOCHS * 20)
			{
				curves.points[curves.point_count++] = point_sum / point_seen;
				point_sum = 0, point_seen = 0, next_point++;
			}
			const int tty = isatty(2);
			if (!quiet && (tty ? step % 10 == 0 || step == steps - 1 : (step + 1) * 4 / steps != step * 4 / steps))
			{
				const double t = now() - start;
				const double rate = seen / (t > 0 ? t : 1e-9);
				progress(epoch, epochs, seen, n_used, loss_sum / seen, rate, (n_used - seen) / rate);
			}
		}
		const double seconds = now() - start;
		if (!quiet && isatty(2))
			fprintf(stderr, "\n");
		curves.loss[epoch - 1] = loss_sum / seen;
		curves.seconds[epoch - 1] = seconds;
		curves.epochs = epoch;
		if (rank != 0)
			continue; /* rank 0 evaluates, reports and saves */
		curves.accuracy[epoch] = test_accuracy(model, test_pixels, test_labels, n_test, nhwc);
		if (size > 1)
		{
			double allreduce = 0, waited = 0;
			ccv_cnnp_model_comm_time(model, &allreduce, &waited);
			printf("epoch %d: mean training loss %.4f, test accuracy %.4f, %.1f s (%.0f images/s on %d processes; gradient averaging %.2f s so far, %.2f s of it waited for)\n", epoch, curves.loss[epoch - 1], curves.accuracy[epoch], seconds, n_used / seconds, size, allreduce, waited);
		}
		else
			printf("epoch %d: mean training loss %.4f, test accuracy %.4f, %.1f s (%.0f images/s)\n", epoch, curves.loss[epoch - 1], curves.accuracy[epoch], seconds, n_used / seconds);
		if (bench)
			printf("bench: epoch %d seconds %.3f loss %.4f accuracy %.4f\n", epoch, seconds, curves.loss[epoch - 1], curves.accuracy[epoch]);
		if (save_checkpoint(ckpt, model, epoch, order_rng, &curves) == 0 && !quiet)
			printf("  checkpoint: %s\n", ckpt);
		snprintf(path, sizeof(path), "%s/curves.csv", out);
		write_csv(path, &curves);
		snprintf(path, sizeof(path), "%s/curves.svg", out);
		write_svg(path, &curves);
	}
	if (curves.epochs > 0 && rank == 0)
	{
		printf("reference (PyTorch 1.13): epoch 1 0.4852 / 0.8628, epoch 2 0.2886 / 0.8825, epoch 3 0.2461 / 0.9026 (mean training loss / test accuracy)\n");
		printf("final test accuracy %.4f after %d epoch%s; curves in %s/curves.csv and %s/curves.svg\n", curves.accuracy[curves.epochs], curves.epochs, curves.epochs > 1 ? "s" : "", out, out);
	}
	if (bench)
		inference_bench(model, test_pixels, nhwc);
	struct rusage usage;
	getrusage(RUSAGE_SELF, &usage);
	if (bench)
		printf("bench: peak_rss_mb %.1f\n", usage.ru_maxrss / 1024.0);
	(void)j;
	ccv_cnnp_model_free(model);
	for (i = 0; i <= lag; i++)
	{
		ccv_nnc_tensor_free(xs[i]);
		ccv_nnc_tensor_free(labels_of[i]);
		ccv_nnc_tensor_free(logits_of[i]);
		if (step_done[i])
			ccv_nnc_stream_signal_free(step_done[i]);
	}
	if (g_stream)
		ccv_nnc_stream_context_free(g_stream);
	for (i = 0; i < 3; i++)
		if (g_staging[i])
			ccv_nnc_tensor_free(g_staging[i]);
	ccv_nnc_tensor_free(loss_sums);
	if (comm)
		ccv_nnc_comm_free(comm);
	free(order);
	free(train_pixels);
	free(train_labels);
	free(test_pixels);
	free(test_labels);
	return rank != 0 || curves.epochs == 0 || curves.accuracy[curves.epochs] > 0.8 ? 0 : 1;
}
