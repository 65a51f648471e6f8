/*
 * ccv_nnc.h — NNC's C API.
 *
 * Source-compatible with libnnc: a C program written against libnnc's
 * ccv_nnc.h compiles and runs against this one. The API comes in levels, each
 * built on the one below:
 *   Level 0  initialisation and library-wide flags
 *   Level 1  tensors, commands (operations with backends) and streams
 *   Level 2+ graphs, symbolic graphs, dynamic graphs and models (later headers
 *            sections, added as they are implemented)
 *
 * A minimal program:
 *
 *   #include <nnc/ccv_nnc.h>
 *   #include <nnc/ccv_nnc_easy.h>
 *
 *   ccv_nnc_init();
 *   ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 3), 0);
 *   ccv_nnc_tensor_t* b = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 3, 4), 0);
 *   ccv_nnc_tensor_t* c = ccv_nnc_tensor_new(0, CPU_TENSOR_NHWC(32F, 2, 4), 0);
 *   // ... fill a and b ...
 *   if (ccv_nnc_cmd_exec(CMD_GEMM_FORWARD(), ccv_nnc_no_hint, 0, TENSOR_LIST(a, b), TENSOR_LIST(c), 0) != CCV_NNC_EXEC_SUCCESS)
 *     fprintf(stderr, "%s\n", ccv_nnc_error_message());
 *   ccv_nnc_tensor_free(a); ccv_nnc_tensor_free(b); ccv_nnc_tensor_free(c);
 *
 * Conventions. Functions returning int report failure with a negative
 * CCV_NNC_EXEC_* code; functions returning a pointer report it with NULL;
 * functions returning void leave their outputs untouched. In every case
 * ccv_nnc_error_message() then says, in words, what was wrong. Objects from
 * *_new are owned by the caller and released with the matching *_free, which
 * accepts NULL.
 */
#ifndef GUARD_ccv_nnc_h
#define GUARD_ccv_nnc_h

#include "ccv.h"
#include <stddef.h>

#include "cmd/ccv_nnc_cmd.h"
#include "cmd/ccv_nnc_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Level 0: the library
 * ------------------------------------------------------------------------- */

/**
 * Initialise NNC: registers the command backends and starts nothing else.
 * Safe to call more than once and from several threads.
 */
void ccv_nnc_init(void);

/* Library-wide switches (the MPS ones are accepted and have no effect here). */
enum {
	CCV_NNC_DISABLE_MIXED_MPS_GEMM = 0x1,
	CCV_NNC_DISABLE_MIXED_MPS_SOFTMAX = 0x2,
	CCV_NNC_DISABLE_MMAP_MTL_BUFFER = 0x4,
	CCV_NNC_DISABLE_METAL_FLASH_ATTENTION = 0x8,
	CCV_NNC_DISABLE_MFA_GEMM = 0x10,
};
/** Set library-wide flags (or-ed into the current set). */
void ccv_nnc_enable_flag(uint64_t flag);
/** Clear library-wide flags. */
void ccv_nnc_disable_flag(uint64_t flag);
/** The current library-wide flags. */
uint64_t ccv_nnc_flags(void);

/**
 * NNC addition: the message describing the last failure on the calling
 * thread, or "" if none. The string belongs to NNC and stays valid until the
 * next NNC call on this thread.
 */
const char* ccv_nnc_error_message(void);
/** NNC addition: clear the calling thread's error message. */
void ccv_nnc_error_clear(void);
/** NNC addition: the library's version, "MAJOR.MINOR.PATCH". */
const char* ccv_nnc_version(void);

/* ---------------------------------------------------------------------------
 * Level 1: commands
 * ------------------------------------------------------------------------- */

/* Command attributes the symbolic passes rely on. */
enum {
	CCV_NNC_CMD_ATTR_PASSTHROUGH  = 0x01, /* computes nothing: passes its first inputs through as outputs */
	CCV_NNC_CMD_ATTR_OUTPUT_ONES  = 0x02, /* every output is all ones */
	CCV_NNC_CMD_ATTR_NULL_IS_ONES = 0x04, /* a missing (NULL) input reads as all ones */
};

/* Flags for ccv_nnc_cmd_exec. */
enum {
	CCV_NNC_ACCUMULATE_OUTPUT = 0x01, /* add into the outputs (not supported; rejected) */
	CCV_NNC_ZERO_MEMORY_ALLOC = 0x02, /* do not allocate scratch memory */
};

/* Results of executing a command. */
enum {
	CCV_NNC_EXEC_SUCCESS   = 0,  /* done */
	CCV_NNC_EXEC_INVALID   = -1, /* the arguments were wrong (see ccv_nnc_error_message) */
	CCV_NNC_EXEC_NO_KERNEL = -2, /* no backend accepts these tensors */
	CCV_NNC_EXEC_OOM       = -3, /* out of memory */
};

enum {
	CCV_NNC_MSE_REDUCE_MEAN = 0, /* MSE loss averages over a row */
	CCV_NNC_MSE_REDUCE_SUM = 1,  /* MSE loss sums over a row */
};

enum {
	CCV_NNC_HISTOGRAM_EVEN = 0,        /* equal-width bins between min and max */
	CCV_NNC_HISTOGRAM_LOGARITHMIC = 1, /* bins growing geometrically from min to max */
	CCV_NNC_HISTOGRAM_BINS = 2,        /* bin edges given as a tensor */
};

enum {
	CCV_NNC_UPSAMPLE_NEAREST = 0,
	CCV_NNC_UPSAMPLE_BILINEAR = 1,
};

enum {
	CCV_NNC_PAD_ZERO = 0,      /* pad with zeros */
	CCV_NNC_PAD_REPLICATE = 1, /* pad by repeating the edge */
	CCV_NNC_PAD_REFLECT = 2,   /* NNC addition: pad by mirroring around the edge, which is not repeated */
};

/* Preferred accumulator precision for GEMM-like commands. */
enum {
	CCV_NNC_GEMM_32F = 0x1,
	CCV_NNC_GEMM_32TF = 0x2,
	CCV_NNC_GEMM_16F = 0x4,
};

/**
 * A command's parameters. `size` is the window (kernel) size of windowed
 * commands; the union holds the parameters of one family, named after it.
 */
typedef struct {
	struct {
		int dim[CCV_NNC_MAX_DIM_ALLOC]; /* window size, e.g. {kh, kw, c} for a convolution */
	} size;
	union {
		struct {
			int count;  /* number of filters */
			int groups; /* channel groups */
			int dilation[CCV_NNC_MAX_DIM_ALLOC]; /* per spatial dimension; 0 means 1 */
		} convolution;
		struct {
			int count;
			int groups;
			int dilation[CCV_NNC_MAX_DIM_ALLOC];
			int output_padding; /* extra rows/columns that make it the inverse of a strided convolution */
		} convolution_transpose;
		struct {
			int hidden_size;
			int proj_size;
			int num_layers;
			int bias;          /* 0: no bias weights */
			int batch_first;   /* 1: batch dimension before sequence */
			int bidirectional;
			float dropout;     /* dropout between layers, 0 for none */
			int is_test;
		} rnn;
		struct {
			int reserved;
		} pool;
		struct {
			float kappa; /* b = a / (kappa + alpha * local sum of squares) ^ beta */
			float alpha;
			float beta;
		} rnorm;
		struct {
			int axis[CCV_NNC_MAX_DIM_ALLOC]; /* axes reduced for the statistics */
			int count;
			float epsilon;
			int is_test;    /* 1: use the running statistics */
			float momentum; /* running = running * momentum + batch * (1 - momentum) */
		} bnorm;
		struct {
			int axis[CCV_NNC_MAX_DIM_ALLOC];
			int count;
			float epsilon;
			int elementwise_affine; /* 1: apply scale and bias */
		} lnorm;
		struct {
			int group_axis;
			int reduce_axis[CCV_NNC_MAX_DIM_ALLOC];
			int reduce_count;
			int groups;
			float epsilon;
			int elementwise_affine;
		} gnorm;
		struct {
			int axis[CCV_NNC_MAX_DIM_ALLOC];
			int count;
			float epsilon;
		} rmsnorm;
		struct {
			int nesterov;
			float rate;      /* learning rate */
			float scale;     /* gradient scale applied first */
			float decay;     /* L2 weight decay */
			float momentum;
			float dampening;
		} sgd;
		struct {
			int step; /* 1-based step count t */
			float rate;
			float scale;
			float beta1;
			float beta2;
			float decay;
			float epsilon;
			int amsgrad;
		} adam;
		struct {
			int step;
			float rate;
			float scale;
			float beta1;
			float beta2;
			float decay;
			float epsilon;
		} lamb;
		struct {
			float rate;
			float scale;
			float decay;
			float alpha; /* smoothing constant of the squared-gradient average */
			float momentum;
			float epsilon;
		} rmsprop;
		struct {
			int transpose_a[2]; /* the two axes of a to swap; equal means no transpose */
			int transpose_b[2];
			float a[3];         /* scalars; GEMM reads none, ADD reads p and q, … */
			int flags;          /* CCV_NNC_GEMM_… */
		} blas;
		struct {
			float trim0; /* the value a 0 label becomes */
			float trim1; /* the value a 1 label becomes */
		} label_smoothing;
		struct {
			float pos_weight; /* loss = -(pos_weight * y * log(x) + (1 - y) * log(1 - x)) */
		} binary_crossentropy;
		struct {
			float beta; /* the point where smooth L1 turns from quadratic to linear */
		} smooth_l1;
		struct {
			int reduce_op; /* CCV_NNC_MSE_REDUCE_… */
		} mse;
		struct {
			int tanh; /* 1: tanh approximation */
		} gelu;
		struct {
			int axis[CCV_NNC_MAX_DIM_ALLOC];
			int count;
		} reduce;
		struct {
			int axis[2];
		} transpose;
		struct {
			float p;       /* probability of dropping */
			int entirety;  /* 1: drop the whole tensor at once */
		} dropout;
		struct {
			int type; /* CCV_NNC_UPSAMPLE_… */
			float width_scale;
			float height_scale;
			int align_corners;
		} upsample;
		struct {
			float min; /* NaN: no lower bound */
			float max; /* NaN: no upper bound */
		} clamp;
		struct {
			float iou_threshold;
		} nms;
		struct {
			int type; /* CCV_NNC_HISTOGRAM_… */
			int bins;
			float min;
			float max;
			float rate;
		} histogram;
		struct {
			float negative_slope;
		} leaky_relu;
		struct {
			float scale;
			int is_causal;
			int flags;
			int deterministic;
		} scaled_dot_product_attention;
		struct {
			int type; /* CCV_NNC_PAD_… */
			int end[CCV_NNC_MAX_DIM_ALLOC]; /* padding after each dimension (size.dim is before) */
		} pad;
		void* userdata;
	};
} ccv_nnc_cmd_param_t;

/** Stride and border (padding) of a windowed command, per spatial dimension. */
typedef struct {
	struct {
		int dim[CCV_NNC_MAX_DIM_ALLOC];
	} stride;
	struct {
		int begin[CCV_NNC_MAX_DIM_ALLOC];
		int end[CCV_NNC_MAX_DIM_ALLOC];
	} border;
} ccv_nnc_hint_t;

/** A stream: commands submitted to it run in order, asynchronously to the caller. */
typedef struct ccv_nnc_stream_context_s ccv_nnc_stream_context_t;

typedef struct ccv_nnc_cmd_vtab_s ccv_nnc_cmd_vtab_t;

/** A command: an operation, the backend that runs it, and its parameters. */
typedef struct ccv_nnc_cmd_s {
	uint32_t cmd;     /* CCV_NNC_…_FORWARD / _BACKWARD */
	uint32_t backend; /* CCV_NNC_BACKEND_…, or 0 to choose per call */
	int algorithm;    /* backend-specific algorithm, chosen by autotune */
	ccv_nnc_cmd_param_t info;
	ccv_nnc_cmd_vtab_t* isa; /* the functions of a CCV_NNC_CUSTOM_… command */
	void* data;
} ccv_nnc_cmd_t;

/**
 * How a command (or backend) runs. For a backward command the inputs are: the
 * gradients of the forward outputs (m of them), then the forward inputs (n),
 * then the forward outputs (m); the outputs are the gradients of the forward
 * inputs (n). Any of them may be NULL where the command does not need it.
 */
typedef int(*ccv_nnc_cmd_exec_f)(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const* const inputs, const int input_size, ccv_nnc_tensor_t* const* const outputs, const int output_size, ccv_nnc_stream_context_t* const stream_context);

/** A backend's own autotune: returns the algorithm it prefers within max_workspace_size. */
typedef int(*ccv_nnc_cmd_autotune_f)(const ccv_nnc_cmd_t cmd, const size_t max_workspace_size, const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const* const inputs, const int input_size, ccv_nnc_tensor_t* const* const outputs, const int output_size, ccv_nnc_stream_context_t* const stream_context);

/** The caller's functions behind a CCV_NNC_CUSTOM_FORWARD / _BACKWARD command. */
typedef struct ccv_nnc_cmd_vtab_s {
	ccv_nnc_cmd_exec_f exec;
	/* Output shapes for given input shapes; NULL copies the first input's shape. */
	void (*tensor_auto)(const ccv_nnc_cmd_t cmd, const ccv_nnc_tensor_param_t* const inputs, const int input_size, const ccv_nnc_hint_t hint, ccv_nnc_tensor_param_t* const outputs, const int output_size);
} ccv_nnc_cmd_vtab_t;

/* ---------------------------------------------------------------------------
 * Level 1: micro ops, a small language that describes a command
 *
 * Four kinds of step are enough to write most commands: reindex (each output
 * element reads one input element at an index computed from the output's
 * index), element-wise unary and binary math, reduction along axes, and
 * select (read along one axis at positions held in an index tensor). Steps
 * are built into a graph of ccv_nnc_micro_io_t, combined into a
 * ccv_nnc_micro_combine_t (with the gradients wanted from it) and run on the
 * CPU by ccv_nnc_micro_combine_interpret. For example, a transpose:
 *
 *   ccv_nnc_micro_io_t x = ccv_nnc_micro_input(2);
 *   ccv_nnc_micro_io_t y = ccv_nnc_micro_reindex((const char*[]){ "dA1", "dA0" }, 2, &x, 1, (const char*[]){ "i1", "i0" }, 2, x);
 *   ccv_nnc_micro_combine_t* t = ccv_nnc_micro_combine_new(&x, 1, 0, 0, &y, 1, 0, 0, 0, 0);
 *   ccv_nnc_micro_combine_interpret(t, CCV_NNC_CUSTOM_FORWARD, TENSOR_LIST(a), 0, 0, TENSOR_LIST(b));
 *   ccv_nnc_micro_combine_free(t);
 *
 * Ownership: a ccv_nnc_micro_io_t made by the calls below is held by every io
 * built on it and by every combine it is passed to, and is freed when its last
 * holder goes: freeing a combine releases the ios it holds. An io that nothing
 * holds (one never combined, or left over when a call failed) is released
 * with ccv_nnc_micro_io_free (an NNC addition).
 *
 * Interpreter values are computed in double precision; tensors may be 32F,
 * 64F, 16F, 16BF, 32S, 64S or 8U CPU tensors or views.
 * ccv_nnc_micro_combine_c writes the forward pass as a C function.
 * ------------------------------------------------------------------------- */

/** What kind of step an io is (opaque). */
typedef struct ccv_nnc_micro_io_vtab_s ccv_nnc_micro_io_vtab_t;

/** Element-wise functions of one tensor (ccv_nnc_micro_unary). */
enum {
	CCV_NNC_MICRO_UNARY_OP_NEG, /* -x */
	CCV_NNC_MICRO_UNARY_OP_LOG, /* natural logarithm */
	CCV_NNC_MICRO_UNARY_OP_EXP,
};

/** Element-wise functions of two tensors of one shape (ccv_nnc_micro_binary). */
enum {
	CCV_NNC_MICRO_BINARY_OP_PLUS,
	CCV_NNC_MICRO_BINARY_OP_MINUS,
	CCV_NNC_MICRO_BINARY_OP_MUL,
	CCV_NNC_MICRO_BINARY_OP_DIV,
	CCV_NNC_MICRO_BINARY_OP_MAX,
	CCV_NNC_MICRO_BINARY_OP_MIN,
	CCV_NNC_MICRO_BINARY_OP_EQUAL_TO, /* 1 where left == right, else 0 */
	CCV_NNC_MICRO_BINARY_OP_LESS_THAN, /* 1 where left < right, else 0 */
};

/** Reductions along axes (ccv_nnc_micro_reduce). */
enum {
	CCV_NNC_MICRO_REDUCE_OP_MAX,
	CCV_NNC_MICRO_REDUCE_OP_MIN,
	CCV_NNC_MICRO_REDUCE_OP_ARGMAX, /* row-major position within the reduced axes of the first maximum */
	CCV_NNC_MICRO_REDUCE_OP_ARGMIN,
	CCV_NNC_MICRO_REDUCE_OP_MEAN,
	CCV_NNC_MICRO_REDUCE_OP_SUM,
	CCV_NNC_MICRO_REDUCE_OP_PROD,
};

/** One step of a micro-op graph (a tensor-valued expression). */
typedef struct ccv_nnc_micro_io_s* ccv_nnc_micro_io_t;

/** The fields a caller may read; the rest of an io is private. */
struct ccv_nnc_micro_io_s {
	const ccv_nnc_micro_io_vtab_t* isa; /* the kind of step */
	ccv_nnc_micro_io_t* inputs; /* the ios this one reads (for a reindex: x, then the shape tensors) */
	int input_size;
	int dimensions; /* number of axes of the value */
	int id; /* a serial number, unique within the process, used in messages */
};

/** A value for a named parameter ("$name" in an expression). type is a datatype: CCV_8U, CCV_32S, CCV_16F, CCV_32F, CCV_64S or CCV_64F. */
typedef struct {
	int type; /* which member holds the value; floating values must be whole numbers */
	union {
		unsigned char u8;
		int i32;
		ccv_float16_t f16;
		float f32;
		int64_t i64;
		uint64_t u64;
		double f64;
	};
} ccv_nnc_micro_scalar_t;

/**
 * A tensor the combined op reads, given at run time.
 * @param dimensions Its number of axes (1 to CCV_NNC_MAX_DIM_ALLOC); the tensor bound to it must have exactly this many.
 * @return A new io, or NULL with a message.
 */
CCV_WARN_UNUSED(ccv_nnc_micro_io_t) ccv_nnc_micro_input(const int dimensions);
/**
 * Reindex: y has shape_count axes; y[i0, i1, ...] = x[reindex[0], reindex[1], ...],
 * each reindex expression evaluated at the output index. Where an expression
 * falls outside x the element is 0 (so padding needs no extra step).
 *
 * Expressions are integer arithmetic over: constants (12), the output index
 * i0, i1, ... (reindex expressions only), dimensions of the shape tensors dA0,
 * dA1, ... (A is ss[0], B is ss[1], ..., the digit an axis), and parameters
 * $name (named in ccv_nnc_micro_combine_new, valued at run time), with + - * /
 * (division truncates toward zero), unary minus and parentheses.
 * Broadcast x[w, h] to y[w, h, h]: shape { "dA0", "dA1", "dA1" }, reindex { "i0", "i1", "0" }, ss { x }.
 *
 * @param shape The output's size per axis (shape_count expressions).
 * @param shape_count The output's number of axes.
 * @param ss The ios whose dimensions dA.., dB.. refer to (only their shapes are used).
 * @param s_count The number of ss.
 * @param reindex Where to read x, one expression per axis of x.
 * @param reindex_count Must equal x's dimensions.
 * @param x The io read.
 * @return A new io that holds x and ss, or NULL with a message (a malformed
 *   expression, an unknown variable, a count that does not match).
 */
CCV_WARN_UNUSED(ccv_nnc_micro_io_t) ccv_nnc_micro_reindex(const char* const* const shape, const int shape_count, const ccv_nnc_micro_io_t* const ss, const int s_count, const char* const* const reindex, const int reindex_count, const ccv_nnc_micro_io_t x);
/**
 * Element-wise op(x).
 * @param op A CCV_NNC_MICRO_UNARY_OP_*.
 * @param x The input.
 * @return A new io of x's shape that holds x, or NULL with a message.
 */
CCV_WARN_UNUSED(ccv_nnc_micro_io_t) ccv_nnc_micro_unary(const uint32_t op, const ccv_nnc_micro_io_t x);
/**
 * Element-wise op(left, right); both must have the same shape (checked here
 * for the number of axes, at run time for the sizes).
 * @param op A CCV_NNC_MICRO_BINARY_OP_*.
 * @param left The left input.
 * @param right The right input.
 * @return A new io that holds both, or NULL with a message.
 */
CCV_WARN_UNUSED(ccv_nnc_micro_io_t) ccv_nnc_micro_binary(const uint32_t op, const ccv_nnc_micro_io_t left, const ccv_nnc_micro_io_t right);
/**
 * Reduce x along the given axes. The result keeps x's number of axes, with
 * size 1 on the reduced ones.
 * @param op A CCV_NNC_MICRO_REDUCE_OP_*.
 * @param axis The axes to reduce (distinct, each below x's dimensions).
 * @param axis_count How many (at least 1).
 * @param x The input.
 * @return A new io that holds x, or NULL with a message.
 */
CCV_WARN_UNUSED(ccv_nnc_micro_io_t) ccv_nnc_micro_reduce(const uint8_t op, const int* const axis, const int axis_count, const ccv_nnc_micro_io_t x);
/**
 * Gather along one axis: y has index's shape, and
 * y[p] = x[p with axis replaced by index[p]]. index has x's number of axes and
 * x's sizes on every axis but `axis`; its values are whole numbers in
 * [0, size of x along axis) (checked at run time).
 * @param axis The axis of x to select along.
 * @param x The tensor read.
 * @param index The positions.
 * @return A new io that holds x and index, or NULL with a message.
 */
CCV_WARN_UNUSED(ccv_nnc_micro_io_t) ccv_nnc_micro_select(const int axis, const ccv_nnc_micro_io_t x, const ccv_nnc_micro_io_t index);
/**
 * The gradient of (a loss with respect to) x, for the ingrads and outgrads of
 * ccv_nnc_micro_combine_new: as an ingrad it is given to the backward pass, as
 * an outgrad it is computed by it. It has x's shape.
 * @param x The io whose gradient this is (not a gradient itself).
 * @return A new io that holds x, or NULL with a message.
 */
