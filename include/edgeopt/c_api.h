/* edgeopt C API: load a .tflite model and run it from C (or any language with a C FFI).
 *
 * Modelled on LiteRT's C API (TfLiteModel / TfLiteInterpreter / TfLiteTensor):
 *
 *   EoModel* model = EoModelCreateFromFile("model.tflite");
 *   if (!model) { fprintf(stderr, "%s\n", EoGetLastErrorMessage(NULL)); return 1; }
 *   EoInterpreterOptions* options = EoInterpreterOptionsCreate();
 *   EoInterpreterOptionsSetNumThreads(options, 4);
 *   EoInterpreter* interpreter = EoInterpreterCreate(model, options);
 *   EoInterpreterOptionsDelete(options);   (the interpreter keeps what it needs)
 *   EoTensor* input = EoInterpreterGetInputTensor(interpreter, 0);
 *   EoTensorCopyFromBuffer(input, pixels, pixels_size);
 *   if (EoInterpreterInvoke(interpreter) != kEoOk)
 *     fprintf(stderr, "%s\n", EoGetLastErrorMessage(interpreter));
 *   const EoTensor* output = EoInterpreterGetOutputTensor(interpreter, 0);
 *   EoTensorCopyToBuffer(output, scores, scores_size);
 *   EoInterpreterDelete(interpreter);
 *   EoModelDelete(model);              (a model may be deleted before its interpreters)
 *
 * Errors: functions return an EoStatus, or NULL / -1 / 0 where they return a value. The message
 * of the most recent failure is available from EoGetLastErrorMessage: per interpreter (for calls
 * on it or its tensors) and per thread (for every call, pass NULL). Successful calls leave the
 * messages unchanged. No function throws, aborts or crashes on NULL pointers, bad indices or
 * wrong sizes; out of memory is reported as kEoOutOfMemory.
 *
 * Threads: an EoModel may be shared by interpreters on several threads; one EoInterpreter is
 * used by one thread at a time, except EoInterpreterCancel, callable from any thread.
 */
#ifndef EDGEOPT_C_API_H_
#define EDGEOPT_C_API_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define EO_CAPI_EXPORT __declspec(dllexport)
#else
#define EO_CAPI_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum EoStatus {
  kEoOk = 0,
  kEoInvalidArgument = 1, /* NULL pointer, bad index, wrong size or shape */
  kEoNotFound = 2,        /* missing file, tensor name, signature */
  kEoInvalidModel = 3,    /* corrupt, truncated or inconsistent .tflite */
  kEoUnsupported = 4,     /* op / dtype / feature edgeopt does not implement */
  kEoIoError = 5,
  kEoCancelled = 6,       /* EoInterpreterCancel stopped an invoke */
  kEoInternal = 7,        /* a bug in edgeopt */
  kEoOutOfMemory = 8,
} EoStatus;

/* Element types; the values are those of the .tflite TensorType enum. */
typedef enum EoType {
  kEoNoType = -1, /* returned for a NULL tensor */
  kEoFloat32 = 0,
  kEoFloat16 = 1,
  kEoInt32 = 2,
  kEoUInt8 = 3,
  kEoInt64 = 4,
  kEoString = 5,
  kEoBool = 6,
  kEoInt16 = 7,
  kEoComplex64 = 8,
  kEoInt8 = 9,
  kEoFloat64 = 10,
  kEoComplex128 = 11,
  kEoUInt64 = 12,
  kEoResource = 13,
  kEoVariant = 14,
  kEoUInt32 = 15,
  kEoUInt16 = 16,
  kEoInt4 = 17,
  kEoBFloat16 = 18,
} EoType;

typedef struct EoModel EoModel;
typedef struct EoInterpreterOptions EoInterpreterOptions;
typedef struct EoInterpreter EoInterpreter;
typedef struct EoTensor EoTensor;
typedef struct EoOpContext EoOpContext;

/* Per-tensor quantization: real = scale * (q - zero_point). 0/0 when not quantized. */
typedef struct EoQuantizationParams {
  float scale;
  int32_t zero_point;
} EoQuantizationParams;

/* ---- Library ------------------------------------------------------------------------------ */

