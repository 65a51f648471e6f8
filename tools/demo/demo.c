/*
 * nnc-demo: trains a two-layer perceptron (784 -> 256 -> 10) on Fashion-MNIST
 * with NNC's Level-1 API, and reports test accuracy.
 *
 * The dense layers run as NNC commands: GEMM forward (x * w^T + bias) and
 * GEMM backward (gradients of x, w and the bias). ReLU, softmax cross-entropy
 * and the SGD step are written out here in C until their commands land (the
 * command-library issue); the reference convolutional network arrives with
 * the model API. Data order and initial weights come from the splitmix64
 * generator of shared/reference-net.md, so a run is reproducible.
 *
 * Usage: nnc-demo [--epochs N] [--data DIR] [--curves FILE]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "nnc/ccv_nnc.h"
#include "nnc/ccv_nnc_easy.h"

enum { IN = 784, HIDDEN = 256, OUT = 10, BATCH = 64 };

static uint64_t rng_state;

static uint64_t splitmix64(void)
{
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static float uniform01(void)
{
	return (float)(splitmix64() >> 40) * (1.0f / 16777216.0f);
}

/* Read an IDX file (gzip-compressed): returns its payload after the header. */
static unsigned char* read_idx(const char* path, int expect_magic, int* count, size_t item_size)
{
	gzFile f = gzopen(path, "rb");
	if (!f)
	{
		fprintf(stderr, "nnc-demo: cannot open %s (install Debian's dataset-fashion-mnist)\n", path);
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

typedef struct {
	ccv_nnc_tensor_t* w; /* [out, in] */
	ccv_nnc_tensor_t* b; /* [out] */
	ccv_nnc_tensor_t* dw;
	ccv_nnc_tensor_t* db;
	ccv_nnc_tensor_t* vw; /* momentum */
	ccv_nnc_tensor_t* vb;
} dense_t;

static dense_t dense_new(int in, int out)
{
	dense_t d;
	d.w = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, out, in), 0);
	d.b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, out), 0);
	d.dw = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, out, in), 0);
	d.db = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, out), 0);
	d.vw = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, out, in), 0);
	d.vb = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, out), 0);
	const float scale = 1.0f / sqrtf((float)in);
	int i;
	for (i = 0; i < out * in; i++)
		d.w->data.f32[i] = (2 * uniform01() - 1) * scale;
	for (i = 0; i < out; i++)
		d.b->data.f32[i] = (2 * uniform01() - 1) * scale;
	ccv_nnc_tensor_zero(d.vw);
	ccv_nnc_tensor_zero(d.vb);
	return d;
}

static void dense_free(dense_t* d)
{
	ccv_nnc_tensor_free(d->w);
	ccv_nnc_tensor_free(d->b);
	ccv_nnc_tensor_free(d->dw);
	ccv_nnc_tensor_free(d->db);
	ccv_nnc_tensor_free(d->vw);
	ccv_nnc_tensor_free(d->vb);
}

static int check(int rc, const char* what)
{
	if (rc != CCV_NNC_EXEC_SUCCESS)
		fprintf(stderr, "nnc-demo: %s failed: %s\n", what, ccv_nnc_error_message());
	return rc;
}

/* y = x * w^T + b */
static int dense_forward(dense_t* d, ccv_nnc_tensor_t* x, ccv_nnc_tensor_t* y)
{
	return check(ccv_nnc_cmd_exec(CMD_GEMM_FORWARD(NO_TRANSPOSE, TRANSPOSE(0, 1)), ccv_nnc_no_hint, 0, TENSOR_LIST(x, d->w, d->b), TENSOR_LIST(y), 0), "GEMM forward");
}

/* dx (may be 0), dw, db from dy. */
static int dense_backward(dense_t* d, ccv_nnc_tensor_t* dy, ccv_nnc_tensor_t* x, ccv_nnc_tensor_t* dx)
{
	return check(ccv_nnc_cmd_exec(CMD_GEMM_BACKWARD(NO_TRANSPOSE, TRANSPOSE(0, 1)), ccv_nnc_no_hint, 0, TENSOR_LIST(dy, x, d->w), TENSOR_LIST(dx, d->dw, d->db), 0), "GEMM backward");
}

static void sgd(ccv_nnc_tensor_t* w, ccv_nnc_tensor_t* g, ccv_nnc_tensor_t* v, float rate, float momentum)
{
	const size_t n = ccv_nnc_tensor_count(w->info);
	size_t i;
	for (i = 0; i < n; i++)
	{
		v->data.f32[i] = momentum * v->data.f32[i] + g->data.f32[i];
		w->data.f32[i] -= rate * v->data.f32[i];
	}
}