CCV_WARN_UNUSED(ccv_nnc_micro_io_t) ccv_nnc_micro_grad(const ccv_nnc_micro_io_t x);
/** A graph of micro ops ready to run (opaque). */
typedef struct ccv_nnc_micro_combine_s ccv_nnc_micro_combine_t;
/**
 * Combine micro ops into one op with a forward and a backward pass.
 * Forward: inputs in, outputs out. Backward: ingrads in (gradients of outputs
 * made with ccv_nnc_micro_grad, and any plain inputs / outputs its rules need),
 * outgrads out (ccv_nnc_micro_grad of inputs, or of any io in the graph).
 * Backward rules: reindex scatters (adds) the gradient back to the positions
 * read; neg/log/exp, the four arithmetic ops and max/min (the gradient goes to
 * the side chosen, left on ties) by calculus; equal-to, less-than, argmax and
 * argmin pass none; sum and mean spread it; max / min reduction to the first
 * extreme element; prod to each element times the product of the others;
 * select adds it back at the selected positions (none to index).
 * @param inputs The forward inputs (ccv_nnc_micro_input ios), in order.
 * @param input_size How many.
 * @param parameters The names of the $parameters used by the expressions ("$k" or "k"), in the order their values are given.
 * @param parameter_size How many.
 * @param outputs The forward outputs, in order.
 * @param output_size How many.
 * @param ingrads The backward inputs, in order.
 * @param ingrad_size How many.
 * @param outgrads The backward outputs, in order (each a ccv_nnc_micro_grad io).
 * @param outgrad_size How many.
 * @return A combine that holds every io passed, to free with
 *   ccv_nnc_micro_combine_free; or NULL with a message, in which case it takes nothing.
 */
CCV_WARN_UNUSED(ccv_nnc_micro_combine_t*) ccv_nnc_micro_combine_new(const ccv_nnc_micro_io_t* const inputs, const int input_size, const char* const* const parameters, const int parameter_size, const ccv_nnc_micro_io_t* const outputs, const int output_size, const ccv_nnc_micro_io_t* const ingrads, const int ingrad_size, const ccv_nnc_micro_io_t* const outgrads, const int outgrad_size);
/** Free a combine and the ios it holds. NULL is a no-op. */
void ccv_nnc_micro_combine_free(ccv_nnc_micro_combine_t* const combine);
/**
 * Run a combine on the CPU, element by element (a reference, not fast).
 * On bad input (shapes that do not agree, missing tensors, an index out of
 * range, division by zero in an expression) the outputs are left untouched
 * and ccv_nnc_error_message() says what was wrong.
 * @param combine The combine.
 * @param cmd CCV_NNC_CUSTOM_FORWARD (inputs -> outputs) or CCV_NNC_CUSTOM_BACKWARD (ingrads -> outgrads).
 * @param inputs The tensors for the inputs (forward) or ingrads (backward), in order.
 * @param input_size Their number; must match the combine.
 * @param values The parameters' values, in the order of their names.
 * @param parameter_size Their number; must match the combine.
 * @param outputs The tensors for the outputs or outgrads, in order, each of its io's shape (axes of size 1 may be left out); a NULL one is skipped.
 * @param output_size Their number; must match the combine.
 */
void ccv_nnc_micro_combine_interpret(ccv_nnc_micro_combine_t* const combine, const uint32_t cmd, ccv_nnc_tensor_t* const* const inputs, const int input_size, const ccv_nnc_micro_scalar_t* const values, const int parameter_size, ccv_nnc_tensor_t* const* const outputs, const int output_size);
/**
 * C source for the combine's forward pass: a self-contained C99 file (math.h,
 * stdlib.h, string.h) that defines
 *   int ccv_nnc_micro_forward(const double* const* inputs, const int* const* input_dims,
 *                             const long long* params, double** outputs, int (*output_dims)[12]);
 * inputs[k] holds input k row-major with sizes input_dims[k]; params the
 * parameters in order. It returns 0 and sets outputs[k] to a malloc'ed
 * row-major array (the caller frees it) with sizes in output_dims[k], or a
 * negative number on bad shapes, division by zero or an index out of range
 * (allocating nothing). It computes what ccv_nnc_micro_combine_interpret's
 * forward pass computes. The backward pass is not generated.
 * @param combine The combine (it must have outputs).
 * @return The source, malloc'ed: the caller frees it with free(); or NULL with a message.
 */
char* ccv_nnc_micro_combine_c(ccv_nnc_micro_combine_t* const combine);
/**
 * NNC addition: release an io that nothing holds (see Ownership above) and the
 * ios only it held. An io held by another io or by a combine is left alone,
 * with a message. NULL is a no-op.
 */
void ccv_nnc_micro_io_free(ccv_nnc_micro_io_t io);

/* ---------------------------------------------------------------------------
 * Level 1: tensors
 * ------------------------------------------------------------------------- */

/** Number of dimensions: the count before the first 0 in dim. */
static inline int ccv_nnc_tensor_nd(const int dim[CCV_NNC_MAX_DIM_ALLOC])
{
	int i;
	for (i = 0; i < CCV_NNC_MAX_DIM_ALLOC; i++)
		if (dim[i] == 0)
			return i;
	return CCV_NNC_MAX_DIM_ALLOC;
}

/**
 * Create a tensor.
 * @param ptr NULL to allocate the data (64-byte aligned, uninitialised, freed
 *   with the tensor); otherwise the tensor uses this memory, which stays the
 *   caller's and must outlive the tensor.
 * @param params Memory kind, format, data type and shape.
 * @param flags CCV_NO_DATA_ALLOC to create a header with no data.
 * @return A tensor to free with ccv_nnc_tensor_free, or NULL on bad params or
 *   no memory. A 3-d NHWC CPU tensor is also a valid ccv_dense_matrix_t.
 */
CCV_WARN_UNUSED(ccv_nnc_tensor_t*) ccv_nnc_tensor_new(const void* const ptr, const ccv_nnc_tensor_param_t params, const int flags);
enum {
	CCV_NNC_TENSOR_MEMORY_MAP_EAGER = 0x1,     /* map the file now */
	CCV_NNC_TENSOR_MEMORY_MAP_ON_DEMAND = 0x2, /* map when first read, where supported */
};
/**
 * Create a tensor whose data is read from `filename` at byte `offset`
 * (memory-mapped, read-only pages copied on write).
 * @return A tensor to free with ccv_nnc_tensor_free, or NULL if the file is
 *   missing or too short.
 */
CCV_WARN_UNUSED(ccv_nnc_tensor_t*) ccv_nnc_tensor_new_from_file(const ccv_nnc_tensor_param_t params, const char* const filename, const off_t offset, const int flags);
/**
 * A tensor header by value over `ptr` (caller memory; NULL leaves data NULL).
 * Nothing is allocated. On bad params the result has data NULL and dim all 0.
 */
CCV_WARN_UNUSED(ccv_nnc_tensor_t) ccv_nnc_tensor(const void* const ptr, const ccv_nnc_tensor_param_t params, const int flags);
/**
 * Change a tensor's shape (and type). Reuses the tensor when its memory is
 * large enough; otherwise returns a new tensor and frees the old one, so use
 * only the returned pointer. Contents are kept up to the smaller size.
 * @return The tensor, or NULL on bad params or no memory (the old tensor is
 *   then untouched and still yours).
 */
CCV_WARN_UNUSED(ccv_nnc_tensor_t*) ccv_nnc_tensor_resize(ccv_nnc_tensor_t* const tensor, const ccv_nnc_tensor_param_t params);
/** Pin a tensor's memory for device transfers. 0 on success, -1 without a GPU. */
int ccv_nnc_tensor_pin_memory(ccv_nnc_tensor_t* const tensor);
/** Free a tensor (and its data if it owns it). NULL is a no-op. */
void ccv_nnc_tensor_free(ccv_nnc_tensor_t* const tensor);
/**
 * Create a view: a window of shape params.dim into `tensor`.
 * @param ofs Start of the window, per dimension of the view, in elements.
 * @param stride Elements between neighbours along each dimension of the view
 *   (the viewed tensor's row lengths); NULL means packed strides of `params`.
 * @return A view to free with ccv_nnc_tensor_view_free, or NULL if the window
 *   reaches outside the tensor or params do not match it. The view does not
 *   own data: the tensor must outlive it.
 */
CCV_WARN_UNUSED(ccv_nnc_tensor_view_t*) ccv_nnc_tensor_view_new(const ccv_nnc_tensor_t* const tensor, const ccv_nnc_tensor_param_t params, const int ofs[CCV_NNC_MAX_DIM_ALLOC], const int stride[CCV_NNC_MAX_DIM_ALLOC]);
/** ccv_nnc_tensor_view_new by value (nothing allocated). On failure dim is all 0 and data NULL. */
CCV_WARN_UNUSED(ccv_nnc_tensor_view_t) ccv_nnc_tensor_view(const ccv_nnc_tensor_t* const tensor, const ccv_nnc_tensor_param_t params, const int ofs[CCV_NNC_MAX_DIM_ALLOC], const int stride[CCV_NNC_MAX_DIM_ALLOC]);
/** Free a view (not the tensor it looks into). NULL is a no-op. */
void ccv_nnc_tensor_view_free(ccv_nnc_tensor_view_t* const tensor_view);
/** Set every element of a tensor or view to zero. */
void ccv_nnc_tensor_zero(void* const tensor);
/**
 * Compare two tensors (or views) of the same type and shape. Floating-point
 * elements are equal when within a few units in the last place or 1e-5 of
 * each other relatively (fp16/bf16: within their own precision).
 * @return 0 if equal, -1 otherwise (also on mismatched shapes or types).
 */
CCV_WARN_UNUSED(int) ccv_nnc_tensor_eq(const ccv_nnc_tensor_t* const a, const ccv_nnc_tensor_t* const b);
/**
 * Print a CPU tensor the way numpy does, eliding the middle of long dimensions.
 * @return A string to free with ccfree, or NULL.
 */
CCV_WARN_UNUSED(char*) ccv_nnc_tensor_format_new(const ccv_nnc_tensor_t* const a);

/* ---------------------------------------------------------------------------
 * Level 1: commands
 * ------------------------------------------------------------------------- */

/** A monotonic clock in nanoseconds. */
uint64_t ccv_nnc_cmd_mono_time(void);
/** "CCV_NNC_GEMM_FORWARD" for CCV_NNC_GEMM_FORWARD; NULL for an unknown id. Static storage. */
CCV_WARN_UNUSED(const char*) ccv_nnc_cmd_name(const uint32_t cmd);
/** "CCV_NNC_BACKEND_CPU_REF" for CCV_NNC_BACKEND_CPU_REF; NULL for an unknown id. */
CCV_WARN_UNUSED(const char*) ccv_nnc_cmd_backend_name(const uint32_t backend);
/** 1 if `backend` implements `cmd` in this build. */
CCV_WARN_UNUSED(int) ccv_nnc_cmd_ok(const uint32_t cmd, const uint32_t backend);
/**
 * Make a command.
 * @param isa For CCV_NNC_CUSTOM_FORWARD / _BACKWARD, the caller's functions
 *   (must outlive the command); otherwise NULL.
 * @return The command, with backend 0 (chosen at each execution). For an
 *   unknown id the result has cmd CCV_NNC_NOOP and the error message is set.
 */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd(const uint32_t cmd, ccv_nnc_cmd_vtab_t* const isa, const ccv_nnc_cmd_param_t params, const int flags);
/**
 * Check that a hint fits a windowed command mapping input shape a to output
 * shape b. @return 1 if it fits (or the command has no window), 0 otherwise.
 */
CCV_WARN_UNUSED(int) ccv_nnc_hint_verify(const ccv_nnc_hint_t hint, const ccv_nnc_cmd_param_t cmd, const ccv_nnc_tensor_param_t a, const ccv_nnc_tensor_param_t b);
/**
 * The stride and symmetric padding that take input shape a to output shape b
 * under the window cmd.size. A zero hint if no such hint exists.
 */
CCV_WARN_UNUSED(ccv_nnc_hint_t) ccv_nnc_hint_auto(const ccv_nnc_cmd_param_t cmd, const ccv_nnc_tensor_param_t a, const ccv_nnc_tensor_param_t b);
/**
 * The output shapes a command gives for these input shapes. Outputs beyond
 * what the command defines are left as they are; on bad input all outputs are
 * left as they are and the error message is set.
 */
void ccv_nnc_hint_tensor_auto(const ccv_nnc_cmd_t cmd, const ccv_nnc_tensor_param_t* const inputs, const int input_size, const ccv_nnc_hint_t hint, ccv_nnc_tensor_param_t* const outputs, const int output_size);
/**
 * The first backend, in preference order, implementing `cmd` for the given
 * memory kinds, formats and data types (each an or-ed set every tensor is in).
 * @return A backend id, or CCV_NNC_NO_BACKEND.
 */
CCV_WARN_UNUSED(uint32_t) ccv_nnc_cmd_find_backend(const ccv_nnc_cmd_t cmd, const int tensor_memory, const int tensor_formats, const int tensor_datatypes);
/**
 * Time every backend (and algorithm) that accepts these tensors and return the
 * command with the fastest one set. Outputs are overwritten while timing.
 * @return The tuned command; `cmd` unchanged if nothing accepts the tensors.
 */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_autotune(const ccv_nnc_cmd_t cmd, const size_t max_workspace_size, const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const* const inputs, const int input_size, ccv_nnc_tensor_t* const* const outputs, const int output_size, ccv_nnc_stream_context_t* const stream_context);
/**
 * Whether the command can run with this pattern of present (bit set) and
 * absent inputs and outputs; bit i of word i / 64 stands for tensor i.
 * @return 1 if it can.
 */
CCV_WARN_UNUSED(int) ccv_nnc_cmd_bitmask(const ccv_nnc_cmd_t cmd, const int input_size, const int output_size, const uint64_t* const input_bitmasks, const int input_bitmask_size, const uint64_t* const output_bitmasks, const int output_bitmask_size);
/** Backend-specific extra data of the command's backend, or NULL. */
CCV_WARN_UNUSED(void*) ccv_nnc_cmd_aux(const ccv_nnc_cmd_t cmd);
/**
 * Run a command.
 * @param hint Stride and padding for windowed commands (ccv_nnc_no_hint
 *   derives them from the shapes).
 * @param flags CCV_NNC_ZERO_MEMORY_ALLOC or 0.
 * @param inputs, outputs Tensors or views; NULL entries where the command
 *   allows them.
 * @param stream_context NULL to run now on the calling thread; otherwise the
 *   command is queued on the stream and this returns once it is queued. The
 *   tensors must then stay alive until the stream reaches it; a failure found
 *   while running is reported by the stream (see ccv_nnc_stream_context_wait).
 * @return CCV_NNC_EXEC_SUCCESS or a negative CCV_NNC_EXEC_… code.
 */
int ccv_nnc_cmd_exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const* const inputs, const int input_size, ccv_nnc_tensor_t* const* const outputs, const int output_size, ccv_nnc_stream_context_t* const stream_context);
/** 1 if the command is a forward pass (its id has the low bit clear). */
CCV_WARN_UNUSED(int) ccv_nnc_cmd_is_forward(const ccv_nnc_cmd_t cmd);
/** 1 if the command is a backward pass. */
CCV_WARN_UNUSED(int) ccv_nnc_cmd_is_backward(const ccv_nnc_cmd_t cmd);
/** 1 if the command has all the CCV_NNC_CMD_ATTR_… bits in flags. */
CCV_WARN_UNUSED(int) ccv_nnc_cmd_attr(const ccv_nnc_cmd_t cmd, const int flags);
/** 1 if output output_idx may share memory with input input_idx. */
CCV_WARN_UNUSED(int) ccv_nnc_cmd_allow_inplace(const ccv_nnc_cmd_t cmd, const int input_idx, const int input_size, const int output_idx, const int output_size);
/** 1 if output output_idx must share memory with input input_idx. */
CCV_WARN_UNUSED(int) ccv_nnc_cmd_enforce_inplace(const ccv_nnc_cmd_t cmd, const int input_idx, const int input_size, const int output_idx, const int output_size);
/** Start (1) or stop (0) a device profiler; no effect without a GPU. */
void ccv_nnc_set_profiler(int state);
/**
 * Prefer memory over speed where there is a choice (1) or not (0, the default).
 * On the CPU the one choice is scratch memory: while on, the calling thread's
 * workspace (a NULL stream's ccv_nnc_stream_context_get_workspace, and what
 * kernels run by ccv_nnc_cmd_exec or ccv_nnc_graph_run use) is freed when the
 * outermost such call returns, and a stream's workspace when each of its tasks
 * ends, instead of being kept for the next command (which then allocates
 * again). Process-wide; takes effect from the next call.
 */
void ccv_nnc_set_memory_efficient(int state);
/**
 * Palettise 16F, 32F or 64F values into blocks, each a palette of 2^qbits
 * values of the same type followed by a qbits-bit palette index per element
 * (the data of a CCV_QX tensor made with ccv_nnc_tensor_palettize). Block b
 * covers elements b * number_in_blocks onwards (the last may be short); it
 * holds its palette, ascending, then its indices packed least significant
 * bit first, element j's at bits j * qbits .. j * qbits + qbits - 1. A block
 * with at most 2^qbits distinct values gets exactly those (unused entries
 * repeat the largest); otherwise the palette is a 1-d k-means of the block
 * (Lloyd's iterations from a uniform grid and from the block's quantiles, the
 * one with the smaller squared error kept), each element indexing its nearest
 * entry (the lower on a tie).
 * @param input input_length values of `datatype`, all finite.
 * @param datatype CCV_16F, CCV_32F or CCV_64F.
 * @param memory_type CCV_TENSOR_CPU_MEMORY (the only one supported).
 * @param input_length The number of elements.
 * @param qbits Bits per index, 4 to 8.
 * @param number_in_blocks Elements per palette, at least 1, with
 *   number_in_blocks * qbits a multiple of 8 (so blocks start on bytes).
 * @param output Where the blocks are written (not overlapping input).
 * @param output_length Bytes available at output.
 * @return The bytes written: 2^qbits * element size per block plus
 *   ceil(input_length * qbits / 8), as ccv_nnc_tensor_data_size_without_padding
 *   gives for the CCV_QX parameters; 0 on bad input or too small an output
 *   (ccv_nnc_error_message says why), output then untouched.
 */
CCV_WARN_UNUSED(size_t) ccv_nnc_palettize(const void* input, const int datatype, const int memory_type, const size_t input_length, const int qbits, const int number_in_blocks, void* output, const size_t output_length);
/**
 * The values ccv_nnc_palettize's blocks stand for: each element its block's
 * palette entry.
 * @param input The blocks, as ccv_nnc_palettize writes them.
 * @param datatype CCV_16F, CCV_32F or CCV_64F: the palette's type and output's.
 * @param memory_type CCV_TENSOR_CPU_MEMORY (the only one supported).
 * @param input_length Bytes available at input; at least what output_length
 *   elements take.
 * @param qbits, number_in_blocks As given to ccv_nnc_palettize.
 * @param output output_length elements of `datatype` (not overlapping input).
 * @param output_length The number of elements.
 * On bad input nothing is written and ccv_nnc_error_message says why.
 */
void ccv_nnc_depalettize(const void* input, const int datatype, const int memory_type, const size_t input_length, const int qbits, const int number_in_blocks, void* output, const size_t output_length);

/* ---------------------------------------------------------------------------
 * Level 1: streams
 * ------------------------------------------------------------------------- */

enum {
	CCV_STREAM_CONTEXT_CPU = 0x1, /* runs on a worker thread of its own */
	CCV_STREAM_CONTEXT_GPU = 0x2,
};
#define CCV_STREAM_GET_CONTEXT(type) ((type) & 0x3)
#define CCV_STREAM_GET_DEVICE(type) CCV_TENSOR_GET_DEVICE(type)
#define CCV_STREAM_GET_DEVICE_ID(type) CCV_TENSOR_GET_DEVICE_ID(type)
#define CCV_STREAM_SET_DEVICE_ID(type, device_id) CCV_TENSOR_SET_DEVICE_ID(type, device_id)

/**
 * Create a stream. A CPU stream runs what is queued on it in order, on its
 * own thread; kernels still share the library's one thread pool.
 * @param type CCV_STREAM_CONTEXT_CPU or _GPU, or-ed with a device.
 * @return A stream to free with ccv_nnc_stream_context_free, or NULL.
 */
CCV_WARN_UNUSED(ccv_nnc_stream_context_t*) ccv_nnc_stream_context_new(const int type);
/** The type the stream was created with. */
CCV_WARN_UNUSED(int) ccv_nnc_stream_context_type(const ccv_nnc_stream_context_t* const stream_context);
/**
 * Scratch memory owned by the stream, valid until the next call on the same
 * stream (or its drain / free). Call it only from work running on the stream
 * or with no work queued or running: from another thread while the stream is
 * busy it returns NULL with a message (the buffer may be a running kernel's).
 * A NULL stream gives the calling thread's buffer. NULL if the memory cannot
 * be had.
 */
CCV_WARN_UNUSED(void*) ccv_nnc_stream_context_get_workspace(ccv_nnc_stream_context_t* const stream_context, const size_t workspace_size, const int mem);
/** Release the stream's scratch memory. */
void ccv_nnc_stream_context_drain(ccv_nnc_stream_context_t* const stream);
typedef void(*ccv_nnc_callback_f)(void* const callback_context);
/** Queue a call of callback(callback_context), run on the stream in order. */
void ccv_nnc_stream_context_add_callback(ccv_nnc_stream_context_t* const stream, const ccv_nnc_callback_f callback, void* const callback_context);
/**
 * Block until everything queued on the stream has run. A command that failed
 * on the stream (or, on a GPU stream, bad input a kernel found on the device
 * after its call returned) leaves its message readable through
 * ccv_nnc_error_message on the thread that waits, and the next call queued on
 * the stream returns that failure once (NNC: see ccv_nnc_stream_context_error).
 */
