/* classify_c MODEL IMAGE LABELS [--threads N]
 *
 * classify (see classify.cc) written against the C API only: runs an image classifier on one
 * image and prints the five best labels. */
#include <edgeopt/c_api.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOP_K 5

static int Fail(const char* what, const EoInterpreter* interpreter) {
  fprintf(stderr, "classify_c: %s: %s\n", what, EoGetLastErrorMessage(interpreter));
  return 1;
}

/* Reads the lines of a file into a NULL-terminated array (NULL if the file cannot be read). */
static char** ReadLines(const char* path, size_t* count) {
  FILE* f = fopen(path, "rb");
  char** lines = NULL;
  size_t n = 0, cap = 0;
  char buf[1024];
  *count = 0;
  if (!f) return NULL;
  while (fgets(buf, sizeof(buf), f)) {
    buf[strcspn(buf, "\r\n")] = '\0';
    if (n + 1 >= cap) {
      char** grown;
      cap = cap ? cap * 2 : 256;
      grown = (char**)realloc(lines, cap * sizeof(char*));
      if (!grown) break;
      lines = grown;
    }
    lines[n] = (char*)malloc(strlen(buf) + 1);
    if (!lines[n]) break;
    strcpy(lines[n++], buf);
  }
  fclose(f);
  if (lines) lines[n] = NULL;
  *count = n;
  return lines;
}

static void FreeLines(char** lines) {
  size_t i;
  for (i = 0; lines && lines[i]; ++i) free(lines[i]);
  free(lines);
}

int main(int argc, char** argv) {
  const char* paths[3];
  int num_paths = 0, threads = 1, i, result = 1;
  EoModel* model = NULL;
  EoInterpreterOptions* options = NULL;
  EoInterpreter* interpreter = NULL;
  const EoTensor* output;
  EoType type;
  int32_t classes, d;
  float* scores = NULL;
  char** labels = NULL;
  size_t num_labels = 0, offset;
  int best[TOP_K];
  int k, j;

  for (i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = atoi(argv[++i]);
    } else if (num_paths < 3) {
      paths[num_paths++] = argv[i];
    } else {
      num_paths = 4;
    }
  }
  if (num_paths != 3) {
    fprintf(stderr, "usage: classify_c MODEL IMAGE LABELS [--threads N]\n");
    return 2;
  }

  model = EoModelCreateFromFile(paths[0]);
  if (!model) return Fail("cannot load model", NULL);
  options = EoInterpreterOptionsCreate();
  if (!options || EoInterpreterOptionsSetNumThreads(options, threads) != kEoOk) {
    Fail("options", NULL);
    goto done;
  }
  interpreter = EoInterpreterCreate(model, options);
  if (!interpreter) {
    Fail("cannot run model", NULL);
    goto done;
  }
  if (EoTensorLoadImage(EoInterpreterGetInputTensor(interpreter, 0), paths[1], NULL) != kEoOk) {
    Fail("cannot read image", interpreter);
    goto done;
  }
  if (EoInterpreterInvoke(interpreter) != kEoOk) {
    Fail("invoke failed", interpreter);
    goto done;
  }

  /* Scores as real numbers: float32 as is, 8-bit outputs dequantized. */
  output = EoInterpreterGetOutputTensor(interpreter, 0);
  type = EoTensorType(output);
  classes = 1;
  for (d = 0; d < EoTensorNumDims(output); ++d) classes *= EoTensorDim(output, d);
  scores = (float*)malloc((size_t)classes * sizeof(float));
  if (!scores) goto done;
  {
    const EoQuantizationParams q = EoTensorQuantizationParams(output);
    const float scale = q.scale != 0 ? q.scale : 1.0f;
    const void* data = EoTensorData(output);
    for (j = 0; j < classes; ++j) {
      if (type == kEoFloat32) {
        scores[j] = ((const float*)data)[j];
      } else if (type == kEoUInt8) {
        scores[j] = scale * (float)(((const uint8_t*)data)[j] - q.zero_point);
      } else if (type == kEoInt8) {
        scores[j] = scale * (float)(((const int8_t*)data)[j] - q.zero_point);
      } else {
        fprintf(stderr, "classify_c: output 0 is %s; expected float32, uint8 or int8 scores\n", EoTypeName(type));
        goto done;
      }
    }
  }

  labels = ReadLines(paths[2], &num_labels);
  if (!labels) fprintf(stderr, "classify_c: cannot read labels '%s'; printing indices\n", paths[2]);
  offset = num_labels == (size_t)classes + 1 ? 1 : 0; /* a "background" label the model does not output */

  /* Top-k by repeated selection (k is small). */
  k = classes < TOP_K ? classes : TOP_K;
  for (i = 0; i < k; ++i) {
    best[i] = -1;
    for (j = 0; j < classes; ++j) {
      int taken = 0, m;
      for (m = 0; m < i; ++m) taken |= best[m] == j;
      if (!taken && (best[i] < 0 || scores[j] > scores[best[i]])) best[i] = j;
    }
  }
  printf("%s\n", paths[1]);
  for (i = 0; i < k; ++i) {
    const size_t c = (size_t)best[i];
    if (c + offset < num_labels)
      printf("%8.4f  %4zu  %s\n", scores[c], c, labels[c + offset]);
    else
      printf("%8.4f  %4zu  #%zu\n", scores[c], c, c);
  }
  result = 0;

done:
  FreeLines(labels);
  free(scores);
  EoInterpreterDelete(interpreter);
  EoInterpreterOptionsDelete(options);
  EoModelDelete(model);
  return result;
}