EO_CAPI_EXPORT const char* EoVersion(void);
/* "ok", "invalid argument", ... */
EO_CAPI_EXPORT const char* EoStatusName(EoStatus status);
/* "float32", "int8", ...; "invalid" for values outside EoType. */
EO_CAPI_EXPORT const char* EoTypeName(EoType type);
/* Message of the last failed call on `interpreter` (or its tensors), or with NULL of the last
 * failed call on this thread; "" if none. Valid until the next failing call on the same
 * interpreter / thread. */
EO_CAPI_EXPORT const char* EoGetLastErrorMessage(const EoInterpreter* interpreter);
EO_CAPI_EXPORT EoStatus EoGetLastErrorStatus(const EoInterpreter* interpreter);

/* ---- Model -------------------------------------------------------------------------------- */

/* Copies `size` bytes of a .tflite flatbuffer. NULL on error. */
EO_CAPI_EXPORT EoModel* EoModelCreate(const void* model_data, size_t model_size);
/* Maps and verifies a file. NULL on error (e.g. kEoNotFound). */
EO_CAPI_EXPORT EoModel* EoModelCreateFromFile(const char* model_path);
EO_CAPI_EXPORT void EoModelDelete(EoModel* model);

/* ---- Interpreter options ------------------------------------------------------------------ */

EO_CAPI_EXPORT EoInterpreterOptions* EoInterpreterOptionsCreate(void);
EO_CAPI_EXPORT void EoInterpreterOptionsDelete(EoInterpreterOptions* options);
/* <= 0: one thread per hardware thread. Default 1. */
EO_CAPI_EXPORT EoStatus EoInterpreterOptionsSetNumThreads(EoInterpreterOptions* options, int32_t num_threads);
/* Nonzero: use the portable reference kernels only. */
EO_CAPI_EXPORT EoStatus EoInterpreterOptionsSetReferenceKernelsOnly(EoInterpreterOptions* options, int enabled);

/* A custom op: an application kernel for CUSTOM operators whose custom code is `name`.
 *   init     (optional) once per op when the interpreter is created; returns the op's state,
 *            passed to the other callbacks (NULL is fine).
 *   free     (optional) releases that state when the interpreter is deleted.
 *   prepare  (optional) when input shapes change: check inputs, set output shapes with
 *            EoOpContextSetOutputShape. Without it outputs keep the model's shapes.
 *   invoke   (required) every inference: compute the outputs.
 * A callback returning anything but kEoOk fails the call; EoOpContextSetError adds a message. */
typedef struct EoCustomOp {
  const char* name;
  void* user_data;
  void* (*init)(void* user_data, const void* custom_options, size_t custom_options_size);
  void (*free)(void* user_data, void* op_state);
  EoStatus (*prepare)(void* user_data, void* op_state, EoOpContext* context);
  EoStatus (*invoke)(void* user_data, void* op_state, EoOpContext* context);
} EoCustomOp;

/* Copies *op (and its name). user_data must outlive interpreters created with these options. */
EO_CAPI_EXPORT EoStatus EoInterpreterOptionsAddCustomOp(EoInterpreterOptions* options, const EoCustomOp* op);

EO_CAPI_EXPORT int32_t EoOpContextGetInputCount(const EoOpContext* context);
EO_CAPI_EXPORT int32_t EoOpContextGetOutputCount(const EoOpContext* context);
/* NULL for an omitted optional input or a bad index. Valid during the callback only. */
EO_CAPI_EXPORT const EoTensor* EoOpContextGetInput(const EoOpContext* context, int32_t index);
EO_CAPI_EXPORT EoTensor* EoOpContextGetOutput(EoOpContext* context, int32_t index);
EO_CAPI_EXPORT EoStatus EoOpContextSetOutputShape(EoOpContext* context, int32_t index, const int32_t* dims,
                                                  int32_t num_dims);
/* The message reported when the callback returns an error. */
EO_CAPI_EXPORT void EoOpContextSetError(EoOpContext* context, const char* message);

/* ---- Interpreter -------------------------------------------------------------------------- */

/* `options` may be NULL (defaults) and may be deleted afterwards. NULL on error. */
EO_CAPI_EXPORT EoInterpreter* EoInterpreterCreate(const EoModel* model, const EoInterpreterOptions* options);
EO_CAPI_EXPORT void EoInterpreterDelete(EoInterpreter* interpreter);