void ccv_nnc_stream_context_wait(const ccv_nnc_stream_context_t* const stream);
/**
 * NNC addition (libnnc has no such call): the failure a stream holds.
 * ccv_nnc_stream_context_wait returns nothing, so a failure of the stream's
 * work since the previous wait (a command that failed on a CPU stream's
 * worker; bad input a GPU kernel found on the device after its call had
 * returned, such as an INDEX_SELECT row index or a SOFTMAX_CROSSENTROPY label
 * out of range) is reported twice: the wait sets ccv_nnc_error_message, and
 * the stream holds the failure until the next call that queues work on it
 * (ccv_nnc_cmd_exec, ccv_nnc_graph_run, ccv_nnc_graph_run_with_schedule, ...
 * with this stream), which returns its code and message without running;
 * the call after that runs. Several failures between two waits are reported
 * as the first, with a count of the others.
 * This call takes the held failure instead: it returns its code and sets
 * ccv_nnc_error_message to its message, and the next call on the stream
 * runs. It does not wait for the stream.
 * @param stream The stream context (CPU or GPU).
 * @return CCV_NNC_EXEC_SUCCESS when the stream holds no failure; the held
 *   failure's code (CCV_NNC_EXEC_INVALID, ...) otherwise; CCV_NNC_EXEC_INVALID
 *   with a message for a NULL stream.
 */
int ccv_nnc_stream_context_error(ccv_nnc_stream_context_t* const stream);
typedef void (*ccv_nnc_stream_context_destructor_f)(const ccv_nnc_stream_context_t* const stream, void* const context);
/** Call destructor(stream, context) when the stream is freed. @return an id for removal, or -1. */
int ccv_nnc_stream_context_add_destructor_hook(ccv_nnc_stream_context_t* const stream, ccv_nnc_stream_context_destructor_f destructor, void* const context);
/** Remove a destructor hook by the id add_destructor_hook returned. */
void ccv_nnc_stream_context_remove_destructor_hook(ccv_nnc_stream_context_t* const stream, const int hook_id);
/** Wait for the stream, run its destructor hooks and free it. NULL is a no-op. */
void ccv_nnc_stream_context_free(ccv_nnc_stream_context_t* const stream_context);
/** Seed the stream's random generator (NULL: the library's default generator). */
void ccv_nnc_stream_context_set_seed(ccv_nnc_stream_context_t* const stream_context, uint32_t seed);
/** Next 32 random bits of the stream's generator (NULL: the default generator). */
uint32_t ccv_nnc_stream_context_genrand_uint32(ccv_nnc_stream_context_t* const stream_context);

/** A point in a stream's queue that another stream can wait for. */
typedef struct ccv_nnc_stream_signal_s ccv_nnc_stream_signal_t;

/** Create a signal for streams of this type. Free with ccv_nnc_stream_signal_free. */
CCV_WARN_UNUSED(ccv_nnc_stream_signal_t*) ccv_nnc_stream_signal_new(const int type);
/** The type the signal was created with. */
CCV_WARN_UNUSED(int) ccv_nnc_stream_signal_type(const ccv_nnc_stream_signal_t* const signal);
/** Emit the signal once the stream has run everything queued before this call. */
void ccv_nnc_stream_context_emit_signal(ccv_nnc_stream_context_t* const stream, ccv_nnc_stream_signal_t* const signal);
/** Emit a signal owned by the stream; use it (wait on it) right away. */
ccv_nnc_stream_signal_t* ccv_nnc_stream_context_emit_signal_new(ccv_nnc_stream_context_t* const stream);
/**
 * Make `stream` wait, before anything queued after this call, until the
 * signal's latest emission has happened. The caller does not block. With a
 * NULL stream the calling thread itself waits until then.
 */
void ccv_nnc_stream_context_wait_signal(const ccv_nnc_stream_context_t* const stream, const ccv_nnc_stream_signal_t* const signal);
/** The stream the signal was last emitted on, or NULL. */
CCV_WARN_UNUSED(ccv_nnc_stream_context_t*) ccv_nnc_stream_signal_get_emitter(const ccv_nnc_stream_signal_t* const signal);
/** Free a signal. NULL is a no-op. Streams still waiting on it must have passed it. */
void ccv_nnc_stream_signal_free(ccv_nnc_stream_signal_t* const signal);
/** Number of devices of a type (CCV_STREAM_CONTEXT_CPU: 1; _GPU: 0 without CUDA). */
CCV_WARN_UNUSED(int) ccv_nnc_device_count(const int type);
/**
 * NNC addition: figures of the caching allocator that GPU memory comes from
 * (tensors, tensor arenas, stream workspaces). Freed GPU memory is kept for
 * reuse rather than given back to the device; `cached` is what is kept.
 */
typedef struct {
	size_t in_use;        /**< bytes handed out and not freed (rounded up to 512) */
	size_t requested;     /**< bytes asked for by those allocations */
	size_t reserved;      /**< bytes held from the device: in_use + cached */
	size_t cached;        /**< bytes held but free, kept for reuse */
	size_t peak_in_use;   /**< the most in_use since the start (or the last reset) */
	size_t peak_reserved; /**< the most reserved since the start (or the last reset) */
	uint64_t allocations; /**< allocations not freed */
	uint64_t segments;    /**< blocks of device memory held */
	uint64_t hits;        /**< allocations served from cached memory */
	uint64_t misses;      /**< allocations that took new device memory */
	uint64_t oom_retries; /**< times the device was full and the cache was released to retry */
	uint64_t released;    /**< segments given back to the device */
} ccv_nnc_gpu_memory_stats_t;
/**
 * NNC addition: fill `stats` with the caching allocator's figures for GPU
 * `device`. Returns 0, or -1 (with ccv_nnc_error_message) without CUDA, for a
 * device that is not there, or for a NULL `stats` (left untouched).
 */
int ccv_nnc_gpu_memory_stats(const int device, ccv_nnc_gpu_memory_stats_t* const stats);
/**
 * NNC addition: give the GPU memory the caching allocator keeps free back to
 * the device (memory in use is untouched), for GPU `device` or, with -1,
 * every GPU. Returns the bytes given back (0 without CUDA).
 */
size_t ccv_nnc_gpu_memory_release_cached(const int device);
/** Make device `source` stand for `destination`. 0 on success, -1 otherwise. */
CCV_WARN_UNUSED(int) ccv_nnc_device_remap(const int type, const int source, const int destination);
typedef ccv_nnc_stream_context_t*(*ccv_nnc_stream_context_neighbor_discovery_f)(const int device_id, void* const context);
/** Set how commands on this stream find streams on other devices. */
void ccv_nnc_stream_context_set_neighbor_discovery(ccv_nnc_stream_context_t* const stream_context, ccv_nnc_stream_context_neighbor_discovery_f discovery, void* const context);
/** The stream on device_id that discovery gives for this stream, or NULL. */
CCV_WARN_UNUSED(ccv_nnc_stream_context_t*) ccv_nnc_stream_context_find_neighbor(ccv_nnc_stream_context_t* const stream_context, const int device_id);


/* ---------------------------------------------------------------------------
 * Level 2: the concrete graph
 *
 * Exec nodes run commands over concrete tensors; edges order them. A graph
 * runs from its sources to its destinations in a topological order:
 *
 *   ccv_nnc_graph_t* g = ccv_nnc_graph_new();
 *   ccv_nnc_graph_exec_t a = ccv_nnc_graph_exec_new(g, CMD_EWSUM_FORWARD(), ccv_nnc_no_hint, TENSOR_LIST(x, y), TENSOR_LIST(z));
 *   ccv_nnc_graph_exec_t b = ccv_nnc_graph_exec_new(g, CMD_EWSUM_FORWARD(), ccv_nnc_no_hint, TENSOR_LIST(z, z), TENSOR_LIST(w));
 *   ccv_nnc_graph_exec_concat(g, a, b);
 *   ccv_nnc_graph_run(g, 0, 0, 0, 0, 0, 0, 0); // all sources to all destinations
 *   ccv_nnc_graph_free(g);
 *
 * Graph mutation is not thread-safe. Tensors stay the caller's and must
 * outlive the graph's runs.
 * ------------------------------------------------------------------------- */

enum {
	CCV_NNC_SHORT_DOT_GRAPH = 0x0, /* node names and edges */
	CCV_NNC_LONG_DOT_GRAPH  = 0x1, /* also every tensor's shape and type */
};

/** A concrete graph. */
typedef struct ccv_nnc_graph_s ccv_nnc_graph_t;

/** A reference to an exec node: its index and its graph. */
typedef struct {
	int32_t d;
	ccv_nnc_graph_t* graph;
} ccv_nnc_graph_exec_t;

#define CCV_NO_GRAPH_EXEC(exec) ((exec).graph == 0)

/** Record of the tensors loops and branches need for autodiff (see the tape API). */
typedef struct ccv_nnc_tensor_tape_s ccv_nnc_tensor_tape_t;

/** Create an empty graph. Free with ccv_nnc_graph_free. */
CCV_WARN_UNUSED(ccv_nnc_graph_t*) ccv_nnc_graph_new(void);
/**
 * Add a node running `cmd` over the tensors (copied: the arrays may be
 * temporary, the tensors may not).
 * @return The node, or one with graph NULL on bad arguments.
 */
CCV_WARN_UNUSED(ccv_nnc_graph_exec_t) ccv_nnc_graph_exec_new(ccv_nnc_graph_t* const graph, const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, ccv_nnc_tensor_t* const* const inputs, const int input_size, ccv_nnc_tensor_t* const* const outputs, const int output_size);
/** Replace a node's command. */
void ccv_nnc_graph_exec_set(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec, const ccv_nnc_cmd_t cmd);
/** A node's command (NOOP for a bad reference). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_graph_exec_cmd(const ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec);
/** Replace a node's hint. */
void ccv_nnc_graph_exec_set_hint(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec, const ccv_nnc_hint_t hint);
/** Replace a node's tensors. */
void ccv_nnc_graph_exec_set_io(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec, ccv_nnc_tensor_t* const* const inputs, const int input_size, ccv_nnc_tensor_t* const* const outputs, const int output_size);
/**
 * Order `destination` after `source`. An edge that would close a cycle is
 * refused. @return 0 on success, -1 otherwise (message set).
 */
int ccv_nnc_graph_exec_concat(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t source, const ccv_nnc_graph_exec_t destination);
/** Remove the edge from `source` to `destination`. @return 0, or -1 if there was none. */
int ccv_nnc_graph_exec_disjoin(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t source, const ccv_nnc_graph_exec_t destination);
/** Number of nodes. */
CCV_WARN_UNUSED(int) ccv_nnc_graph_exec_count(const ccv_nnc_graph_t* const graph);
/** Write the graph in GraphViz's DOT language. */
void ccv_nnc_graph_dot(const ccv_nnc_graph_t* const graph, const int flags, FILE* out);
/** Autotune every node between sources and destinations (0 and 0: the defaults) and keep the choices. */
void ccv_nnc_graph_autotune(ccv_nnc_graph_t* const graph, const size_t max_workspace_size, const int flags, const ccv_nnc_graph_exec_t* const sources, const int source_size, const ccv_nnc_graph_exec_t* const destinations, const int destination_size);
/**
 * Renumber the nodes in a topological order. exec_cvt (may be NULL) receives,
 * for each old index below exec_cvt_size, its new index.
 */
void ccv_nnc_graph_topsort(ccv_nnc_graph_t* const graph, int* const exec_cvt, const int exec_cvt_size);
/** Set the default sources (copied). */
void ccv_nnc_graph_set_sources(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t* const sources, const int source_size);
/** The default sources set with ccv_nnc_graph_set_sources (NULL if none); valid until the next change. */
ccv_nnc_graph_exec_t* ccv_nnc_graph_sources(const ccv_nnc_graph_t* const graph);
CCV_WARN_UNUSED(int) ccv_nnc_graph_source_size(const ccv_nnc_graph_t* const graph);
/** Set the default destinations (copied). */
void ccv_nnc_graph_set_destinations(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t* const destinations, const int destination_size);
ccv_nnc_graph_exec_t* ccv_nnc_graph_destinations(const ccv_nnc_graph_t* const graph);
CCV_WARN_UNUSED(int) ccv_nnc_graph_destination_size(const ccv_nnc_graph_t* const graph);
/** Free the graph (not the tensors). NULL is a no-op. */
void ccv_nnc_graph_free(ccv_nnc_graph_t* const graph);
/**
 * Run every node reachable from `sources` that leads to `destinations` (a size
 * of 0 means the defaults: those set, or else the nodes without incoming /
 * outgoing edges), each after all its predecessors.
 * @param tensor_tape NULL, or a tape that records loop counts, branch choices
 *   and the tensors flagged for it (see the tape API below).
 * @param stream_context NULL: run on the calling thread (with the default
 *   static schedule, if one is set, on its streams too); otherwise queue the
 *   run on the stream and return at once.
 * @return CCV_NNC_EXEC_SUCCESS, or the first failing node's code (later nodes do not run).
 */
int ccv_nnc_graph_run(ccv_nnc_graph_t* const graph, const int flags, const ccv_nnc_graph_exec_t* const sources, const int source_size, const ccv_nnc_graph_exec_t* const destinations, const int destination_size, ccv_nnc_tensor_tape_t* const tensor_tape, ccv_nnc_stream_context_t* const stream_context);

/* --- Static scheduling on streams ------------------------------------------
 * A schedule places the nodes between sources and destinations on up to
 * max_stream_count streams: a node continues the stream of a predecessor when
 * it can, independent branches go to other streams, and every edge between
 * streams becomes a wait on the node that must finish first. Runs with a
 * schedule give the values of a serial run. */

/** A placement of a graph's nodes on streams. */
typedef struct ccv_nnc_graph_static_schedule_s ccv_nnc_graph_static_schedule_t;
/** Make (and keep) the schedule that ccv_nnc_graph_run uses for its default sources and destinations. */
void ccv_nnc_graph_set_default_static_schedule(ccv_nnc_graph_t* const graph, const int stream_type, const int max_stream_count);
/** A schedule for the given (0: default) sources and destinations; free it with ccv_nnc_graph_static_schedule_free before the graph. */
CCV_WARN_UNUSED(ccv_nnc_graph_static_schedule_t*) ccv_nnc_graph_static_schedule_new(ccv_nnc_graph_t* const graph, const int stream_type, const int max_stream_count, const ccv_nnc_graph_exec_t* const sources, const int source_size, const ccv_nnc_graph_exec_t* const destinations, const int destination_size);
void ccv_nnc_graph_static_schedule_free(ccv_nnc_graph_static_schedule_t* const schedule);
/** The graph's first stream (NULL before a static schedule is made). */
CCV_WARN_UNUSED(ccv_nnc_stream_context_t*) ccv_nnc_graph_default_stream(const ccv_nnc_graph_t* const graph);
/** Run the nodes of a schedule made for this graph. Arguments as ccv_nnc_graph_run. */
int ccv_nnc_graph_run_with_schedule(ccv_nnc_graph_t* const graph, const int flags, const ccv_nnc_graph_static_schedule_t* const schedule, ccv_nnc_tensor_tape_t* const tensor_tape, ccv_nnc_stream_context_t* const stream_context);
/**
 * Ask a run in progress (on another thread or a stream) to stop: nodes not
 * yet started do not run and the run returns CCV_NNC_EXEC_INVALID with a
 * message saying it was cancelled. The next run starts uncancelled.
 */
void ccv_nnc_graph_cancel(ccv_nnc_graph_t* const graph);

/* --- Other node properties ---------------------------------------------- */

/** Per-tensor flags of a node (kept for the tape; sizes match the tensors or are 0). */
void ccv_nnc_graph_exec_set_io_flags(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec, const int* const input_flags, const int input_flag_size, const int* const output_flags, const int output_flag_size);
/** Record that `exec` (a backward node) pairs with the forward node `pair_exec`. */
void ccv_nnc_graph_exec_pair_with(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec, const ccv_nnc_graph_exec_t pair_exec);
/**
 * In a while loop's graph: what `from` holds at the end of round k is what
 * `to` holds at the start of round k + 1. When both are multi-view tensors
 * bound so that to's view for k + 1 is from's view for k, nothing moves;
 * otherwise the bytes are copied between rounds (same shape and type needed).
 */
void ccv_nnc_graph_add_carry_over(ccv_nnc_graph_t* const graph, const ccv_nnc_tensor_t* const from, const ccv_nnc_tensor_t* const to);
/** A tensor (usually a view) to keep in step with `exec`'s multi-view tensors. */
void ccv_nnc_graph_exec_add_as_affected(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec, ccv_nnc_tensor_t* const update);

/* --- While loops ------------------------------------------------------------
 * A while node runs a sub-graph round after round. In each round the nodes up
 * to and including the breakpoints run, then the expression is evaluated on
 * its inputs; 0 ends the loop, anything else runs the rest of the round. The
 * round number (0, 1, …) is readable through ccv_nnc_tensor_for_while_count.
 * Multi-view tensors anchored to the loop's graph are rebound at the start of
 * every round, so round k's outputs become round k + 1's inputs without
 * copies. */

/** Evaluates a loop (or branch) expression over its input tensors. */
typedef int(*ccv_nnc_graph_while_f)(ccv_nnc_tensor_t* const* const inputs, const int input_size, const void* const data);
/** Add a node to `graph` that runs `while_graph` as a loop; the graph takes ownership of while_graph. cmd is CCV_NNC_GRAPH_FORWARD or CCV_NNC_GRAPH_BACKWARD. */
CCV_WARN_UNUSED(ccv_nnc_graph_exec_t) ccv_nnc_graph_while(ccv_nnc_graph_t* const graph, const uint32_t cmd, ccv_nnc_graph_t* const while_graph);
/** Set the loop's expression (its inputs may include the counter tensor) and the nodes after which it is evaluated. */
void ccv_nnc_graph_set_while_expr(ccv_nnc_graph_t* const while_graph, const ccv_nnc_graph_while_f while_expr, const void* const while_data, ccv_nnc_tensor_t* const* const inputs, const int input_size, const ccv_nnc_graph_exec_t* const breakpoints, const int breakpoint_size);
/** A 1-element CCV_64S tensor whose data is the loop's round counter (data.i64[0]). */
CCV_WARN_UNUSED(ccv_nnc_tensor_t) ccv_nnc_tensor_for_while_count(const ccv_nnc_graph_t* const while_graph);
/** The sub-graph of a while node (NULL if exec is not one). */
CCV_WARN_UNUSED(ccv_nnc_graph_t*) ccv_nnc_graph_from_while_exec(const ccv_nnc_graph_t* const graph, ccv_nnc_graph_exec_t exec);

/* --- case..of ---------------------------------------------------------------
 * A case..of node evaluates an expression on its inputs; expression + offset
 * picks the branch sub-graph to run. A negative index (or one without a
 * branch) runs none: then each output falls back to its designated input —
 * a PHI multi-view output ([default, result]) is pointed at the default, a
 * plain output i receives a copy of input i. */

typedef int(*ccv_nnc_graph_case_of_f)(ccv_nnc_tensor_t* const* const inputs, const int input_size, const void* const data);
/** Add a case..of node. cmd is CCV_NNC_GRAPH_FORWARD or CCV_NNC_GRAPH_BACKWARD. */
CCV_WARN_UNUSED(ccv_nnc_graph_exec_t) ccv_nnc_graph_case_of_new(ccv_nnc_graph_t* const graph, const uint32_t cmd, ccv_nnc_tensor_t* const* const inputs, const int input_size, ccv_nnc_tensor_t* const* const outputs, const int output_size);
void ccv_nnc_graph_set_case_of_expr(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec, ccv_nnc_graph_case_of_f case_of, const void* case_of_data, const int offset);
/** Make case_graph (owned from now on) the branch run when expression + offset == case_of. */
void ccv_nnc_graph_set_case_of(ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec, ccv_nnc_graph_t* const case_graph, const int case_of);

/* --- The tensor tape ----------------------------------------------------------
 * Records, for each run of a graph with loops and branches, how many rounds
 * each loop took and which branch each case..of chose, keyed by the loop
 * rounds that enclose them — what the backward pass of a loop or a branch
 * needs to replay it. */

CCV_WARN_UNUSED(ccv_nnc_tensor_tape_t*) ccv_nnc_tensor_tape_new(void);
void ccv_nnc_tensor_tape_free(ccv_nnc_tensor_tape_t* const tape);
/** Keep on the tape the current contents of the flagged tensors (flags non-zero) of a node of `graph`, for the current rounds. */
void ccv_nnc_tensor_tape_io(ccv_nnc_tensor_tape_t* const tape, const ccv_nnc_graph_t* const graph, const int* const input_flags, ccv_nnc_tensor_t* const* const inputs, const int input_size, const int* const output_flags, ccv_nnc_tensor_t* const* const outputs, const int output_size);
/** The number recorded for `exec` of `graph` at the current rounds: a loop's round count, a case..of's branch. */
uint64_t ccv_nnc_tensor_tape_numbering(ccv_nnc_tensor_tape_t* const tape, const ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec);
void ccv_nnc_tensor_tape_set_numbering(ccv_nnc_tensor_tape_t* const tape, ccv_nnc_graph_t* const graph, const ccv_nnc_graph_exec_t exec, const uint64_t numbering);

/* --- Multi-view tensors -------------------------------------------------------
 * A multi-view stands where a tensor would and points, in each round of the
 * loop whose graph it is anchored to, at one of several tensors: with data
 * [a, b, c, d], kind K1N and repeat 3, rounds 0, 1, 2, … see a, b, c, d, b,
 * c, d, …; with kind K0N and repeat 4, a, b, c, d, a, b, … An entry may be a
 * multi-view anchored to an inner loop. It is never made by a *_new call:
 * set one up in caller memory with ccv_nnc_tensor_multiview. */