static void normalise(const unsigned char* pixels, int n, float* out)
{
	int i;
	for (i = 0; i < n * IN; i++)
		out[i] = ((float)pixels[i] / 255.f - 0.2860f) / 0.3530f;
}

static void progress(int epoch, int epochs, int step, int steps, double loss, double seconds)
{
	const int width = 30;
	const int filled = (int)((long)width * step / steps);
	char bar[64];
	int i;
	for (i = 0; i < width; i++)
		bar[i] = i < filled ? '#' : '.';
	bar[width] = 0;
	fprintf(stderr, "\repoch %d/%d [%s] %3d%% loss %.4f %.1fs", epoch, epochs, bar, 100 * step / steps, loss, seconds);
	fflush(stderr);
}

int main(int argc, char** argv)
{
	int epochs = 3;
	const char* dir = "/usr/share/datasets/fashion-mnist";
	const char* curves = 0;
	int i, j;
	for (i = 1; i < argc; i++)
	{
		if (!strcmp(argv[i], "--epochs") && i + 1 < argc)
			epochs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--data") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "--curves") && i + 1 < argc)
			curves = argv[++i];
		else {
			fprintf(stderr, "usage: nnc-demo [--epochs N] [--data DIR] [--curves FILE]\n");
			return 2;
		}
	}
	if (epochs < 1 || epochs > 100)
	{
		fprintf(stderr, "nnc-demo: --epochs must be between 1 and 100\n");
		return 2;
	}
	ccv_nnc_init();
	char path[4096];
	int n_train = 0, n_test = 0, n_train_labels = 0, n_test_labels = 0;
	snprintf(path, sizeof(path), "%s/train-images-idx3-ubyte.gz", dir);
	unsigned char* train_pixels = read_idx(path, 0x803, &n_train, IN);
	snprintf(path, sizeof(path), "%s/train-labels-idx1-ubyte.gz", dir);
	unsigned char* train_labels = read_idx(path, 0x801, &n_train_labels, 1);
	snprintf(path, sizeof(path), "%s/t10k-images-idx3-ubyte.gz", dir);
	unsigned char* test_pixels = read_idx(path, 0x803, &n_test, IN);
	snprintf(path, sizeof(path), "%s/t10k-labels-idx1-ubyte.gz", dir);
	unsigned char* test_labels = read_idx(path, 0x801, &n_test_labels, 1);
	if (!train_pixels || !train_labels || !test_pixels || !test_labels || n_train != n_train_labels || n_test != n_test_labels)
		return 1;
	float* train = malloc(sizeof(float) * (size_t)n_train * IN);
	float* test = malloc(sizeof(float) * (size_t)n_test * IN);
	normalise(train_pixels, n_train, train);
	normalise(test_pixels, n_test, test);
	printf("Fashion-MNIST: %d training and %d test images\n", n_train, n_test);

	rng_state = 42;
	dense_t fc1 = dense_new(IN, HIDDEN), fc2 = dense_new(HIDDEN, OUT);
	ccv_nnc_tensor_t* x = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, BATCH, IN), 0);
	ccv_nnc_tensor_t* h = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, BATCH, HIDDEN), 0);
	ccv_nnc_tensor_t* dh = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, BATCH, HIDDEN), 0);
	ccv_nnc_tensor_t* logits = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, BATCH, OUT), 0);
	ccv_nnc_tensor_t* dlogits = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, BATCH, OUT), 0);
	int* order = malloc(sizeof(int) * (size_t)n_train);
	FILE* csv = curves ? fopen(curves, "w") : 0;
	if (csv)
		fprintf(csv, "epoch,train_loss,test_accuracy\n");
	rng_state = 1234;
	const int steps = (n_train + BATCH - 1) / BATCH;
	double accuracy = 0;
	const clock_t start = clock();
	for (int epoch = 1; epoch <= epochs; epoch++)
	{
		for (i = 0; i < n_train; i++)
			order[i] = i;
		for (i = n_train - 1; i > 0; i--)
		{
			const int k = (int)(splitmix64() % (uint64_t)(i + 1));
			const int t = order[i];
			order[i] = order[k];
			order[k] = t;
		}
		double loss_sum = 0;
		int seen = 0;
		for (int step = 0; step < steps; step++)
		{
			const int b = step * BATCH + BATCH <= n_train ? BATCH : n_train - step * BATCH;
			/* The last, smaller batch uses tensors over the same memory with fewer rows. */
			ccv_nnc_tensor_t xb = ccv_nnc_tensor(x->data.f32, CPU_TENSOR_NHWC(32F, b, IN), 0);
			ccv_nnc_tensor_t hb = ccv_nnc_tensor(h->data.f32, CPU_TENSOR_NHWC(32F, b, HIDDEN), 0);
			ccv_nnc_tensor_t dhb = ccv_nnc_tensor(dh->data.f32, CPU_TENSOR_NHWC(32F, b, HIDDEN), 0);
			ccv_nnc_tensor_t lb = ccv_nnc_tensor(logits->data.f32, CPU_TENSOR_NHWC(32F, b, OUT), 0);
			ccv_nnc_tensor_t dlb = ccv_nnc_tensor(dlogits->data.f32, CPU_TENSOR_NHWC(32F, b, OUT), 0);
			for (i = 0; i < b; i++)
				memcpy(x->data.f32 + i * IN, train + (size_t)order[step * BATCH + i] * IN, sizeof(float) * IN);
			if (dense_forward(&fc1, &xb, &hb))
				return 1;
			for (i = 0; i < b * HIDDEN; i++)
				h->data.f32[i] = h->data.f32[i] > 0 ? h->data.f32[i] : 0;
			if (dense_forward(&fc2, &hb, &lb))
				return 1;
			/* Softmax cross-entropy, mean over the batch, and its gradient. */
			for (i = 0; i < b; i++)
			{
				const float* z = logits->data.f32 + i * OUT;
				float* g = dlogits->data.f32 + i * OUT;
				float m = z[0];
				for (j = 1; j < OUT; j++)
					m = z[j] > m ? z[j] : m;
				double sum = 0;
				for (j = 0; j < OUT; j++)
					sum += exp(z[j] - m);
				const int label = train_labels[order[step * BATCH + i]];
				loss_sum += log(sum) - (z[label] - m);
				for (j = 0; j < OUT; j++)
					g[j] = (float)((exp(z[j] - m) / sum - (j == label)) / b);
			}
			seen += b;
			if (dense_backward(&fc2, &dlb, &hb, &dhb))
				return 1;
			for (i = 0; i < b * HIDDEN; i++)
				if (h->data.f32[i] <= 0)
					dh->data.f32[i] = 0;
			if (dense_backward(&fc1, &dhb, &xb, 0))
				return 1;
			sgd(fc1.w, fc1.dw, fc1.vw, 0.01f, 0.9f);
			sgd(fc1.b, fc1.db, fc1.vb, 0.01f, 0.9f);
			sgd(fc2.w, fc2.dw, fc2.vw, 0.01f, 0.9f);
			sgd(fc2.b, fc2.db, fc2.vb, 0.01f, 0.9f);
			if (step % 20 == 0 || step == steps - 1)
				progress(epoch, epochs, step + 1, steps, loss_sum / seen, (double)(clock() - start) / CLOCKS_PER_SEC);
		}
		/* Test accuracy. */
		int correct = 0;
		for (int first = 0; first < n_test; first += BATCH)
		{
			const int b = first + BATCH <= n_test ? BATCH : n_test - first;
			ccv_nnc_tensor_t xb = ccv_nnc_tensor(test + (size_t)first * IN, CPU_TENSOR_NHWC(32F, b, IN), 0);
			ccv_nnc_tensor_t hb = ccv_nnc_tensor(h->data.f32, CPU_TENSOR_NHWC(32F, b, HIDDEN), 0);
			ccv_nnc_tensor_t lb = ccv_nnc_tensor(logits->data.f32, CPU_TENSOR_NHWC(32F, b, OUT), 0);
			if (dense_forward(&fc1, &xb, &hb))
				return 1;
			for (i = 0; i < b * HIDDEN; i++)
				h->data.f32[i] = h->data.f32[i] > 0 ? h->data.f32[i] : 0;
			if (dense_forward(&fc2, &hb, &lb))
				return 1;
			for (i = 0; i < b; i++)
			{
				int best = 0;
				for (j = 1; j < OUT; j++)
					if (logits->data.f32[i * OUT + j] > logits->data.f32[i * OUT + best])
						best = j;
				correct += best == test_labels[first + i];
			}
		}
		accuracy = (double)correct / n_test;
		fprintf(stderr, "\n");
		printf("epoch %d: mean training loss %.4f, test accuracy %.4f\n", epoch, loss_sum / seen, accuracy);
		if (csv)
			fprintf(csv, "%d,%.6f,%.6f\n", epoch, loss_sum / seen, accuracy);
	}
	if (csv)
		fclose(csv);
	printf("final test accuracy %.4f\n", accuracy);
	dense_free(&fc1);
	dense_free(&fc2);
	ccv_nnc_tensor_free(x);
	ccv_nnc_tensor_free(h);
	ccv_nnc_tensor_free(dh);
	ccv_nnc_tensor_free(logits);
	ccv_nnc_tensor_free(dlogits);
	free(order);
	free(train);
	free(test);
	free(train_pixels);
	free(train_labels);
	free(test_pixels);
	free(test_labels);
	return accuracy > 0.8 ? 0 : 1;
}