/* -1 for a NULL interpreter. */
EO_CAPI_EXPORT int32_t EoInterpreterGetInputTensorCount(const EoInterpreter* interpreter);
EO_CAPI_EXPORT int32_t EoInterpreterGetOutputTensorCount(const EoInterpreter* interpreter);
/* Tensors stay valid while the interpreter lives (their shape/data follow resizes). NULL for a
 * bad index or name. Names are signature names of the main subgraph, else tensor names. */
EO_CAPI_EXPORT EoTensor* EoInterpreterGetInputTensor(const EoInterpreter* interpreter, int32_t input_index);
EO_CAPI_EXPORT const EoTensor* EoInterpreterGetOutputTensor(const EoInterpreter* interpreter, int32_t output_index);
EO_CAPI_EXPORT EoTensor* EoInterpreterGetInputTensorByName(const EoInterpreter* interpreter, const char* name);
EO_CAPI_EXPORT const EoTensor* EoInterpreterGetOutputTensorByName(const EoInterpreter* interpreter, const char* name);

/* Only dimensions the model marks resizable may change; takes effect at the next
 * EoInterpreterAllocateTensors (or Invoke). */
EO_CAPI_EXPORT EoStatus EoInterpreterResizeInputTensor(EoInterpreter* interpreter, int32_t input_index,
                                                       const int32_t* dims, int32_t num_dims);
EO_CAPI_EXPORT EoStatus EoInterpreterAllocateTensors(EoInterpreter* interpreter);
EO_CAPI_EXPORT EoStatus EoInterpreterInvoke(EoInterpreter* interpreter);
/* Stops a running invoke (on another thread) at the next op boundary: it returns kEoCancelled. */
EO_CAPI_EXPORT EoStatus EoInterpreterCancel(EoInterpreter* interpreter);
/* Zero-copy I/O: read input / write output directly in the caller's buffer (at least the tensor's
 * byte size) until unbound with data == NULL. */
EO_CAPI_EXPORT EoStatus EoInterpreterBindInput(EoInterpreter* interpreter, int32_t input_index, void* data,
                                               size_t size);
EO_CAPI_EXPORT EoStatus EoInterpreterBindOutput(EoInterpreter* interpreter, int32_t output_index, void* data,
                                                size_t size);

/* ---- Tensor ------------------------------------------------------------------------------- */

EO_CAPI_EXPORT EoType EoTensorType(const EoTensor* tensor);
/* -1 for a NULL tensor. */
EO_CAPI_EXPORT int32_t EoTensorNumDims(const EoTensor* tensor);
/* -1 for a NULL tensor or a dim_index outside [0, NumDims). */
EO_CAPI_EXPORT int32_t EoTensorDim(const EoTensor* tensor, int32_t dim_index);
EO_CAPI_EXPORT size_t EoTensorByteSize(const EoTensor* tensor);
/* NULL before the tensor has storage. Never write to a constant tensor's data. */
EO_CAPI_EXPORT void* EoTensorData(const EoTensor* tensor);
/* "" for a NULL tensor. */
EO_CAPI_EXPORT const char* EoTensorName(const EoTensor* tensor);
EO_CAPI_EXPORT EoQuantizationParams EoTensorQuantizationParams(const EoTensor* tensor);
/* Per-channel quantization: count scales (and zero points) along quantized_dimension; count is 0
 * when not quantized. Arrays stay valid while the model lives. Any out pointer may be NULL. */
EO_CAPI_EXPORT EoStatus EoTensorPerChannelQuantization(const EoTensor* tensor, const float** scales,
                                                       const int64_t** zero_points, int32_t* count,
                                                       int32_t* quantized_dimension);
/* Decodes an image file (JPEG, PNG, BMP, GIF, TGA), resizes it to the [1,H,W,C] or [H,W,C] input
 * and converts it to the input's type and quantization. `range` NULL: 8-bit quantized inputs get
 * raw pixels and float inputs [-1, 1]; otherwise pixels 0..255 map linearly onto
 * [range[0], range[1]]. */
EO_CAPI_EXPORT EoStatus EoTensorLoadImage(EoTensor* input, const char* image_path, const float* range);
/* input_data_size / output_data_size must equal EoTensorByteSize. */
EO_CAPI_EXPORT EoStatus EoTensorCopyFromBuffer(EoTensor* tensor, const void* input_data, size_t input_data_size);
EO_CAPI_EXPORT EoStatus EoTensorCopyToBuffer(const EoTensor* tensor, void* output_data, size_t output_data_size);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* EDGEOPT_C_API_H_ */