typedef struct ccv_nnc_tensor_multiview_s {
	int type; /* CCV_TENSOR_MULTIVIEW, so the header reads like a tensor's */
	uint8_t kind; /* CCV_NNC_MULTIVIEW_K0N or CCV_NNC_MULTIVIEW_K1N */
	uint16_t repeat;
	intptr_t anchor; /* the graph whose rounds select the view (or CCV_NNC_MULTIVIEW_PHI) */
	off_t offset;
	struct ccv_nnc_tensor_multiview_s* p; /* the multi-view this one is an entry of, if any */
	ccv_nnc_tensor_t* it; /* the tensor in use now */
	ccv_array_t* sp; /* tensors whose data follows `it` (ccv_nnc_tensor_synchronize_to_multiview) */
	ccv_nnc_tensor_t* _inline_data[4];
	ccv_nnc_tensor_t** _heap_data;
} ccv_nnc_tensor_multiview_t;
#define CCV_NNC_MULTIVIEW_DATA(x) ((x)->_heap_data ? (x)->_heap_data : (x)->_inline_data)
#define CCV_NNC_MULTIVIEW_PHI (intptr_t)0x1 /* a case..of output: [default, result] */
enum {
	CCV_NNC_MULTIVIEW_K0N = 0, /* every entry repeats */
	CCV_NNC_MULTIVIEW_K1N = 1, /* the first entry is round 0's, the rest repeat */
};
#define CCV_NNC_MULTIVIEW_K01(x) ((x)->kind == CCV_NNC_MULTIVIEW_K0N && (x)->repeat == 1)
/** Set up a multi-view over kind + repeat tensors (data[]), anchored to graph. Errors (zero repeat, NULL entries) leave a message and a multi-view that refuses to run. */
void ccv_nnc_tensor_multiview(ccv_nnc_tensor_t* data[], const uint8_t kind, const uint16_t repeat, const ccv_nnc_graph_t* const graph, ccv_nnc_tensor_multiview_t* const tensor_multiview);
/** Free what the multi-view allocated (not the multi-view, not its tensors). */
void ccv_nnc_tensor_multiview_free(const ccv_nnc_tensor_multiview_t tensor_multiview);
/** Keep tensor's data pointing at the multi-view's current tensor. */
void ccv_nnc_tensor_synchronize_to_multiview(ccv_nnc_tensor_multiview_t* const tensor_multiview, ccv_nnc_tensor_t* const tensor);
/** Point every synchronised tensor at the current tensor now. */
void ccv_nnc_tensor_multiview_synchronize(ccv_nnc_tensor_multiview_t* const tensor_multiview);


/* ---------------------------------------------------------------------------
 * Level 3: the symbolic graph
 *
 * Tensor symbols stand for tensors (shape and type, no memory); exec symbols
 * run commands over them. Symbols follow SSA: each is written once (aliases
 * of one symbol may be written separately where they do not overlap, which
 * is how a concatenation is written in place). Outputs created without a
 * shape take the command's inference when the exec symbol is made. Compiling
 * gives a concrete graph, a tensor arena laid out by the memory planner and
 * the map from exec symbols to graph nodes:
 *
 *   ccv_nnc_symbolic_graph_t* sg = ccv_nnc_symbolic_graph_new();
 *   ccv_nnc_tensor_symbol_t x = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(32F, 8, 4), "x");
 *   ccv_nnc_tensor_symbol_t w = ccv_nnc_tensor_symbol_new(sg, CPU_TENSOR_NHWC(32F, 3, 4), "w");
 *   ccv_nnc_tensor_symbol_t y = ccv_nnc_tensor_symbol_new(sg, ccv_nnc_tensor_auto, "y");  // inferred: 8x3
 *   ccv_nnc_graph_exec_symbol_new(sg, CMD_GEMM_FORWARD(NO_TRANSPOSE, TRANSPOSE(0, 1)), TENSOR_SYMBOL_LIST(x, w), TENSOR_SYMBOL_LIST(y), "fc");
 *   ccv_nnc_graph_exec_symbol_autogen(sg, 0, 0, CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS);
 *   ccv_nnc_graph_t* g; ccv_nnc_tensor_arena_t* ta; ccv_nnc_graph_exec_arena_t* ea;
 *   ccv_nnc_symbolic_graph_compile(sg, ccv_nnc_default_compile_params, 0, 0, TENSOR_SYMBOL_LIST(y),
 *                                  SYMBOLIC_GRAPH_SOURCES(sg), SYMBOLIC_GRAPH_DESTINATIONS(sg), &g, &ta, &ea);
 *   // fill ccv_nnc_tensor_from_symbol(ta, x) and (ta, w), then:
 *   ccv_nnc_graph_run(g, 0, TRAVERSE_FULL, 0, 0);
 *
 * Mistakes (a second writer, a freed or foreign symbol, a cycle, shapes that
 * do not fit) are refused with a message (ccv_nnc_error_message()); calls
 * that return a symbol return one with d < 0 and graph NULL then.
 * Not yet: symbolic while / case..of, simplification passes, persistence,
 * memory reduction and compression (later steps of this layer).
 * ------------------------------------------------------------------------- */

/** A symbolic graph. Not thread-safe: mutate it from one thread at a time. */
typedef struct ccv_nnc_symbolic_graph_s ccv_nnc_symbolic_graph_t;
/** The tensors of a compiled graph. */
typedef struct ccv_nnc_tensor_arena_s ccv_nnc_tensor_arena_t;
/** The map from exec symbols to the nodes of a compiled graph. */
typedef struct ccv_nnc_graph_exec_arena_s ccv_nnc_graph_exec_arena_t;

/** A tensor symbol, by value: its index and its graph. */
typedef struct {
	int32_t d;
	const ccv_nnc_symbolic_graph_t* graph;
} ccv_nnc_tensor_symbol_t;

/** An exec symbol, by value: its index and its graph. */
typedef struct {
	int32_t d;
	const ccv_nnc_symbolic_graph_t* graph;
} ccv_nnc_graph_exec_symbol_t;

enum {
	CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS = 0x01, /* compiled with a SET to 0 before the first exec */
	CCV_NNC_TENSOR_SYMBOL_INIT_ONES = 0x02,  /* compiled with a SET to 1 before the first exec */
	CCV_NNC_TENSOR_SYMBOL_TAPE_VAR = 0x04,   /* recorded on the tensor tape (loops, branches) */
	CCV_NNC_TENSOR_SYMBOL_DEAD = 0x80000000, /* freed: any further use is an error */
};
#define CCV_NNC_TENSOR_SYMBOL_IS_DEAD(x) ((x) & CCV_NNC_TENSOR_SYMBOL_DEAD)

enum {
	CCV_NNC_GRAPH_EXEC_DEAD = 0x1,           /* freed */
	CCV_NNC_GRAPH_EXEC_P_WHILE = 0x10,       /* the node is a while loop */
	CCV_NNC_GRAPH_EXEC_CASE_OF = 0x20,       /* the node is a case..of */
	CCV_NNC_GRAPH_EXEC_DISABLE_OPT = 0x10000, /* simplification passes leave this node alone */
};
#define CCV_NNC_GRAPH_EXEC_IS_DEAD(x) ((x) & CCV_NNC_GRAPH_EXEC_DEAD)

enum {
	CCV_NNC_NO_TENSOR_SYMBOL = -1,          /* an empty slot */
	CCV_NNC_WHILE_COUNT_TENSOR_SYMBOL = -2, /* a while loop's iteration count */
};
enum {
	CCV_NNC_NO_GRAPH_EXEC_SYMBOL = -1,
};
enum {
	CCV_NNC_SYMBOL_TENSOR,       /* tensor symbols that are not aliases */
	CCV_NNC_SYMBOL_TENSOR_ALIAS, /* alias symbols */
	CCV_NNC_SYMBOL_GRAPH_EXEC,   /* exec symbols */
};
#define CCV_NNC_IS_WHILE_COUNT_TENSOR_SYMBOL(d) (((uint32_t)(d) & 0xf) == 0xe)

/** A pair of tensor symbols (from, to). */
typedef struct {
	ccv_nnc_tensor_symbol_t source;
	ccv_nnc_tensor_symbol_t destination;
} ccv_nnc_tensor_symbol_map_t;

/** Called after a tensor symbol is made (see ccv_nnc_tensor_symbol_new_hook). */
typedef void (*ccv_nnc_tensor_symbol_new_hook_f)(void* context, const ccv_nnc_tensor_symbol_t symbol, const ccv_nnc_tensor_param_t info, const char* const name);
/** Called after an alias symbol is made. */
typedef void (*ccv_nnc_tensor_symbol_alias_new_hook_f)(void* context, const ccv_nnc_tensor_symbol_t symbol, const ccv_nnc_tensor_symbol_t from_symbol, const int ofs[CCV_NNC_MAX_DIM_ALLOC], const int stride[CCV_NNC_MAX_DIM_ALLOC], const ccv_nnc_tensor_param_t info, const char* const name);
/** Called after an exec symbol is made. */
typedef void (*ccv_nnc_graph_exec_symbol_new_hook_f)(void* context, const ccv_nnc_graph_exec_symbol_t symbol, const ccv_nnc_cmd_t cmd, const ccv_nnc_tensor_symbol_t* const inputs, const int input_size, const ccv_nnc_tensor_symbol_t* const outputs, const int output_size, const char* const name);

/** Create an empty symbolic graph. Free with ccv_nnc_symbolic_graph_free. */
CCV_WARN_UNUSED(ccv_nnc_symbolic_graph_t*) ccv_nnc_symbolic_graph_new(void);
/**
 * A tensor symbol of the given shape and type (no memory). With a zero shape
 * (ccv_nnc_tensor_auto) it takes the shape the first exec that writes it infers.
 * @param name Optional (copied), used in messages and dot output.
 */
CCV_WARN_UNUSED(ccv_nnc_tensor_symbol_t) ccv_nnc_tensor_symbol_new(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_param_t info, const char* const name);
/**
 * An alias: a view of part of `tensor_symbol` (which must not be an alias
 * itself) with its own shape. Element offset = sum of ofs[i] * stride[i]
 * over the alias's dimensions. stride all 0: packed for the alias's own
 * shape (a reshape); a slice passes the base's strides.
 */
CCV_WARN_UNUSED(ccv_nnc_tensor_symbol_t) ccv_nnc_tensor_symbol_alias_new(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t tensor_symbol, const int ofs[CCV_NNC_MAX_DIM_ALLOC], const int stride[CCV_NNC_MAX_DIM_ALLOC], const ccv_nnc_tensor_param_t info, const char* const name);
/** Free a tensor symbol (and its aliases); its index stays taken. */
void ccv_nnc_tensor_symbol_free(ccv_nnc_symbolic_graph_t* const graph, ccv_nnc_tensor_symbol_t tensor);
/**
 * An exec symbol running cmd over the symbols (an empty slot is
 * NO_TENSOR_SYMBOL). Outputs without a shape get the inferred one; the hint
 * is derived from the first input and output (ccv_nnc_hint_auto). A second
 * writer of any element of an output is refused (SSA).
 */
ccv_nnc_graph_exec_symbol_t ccv_nnc_graph_exec_symbol_new(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_cmd_t cmd, const ccv_nnc_tensor_symbol_t* const inputs, const int input_size, const ccv_nnc_tensor_symbol_t* const outputs, const int output_size, const char* const name);
/** Replace the hint an exec symbol runs with. */
void ccv_nnc_graph_exec_symbol_set_hint(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t exec, const ccv_nnc_hint_t hint);
/** Free an exec symbol; its predecessors are ordered before its successors instead. */
void ccv_nnc_graph_exec_symbol_free(ccv_nnc_symbolic_graph_t* const graph, ccv_nnc_graph_exec_symbol_t symbol);
enum {
	CCV_NNC_AUTOGEN_ALL_EXECS = 0x1,                /* edges from data dependencies */
	CCV_NNC_AUTOGEN_SOURCES_AND_DESTINATIONS = 0x2, /* and the default sources / destinations from the edges */
};
/**
 * Order the execs by their data: an edge from the writer of every symbol
 * (or overlapping alias) to each exec that reads it. execs NULL and
 * exec_size 0: every exec. @return 0, or -1 when the dependencies form a
 * cycle (no edge is added then).
 */
int ccv_nnc_graph_exec_symbol_autogen(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t* const execs, const int exec_size, const int flags);
/** Replace the default sources (copied). */
void ccv_nnc_symbolic_graph_set_sources(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t* const sources, const int source_size);
void ccv_nnc_symbolic_graph_add_source(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t source);
/** The default sources (NULL if none); valid until the graph changes. */
ccv_nnc_graph_exec_symbol_t* ccv_nnc_symbolic_graph_sources(const ccv_nnc_symbolic_graph_t* const graph);
int ccv_nnc_symbolic_graph_source_size(const ccv_nnc_symbolic_graph_t* const graph);
void ccv_nnc_symbolic_graph_set_destinations(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t* const destinations, const int destination_size);
void ccv_nnc_symbolic_graph_add_destination(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t destination);
ccv_nnc_graph_exec_symbol_t* ccv_nnc_symbolic_graph_destinations(const ccv_nnc_symbolic_graph_t* const graph);
int ccv_nnc_symbolic_graph_destination_size(const ccv_nnc_symbolic_graph_t* const graph);
/** Write the graph in GraphViz's DOT language (CCV_NNC_LONG_DOT_GRAPH adds shapes). */
void ccv_nnc_symbolic_graph_dot(const ccv_nnc_symbolic_graph_t* const graph, const int flags, FILE* out);

/** A tensor the compiled graph uses for a symbol instead of arena memory. */
typedef struct {
	ccv_nnc_tensor_symbol_t symbol;
	const ccv_nnc_tensor_t* tensor;
} ccv_nnc_tensor_bind_t;

/** Where compiled arenas get memory (NULL isa: the library's own allocation). alloc may return any alignment. */
typedef struct {
	void* (*alloc)(const int type, const int pinned_mem, const size_t size, void* const arg);
	void (*free)(void* const ptr, void* const arg);
} ccv_nnc_symbolic_graph_compile_allocator_vtab_t;
typedef struct {
	const ccv_nnc_symbolic_graph_compile_allocator_vtab_t* isa;
	struct {
		void* alloc;
		void* free;
	} context;
} ccv_nnc_symbolic_graph_compile_allocator_t;
typedef struct {
	ccv_nnc_symbolic_graph_compile_allocator_t allocator;
} ccv_nnc_symbolic_graph_compile_param_t;

/**
 * Compile the execs between sources and destinations (sizes 0: the graph's
 * defaults) into a concrete graph with one source and one destination node.
 * Tensor symbols get memory from one arena laid out by the memory planner,
 * except bound ones (tensor_binds: the caller's tensors, which must outlive
 * the graph). Symbols no exec writes keep their contents across runs; of the
 * rest only `outputs` are kept to the end of a run, the others share memory.
 * On failure the three results are set to NULL and the message says why.
 * compile_params.allocator.isa, when set, gives the arena's memory
 * (alloc(CCV_TENSOR_CPU_MEMORY, 0, size, context.alloc)) and takes it back
 * (free(ptr, context.free)) when the arena or its buffer is freed.
 */
void ccv_nnc_symbolic_graph_compile(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_symbolic_graph_compile_param_t compile_params, const ccv_nnc_tensor_bind_t* const tensor_binds, const int tensor_bind_size, const ccv_nnc_tensor_symbol_t* const outputs, const int output_size, const ccv_nnc_graph_exec_symbol_t* const sources, const int source_size, const ccv_nnc_graph_exec_symbol_t* const destinations, const int destination_size, ccv_nnc_graph_t** const graph_ref, ccv_nnc_tensor_arena_t** const tensor_arena_ref, ccv_nnc_graph_exec_arena_t** const graph_exec_arena_ref);
/** Free the symbolic graph (compiled graphs and arenas live on). NULL is a no-op. */
void ccv_nnc_symbolic_graph_free(ccv_nnc_symbolic_graph_t* const graph);
/** The tensor a compiled graph uses for the symbol (NULL if it uses none). Symbols stay valid after the symbolic graph is freed. */
CCV_WARN_UNUSED(ccv_nnc_tensor_t*) ccv_nnc_tensor_from_symbol(const ccv_nnc_tensor_arena_t* const tensor_arena, const ccv_nnc_tensor_symbol_t symbol);
/**
 * Use `tensor`'s data for the symbol (and its aliases) from now on: the same
 * shape, type and layout (packed, or a view with the same strides; compiled
 * nodes chose their kernels for that layout). NULL restores the compiled binding.
 */
void ccv_nnc_tensor_bind_symbol(ccv_nnc_tensor_arena_t* const tensor_arena, const ccv_nnc_tensor_symbol_t symbol, const ccv_nnc_tensor_t* const tensor);
/** Undo every ccv_nnc_tensor_bind_symbol. */
void ccv_nnc_tensor_arena_clear_bindings(ccv_nnc_tensor_arena_t* const tensor_arena);
/** Free the arena's memory (the tensors are unusable until the arena is freed). */
void ccv_nnc_tensor_arena_buffer_free(ccv_nnc_tensor_arena_t* const tensor_arena);
/** Bytes of the arena's memory. */
CCV_WARN_UNUSED(uint64_t) ccv_nnc_tensor_arena_size(const ccv_nnc_tensor_arena_t* const tensor_arena);
void ccv_nnc_tensor_arena_free(ccv_nnc_tensor_arena_t* const tensor_arena);
/**
 * Take the symbols' current shapes (ccv_nnc_tensor_symbol_set) into the
 * arena's tensors, where each still fits the bytes compiled for it.
 * @return 0, or -1 (nothing changed; compile again) when one does not fit.
 */
int ccv_nnc_tensor_arena_reinit(ccv_nnc_tensor_arena_t* const tensor_arena, const ccv_nnc_symbolic_graph_t* const graph);
/** Take the exec symbols' current commands and hints (ccv_nnc_graph_exec_symbol_set) into the compiled graph's nodes. */
void ccv_nnc_graph_exec_reinit(ccv_nnc_graph_exec_arena_t* const graph_exec_arena, ccv_nnc_graph_t* const graph, const ccv_nnc_symbolic_graph_t* const symbolic_graph);
/** The node an exec symbol became (graph NULL if it was not compiled). */
CCV_WARN_UNUSED(ccv_nnc_graph_exec_t) ccv_nnc_graph_exec_from_symbol(const ccv_nnc_graph_exec_arena_t* const graph_exec_arena, const ccv_nnc_graph_exec_symbol_t symbol);
/** The compiled graph's single source and destination nodes. */
CCV_WARN_UNUSED(ccv_nnc_graph_exec_t) ccv_nnc_graph_exec_source(const ccv_nnc_graph_exec_arena_t* const graph_exec_arena);
CCV_WARN_UNUSED(ccv_nnc_graph_exec_t) ccv_nnc_graph_exec_destination(const ccv_nnc_graph_exec_arena_t* const graph_exec_arena);
void ccv_nnc_graph_exec_arena_free(ccv_nnc_graph_exec_arena_t* const graph_exec_arena);

/** A symbol's parameters (all zero for a bad symbol, message set). */
CCV_WARN_UNUSED(ccv_nnc_tensor_param_t) ccv_nnc_tensor_symbol_params(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t tensor);
/** Change a symbol's parameters. @return 0, or -1 (message set). */
int ccv_nnc_tensor_symbol_set(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t tensor, const ccv_nnc_tensor_param_t info);
CCV_WARN_UNUSED(const char*) ccv_nnc_tensor_symbol_name(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t tensor);
/** The base of an alias (NO_TENSOR_SYMBOL for a symbol that is not an alias). */
CCV_WARN_UNUSED(ccv_nnc_tensor_symbol_t) ccv_nnc_tensor_symbol_alias_to(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t tensor_symbol);
/** An alias's ofs and stride. @return 0, or -1 if it is not an alias. */
int ccv_nnc_tensor_symbol_alias_params(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t tensor, int ofs[CCV_NNC_MAX_DIM_ALLOC], int stride[CCV_NNC_MAX_DIM_ALLOC]);
/** Move an alias within its base (new ofs and stride, checked like at creation). @return 0, or -1 (not an alias, outside its base, or overlapping another writer's part; message set). */
int ccv_nnc_tensor_symbol_alias_set(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t tensor, const int ofs[CCV_NNC_MAX_DIM_ALLOC], const int stride[CCV_NNC_MAX_DIM_ALLOC]);
/** The counterpart of a symbol on another device, as set with _set_copy (NO_TENSOR_SYMBOL when none). */
CCV_WARN_UNUSED(ccv_nnc_tensor_symbol_t) ccv_nnc_tensor_symbol_copy(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t symbol, const int device_id);
void ccv_nnc_tensor_symbol_set_copy(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t symbol, const int device_id, const ccv_nnc_tensor_symbol_t copy);
/** The counterpart of an exec symbol on another device, as set with _set_copy (NO_GRAPH_EXEC_SYMBOL when none). */
CCV_WARN_UNUSED(ccv_nnc_graph_exec_symbol_t) ccv_nnc_graph_exec_symbol_copy(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t symbol, const int device_id);
void ccv_nnc_graph_exec_symbol_set_copy(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t symbol, const int device_id, const ccv_nnc_graph_exec_symbol_t copy);
/** Set / read CCV_NNC_TENSOR_SYMBOL_INIT_ZEROS, _INIT_ONES, _TAPE_VAR. @return 0, or -1. */
int ccv_nnc_tensor_symbol_set_flags(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t tensor, const int flags);
CCV_WARN_UNUSED(int) ccv_nnc_tensor_symbol_flags(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t tensor);
/**
 * The symbol that stands for tensor_symbol inside graph: itself when it is
 * graph's own; for a symbol of an enclosing graph, the sub-graph symbol hooked
 * to it (NO_TENSOR_SYMBOL when none is); for a sub-graph symbol, the symbol of
 * graph it is hooked to.
 */
CCV_WARN_UNUSED(ccv_nnc_tensor_symbol_t) ccv_nnc_tensor_symbol_resolve(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t tensor_symbol);
/** Replace an exec symbol's command. */
void ccv_nnc_graph_exec_symbol_set(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t exec, const ccv_nnc_cmd_t cmd);
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_graph_exec_symbol_cmd(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t exec);
CCV_WARN_UNUSED(const char*) ccv_nnc_graph_exec_symbol_name(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t exec);
/** Order destination after source. @return 0, or -1 (a cycle, a bad symbol; message set). */
int ccv_nnc_graph_exec_symbol_concat(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t source, const ccv_nnc_graph_exec_symbol_t destination);
/** Remove that edge. @return 0, or -1 if there was none. */
int ccv_nnc_graph_exec_symbol_disjoin(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t source, const ccv_nnc_graph_exec_symbol_t destination);
/** Exec symbols ever made (freed ones included: indices are never reused). */
CCV_WARN_UNUSED(int) ccv_nnc_graph_exec_symbol_count(const ccv_nnc_symbolic_graph_t* const graph);
/** Tensor symbols ever made, aliases included. */
CCV_WARN_UNUSED(int) ccv_nnc_tensor_symbol_count(const ccv_nnc_symbolic_graph_t* const graph);
/** Live symbols of one kind (CCV_NNC_SYMBOL_TENSOR, _TENSOR_ALIAS, _GRAPH_EXEC). */
CCV_WARN_UNUSED(int) ccv_nnc_symbolic_graph_active_symbol_count(const ccv_nnc_symbolic_graph_t* const graph, const int type);
/** An exec symbol's tensor symbol indices; valid until the graph changes. */
void ccv_nnc_graph_exec_symbol_io(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t symbol, const int** const inputs, int* const input_size, const int** const outputs, int* const output_size);
/** The exec symbols ordered directly after this one; valid until the graph changes. */
void ccv_nnc_graph_exec_symbol_to(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t symbol, const int** const tos, int* const to_size);
/** Set / read an exec symbol's flags (CCV_NNC_GRAPH_EXEC_DISABLE_OPT). */
void ccv_nnc_graph_exec_symbol_set_flags(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t exec, const int flags);
CCV_WARN_UNUSED(int) ccv_nnc_graph_exec_symbol_flags(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t exec);
/**
 * For each source, whether it reaches one of the destinations: bit i of
 * bitmask (an array of (source_size + 63) / 64 words) set for source i.
 */
void ccv_nnc_symbolic_graph_sources_to_destinations(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t* const sources, const int source_size, const ccv_nnc_graph_exec_symbol_t* const destinations, const int destination_size, uint64_t* const bitmask);
/** Called once per exec symbol, in a topological order, by ccv_nnc_symbolic_graph_format. */
typedef void(*ccv_nnc_symbolic_graph_format_f)(const ccv_nnc_symbolic_graph_t* const graph, const int node, const char* const name, const ccv_nnc_cmd_t cmd, const int flags, const int* const incomings, const int incoming_size, const int* const outgoings, const int outgoing_size, const int* const inputs, const int input_size, const int* const outputs, const int output_size, void* const context);
/** Visit the execs between sources and destinations (sizes 0: the defaults) with their edges and tensor symbols: a hook for serialisers. */
void ccv_nnc_symbolic_graph_format(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t* const sources, const int source_size, const ccv_nnc_graph_exec_symbol_t* const destinations, const int destination_size, const ccv_nnc_symbolic_graph_format_f format_fn, void* const context);

/** Replace an exec symbol's tensor symbols (SSA checked; shapes are not inferred again). */
void ccv_nnc_graph_exec_symbol_set_io(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t exec, const ccv_nnc_tensor_symbol_t* const inputs, const int input_size, const ccv_nnc_tensor_symbol_t* const outputs, const int output_size);
/** Replace old_symbol by new_symbol wherever the exec symbol uses it. */
void ccv_nnc_graph_exec_symbol_replace_io(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t symbol, const ccv_nnc_tensor_symbol_t old_symbol, const ccv_nnc_tensor_symbol_t new_symbol);
/** Infer the shapes of outputs that have none, in order between sources and destinations (sizes 0: the defaults). */
void ccv_nnc_symbolic_graph_tensor_auto(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t* const sources, const int source_size, const ccv_nnc_graph_exec_symbol_t* const destinations, const int destination_size);
/** Rewrites a command while a graph is duplicated (NULL: keep every command). */
typedef ccv_nnc_cmd_t (*ccv_nnc_symbolic_graph_subst_f)(const ccv_nnc_graph_exec_symbol_t symbol, const ccv_nnc_cmd_t cmd);
/** A copy of the graph with the same symbol indices (hooks are not copied). */
CCV_WARN_UNUSED(ccv_nnc_symbolic_graph_t*) ccv_nnc_symbolic_graph_dup(const ccv_nnc_symbolic_graph_t* const graph, ccv_nnc_symbolic_graph_subst_f subst);
/** Install a hook (NULL removes it). @return the previous hook's context; *previous_hook (if given) receives the previous hook. */
void* ccv_nnc_tensor_symbol_new_hook(ccv_nnc_symbolic_graph_t* const graph, ccv_nnc_tensor_symbol_new_hook_f hook, void* context, ccv_nnc_tensor_symbol_new_hook_f* previous_hook);
void* ccv_nnc_tensor_symbol_alias_new_hook(ccv_nnc_symbolic_graph_t* const graph, ccv_nnc_tensor_symbol_alias_new_hook_f hook, void* context, ccv_nnc_tensor_symbol_alias_new_hook_f* previous_hook);
void* ccv_nnc_graph_exec_symbol_new_hook(ccv_nnc_symbolic_graph_t* const graph, ccv_nnc_graph_exec_symbol_new_hook_f hook, void* context, ccv_nnc_graph_exec_symbol_new_hook_f* previous_hook);
/** Record that a symbol stands for pair_tensor_symbol of another graph (a backward graph's view of its forward graph). */
void ccv_nnc_tensor_symbol_pair_with(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t tensor_symbol, const ccv_nnc_tensor_symbol_t pair_tensor_symbol);
void ccv_nnc_graph_exec_symbol_pair_with(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t exec_symbol, const ccv_nnc_graph_exec_symbol_t pair_exec_symbol);
/** Not supported yet (a later step of Level 3): each leaves the graph as it is and sets an error message. */
void ccv_nnc_symbolic_graph_memory_compression(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t* const sources, const int source_size, const ccv_nnc_graph_exec_symbol_t* const destinations, const int destination_size);
void ccv_nnc_symbolic_graph_memory_reduction(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t* const sources, const int source_size, const ccv_nnc_graph_exec_symbol_t* const destinations, const int destination_size);

/*
 * Level 3.5: loops and branches in a symbolic graph.
 *
 * A while loop or a case..of branch is a sub-graph owned by the graph it is
 * attached to (freed with it). Its exec symbols may name the enclosing
 * graphs' tensor symbols directly: each such symbol gets a local stand-in
 * hooked to it (ccv_nnc_tensor_symbol_hookup), and the loop / case..of exec
 * symbol of the enclosing graph reads it (or, when the sub-graph writes it,
 * writes it), which orders it among its neighbours. Compiling the enclosing
 * graph compiles the sub-graphs with it: a loop's carried values are bound
 * round by round through multi-view tensors placed by the memory planner,
 * so no data moves between rounds; a case..of's outputs are phi multi-views
 * over the branch's results and the fall-back inputs.
 */
/** Record that dest_tensor_symbol of dest_graph (a sub-graph of src_graph, at any depth) stands for src_tensor_symbol. */
void ccv_nnc_tensor_symbol_hookup(ccv_nnc_symbolic_graph_t* const src_graph, ccv_nnc_symbolic_graph_t* const dest_graph, const ccv_nnc_tensor_symbol_t src_tensor_symbol, const ccv_nnc_tensor_symbol_t dest_tensor_symbol);
/** For a case..of branch: when the branch is skipped, each destination (an output) takes its source (an input). */
void ccv_nnc_tensor_symbol_set_bypasses(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_map_t* const symbol_map, const int symbol_map_size);
/**
 * Attach while_graph to graph as a while loop (cmd: CCV_NNC_GRAPH_FORWARD or
 * CCV_NNC_GRAPH_BACKWARD). @return the loop's exec symbol in graph, or
 * NO_GRAPH_EXEC_SYMBOL (message set) when while_graph is already attached.
 */
ccv_nnc_graph_exec_symbol_t ccv_nnc_symbolic_graph_while(ccv_nnc_symbolic_graph_t* const graph, const uint32_t cmd, ccv_nnc_symbolic_graph_t* const while_graph, const char* const name);
/**
 * The loop runs its body up to the breakpoints (and what they need), calls
 * while_expr on the inputs' tensors, and stops when it returns 0; otherwise
 * it runs the rest of the body and starts the next round.
 */
void ccv_nnc_symbolic_graph_set_while_expr(ccv_nnc_symbolic_graph_t* const while_graph, const ccv_nnc_graph_while_f while_expr, const void* const while_data, const ccv_nnc_tensor_symbol_t* const inputs, const int input_size, const ccv_nnc_graph_exec_symbol_t* const breakpoints, const int breakpoint_size);
/** Each source (written in a round) is what its destination (read by the body) holds in the next round. */
void ccv_nnc_symbolic_graph_set_carry_overs(ccv_nnc_symbolic_graph_t* const while_graph, const ccv_nnc_tensor_symbol_map_t* const symbol_map, const int symbol_map_size);
/** The loop's round counter (one CCV_64S value, 0 in the first round). */
CCV_WARN_UNUSED(ccv_nnc_tensor_symbol_t) ccv_nnc_tensor_symbol_for_while_count(const ccv_nnc_symbolic_graph_t* const while_graph);
/** The body of a while exec symbol (NULL, message set, for another kind of symbol). */
CCV_WARN_UNUSED(ccv_nnc_symbolic_graph_t*) ccv_nnc_symbolic_graph_from_while_symbol(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t while_symbol);
/**
 * A case..of exec symbol: the expression sees `inputs`; each map entry pairs
 * a fall-back input (source) with an output (destination) that takes it
 * when no branch runs.
 */
CCV_WARN_UNUSED(ccv_nnc_graph_exec_symbol_t) ccv_nnc_symbolic_graph_case_of_new(ccv_nnc_symbolic_graph_t* const graph, const uint32_t cmd, const ccv_nnc_tensor_symbol_t* const inputs, const int input_size, const ccv_nnc_tensor_symbol_map_t* const symbol_map, const int symbol_map_size, const char* const name);
/** The expression returns the branch to run (-1 or an unset index: none). */
void ccv_nnc_symbolic_graph_set_case_of_expr(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t exec, ccv_nnc_graph_case_of_f case_of, const void* case_of_data);
/** Attach case_graph as branch case_of; each map entry pairs a branch symbol (source) with the case..of output it becomes (destination). */
void ccv_nnc_symbolic_graph_set_case_of(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_graph_exec_symbol_t symbol, ccv_nnc_symbolic_graph_t* const case_graph, const int case_of, const ccv_nnc_tensor_symbol_map_t* const symbol_map, const int symbol_map_size);

/*
 * Level 3.5: automatic differentiation and minimisers.
 */
/**
 * Append to graph the backward pass of the execs between sources and
 * destinations: the gradients of wrt_symbols given those of f_symbols (a
 * scalar f's gradient is 1 unless the caller writes its gradient symbol).
 */
void ccv_nnc_symbolic_graph_backward(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t* const f_symbols, const int f_symbol_size, const ccv_nnc_tensor_symbol_t* const wrt_symbols, const int wrt_symbol_size, const ccv_nnc_graph_exec_symbol_t* const sources, const int source_size, const ccv_nnc_graph_exec_symbol_t* const destinations, const int destination_size);
/** The gradient symbol of a wrt or f symbol after the last ccv_nnc_symbolic_graph_backward (NO_TENSOR_SYMBOL when none). */
CCV_WARN_UNUSED(ccv_nnc_tensor_symbol_t) ccv_nnc_tensor_symbol_for_backward(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t symbol);
/** The exec symbol that writes a gradient symbol. */
CCV_WARN_UNUSED(ccv_nnc_graph_exec_symbol_t) ccv_nnc_graph_exec_symbol_for_backward(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_symbol_t symbol);
/**
 * Backward of the losses, then one minimizer exec per parameter. gradients
 * (optional, parameter_size + input_size), updated_parameters and
 * graph_exec_symbols (parameter_size each) and saved_aux
 * (parameter_size * ccv_nnc_minimizer_saved_aux_size(minimizer)) are filled.
 */
void ccv_nnc_symbolic_graph_minimize(ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_cmd_t minimizer, const ccv_nnc_tensor_symbol_t* const losses, const int loss_size, const ccv_nnc_tensor_symbol_t* const parameters, const int parameter_size, const ccv_nnc_tensor_symbol_t* const inputs, const int input_size, const ccv_nnc_graph_exec_symbol_t* const sources, const int source_size, const ccv_nnc_graph_exec_symbol_t* const destinations, const int destination_size, ccv_nnc_tensor_symbol_t* const gradients, ccv_nnc_tensor_symbol_t* const updated_parameters, ccv_nnc_tensor_symbol_map_t* const saved_aux, ccv_nnc_graph_exec_symbol_t* const graph_exec_symbols);
/** The auxiliary tensors per parameter a minimizer keeps (momenta, squares, ...). */
CCV_WARN_UNUSED(int) ccv_nnc_minimizer_saved_aux_size(const ccv_nnc_cmd_t minimizer);

/*
 * Level 4: the dynamic graph.
 *
 * Commands run at once on tensor variables and are traced into a symbolic
 * graph, so that backward, apply_gradients and minimize can differentiate
 * what ran with the symbolic autodiff. A variable's memory goes as soon as
 * nothing can need it: when it is freed (or written again) and no traced
 * command that a later backward may run reads it. Commands whose inputs are
 * all constants, and every command between ccv_nnc_dynamic_graph_set_no_grad
 * (graph, 1) and (graph, 0), leave no trace.
 */
typedef struct ccv_nnc_dynamic_graph_s ccv_nnc_dynamic_graph_t;
/** An opaque handle (a pointer only as an implementation detail). */
typedef struct ccv_nnc_tensor_variable_s* ccv_nnc_tensor_variable_t;
CCV_WARN_UNUSED(ccv_nnc_dynamic_graph_t*) ccv_nnc_dynamic_graph_new(void);
/** A variable with a shape (or ccv_nnc_tensor_auto: the first command that writes it gives one). */
CCV_WARN_UNUSED(ccv_nnc_tensor_variable_t) ccv_nnc_tensor_variable_new_impl(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_param_t info);
#define CCV_NNC_TENSOR_VARIABLE_NEW_X_1(graph) ccv_nnc_tensor_variable_new_impl(graph, ccv_nnc_tensor_auto)
#define CCV_NNC_TENSOR_VARIABLE_NEW_X_SEL(_1, _2, _FX, ...) _FX
#define ccv_nnc_tensor_variable_new(graph, ...) CCV_NNC_TENSOR_VARIABLE_NEW_X_SEL(graph, ##__VA_ARGS__, ccv_nnc_tensor_variable_new_impl, CCV_NNC_TENSOR_VARIABLE_NEW_X_1)(graph, ##__VA_ARGS__)
/** A constant: no gradient flows to it, and it cannot be a command's output. */
CCV_WARN_UNUSED(ccv_nnc_tensor_variable_t) ccv_nnc_tensor_constant_new_impl(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_param_t info);
#define CCV_NNC_TENSOR_CONSTANT_NEW_X_1(graph) ccv_nnc_tensor_constant_new_impl(graph, ccv_nnc_tensor_auto)
#define CCV_NNC_TENSOR_CONSTANT_NEW_X_SEL(_1, _2, _FX, ...) _FX
#define ccv_nnc_tensor_constant_new(graph, ...) CCV_NNC_TENSOR_CONSTANT_NEW_X_SEL(graph, ##__VA_ARGS__, ccv_nnc_tensor_constant_new_impl, CCV_NNC_TENSOR_CONSTANT_NEW_X_1)(graph, ##__VA_ARGS__)
/** A view of part of a variable that is not itself an alias (ofs and stride as for tensor symbol aliases; stride all 0: packed). */
CCV_WARN_UNUSED(ccv_nnc_tensor_variable_t) ccv_nnc_tensor_variable_alias_new(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t tensor_variable, const int ofs[CCV_NNC_MAX_DIM_ALLOC], const int stride[CCV_NNC_MAX_DIM_ALLOC], const ccv_nnc_tensor_param_t info);
CCV_WARN_UNUSED(ccv_nnc_tensor_param_t) ccv_nnc_tensor_variable_params(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t tensor_variable);
/** @return 0 with ofs and stride filled, or -1 when the variable is not an alias. */
int ccv_nnc_tensor_variable_alias_params(const ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t tensor_variable, int ofs[CCV_NNC_MAX_DIM_ALLOC], int stride[CCV_NNC_MAX_DIM_ALLOC]);
/** The variable's tensor, allocated here when it has a shape but no value yet (NULL, message set, when it has no shape). */
CCV_WARN_UNUSED(ccv_nnc_tensor_t*) ccv_nnc_tensor_from_variable_impl(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t tensor_variable, ccv_nnc_stream_context_t* const stream_context);
#define CCV_NNC_TENSOR_FROM_VARIABLE_X_1(graph, tensor_variable) ccv_nnc_tensor_from_variable_impl(graph, tensor_variable, 0)
#define CCV_NNC_TENSOR_FROM_VARIABLE_X_SEL(_1, _2, _3, _FX, ...) _FX
#define ccv_nnc_tensor_from_variable(graph, tensor_variable, ...) CCV_NNC_TENSOR_FROM_VARIABLE_X_SEL(graph, tensor_variable, ##__VA_ARGS__, ccv_nnc_tensor_from_variable_impl, CCV_NNC_TENSOR_FROM_VARIABLE_X_1)(graph, tensor_variable, ##__VA_ARGS__)
CCV_WARN_UNUSED(int) ccv_nnc_tensor_variable_is_constant(const ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t tensor_variable);
/** Use the caller's tensor as the variable's value (the caller keeps it alive; a traced command may still read it). */
void ccv_nnc_tensor_variable_set(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t tensor_variable, ccv_nnc_tensor_t* const tensor);
/** Cut the variable off its trace: from now on it is a constant (not an alias). */
void ccv_nnc_tensor_variable_detach(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t tensor_variable);
typedef void (*ccv_nnc_tensor_variable_destructor_f)(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_t* const tensor, void* const context);
/** Called with the variable's tensor when the variable is destroyed (freed, or with its graph). */
void ccv_nnc_tensor_variable_destructor_hook(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t tensor_variable, ccv_nnc_tensor_variable_destructor_f func, void* const context);
/** Bit i of bitmask: source i reaches (through traced commands) one of the destinations. */
void ccv_nnc_dynamic_graph_has_effect_to_tensor_variables(const ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t* const source_variables, const int source_variable_size, const ccv_nnc_tensor_variable_t* const destination_variables, const int destination_variable_size, uint64_t* const bitmask);
/**
 * Run cmd now on the variables' tensors (outputs without a shape take the
 * command's inference) and trace it. With a stream the call is queued on it:
 * its tensors stay alive until the stream has run it, even if the variables
 * are freed; wait on the stream before reading the outputs or freeing the
 * graph. @return CCV_NNC_EXEC_SUCCESS or an error code (message set).
 */
int ccv_nnc_dynamic_graph_exec(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, const ccv_nnc_tensor_variable_t* const inputs, const int input_size, ccv_nnc_tensor_variable_t* const outputs, const int output_size, const int parallel, ccv_nnc_stream_context_t* const stream_context);
/** d f / d inputs into outputs (one per input; a gradient already holding a value is added to). df_optionals: f's seeds, NULL for ones. */
void ccv_nnc_dynamic_graph_backward(ccv_nnc_dynamic_graph_t* const dynamic_graph, const ccv_nnc_tensor_variable_t* const f_variables, const int f_variable_size, const ccv_nnc_tensor_variable_t* const df_optionals, const ccv_nnc_tensor_variable_t* const inputs, const int input_size, ccv_nnc_tensor_variable_t* const outputs, const int output_size, ccv_nnc_stream_context_t* const stream_context);
/** One minimizer step per parameter with its gradient; saved_aux: ccv_nnc_minimizer_saved_aux_size(minimizer) variables per parameter, kept by the caller across steps. */
void ccv_nnc_dynamic_graph_apply_gradients(ccv_nnc_dynamic_graph_t* const dynamic_graph, const ccv_nnc_cmd_t minimizer, const ccv_nnc_tensor_variable_t* const gradients, const int gradient_size, ccv_nnc_tensor_variable_t* const parameters, const int parameter_size, ccv_nnc_tensor_variable_t* const saved_aux, const int parallel, ccv_nnc_stream_context_t* const stream_context);
/** backward of the losses for the parameters, then apply_gradients. */
void ccv_nnc_dynamic_graph_minimize(ccv_nnc_dynamic_graph_t* const dynamic_graph, const ccv_nnc_cmd_t minimizer, const ccv_nnc_tensor_variable_t* const losses, const int loss_size, const ccv_nnc_tensor_variable_t* const dloss_optionals, ccv_nnc_tensor_variable_t* const parameters, const int parameter_size, ccv_nnc_tensor_variable_t* const saved_aux, const int parallel, ccv_nnc_stream_context_t* const stream_context);
/** A soft limit on concurrent commands (>= 1). */
void ccv_nnc_dynamic_graph_set_max_concurrency(ccv_nnc_dynamic_graph_t* const graph, const int max_stream_count);
/** Stop (1) or resume (0) tracing. @return 0 when the setting changed, -1 when it already was so. */
int ccv_nnc_dynamic_graph_set_no_grad(ccv_nnc_dynamic_graph_t* const dynamic_graph, const int no_grad);
/** Give back memory kept for reuse. */
void ccv_nnc_dynamic_graph_gc(ccv_nnc_dynamic_graph_t* const dynamic_graph);
void ccv_nnc_tensor_variable_free(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t tensor_variable);
void ccv_nnc_dynamic_graph_free(ccv_nnc_dynamic_graph_t* const graph);
/** The trace in GraphViz's DOT language. */
void ccv_nnc_dynamic_graph_dot(const ccv_nnc_dynamic_graph_t* const graph, const int flags, FILE* out);
/** Symbols the trace holds for later backward passes: type CCV_NNC_SYMBOL_TENSOR, _TENSOR_ALIAS or _GRAPH_EXEC. */
CCV_WARN_UNUSED(int) ccv_nnc_dynamic_graph_bookkeeping_count(const ccv_nnc_dynamic_graph_t* const graph, const int type);
/**
 * NNC addition: memoisation. A command repeated on inputs of the same
 * contents (same command, parameters, hint and input bytes, hashed with
 * XXH3-128) hands back the outputs it made before instead of running; the
 * outputs kept are at most max_bytes (the least recently used go first).
 * 0 turns it off and empties the cache. Random and custom commands always
 * run; so does a command with a strided-view input. Hashing reads every
 * input byte, so it pays for commands that cost more than reading their
 * inputs. A cached output read with ccv_nnc_tensor_from_variable is first
 * copied, so writing through that pointer never changes the cache.
 */
void ccv_nnc_dynamic_graph_set_memoization(ccv_nnc_dynamic_graph_t* const graph, const size_t max_bytes);
/** Memoisation hits and misses since it was turned on. */
void ccv_nnc_dynamic_graph_memoization_stats(const ccv_nnc_dynamic_graph_t* const graph, uint64_t* const hits, uint64_t* const misses);
/**
 * NNC addition: the deferred mode (after MXNet's deferred compute). While on,
 * ccv_nnc_dynamic_graph_exec records calls without running them (their
 * outputs are pending). Reading a pending variable (ccv_nnc_tensor_from_variable),
 * an immediate call that reads one, turning the mode off or
 * ccv_nnc_dynamic_graph_flush runs everything recorded at once: as one
 * symbolic graph, simplified (common sub-expressions, pruning of what no live
 * variable holds) and compiled into a planned arena, so values whose
 * variables were freed before the run never get storage of their own.
 * Backward, apply_gradients and minimize are recorded too: each backward is
 * the symbolic autodiff over the calls recorded before it, planned with them,
 * and updates write in place into the parameters' storage, as in immediate
 * mode. After a run, the traced calls a live variable reaches stay recorded
 * for a later backward; values whose variables were freed are computed again,
 * except random draws, which are kept. A variable with no value yet may be
 * written in parts through its aliases (not traced; zeros where no part is
 * written); once it holds a value, writing through its aliases is refused.
 * @return 0 when the setting changed, -1 when it already was so.
 */
int ccv_nnc_dynamic_graph_set_deferred(ccv_nnc_dynamic_graph_t* const graph, const int deferred);
/** Run what the deferred mode recorded. @return CCV_NNC_EXEC_SUCCESS or an error code (message set). */
int ccv_nnc_dynamic_graph_flush(ccv_nnc_dynamic_graph_t* const graph);
/**
 * The recorded region between the given input variables and the pending
 * output variables, as a new symbolic graph the caller frees (nothing runs;
 * the recording stays). input_symbols / output_symbols (input_size /
 * output_size each) receive the symbols standing for the variables. An
 * output that needs a variable not among the inputs, or an input that no
 * output needs, is an error. @return 0, or -1 (message set, *symbolic_graph NULL).
 */
int ccv_nnc_dynamic_graph_export(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_tensor_variable_t* const inputs, const int input_size, const ccv_nnc_tensor_variable_t* const outputs, const int output_size, ccv_nnc_symbolic_graph_t** const symbolic_graph, ccv_nnc_tensor_symbol_t* const input_symbols, ccv_nnc_tensor_symbol_t* const output_symbols);
/** Bytes of tensor storage the graph's variables, trace and flushes hold now, and the most held at once (reset to now when reset_peak). */
void ccv_nnc_dynamic_graph_memory_stats(ccv_nnc_dynamic_graph_t* const graph, uint64_t* const in_use, uint64_t* const peak, const int reset_peak);
/** The trace through a symbolic graph format function. */
void ccv_nnc_dynamic_graph_format(const ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_symbolic_graph_format_f format_fn, void* const context);

enum {
	/* An exec with the same command, hint and inputs as an earlier one: its outputs' readers read the earlier outputs (pruning then removes it). */
	CCV_NNC_SIMPLIFY_COMMON_SUBEXPRESSION_ELIMINATION,
	/* Remove the execs the outputs do not depend on, then the symbols nothing uses (bound ones stay). */
	CCV_NNC_SIMPLIFY_GRAPH_PRUNING,
	/* Remove DATA_TRANSFER / FORMAT_TRANSFORM / DATATYPE_CONVERSION between tensors of one layout. */
	CCV_NNC_SIMPLIFY_DATA_TRANSFER_OPT,
	/* Fuse SOFTMAX followed by CATEGORICAL_CROSSENTROPY into SOFTMAX_CROSSENTROPY. */
	CCV_NNC_SIMPLIFY_OPS_FUSION,
	/*
	 * NNC addition (Owl's "useless work"): x + 0 and x * 1 (EWSUM, EWPROD, ADD,
	 * MUL, SCALAR_MUL by 1, where the 0 or 1 is a symbol flagged INIT_ZEROS /
	 * INIT_ONES that nothing writes), one-input EWSUM and identity copies
	 * become their input.
	 */
	CCV_NNC_SIMPLIFY_USELESS_WORK = 0x100,
	/*
	 * NNC addition (Owl's constant folding, over the constants a symbolic graph
	 * has): an exec whose inputs are all INIT_ZEROS / INIT_ONES symbols that
	 * nothing writes runs once during simplification; an output that is
	 * uniformly 0 or 1 becomes such a constant symbol and the exec goes.
	 */
	CCV_NNC_SIMPLIFY_CONSTANT_FOLDING = 0x101,
};
/**
 * Rewrite the graph with the passes, in the order given, keeping the values
 * of `outputs` (none given: what the destinations write). `binds` are
 * symbols the caller will bind at compile (pruning keeps them). The default
 * sources and destinations are recomputed when anything changed.
 */
void ccv_nnc_symbolic_graph_simplify(ccv_nnc_symbolic_graph_t* const graph, const int* const passes, const int pass_size, const ccv_nnc_tensor_symbol_t* const binds, const int bind_size, const ccv_nnc_tensor_symbol_t* const outputs, const int output_size, const ccv_nnc_graph_exec_symbol_t* const sources, const int source_size, const ccv_nnc_graph_exec_symbol_t* const destinations, const int destination_size);


/*
 * Persistence (SQLite). `handle` is an open sqlite3* of the caller's; every
 * call runs in one transaction, so a failure or a kill leaves what was there
 * before. Each blob carries a schema version and a checksum; a corrupt,
 * truncated or foreign entry is refused with a message, and sizes are checked
 * before anything is allocated.
 *
 * The option's hooks let a caller encode a tensor's bytes on write (setting
 * an identifier it will be given back on read) and decode them on read.
 * Either returns 1 when it handled the data, 0 to fall back to the raw bytes.
 */
typedef int (*ccv_nnc_tensor_io_option_decode_f)(const void* const data, const size_t data_size, const int datatype, const int* const dimensions, const int dimension_count, const unsigned int identifier, void* const context, const ccv_nnc_tensor_param_t tensor_params, ccv_nnc_tensor_t** const tensor_out, void* const decoded, size_t* const decoded_size);
typedef int (*ccv_nnc_tensor_io_option_encode_f)(const void* const data, const size_t data_size, const int datatype, const int* const dimensions, const int dimension_count, void* const context, void* const encoded, size_t* const encoded_size, ccv_nnc_tensor_param_t* const tensor_params, unsigned int* const identifier);
typedef struct {
	ccv_nnc_tensor_io_option_decode_f decode;
	ccv_nnc_tensor_io_option_encode_f encode;
	void* context;
} ccv_nnc_tensor_io_option_t;
/* Write a tensor (a view is written as its contents) under `name`, replacing what was there. */
int ccv_nnc_tensor_write(const ccv_nnc_tensor_t* const tensor, void* const handle, const char* const name, const ccv_nnc_tensor_io_option_t* const options);
enum {
	/* Read only the shape and type: a tensor header without data. */
	CCV_NNC_TENSOR_READ_METADATA_ONLY = CCV_NO_DATA_ALLOC,
};
/*
 * Read a tensor written under `name`. With *tensor_out set, into that tensor
 * (its shape and type must match); otherwise a new tensor, with
 * `tensor_params` (when given) overriding where it lives.
 */
int ccv_nnc_tensor_read(void* const handle, const char* const name, const ccv_nnc_tensor_io_option_t* const options, const int flags, const ccv_nnc_tensor_param_t* const tensor_params, ccv_nnc_tensor_t** const tensor_out);
/* A symbolic graph (symbols, aliases, execs, edges, sub-graphs) and the tensors bound to it, in a SQLite file. */
void ccv_nnc_symbolic_graph_write(const ccv_nnc_symbolic_graph_t* const graph, const ccv_nnc_tensor_bind_t* const tensor_binds, const int tensor_bind_size, const char* const fn);
void ccv_nnc_symbolic_graph_read(const char* const fn, ccv_nnc_symbolic_graph_t** const graph_ref, ccv_nnc_tensor_bind_t** const tensor_binds_ref, int* const tensor_bind_size_ref);

typedef struct ccv_cnnp_model_s ccv_cnnp_model_t;
/*
 * Run a model on dynamic-graph variables, traced like any exec so that a
 * later ccv_nnc_dynamic_graph_backward reaches through it to the model's
 * parameters. dry_run prepares it without running.
 */
void ccv_nnc_dynamic_graph_evaluate(ccv_nnc_dynamic_graph_t* const dynamic_graph, ccv_cnnp_model_t* const model, const int is_test, const ccv_nnc_tensor_variable_t* const inputs, const int input_size, ccv_nnc_tensor_variable_t* const outputs, const int output_size, ccv_nnc_tensor_tape_t* const tensor_tape, ccv_nnc_stream_context_t* const stream_context);
void ccv_nnc_dynamic_graph_dry_run(ccv_nnc_dynamic_graph_t* const dynamic_graph, ccv_cnnp_model_t* const model, const int is_test, const ccv_nnc_tensor_variable_t* const inputs, const int input_size, ccv_nnc_stream_context_t* const stream_context);

/*
 * Dataframe (Level 5). A column is produced row by row by an enumerator: given row indices it
 * fills `data` with one pointer per row. Values a column hands out stay owned by the dataframe or
 * its iterator; data_deinit releases one of them, context_deinit the column context.
 */
typedef void (*ccv_cnnp_column_data_enum_f)(const int column_idx, const int* const row_idxs, const int row_size, void** const data, void* const context, ccv_nnc_stream_context_t* const stream_context);
typedef void (*ccv_cnnp_column_data_deinit_f)(void* const data, void* const context);
typedef void (*ccv_cnnp_column_data_context_deinit_f)(void* const context);
typedef struct {
	int stream_type;
	char* name;
	ccv_cnnp_column_data_enum_f data_enum;
	ccv_cnnp_column_data_deinit_f data_deinit;
	void* context;
	ccv_cnnp_column_data_context_deinit_f context_deinit;
} ccv_cnnp_column_data_t;
/* A table of lazily computed columns over `row_count` rows. */
typedef struct ccv_cnnp_dataframe_s ccv_cnnp_dataframe_t;
CCV_WARN_UNUSED(ccv_cnnp_dataframe_t*) ccv_cnnp_dataframe_new(const ccv_cnnp_column_data_t* const column_data, const int column_size, const int row_count);
/* Add a column computed by `data_enum`; returns its index, or -1 with a message. */
CCV_WARN_UNUSED(int) ccv_cnnp_dataframe_add(ccv_cnnp_dataframe_t* const dataframe, ccv_cnnp_column_data_enum_f data_enum, const int stream_type, ccv_cnnp_column_data_deinit_f data_deinit, void* const context, ccv_cnnp_column_data_context_deinit_f context_deinit, const char* name);
/* A derived column: `map` reads the given columns of a batch of rows and writes one value per row. */
typedef void (*ccv_cnnp_column_data_map_f)(void* const* const* const column_data, const int column_size, const int batch_size, void** const data, void* const context, ccv_nnc_stream_context_t* const stream_context);
CCV_WARN_UNUSED(int) ccv_cnnp_dataframe_map(ccv_cnnp_dataframe_t* const dataframe, ccv_cnnp_column_data_map_f map, const int stream_type, ccv_cnnp_column_data_deinit_f data_deinit, const int* const column_idxs, const int column_idx_size, void* const context, ccv_cnnp_column_data_context_deinit_f context_deinit, const char* name);
/* Shuffle the row order (each call draws a new order; reproducible from one run to the next). */
void ccv_cnnp_dataframe_shuffle(ccv_cnnp_dataframe_t* const dataframe);
CCV_WARN_UNUSED(int) ccv_cnnp_dataframe_row_count(ccv_cnnp_dataframe_t* const dataframe);
CCV_WARN_UNUSED(const char*) ccv_cnnp_dataframe_column_name(ccv_cnnp_dataframe_t* const dataframe, const int column_idx);
/*
 * Sampling: a new dataframe whose rows are batches of `batch_size` rows of one column, reduced by
 * `sample`.
 */
typedef void (*ccv_cnnp_column_data_sample_f)(void* const* const input_data, const int batch_size, void** const output_data, void* const context, ccv_nnc_stream_context_t* const stream_context);
CCV_WARN_UNUSED(ccv_cnnp_dataframe_t*) ccv_cnnp_dataframe_sample_new(ccv_cnnp_dataframe_t* const dataframe, ccv_cnnp_column_data_sample_f sample, ccv_cnnp_column_data_deinit_f data_deinit, const int column_idx, const int batch_size, void* const context, ccv_cnnp_column_data_context_deinit_f context_deinit);
/*
 * Derived columns reading a field at `offset` of a column's value, building and reading tuples of
 * columns.
 */
CCV_WARN_UNUSED(int) ccv_cnnp_dataframe_extract_value(ccv_cnnp_dataframe_t* const dataframe, const int column_idx, const off_t offset, const char* name);
CCV_WARN_UNUSED(int) ccv_cnnp_dataframe_make_tuple(ccv_cnnp_dataframe_t* const dataframe, const int* const column_idxs, const int column_idx_size, const char* name);
CCV_WARN_UNUSED(int) ccv_cnnp_dataframe_tuple_size(const ccv_cnnp_dataframe_t* const dataframe, const int column_idx);
CCV_WARN_UNUSED(int) ccv_cnnp_dataframe_extract_tuple(ccv_cnnp_dataframe_t* const dataframe, const int column_idx, const int index, const char* name);
/*
 * Iterators: walk the rows, computing only the columns asked for; next returns 0 on a row, -1 at
 * the end. Buffers are reused from one row to the next.
 */
typedef struct ccv_cnnp_dataframe_iter_s ccv_cnnp_dataframe_iter_t;
CCV_WARN_UNUSED(ccv_cnnp_dataframe_iter_t*) ccv_cnnp_dataframe_iter_new(ccv_cnnp_dataframe_t* const dataframe, const int* const column_idxs, const int column_idx_size);
int ccv_cnnp_dataframe_iter_next(ccv_cnnp_dataframe_iter_t* const iter, void** const data_ref, const int column_idx_size, ccv_nnc_stream_context_t* const stream_context);
void ccv_cnnp_dataframe_iter_peek(ccv_cnnp_dataframe_iter_t* const iter, void** const data_ref, const int offset, const int data_ref_size, ccv_nnc_stream_context_t* const stream_context);
int ccv_cnnp_dataframe_iter_prefetch(ccv_cnnp_dataframe_iter_t* const iter, const int prefetch_count, ccv_nnc_stream_context_t* const stream_context);
int ccv_cnnp_dataframe_iter_set_cursor(ccv_cnnp_dataframe_iter_t* const iter, const int idx);
void ccv_cnnp_dataframe_iter_free(ccv_cnnp_dataframe_iter_t* const iter);
/* Free a dataframe (after its iterators). */
void ccv_cnnp_dataframe_free(ccv_cnnp_dataframe_t* const dataframe);
/*
 * Add-ons. A dataframe over the elements of a ccv_array_t (one column, each value points into the
 * array).
 */
CCV_WARN_UNUSED(ccv_cnnp_dataframe_t*) ccv_cnnp_dataframe_from_array_new(ccv_array_t* const array);
/* Copy tensors of a tuple column to a GPU (refused with a message without CUDA). */
CCV_WARN_UNUSED(int) ccv_cnnp_dataframe_copy_to_gpu(ccv_cnnp_dataframe_t* const dataframe, const int column_idx, const int tensor_offset, const int tensor_size, const int device_id, const char* name);
/* Run a command over tensors of a tuple column, into new tensors of the given parameters. */
CCV_WARN_UNUSED(int) ccv_cnnp_dataframe_cmd_exec(ccv_cnnp_dataframe_t* const dataframe, const int column_idx, const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, const int input_offset, const int input_size, const ccv_nnc_tensor_param_t* const output_params, const int output_size, const int stream_type, const char* name);
/* A column holding one tensor of `params` per iterator slot (scratch space for maps). */
CCV_WARN_UNUSED(int) ccv_cnnp_dataframe_add_aux(ccv_cnnp_dataframe_t* const dataframe, const ccv_nnc_tensor_param_t params, const char* name);
/* Decode an image file named by a string field of a column into a ccv_dense_matrix_t. */
CCV_WARN_UNUSED(int) ccv_cnnp_dataframe_read_image(ccv_cnnp_dataframe_t* const dataframe, const int column_idx, const off_t structof, const char* name);
typedef struct {
	float contrast;
	float saturation;
	float brightness;
	float lighting;
	float aspect_ratio;
	int symmetric;
	int seed;
	int center_crop;
	struct {
		int min;
		int max;
		int roundup;
	} resize;
	struct {
		int rows;
		int cols;
	} size;
	struct {
		int x;
		int y;
	} offset;
	struct {
		float mean[3];
		float std[3];
	} normalize;
} ccv_cnnp_random_jitter_t;
/* Random crop, flip, resize, colour jitter and normalisation of dense-matrix images. */
CCV_WARN_UNUSED(int) ccv_cnnp_dataframe_image_random_jitter(ccv_cnnp_dataframe_t* const dataframe, const int column_idx, const int datatype, const ccv_cnnp_random_jitter_t random_jitter, const char* name);
/*
 * One-hot tensors from an integer field; copy_scalar converts a scalar field into a 1-element
 * tensor; one_squared builds square masks from lengths; truncate cuts sequences to the longest
 * length of the batch.
 */
CCV_WARN_UNUSED(int) ccv_cnnp_dataframe_one_hot(ccv_cnnp_dataframe_t* const dataframe, const int column_idx, const off_t structof, const int range, const float onval, const float offval, const int datatype, const int format, const char* name);
CCV_WARN_UNUSED(int) ccv_cnnp_dataframe_copy_scalar(ccv_cnnp_dataframe_t* const dataframe, const int column_idx, const off_t structof, const int from_dt, const int to_dt, const int format, const char* name);
CCV_WARN_UNUSED(int) ccv_cnnp_dataframe_one_squared(ccv_cnnp_dataframe_t* const dataframe,  const int* const column_idxs, const int column_idx_size, const int variable_size, const int max_length, const char* name);
CCV_WARN_UNUSED(int) ccv_cnnp_dataframe_truncate(ccv_cnnp_dataframe_t* const dataframe, const int* const vec_idxs, const int vec_idx_size, const int* len_idxs, const int len_idx_size, const char* name);
/*
 * Batch `batch_count` rows of tensor columns into one tensor per column (and per group), in
 * `format`.
 */
CCV_WARN_UNUSED(ccv_cnnp_dataframe_t*) ccv_cnnp_dataframe_combine_new(ccv_cnnp_dataframe_t* const dataframe, const int* const column_idxs, const int column_idx_size, const int batch_count, const int group_count, const int format);
enum {
	CCV_CNNP_DATAFRAME_CSV_FILE = 0,
	CCV_CNNP_DATAFRAME_CSV_MEMORY = 1,
};
/*
 * A dataframe of the string cells of a CSV file or buffer (quotes, empty fields); `column_size`
 * receives the column count.
 */
CCV_WARN_UNUSED(ccv_cnnp_dataframe_t*) ccv_cnnp_dataframe_from_csv_new(void* const input, const int type, const size_t len, const char delim, const char quote, const int include_header, int* const column_size);
/*
 * Models (Level 5). A model io is a symbolic handle for what flows between models: an input, or
 * the outputs of a model applied to inputs. It has no shape until the model is compiled.
 */
typedef struct ccv_cnnp_model_io_s* ccv_cnnp_model_io_t;
/* A fresh input of a functional model. */
CCV_WARN_UNUSED(ccv_cnnp_model_io_t) ccv_cnnp_input(void);
/*
 * Apply a model to inputs; the io stands for its outputs. A model applied twice shares its
 * parameters.
 */
CCV_WARN_UNUSED(ccv_cnnp_model_io_t) ccv_cnnp_model_apply(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t* const inputs, const int input_size);
/* Order `model_io` after `dependencies` without reading their values. */
void ccv_cnnp_model_add_dependencies(ccv_cnnp_model_io_t model_io, const ccv_cnnp_model_io_t* const dependencies, const int dependency_size);
enum {
	CCV_CNNP_PARAMETER_SELECT_WEIGHT = 0,
	CCV_CNNP_PARAMETER_SELECT_BIAS = 1,
};
/*
 * A handle for some parameters of a model (ALL_PARAMETERS for every one, or a selector and an
 * index), for the parameter calls below.
 */
CCV_WARN_UNUSED(ccv_cnnp_model_io_t) ccv_cnnp_model_parameters(ccv_cnnp_model_t* const model, const int selector, const int index);
/* Notifications sent synchronously to a model and every model inside it. */
typedef void (*ccv_cnnp_model_notify_f)(const ccv_cnnp_model_t* const model, const int tag, void* const payload, void* const context);
void ccv_cnnp_model_notify_hook(ccv_cnnp_model_t* const model, ccv_cnnp_model_notify_f func, void* const context);
void ccv_cnnp_model_notify(const ccv_cnnp_model_t* const model, const int tag, void* const payload);
/* A functional model from inputs to outputs (is_trainable: 1, 0, or -1 to inherit). */
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_model_new(const ccv_cnnp_model_io_t* const inputs, const int input_size, const ccv_cnnp_model_io_t* const outputs, const int output_size, const int is_trainable, const char* const name);
/* A model applying `models` one after the other; it takes ownership of them. */
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_sequential_new(ccv_cnnp_model_t* const* const models, const int model_size, const int is_trainable, const char* const name);
/* A model built by `func` from the input shapes each time it is compiled. */
typedef ccv_cnnp_model_t* (*ccv_cnnp_model_dynamic_f)(const ccv_nnc_tensor_param_t* const inputs, const int input_size, void* const context);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_dynamic_new(ccv_cnnp_model_dynamic_f func, void* const context, const char* const name);
/*
 * Build the model for these input shapes with a minimiser (CMD_SGD_FORWARD, ...) and a loss
 * (CMD_SOFTMAX_CROSSENTROPY_FORWARD, ..., or NOOP for none).
 */
void ccv_cnnp_model_compile(ccv_cnnp_model_t* const model, const ccv_nnc_tensor_param_t* const inputs, const int input_size, const ccv_nnc_cmd_t minimizer, const ccv_nnc_cmd_t loss);
/*
 * Replace the structure of a compiled model by `init` (same parameters, other shapes), keeping the
 * parameter values.
 */
void ccv_cnnp_model_absorb(ccv_cnnp_model_t* const model, ccv_cnnp_model_t* const init, const ccv_nnc_tensor_param_t* const inputs, const int input_size);
/* An uncompiled copy of a model, its structure only. */
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_model_copy(const ccv_cnnp_model_t* const model, const int is_trainable);
CCV_WARN_UNUSED(int) ccv_cnnp_model_output_size(const ccv_cnnp_model_t* const model);
CCV_WARN_UNUSED(int) ccv_cnnp_model_is_trainable(const ccv_cnnp_model_t* const model);
/* Output shapes of a compiled model. */
void ccv_cnnp_model_tensor_auto(ccv_cnnp_model_t* const model, ccv_nnc_tensor_param_t* const outputs, const int output_size);
/* GraphViz of the compiled graph; format calls `format_fn` on each exec of it. */
void ccv_cnnp_model_dot(const ccv_cnnp_model_t* const model, const int flags, FILE** const outs, const int out_size);
void ccv_cnnp_model_format(const ccv_cnnp_model_t* const model, const ccv_nnc_symbolic_graph_format_f format_fn, void* const context);
/*
 * One training step: forward, loss against `fits`, backward, minimiser update; `outputs` receive
 * the model outputs.
 */
void ccv_cnnp_model_fit(ccv_cnnp_model_t* const model, ccv_nnc_tensor_t* const* const inputs, const int input_size, ccv_nnc_tensor_t* const* const fits, const int fit_size, ccv_nnc_tensor_t* const* const outputs, const int output_size, ccv_nnc_tensor_tape_t* const tensor_tape, ccv_nnc_stream_context_t* const stream_context);
enum {
	CCV_CNNP_DISABLE_OUTGRAD_NONE = (uint64_t)0,
	CCV_CNNP_DISABLE_OUTGRAD_ALL = (uint64_t)(int64_t)-1,
};
typedef struct {
	int requires_grad;
	int is_test;
	uint64_t disable_outgrad;
} ccv_cnnp_evaluate_param_t;
/*
 * Forward only (is_test selects inference behaviour); with requires_grad, keeps what a later
 * ccv_cnnp_model_backward needs. dry_run prepares the same without running.
 */
void ccv_cnnp_model_evaluate(ccv_cnnp_model_t* const model, const ccv_cnnp_evaluate_param_t params, ccv_nnc_tensor_t* const* const inputs, const int input_size, ccv_nnc_tensor_t* const* const outputs, const int output_size, ccv_nnc_tensor_tape_t* const tensor_tape, ccv_nnc_stream_context_t* const stream_context);
void ccv_cnnp_model_dry_run(ccv_cnnp_model_t* const model, const ccv_cnnp_evaluate_param_t params, ccv_nnc_tensor_t* const* const inputs, const int input_size, ccv_nnc_tensor_t* const* const outputs, const int output_size);
/*
 * Backward from the gradients of the outputs (none: ones for a scalar loss), accumulating
 * parameter gradients and writing input gradients into `outgrads`; apply_gradients runs the
 * minimiser.
 */
void ccv_cnnp_model_backward(ccv_cnnp_model_t* const model, ccv_nnc_tensor_t* const* const ingrads, const int ingrad_size, ccv_nnc_tensor_t* const* const outgrads, const int outgrad_size, ccv_nnc_tensor_tape_t* const tensor_tape, ccv_nnc_stream_context_t* const stream_context);
void ccv_cnnp_model_apply_gradients(ccv_cnnp_model_t* const model, ccv_nnc_stream_context_t* const stream_context);
/* Ask a running forward, backward or update to stop at the next command. */
void ccv_cnnp_model_cancel(ccv_cnnp_model_t* const model);
enum {
	CCV_CNNP_MODEL_CHECKPOINT_READ_WRITE,
	CCV_CNNP_MODEL_CHECKPOINT_READ_ONLY,
	CCV_CNNP_MODEL_CHECKPOINT_WRITE_ONLY,
};
/*
 * Persistence of a model's parameters and minimiser state (not its structure) in SQLite, under
 * `name`.
 */
int ccv_cnnp_model_write(const ccv_cnnp_model_t* const model, void* const handle, const char* const name, const ccv_nnc_tensor_io_option_t* const options);
void ccv_cnnp_model_write_to_file(ccv_cnnp_model_t* const model, const char* const fn, const ccv_nnc_tensor_io_option_t* const options);
typedef int (*ccv_cnnp_model_io_writer_f)(const ccv_nnc_tensor_t* const tensor, const char* const sql, void* const handle, const char* const name, const ccv_nnc_tensor_io_option_t* const options);
typedef int (*ccv_cnnp_model_io_reader_f)(void* const handle, const char* const name, const ccv_nnc_tensor_io_option_t* const options, const ccv_nnc_tensor_param_t params, ccv_nnc_tensor_t** const tensor_out);
void ccv_cnnp_model_set_io(ccv_cnnp_model_t* const model, ccv_cnnp_model_io_reader_f reader, ccv_cnnp_model_io_writer_f writer);
int ccv_cnnp_model_read(void* const handle, const char* const name, const ccv_nnc_tensor_io_option_t* const options, const ccv_cnnp_model_t* const model_out);
void ccv_cnnp_model_read_from_file(const char* const fn, const ccv_nnc_tensor_io_option_t* const options, const ccv_cnnp_model_t* const model_out);
/*
 * Execution settings. Memory compression and reduction are answered with a message where not
 * supported.
 */
void ccv_cnnp_model_set_data_parallel(ccv_cnnp_model_t* const model, const int parallel);
void ccv_cnnp_model_set_max_concurrency(ccv_cnnp_model_t* const model, const int max_stream_count);
void ccv_cnnp_model_set_memory_compression(ccv_cnnp_model_t* const model, const int memory_compression);
void ccv_cnnp_model_set_memory_reduction(ccv_cnnp_model_t* const model, const int memory_reduction);
void ccv_cnnp_model_set_gradient_checkpointing(ccv_cnnp_model_t* const model, const int gradient_checkpointing);
int ccv_cnnp_model_gradient_checkpointing(ccv_cnnp_model_t* const model);
void ccv_cnnp_model_set_compile_params(ccv_cnnp_model_t* const model, const ccv_nnc_symbolic_graph_compile_param_t compile_params);
void ccv_cnnp_model_set_workspace_size(ccv_cnnp_model_t* const model, size_t workspace_size);
size_t ccv_cnnp_model_workspace_size(ccv_cnnp_model_t* const model);
/* Parameter access on a compiled model: set from, copy into, shape, name, count, filters. */
void ccv_cnnp_model_set_parameter(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameter, const ccv_nnc_tensor_t* const tensor);
void ccv_cnnp_model_parameter_copy(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameter, ccv_nnc_tensor_t* const tensor);
CCV_WARN_UNUSED(ccv_nnc_tensor_param_t) ccv_cnnp_model_parameter_tensor_params(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameter);
CCV_WARN_UNUSED(const char*) ccv_cnnp_model_parameter_name(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameter);
CCV_WARN_UNUSED(int) ccv_cnnp_model_parameter_count(ccv_cnnp_model_t* const model);
typedef int (*ccv_cnnp_model_parameters_filter_f)(const ccv_cnnp_model_t* const model, const char* const name, void* const context);
CCV_WARN_UNUSED(ccv_array_t*) ccv_cnnp_model_parameters_filter(ccv_cnnp_model_t* const model, ccv_cnnp_model_parameters_filter_f filter, void* const context);
CCV_WARN_UNUSED(ccv_cnnp_model_io_t) ccv_cnnp_model_parameter_first(ccv_cnnp_model_t* const model, ccv_cnnp_model_parameters_filter_f first, void* const context);
CCV_WARN_UNUSED(ccv_cnnp_model_io_t) ccv_cnnp_model_parameter_first_uninit(ccv_cnnp_model_t* const model);
/*
 * Copy or share parameters from another compiled model, zip or map a command over them, or over
 * their gradients.
 */
void ccv_cnnp_model_set_parameters(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameters, const ccv_cnnp_model_t* const from_model, const ccv_cnnp_model_io_t from_parameters);
typedef int(*ccv_cnnp_model_parameters_renamer_f)(void* const context, const char* const source_name, char* const updated_name, const size_t provided_size);
void ccv_cnnp_model_share_parameters(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameters, const ccv_cnnp_model_t* const from_model, const ccv_cnnp_model_io_t from_parameters, ccv_cnnp_model_parameters_renamer_f renamer, void* const context);
void ccv_cnnp_model_parameters_zip_map(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameters, const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const* const aux_ins, const int aux_in_size, ccv_nnc_tensor_t* const* const aux_outs, const int aux_out_size, ccv_nnc_stream_context_t* const stream_context, const ccv_cnnp_model_t* const from_model, const ccv_cnnp_model_io_t from_parameters);
void ccv_cnnp_model_parameters_map(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameters, const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const* const aux_ins, const int aux_in_size, ccv_nnc_tensor_t* const* const aux_outs, const int aux_out_size, ccv_nnc_stream_context_t* const stream_context);
void ccv_cnnp_model_parameter_gradients_map(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameters, const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const* const aux_ins, const int aux_in_size, ccv_nnc_tensor_t* const* const aux_outs, const int aux_out_size, ccv_nnc_stream_context_t* const stream_context);
/* The minimiser, for all parameters or some. */
void ccv_cnnp_model_set_minimizer(ccv_cnnp_model_t* const model, const ccv_nnc_cmd_t minimizer, const int reset, const ccv_cnnp_model_io_t* const parameters, const int parameter_size);
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_cnnp_model_minimizer(ccv_cnnp_model_t* const model);
/*
 * The compiled model's default stream: a GPU stream on the model's device,
 * owned by the model (do not free it), made on first ask; 0 for a model that
 * is not compiled or whose inputs are on the CPU. Queue the batch's copies on
 * it and pass it to fit / evaluate to keep the steps on the device; a fit /
 * evaluate given no stream first waits for what was queued there.
 */
CCV_WARN_UNUSED(ccv_nnc_stream_context_t*) ccv_cnnp_model_default_stream(const ccv_cnnp_model_t* const model);
/* The compiled model's arena bytes; free. */
CCV_WARN_UNUSED(uint64_t) ccv_cnnp_model_memory_size(const ccv_cnnp_model_t* const model);
void ccv_cnnp_model_free(ccv_cnnp_model_t* const model);
/* Clip the gradients to a total norm (as PyTorch's clip_grad_norm_); detect NaN gradients. */
void ccv_cnnp_model_parameters_clip_grad_norm(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameters, int norm_type, float max_norm, ccv_nnc_stream_context_t* const stream_context);
int ccv_cnnp_model_parameter_gradients_isnan(ccv_cnnp_model_t* const model, const ccv_cnnp_model_io_t parameters, ccv_nnc_stream_context_t* const stream_context);
/*
 * Models over commands and symbolic graphs. Each input or output is an io of the model, absent,
 * not an output, or a tensor initialised once and shared (as a trainable parameter with
 * _AS_TRAINABLE).
 */
enum {
	CCV_CNNP_IO,
	CCV_CNNP_NO_TENSOR,
	CCV_CNNP_TENSOR_NOT_OUTPUT,
	CCV_CNNP_INIT_SHARED_TENSOR,
	CCV_CNNP_INIT_SHARED_TENSOR_AS_TRAINABLE,
};
typedef void(*ccv_cnnp_state_initializer_f)(void* const context, const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, ccv_nnc_tensor_t* const input, const ccv_nnc_tensor_symbol_t output_symbol);
typedef void(*ccv_cnnp_cmd_exec_init_state_f)(const ccv_nnc_tensor_symbol_t tensor_symbol, const ccv_cnnp_state_initializer_f initializer, void* const initializer_context, void* const context);
typedef void(*ccv_cnnp_cmd_exec_init_state_deinit_f)(void* const context);
typedef void*(*ccv_cnnp_cmd_exec_init_state_copy_f)(void* const context);
typedef struct {
	ccv_nnc_tensor_param_t info;
	void* context;
	ccv_cnnp_cmd_exec_init_state_f init;
	ccv_cnnp_cmd_exec_init_state_copy_f copy;
	ccv_cnnp_cmd_exec_init_state_deinit_f deinit;
} ccv_cnnp_cmd_exec_io_init_state_t;
typedef struct {
	int type;
	ccv_cnnp_cmd_exec_io_init_state_t init_state;
} ccv_cnnp_cmd_exec_io_t;
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_cmd_exec(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, const ccv_cnnp_cmd_exec_io_t* const inputs, const int input_size, const int* const outputs, const int output_size, const int is_trainable, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_cmd_exec_io_init_state_t) ccv_cnnp_cmd_exec_io_copy(const ccv_nnc_tensor_t* const tensor);
CCV_WARN_UNUSED(ccv_cnnp_cmd_exec_io_init_state_t) ccv_cnnp_cmd_exec_io_set_by(const ccv_nnc_cmd_t cmd, const ccv_nnc_hint_t hint, const int flags, const ccv_nnc_tensor_param_t params);
typedef struct {
	ccv_nnc_tensor_symbol_t symbol;
	int type;
	ccv_cnnp_cmd_exec_io_init_state_t init_state;
} ccv_cnnp_tensor_symbol_param_t;
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_graph(const ccv_nnc_symbolic_graph_t* const graph, const ccv_cnnp_tensor_symbol_param_t* const tensor_symbol_params, const int tensor_symbol_param_size, ccv_nnc_tensor_symbol_t* const inputs, const int input_size, ccv_nnc_tensor_symbol_t* const outputs, const int output_size, const int is_trainable, const char* const name);
/*
 * Layers. Each returns a model that compiles to the command family of its name (PyTorch-like
 * semantics as in libnnc).
 */
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_sum(const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_concat(const int axis, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_chunk(const int n, const int axis, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_convolution(const int groups, const int filters, const int kdim[CCV_NNC_MAX_DIM_ALLOC], const int dilation[CCV_NNC_MAX_DIM_ALLOC], const int no_bias, ccv_nnc_hint_t hint, const int format, const int is_trainable, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_convolution_transpose(const int groups, const int filters, const int kdim[CCV_NNC_MAX_DIM_ALLOC], const int dilation[CCV_NNC_MAX_DIM_ALLOC], const int output_padding, const int no_bias, ccv_nnc_hint_t hint, const int format, const int is_trainable, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_dense(const int count, const int no_bias, const int flags, const int is_trainable, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_batch_norm(const float momentum, const float epsilon, const int is_trainable, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_relu(const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_sigmoid(const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_tanh(const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_swish(const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_gelu(const int tanh, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_leaky_relu(const float negative_slope, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_softmax(const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_max_pool(const int kdim[CCV_NNC_MAX_DIM_ALLOC], const ccv_nnc_hint_t hint, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_average_pool(const int kdim[CCV_NNC_MAX_DIM_ALLOC], const ccv_nnc_hint_t hint, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_reshape(const int format, const int dim[CCV_NNC_MAX_DIM_ALLOC], const int ofs[CCV_NNC_MAX_DIM_ALLOC], const int stride[CCV_NNC_MAX_DIM_ALLOC], const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_pad(const int type, const int begin[CCV_NNC_MAX_DIM_ALLOC], const int end[CCV_NNC_MAX_DIM_ALLOC], const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_identity(const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_permute(const int index[CCV_NNC_MAX_DIM_ALLOC], const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_extract(const int index, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_flatten(const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_layer_norm(const float epsilon, const int axis[CCV_NNC_MAX_DIM_ALLOC], const int axis_count, const int elementwise_affine, const int is_trainable, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_group_norm(const int group_axis, const int groups, const float epsilon, const int reduce_axis[CCV_NNC_MAX_DIM_ALLOC], const int axis_count, const int elementwise_affine, const int is_trainable, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_rmsnorm(const float epsilon, const int axis[CCV_NNC_MAX_DIM_ALLOC], const int axis_count, const int is_trainable, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_add(const float p, const float q, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_mul(const float p, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_scalar_mul(const float a, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_div(const int reciprocal, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_sqrt(const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_cmul(const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_transpose(const int axis_a, const int axis_b, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_matmul(const int transpose_a[2], const int transpose_b[2], const int flags, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_dropout(const float p, const int entirety, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_masked_fill(const float eq, const float fill, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_index_select(const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_embedding(const int datatype, const int vocab_size, const int embed_size, const int is_trainable, const char* const name);
ccv_cnnp_model_t* ccv_cnnp_upsample(const int type, const float width_scale, const float height_scale, const int align_corners, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_reduce_sum(const int* const axis, const int axis_count, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_reduce_mean(const int* const axis, const int axis_count, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_reduce_max(const int* const axis, const int axis_count, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_reduce_min(const int* const axis, const int axis_count, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_reduce_norm2(const int* const axis, const int axis_count, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_argmax(const int axis, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_argmin(const int axis, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_min(const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_max(const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_lstm(const int masked, const int hidden_size, const int proj_size, const int num_layers, const int bias, const int batch_first, const int bidirectional, const float dropout, const int is_trainable, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_datatype_conversion(const int datatype, const int ref_to_last, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_clamp(const float min, const float max, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_parameter(const ccv_nnc_tensor_param_t params, const float init_bound, const int is_trainable, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_scalar(const int type, const int format, const int datatype, const float value, const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_variable(const ccv_nnc_tensor_param_t params, const char* const name);
/* Copy the first input into the second and return the second. */
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_move(const char* const name);
/* A contiguous copy of a strided input (the input itself when it is contiguous). */
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_contiguous(const char* const name);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_scaled_dot_product_attention(const float scale, const int is_causal, const int has_attn_mask, const int flags, const int fused_unify_head_weights, const int no_bias, const int is_trainable, const char* const name);
/* A pass-through that calls `func` on its inputs during execution. */
typedef void (*ccv_cnnp_model_debug_f)(ccv_nnc_tensor_t* const* const inputs, const int input_size, ccv_nnc_stream_context_t* const stream_context, void* const context);
typedef void (*ccv_cnnp_model_debug_context_deinit_f)(void* const context);
typedef void* (*ccv_cnnp_model_debug_context_copy_f)(void* const context);
CCV_WARN_UNUSED(ccv_cnnp_model_t*) ccv_cnnp_debug(ccv_cnnp_model_debug_f func, void* const context, ccv_cnnp_model_debug_context_deinit_f deinit, ccv_cnnp_model_debug_context_copy_f copy, const char* const name);

/* ---------------------------------------------------------------------------
 * Beyond one process: communicators and data parallelism (NNC addition).
 *
 * A communicator is a group of processes started together (by mpirun) that
 * take part in collectives: every process calls the same collectives in the
 * same order. NNC wraps MPI for CPU processes; it has no network layer of its
 * own. A model trains data-parallel with one more call:
 *
 *   ccv_nnc_comm_t* comm = ccv_nnc_comm_new_mpi(NULL);  // MPI_COMM_WORLD
 *   ccv_cnnp_model_compile(model, ...);
 *   ccv_cnnp_model_set_comm(model, comm, 0);           // the one call
 *   ... ccv_cnnp_model_fit(...) as on one process, each on its shard ...
 *   ccv_cnnp_model_free(model);
 *   ccv_nnc_comm_free(comm);
 *
 * Every gradient is then averaged over the processes before the minimiser,
 * in buckets that start while the backward pass still runs, so N processes
 * with batch B train as one process with batch N x B (up to the order of the
 * sums). A collective that some process does not join within the timeout
 * fails on every process that waits for it, with a message, and the
 * communicator refuses every later collective: no hang.
 *
 * Built with NNC_MPI (AUTO finds Open MPI); otherwise ccv_nnc_comm_new_mpi
 * returns NULL with a message. A communicator must outlive the commands,
 * graphs and models that use it.
 */
typedef struct ccv_nnc_comm_s ccv_nnc_comm_t;
/** 1 if this build has MPI, 0 if not. */
int ccv_nnc_comm_mpi_available(void);
/**
 * A communicator over MPI. `mpi_comm` points to an MPI_Comm to duplicate, or
 * is NULL for MPI_COMM_WORLD. Initialises MPI (thread level
 * MPI_THREAD_MULTIPLE) when the program has not; the last communicator freed
 * then finalises it. With a program that initialised MPI below
 * MPI_THREAD_SERIALIZED, collectives run on the calling thread (no overlap).
 * The timeout starts at NNC_COMM_TIMEOUT seconds from the environment, or 60.
 * @return The communicator, or NULL (ccv_nnc_error_message says why).
 */
CCV_WARN_UNUSED(ccv_nnc_comm_t*) ccv_nnc_comm_new_mpi(const void* const mpi_comm);
/** This process's rank in the communicator (0 .. size - 1); -1 for NULL. */
int ccv_nnc_comm_rank(const ccv_nnc_comm_t* const comm);
/** The number of processes in the communicator; -1 for NULL. */
int ccv_nnc_comm_size(const ccv_nnc_comm_t* const comm);
/** Seconds a collective waits for every process before it fails (> 0). */
void ccv_nnc_comm_set_timeout(ccv_nnc_comm_t* const comm, const double seconds);
/**
 * Wait until every process reaches this call (or the timeout passes).
 * @return CCV_NNC_EXEC_SUCCESS, or CCV_NNC_EXEC_INVALID with a message.
 */
int ccv_nnc_comm_barrier(ccv_nnc_comm_t* const comm);
/** 1 once a collective failed (the communicator refuses all later ones). */
int ccv_nnc_comm_is_broken(const ccv_nnc_comm_t* const comm);
/**
 * Free the communicator. The last one finalises MPI if NNC initialised it,
 * unless a collective failed (finalising would wait for the lost process).
 */
void ccv_nnc_comm_free(ccv_nnc_comm_t* const comm);
/**
 * `cmd` (COMM_ALLREDUCE, COMM_BROADCAST or COMM_REDUCE, forward or backward)
 * made to run across the communicator's processes instead of across the
 * tensors of one call. Each process passes one copy of each tensor: input i
 * and output i are a pair (same shape and datatype; pairs may differ), and all
 * pairs travel in one message. Every process must pass the same pairs.
 *   ALLREDUCE   output i = the sum over processes of input i (its backward:
 *               the same of the gradients).
 *   BROADCAST   output i = rank 0's input i (its backward: the sum of the
 *               gradients on rank 0, zeros elsewhere).
 *   REDUCE      rank 0's output i = the sum over processes of input i; other
 *               ranks' outputs are not written (its backward: rank 0's
 *               gradient on every rank).
 * 16F and 16BF are summed in float and rounded per addition; 32S as MPI sums
 * int. Outputs may be their inputs (in place). NULL `comm` gives `cmd` back.
 */
ccv_nnc_cmd_t ccv_nnc_cmd_set_comm(const ccv_nnc_cmd_t cmd, ccv_nnc_comm_t* const comm);
/**
 * libnnc's data parallelism across the devices of one process (GPU copies of
 * the graph). On the CPU a graph runs on one device, so `parallel` 0 or 1
 * leaves the graph as it was; more is refused with a message (it needs the
 * CUDA backends). Across processes, see ccv_nnc_symbolic_graph_data_parallel_comm.
 */
void ccv_nnc_symbolic_graph_data_parallel(ccv_nnc_symbolic_graph_t* const graph, const int parallel, const ccv_nnc_tensor_symbol_t* const broadcasts, const int broadcast_size, const ccv_nnc_tensor_symbol_t* const allreducers, const int allreducer_size, ccv_nnc_tensor_symbol_t* const allreducer_outs, const ccv_nnc_tensor_symbol_t* const reducers, const int reducer_size, ccv_nnc_tensor_symbol_t* const reducer_outs, const int reduce_op_type, const ccv_nnc_graph_exec_symbol_t* const sources, const int source_size, const ccv_nnc_graph_exec_symbol_t* const destinations, const int destination_size);
enum {
	CCV_NNC_PARALLEL_REDUCE_OP_SUM, /* the one reduction of the COMM_ commands */
};
/**
 * Insert into `graph` the averaging of `gradients` over the communicator's
 * processes: each gradient gets a new symbol, its average, which the graph's
 * execs that read the gradient read instead (returned in `averaged`, which
 * may be NULL). Gradients travel in buckets of about `bucket_bytes` (0: 4
 * MiB) in the order the graph computes them; a bucket starts as soon as its
 * gradients exist and its average is waited for only where it is first read,
 * so communication overlaps the rest of the backward pass. One process
 * (size 1) leaves the graph as it was and returns the gradients themselves.
 */
void ccv_nnc_symbolic_graph_data_parallel_comm(ccv_nnc_symbolic_graph_t* const graph, ccv_nnc_comm_t* const comm, const ccv_nnc_tensor_symbol_t* const gradients, const int gradient_size, ccv_nnc_tensor_symbol_t* const averaged, const size_t bucket_bytes);
/**
 * Train `model` data-parallel over `comm` (NULL: back to one process). Before
 * or after compile. Every process must build the same model: the parameter
 * count and shapes are checked across processes (a mismatch fails on every
 * process), then rank 0's parameters are copied to all. fit averages the
 * gradients in buckets of `bucket_bytes` (0: 4 MiB) overlapped with the
 * backward pass; apply_gradients averages the accumulated gradients first.
 */
void ccv_cnnp_model_set_comm(ccv_cnnp_model_t* const model, ccv_nnc_comm_t* const comm, const size_t bucket_bytes);
/**
 * The averaging's cost in `model`'s fit graphs since they were made: seconds
 * the allreduces took, and seconds of that the training waited for them (the
 * rest ran beside the backward pass). Either pointer may be NULL.
 */
void ccv_cnnp_model_comm_time(ccv_cnnp_model_t* const model, double* const allreduce_seconds, double* const waited_seconds);
/**
 * The rows of `dataframe` one process of `size` takes: positions rank,
 * rank + size, rank + 2 x size, ... of its current order (shuffled or not),
 * row_count / size of them, so every process gets the same number of rows and
 * no row twice (a shuffle of the whole set before sharding draws the same
 * order on every process). The shard shares the dataframe's columns, which
 * must outlive it; ccv_cnnp_dataframe_shuffle on the shard permutes within it.
 * Do not iterate the dataframe and its shard at the same time.
 */
CCV_WARN_UNUSED(ccv_cnnp_dataframe_t*) ccv_cnnp_dataframe_shard_new(ccv_cnnp_dataframe_t* const dataframe, const int rank, const int size);

/* ---------------------------------------------------------------------------
 * Bindings support (NNC addition).
 *
 * Real exported functions for what other languages cannot reach through the
 * C macros and inline helpers (Swift, Go through cgo, C# through P/Invoke),
 * a run-time ABI check, and live-object counts for leak tests. Nothing here
 * changes an existing call. bindings/C_API.md lists the same names.
 *
 *   ccv_nnc_tensor_param_t p = ccv_nnc_tensor_param_make(CCV_TENSOR_CPU_MEMORY | CCV_COMPUTE_DEVICE_ANY, CCV_TENSOR_FORMAT_NHWC, CCV_32F, 2, (int[]){4, 3});
 *   ccv_nnc_tensor_t* a = ccv_nnc_tensor_new(0, p, 0);
 *   ccv_nnc_cmd_t relu = ccv_nnc_cmd_relu_forward();  // == CMD_RELU_FORWARD()
 *   if (ccv_nnc_cmd_exec_p(&relu, NULL, 0, &a, 1, &a, 1, NULL) != CCV_NNC_EXEC_SUCCESS)
 *     fprintf(stderr, "%s\n", ccv_nnc_error_message());
 *   ccv_nnc_tensor_free(a);
 *
 * Failures set ccv_nnc_error_message() as everywhere else; out-parameters
 * stay untouched on failure; nothing takes ownership of what it is given.
 * ------------------------------------------------------------------------- */

/** The ABI these declarations describe; bumped when a public struct's layout changes. */
#define CCV_NNC_ABI_VERSION 1
/** @return CCV_NNC_ABI_VERSION as the library was built (compare it with the header's). */
int ccv_nnc_abi_version(void);

/** Struct identifiers for ccv_nnc_type_size. */
enum {
	CCV_NNC_TYPE_TENSOR_PARAM = 1,      /* ccv_nnc_tensor_param_t */
	CCV_NNC_TYPE_CMD_PARAM = 2,         /* ccv_nnc_cmd_param_t */
	CCV_NNC_TYPE_CMD = 3,               /* ccv_nnc_cmd_t */
	CCV_NNC_TYPE_HINT = 4,              /* ccv_nnc_hint_t */
	CCV_NNC_TYPE_TENSOR = 5,            /* ccv_nnc_tensor_t */
	CCV_NNC_TYPE_TENSOR_VIEW = 6,       /* ccv_nnc_tensor_view_t */
	CCV_NNC_TYPE_TENSOR_SYMBOL = 7,     /* ccv_nnc_tensor_symbol_t */
	CCV_NNC_TYPE_GRAPH_EXEC_SYMBOL = 8, /* ccv_nnc_graph_exec_symbol_t */
	CCV_NNC_TYPE_GRAPH_EXEC = 9,        /* ccv_nnc_graph_exec_t */
	CCV_NNC_TYPE_TENSOR_SYMBOL_MAP = 10, /* ccv_nnc_tensor_symbol_map_t */
	CCV_NNC_TYPE_TENSOR_BIND = 11,      /* ccv_nnc_tensor_bind_t */
	CCV_NNC_TYPE_EVALUATE_PARAM = 12,   /* ccv_cnnp_evaluate_param_t */
	CCV_NNC_TYPE_TENSOR_IO_OPTION = 13, /* ccv_nnc_tensor_io_option_t */
	CCV_NNC_TYPE_COLUMN_DATA = 14,      /* ccv_cnnp_column_data_t */
};
/**
 * The size of a public struct as the library was built, for a binding that
 * lays the struct out itself or passes it by value.
 * @param type A CCV_NNC_TYPE_* identifier.
 * @return sizeof the struct, or 0 (message set) for an unknown identifier.
 */
size_t ccv_nnc_type_size(const int type);

/** Object kinds for ccv_nnc_live_object_count. */
enum {
	CCV_NNC_LIVE_TENSOR = 0,            /* tensors (tensor_new, _from_file, resize, dense matrices) and heap views (tensor_view_new) */
	CCV_NNC_LIVE_STREAM_CONTEXT = 1,
	CCV_NNC_LIVE_STREAM_SIGNAL = 2,
	CCV_NNC_LIVE_GRAPH = 3,             /* concrete graphs, while / case..of sub-graphs included */
	CCV_NNC_LIVE_SYMBOLIC_GRAPH = 4,    /* symbolic graphs, sub-graphs and dups included */
	CCV_NNC_LIVE_TENSOR_ARENA = 5,
	CCV_NNC_LIVE_GRAPH_EXEC_ARENA = 6,
	CCV_NNC_LIVE_DYNAMIC_GRAPH = 7,
	CCV_NNC_LIVE_TENSOR_VARIABLE = 8,   /* variables, constants and aliases not yet freed */
	CCV_NNC_LIVE_MODEL = 9,             /* models: every layer, sequential, functional model and copy */
	CCV_NNC_LIVE_DATAFRAME = 10,
	CCV_NNC_LIVE_DATAFRAME_ITER = 11,
	CCV_NNC_LIVE_TENSOR_TAPE = 12,
	CCV_NNC_LIVE_KIND_COUNT = 13,
};
/**
 * How many objects of a kind are alive now, in the whole process. The count
 * includes objects the library makes for itself (a dynamic graph's tensors, a
 * model's graphs, sub-graphs), so a leak test compares against a count taken
 * before its work. Dense matrices made or freed by a linked libccv (whose
 * definitions replace NNC's) are not seen.
 * @param kind A CCV_NNC_LIVE_* kind, or < 0 for the sum over all kinds.
 * @return The count, or -1 (message set) for kind >= CCV_NNC_LIVE_KIND_COUNT.
 */
int64_t ccv_nnc_live_object_count(const int kind);

/**
 * Tensor parameters as a function (the CPU_TENSOR_NHWC family of macros):
 * CPU_TENSOR_NHWC(32F, 2, 3) equals
 * ccv_nnc_tensor_param_make(CCV_TENSOR_CPU_MEMORY | CCV_COMPUTE_DEVICE_ANY, CCV_TENSOR_FORMAT_NHWC, CCV_32F, 2, (int[]){2, 3}).
 * @param type Memory kind and device (CCV_TENSOR_CPU_MEMORY, ...), stored as given.
 * @param format CCV_TENSOR_FORMAT_NHWC / _NCHW / _CHWN, stored as given.
 * @param datatype CCV_32F, ..., stored as given (validated where the params are used).
 * @param rank 0..CCV_NNC_MAX_DIM_ALLOC.
 * @param dims rank dimensions, each > 0 (may be NULL when rank is 0); not kept.
 * @return The params, other fields zero; all-zero params (message set) on a bad rank or dimension.
 */
CCV_WARN_UNUSED(ccv_nnc_tensor_param_t) ccv_nnc_tensor_param_make(const int type, const int format, const int datatype, const int rank, const int* const dims);
/** @return The number of dimensions of *params, or -1 (message set) when params is NULL. */
int ccv_nnc_tensor_param_rank(const ccv_nnc_tensor_param_t* const params);
/** @return The number of elements *params describes (ccv_nnc_tensor_count), 0 when params is NULL. */
size_t ccv_nnc_tensor_param_count(const ccv_nnc_tensor_param_t* const params);
/** @return The bytes of data *params describes (ccv_nnc_tensor_data_size), 0 when params is NULL. */
size_t ccv_nnc_tensor_param_data_size(const ccv_nnc_tensor_param_t* const params);
/**
 * A tensor's params (for a view, the view's shape).
 * @param tensor A tensor or tensor view (borrowed).
 * @param params_out Receives the params.
 * @return 0, or -1 (message set, params_out untouched) when either is NULL.
 */
int ccv_nnc_tensor_get_params(const ccv_nnc_tensor_t* const tensor, ccv_nnc_tensor_param_t* const params_out);
/** @return The address of a tensor's (or view's) first element, owned by the tensor; NULL (message set) when tensor is NULL. */
void* ccv_nnc_tensor_data_ptr(const ccv_nnc_tensor_t* const tensor);
/** @return 1 for a tensor view, 0 for a plain tensor, -1 (message set) for NULL. */
int ccv_nnc_tensor_is_view(const ccv_nnc_tensor_t* const tensor);
/**
 * A tensor's element strides per dimension (packed strides for a plain tensor).
 * @param stride Receives one stride per dimension; the rest are zeroed.
 * @return 0, or -1 (message set, stride untouched) when either is NULL.
 */
int ccv_nnc_tensor_get_strides(const ccv_nnc_tensor_t* const tensor, int stride[CCV_NNC_MAX_DIM_ALLOC]);
/**
 * Copy a packed host array into a tensor in CPU memory (plain, or a view
 * with any strides), in row-major order of the tensor's dimensions,
 * converting between datatypes (to an integer type: rounded to nearest, clamped).
 * @param tensor The destination (borrowed).
 * @param values count elements of `datatype` (borrowed, read only).
 * @param datatype CCV_32F, CCV_64F, CCV_16F, CCV_16BF, CCV_32S, CCV_64S or CCV_8U.
 * @param count Must equal the tensor's element count.
 * @return 0, or -1 (message set, tensor untouched) on bad input.
 */
int ccv_nnc_tensor_copy_from(ccv_nnc_tensor_t* const tensor, const void* const values, const int datatype, const size_t count);
/** The reverse of ccv_nnc_tensor_copy_from: the tensor's elements into values (count of `datatype`). @return 0 or -1 (message set). */
int ccv_nnc_tensor_copy_to(const ccv_nnc_tensor_t* const tensor, void* const values, const int datatype, const size_t count);

/**
 * A hint as a function (the HINT() macro): stride and border per spatial
 * dimension, the rest zero.
 * @param rank 0..CCV_NNC_MAX_DIM_ALLOC entries read from each array.
 * @param stride, border_begin, border_end rank values each, or NULL for zeros (not kept).
 * @return The hint; ccv_nnc_no_hint (message set) on a bad rank.
 */
CCV_WARN_UNUSED(ccv_nnc_hint_t) ccv_nnc_hint_make(const int rank, const int* const stride, const int* const border_begin, const int* const border_end);
/** ccv_nnc_hint_auto(cmd->info, *a, *b) through pointers. @return The hint, or ccv_nnc_no_hint (message set) when a pointer is NULL. */
CCV_WARN_UNUSED(ccv_nnc_hint_t) ccv_nnc_hint_auto_p(const ccv_nnc_cmd_t* const cmd, const ccv_nnc_tensor_param_t* const a, const ccv_nnc_tensor_param_t* const b);

/*
 * Typed command constructors: each returns exactly (byte for byte) what the
 * CMD_*_FORWARD() macro of the same name gives. Array arguments are read,
 * not kept. On bad arguments (a count outside 0..CCV_NNC_MAX_DIM_ALLOC, a
 * NULL array with a count > 0) the result is an all-zero command (cmd 0,
 * which no backend runs) and the message is set.
 */
/** CMD_GEMM_FORWARD(transpose_a, transpose_b): each NULL (NO_TRANSPOSE) or two axes to swap. */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_gemm_forward(const int* const transpose_a, const int* const transpose_b);
/** CMD_CONVOLUTION_FORWARD(groups, count, kernel_dims...): kernel_rank (1..CCV_NNC_MAX_DIM_ALLOC) sizes, e.g. {kh, kw, channels}. */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_convolution_forward(const int groups, const int count, const int kernel_rank, const int* const kernel_dims);
/** CMD_MAX_POOL_FORWARD(rows, cols). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_max_pool_forward(const int rows, const int cols);
/** CMD_AVERAGE_POOL_FORWARD(rows, cols). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_average_pool_forward(const int rows, const int cols);
/** CMD_RELU_FORWARD(). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_relu_forward(void);
/** CMD_SIGMOID_FORWARD(). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_sigmoid_forward(void);
/** CMD_TANH_FORWARD(). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_tanh_forward(void);
/** CMD_GELU_FORWARD(tanh_approximation). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_gelu_forward(const int tanh_approximation);
/** CMD_SWISH_FORWARD(). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_swish_forward(void);
/** CMD_LEAKY_RELU_FORWARD(negative_slope). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_leaky_relu_forward(const float negative_slope);
/** CMD_SOFTMAX_FORWARD(). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_softmax_forward(void);
/** CMD_SOFTMAX_CROSSENTROPY_FORWARD(trim0, trim1); CMD_SOFTMAX_CROSSENTROPY_FORWARD() is (0, 1). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_softmax_crossentropy_forward(const float trim0, const float trim1);
/** CMD_MSE_FORWARD(reduce_op): CCV_NNC_MSE_REDUCE_MEAN or _SUM. */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_mse_forward(const int reduce_op);
/** CMD_EWSUM_FORWARD(). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_ewsum_forward(void);
/** CMD_EWPROD_FORWARD(). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_ewprod_forward(void);
/** CMD_EWDIV_FORWARD(). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_ewdiv_forward(void);
/** CMD_EWEXP_FORWARD(). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_ewexp_forward(void);
/** CMD_EWLOG_FORWARD(). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_ewlog_forward(void);
/** CMD_EWSQRT_FORWARD(). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_ewsqrt_forward(void);
/** CMD_ADD_FORWARD(p, q): p * a + q * b. */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_add_forward(const float p, const float q);
/** CMD_MUL_FORWARD(p): p * a * b. */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_mul_forward(const float p);
/** CMD_SCALAR_MUL_FORWARD(a). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_scalar_mul_forward(const float a);
/** CMD_BATCH_NORM_FORWARD(epsilon, is_test, momentum, axis...): axis_count (0..CCV_NNC_MAX_DIM_ALLOC) axes. */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_batch_norm_forward(const float epsilon, const int is_test, const float momentum, const int axis_count, const int* const axis);
/** CMD_LAYER_NORM_FORWARD(epsilon, elementwise_affine, axis...). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_layer_norm_forward(const float epsilon, const int elementwise_affine, const int axis_count, const int* const axis);
/** CMD_SGD_FORWARD(nesterov, rate, scale, decay, momentum, dampening). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_sgd_forward(const int nesterov, const float rate, const float scale, const float decay, const float momentum, const float dampening);
/** CMD_ADAM_FORWARD(step, rate, beta1, beta2, decay, epsilon, amsgrad). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_adam_forward(const int step, const float rate, const float beta1, const float beta2, const float decay, const float epsilon, const int amsgrad);
/** CMD_ADAMW_FORWARD(step, rate, beta1, beta2, decay, epsilon, amsgrad). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_adamw_forward(const int step, const float rate, const float beta1, const float beta2, const float decay, const float epsilon, const int amsgrad);
/** CMD_SET_FORWARD(value). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_set_forward(const float value);
/** CMD_DATA_TRANSFER_FORWARD(). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_data_transfer_forward(void);
/** CMD_TRANSPOSE_FORWARD(axis_a, axis_b). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_transpose_forward(const int axis_a, const int axis_b);
/** CMD_REDUCE_SUM_FORWARD(axis...): axis_count (0..CCV_NNC_MAX_DIM_ALLOC) axes. */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_reduce_sum_forward(const int axis_count, const int* const axis);
/** CMD_REDUCE_MEAN_FORWARD(axis...). */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_reduce_mean_forward(const int axis_count, const int* const axis);
/** Any other command: ccv_nnc_cmd(cmd_id, 0, *params, 0); params NULL means ccv_nnc_cmd_auto. */
CCV_WARN_UNUSED(ccv_nnc_cmd_t) ccv_nnc_cmd_make(const uint32_t cmd_id, const ccv_nnc_cmd_param_t* const params);

/*
 * Pointer-taking variants: each is exactly the call it names, with the large
 * structs passed by pointer (read, not kept). A NULL hint means
 * ccv_nnc_no_hint; a NULL command gives CCV_NNC_EXEC_INVALID (or -1) with a
 * message.
 */
/** ccv_nnc_cmd_exec(*cmd, hint ? *hint : ccv_nnc_no_hint, ...). @return As ccv_nnc_cmd_exec. */
int ccv_nnc_cmd_exec_p(const ccv_nnc_cmd_t* const cmd, const ccv_nnc_hint_t* const hint, const int flags, ccv_nnc_tensor_t* const* const inputs, const int input_size, ccv_nnc_tensor_t* const* const outputs, const int output_size, ccv_nnc_stream_context_t* const stream_context);
/** ccv_nnc_dynamic_graph_exec with cmd and hint by pointer. @return As ccv_nnc_dynamic_graph_exec. */
int ccv_nnc_dynamic_graph_exec_p(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_cmd_t* const cmd, const ccv_nnc_hint_t* const hint, const int flags, const ccv_nnc_tensor_variable_t* const inputs, const int input_size, ccv_nnc_tensor_variable_t* const outputs, const int output_size, const int parallel, ccv_nnc_stream_context_t* const stream_context);
/** ccv_nnc_dynamic_graph_minimize with the minimizer by pointer. @return 0, or -1 when it failed (message set). */
int ccv_nnc_dynamic_graph_minimize_p(ccv_nnc_dynamic_graph_t* const graph, const ccv_nnc_cmd_t* const minimizer, const ccv_nnc_tensor_variable_t* const losses, const int loss_size, const ccv_nnc_tensor_variable_t* const dloss_optionals, ccv_nnc_tensor_variable_t* const parameters, const int parameter_size, ccv_nnc_tensor_variable_t* const saved_aux, const int parallel, ccv_nnc_stream_context_t* const stream_context);
/** ccv_cnnp_model_compile with minimizer and loss by pointer. @return 0, or -1 when it failed (message set). */
int ccv_cnnp_model_compile_p(ccv_cnnp_model_t* const model, const ccv_nnc_tensor_param_t* const inputs, const int input_size, const ccv_nnc_cmd_t* const minimizer, const ccv_nnc_cmd_t* const loss);

#ifdef __cplusplus
}
#endif

#endif
