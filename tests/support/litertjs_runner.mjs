// Test support: runs a .tflite model once with LiteRT.js (npm @litertjs/core 2.5.3, the WASM CPU
// build) under Node, as a second oracle/rival next to the TFLite 2.9 C library
// (tests/support/tflite_oracle.*). It reads raw input bytes and writes raw output bytes, so the
// C++ side can feed both runtimes identical inputs and compare byte-for-byte or numerically.
//
//   node tests/support/litertjs_runner.mjs MODEL.tflite IN_DIR OUT_DIR
//
// IN_DIR:  inputs.json  [{"dtype":"float32","shape":[1,224,224,3]}, ...]  (or {"inputs":[...]}),
//                       one entry per model input, by position (signature 0's input order);
//                       dtype names as in OracleTypeName: float32 int32 uint8 int64 bool int16
//                       int8 float16 float64 uint32 ...
//          input_<i>.bin raw little-endian bytes of input i (row-major).
// OUT_DIR: output_<i>.bin raw bytes of output i, and outputs.json
//          {"runtime":..., "outputs":[{"index","name","dtype","shape","bytes","file"}]}.
// Exit code 0 on success; 1 on any error, including errors LiteRT only *logs* (e.g. unresolved
// custom ops are logged, not thrown); 2 on bad usage. The message is on stderr.
//
// Environment: EDGEOPT_LITERTJS_DIR overrides where @litertjs/core is looked up (default
// <repo>/.cache/litertjs/node_modules/@litertjs/core, installed by scripts/setup.sh with
// `npm install --prefix .cache/litertjs @litertjs/core@2.5.3 @litertjs/wasm-utils@2.5.3`).
// EDGEOPT_LITERTJS_VERBOSE=1 echoes LiteRT's log lines to stderr.
//
// Why the low-level API: CompiledModel / Tensor only know float32, int32 and uint8 (even
// getInputDetails() throws on an int8 model), so this drives liteRtWasm.loadModel /
// compileModel / LiteRtTensorBuffer directly, with the same calls the package makes itself.
// Node 20 shims: self, navigator.hardwareConcurrency, importScripts (runs the Emscripten loader
// script with require/__dirname so it reads the .wasm from disk), and the relaxed-SIMD flag, so
// the package picks litert_wasm_internal.wasm rather than the slower *_compat build.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import {createRequire} from 'node:module';
import {fileURLToPath, pathToFileURL} from 'node:url';
import v8 from 'node:v8';
import vm from 'node:vm';

// Must happen before any WebAssembly is compiled (also before feature detection).
v8.setFlagsFromString('--experimental-wasm-relaxed-simd');

const DTYPES = {  // name -> LiteRT ElementType (same numbering as TfLiteType)
  float32: 1, int32: 2, uint8: 3, int64: 4, string: 5, bool: 6, int16: 7, complex64: 8,
  int8: 9, float16: 10, float64: 11, complex128: 12, uint64: 13, resource: 14, variant: 15,
  uint32: 16, uint16: 17, int4: 18, bfloat16: 19,
};
const DTYPE_NAMES = Object.fromEntries(Object.entries(DTYPES).map(([k, v]) => [v, k]));

class RunnerError extends Error {}

function fail(message, code = 1) {
  process.stderr.write(`litertjs_runner: error: ${message}\n`);
  process.exit(code);
}

// --- Log capture ------------------------------------------------------------------------------
// LiteRT reports some failures only through console output (Emscripten stderr, or
// console.warn from its logging hook). Everything is recorded; lines that look like errors make
// the run fail.
const logLines = [];
const verbose = process.env.EDGEOPT_LITERTJS_VERBOSE === '1';
const ERROR_PATTERN =
    /\b(error|fail(ed|ure)?|unresolved|unsupported|abort(ed)?|not supported|cannot|invalid)\b|^E\d{4}|^F\d{4}/i;
// Known-harmless lines: the package probes WebGPU (absent in Node) and an NPU accelerator when it
// loads, and logs both failures; the CPU/wasm path does not need either.
const BENIGN_PATTERN = new RegExp([
  String.raw`^(INFO|I\d{4})\b`,
  String.raw`Created TensorFlow Lite XNNPACK delegate`,
  String.raw`^Failed to create default WebGPU device`,
  String.raw`NPU accelerator could not be loaded`,
].join('|'), 'i');
function record(level, args) {
  const text = args.map((a) => (a instanceof Error ? (a.stack || a.message) : String(a))).join(' ');
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    logLines.push({level, line});
    if (verbose) process.stderr.write(`[litert.js ${level}] ${line}\n`);
  }
}
for (const level of ['log', 'info', 'debug', 'warn', 'error']) {
  console[level] = (...args) => record(level, args);
}
function loggedErrors(fromIndex = 0) {
  return logLines.slice(fromIndex)
      .filter(({level, line}) =>
          (level === 'error' || ERROR_PATTERN.test(line)) && !BENIGN_PATTERN.test(line))
      .map(({line}) => line);
}
function throwIfLoggedErrors(stage, fromIndex) {
  const errors = loggedErrors(fromIndex);
  if (errors.length) throw new RunnerError(`${stage}: LiteRT logged: ${errors.join(' | ')}`);
}

// --- Node shims for the browser-oriented loader -----------------------------------------------
globalThis.self = globalThis;
if (typeof globalThis.navigator === 'undefined') {
  globalThis.navigator = {hardwareConcurrency: os.cpus().length};
} else if (!globalThis.navigator.hardwareConcurrency) {
  Object.defineProperty(globalThis.navigator, 'hardwareConcurrency', {value: os.cpus().length});
}
// @litertjs/wasm-utils calls importScripts(url) and then expects self.ModuleFactory. The
// Emscripten script supports Node when require/__dirname/__filename exist, so provide them.
globalThis.importScripts = (...urls) => {
  for (const url of urls) {
    const file = String(url).startsWith('file:') ? fileURLToPath(url) : String(url);
    const source = fs.readFileSync(file, 'utf8');
    const wrapper = vm.runInThisContext(
        `(function (require, __dirname, __filename, module, exports) {${source}\n` +
            `;return typeof ModuleFactory !== 'undefined' ? ModuleFactory : undefined; })`,
        {filename: file});
    const factory = wrapper(createRequire(file), path.dirname(file), file, undefined, undefined);
    if (typeof factory !== 'function') throw new RunnerError(`${file} did not define ModuleFactory`);
    globalThis.ModuleFactory = factory;
  }
};
// Route Emscripten's stdout/stderr into the log capture (used via self.Module by wasm-utils).
globalThis.Module = {
  print: (...a) => record('log', a),
  printErr: (...a) => record('error', a),
};

// --- Helpers ----------------------------------------------------------------------------------
function vectorToArray(vec) {
  const out = [];
  for (let i = 0; i < vec.size(); ++i) out.push(vec.get(i));
  vec.delete();
  return out;
}
function describeType(rankedTensorType) {
  const elementType = rankedTensorType.elementType().value;
  const layout = rankedTensorType.layout();
  const shape = vectorToArray(layout.dimensions());
  layout.delete();
  let bytes = -1;  // bytes() throws (with an empty message) for element type NONE
  try { bytes = rankedTensorType.bytes(); } catch {}
  return {elementType, dtype: DTYPE_NAMES[elementType] ?? `element_type_${elementType}`, shape, bytes};
}
// True when `given` fits the model's declared shape. LiteRT reports the shape *signature*, so a
// dynamic batch shows as -1. LiteRT.js 2.5.3 does not resize: a [3,1] buffer for a [-1,1] input
// silently runs at the model's default size 1 and returns [1,1]. So a -1 only accepts 1 (the
// default size converters write into the tensor's static shape).
function shapeFits(given, declared) {
  return given.length === declared.length && declared.every((d, i) => d === -1 ? given[i] === 1 : d === given[i]);
}
function makeRankedTensorType(wasm, elementType, shape) {
  const dims = new wasm.VectorInt32();
  for (const d of shape) dims.push_back(d);
  const layout = wasm.LiteRtLayout.create(dims);
  dims.delete();
  const rtt = wasm.LiteRtRankedTensorType.create({value: elementType}, layout);
  layout.delete();
  return rtt;
}

function resolveCoreDir() {
  if (process.env.EDGEOPT_LITERTJS_DIR) return path.resolve(process.env.EDGEOPT_LITERTJS_DIR);
  const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  return path.join(repo, '.cache', 'litertjs', 'node_modules', '@litertjs', 'core');
}

// --- Main -------------------------------------------------------------------------------------
async function main() {
  const args = process.argv.slice(2);
  if (args.length !== 3) {
    fail('usage: node tests/support/litertjs_runner.mjs MODEL.tflite IN_DIR OUT_DIR', 2);
  }
  const [modelPath, inDir, outDir] = args;
  if (!fs.existsSync(modelPath)) throw new RunnerError(`model not found: ${modelPath}`);

  // Inputs description.
  const inputsJsonPath = path.join(inDir, 'inputs.json');
  if (!fs.existsSync(inputsJsonPath)) throw new RunnerError(`missing ${inputsJsonPath}`);
  let specs = JSON.parse(fs.readFileSync(inputsJsonPath, 'utf8'));
  if (!Array.isArray(specs)) specs = specs.inputs;
  if (!Array.isArray(specs)) throw new RunnerError(`${inputsJsonPath}: expected an array of {dtype, shape}`);

  // Load the library.
  const coreDir = resolveCoreDir();
  const indexJs = path.join(coreDir, 'dist', 'index.js');
  if (!fs.existsSync(indexJs)) {
    throw new RunnerError(`@litertjs/core not found at ${coreDir} (run scripts/setup.sh or set EDGEOPT_LITERTJS_DIR)`);
  }
  const version = JSON.parse(fs.readFileSync(path.join(coreDir, 'package.json'), 'utf8')).version;
  const litert = await import(pathToFileURL(indexJs).href);
  const relaxedSimd = await litert.supportsFeature('relaxedSimd');
  let mark = logLines.length;
  const liteRt = await litert.loadLiteRt(path.join(coreDir, 'wasm') + '/');
  throwIfLoggedErrors('loading LiteRT.js wasm', mark);
  const wasm = liteRt.liteRtWasm;
  const env = liteRt.getDefaultEnvironment();

  // Load + compile the model (CPU / wasm accelerator).
  const modelBytes = fs.readFileSync(modelPath);
  const modelPtr = wasm._malloc(modelBytes.byteLength);
  wasm.HEAPU8.set(modelBytes, modelPtr);
  mark = logLines.length;
  let model;
  let compiled;
  try {
    model = wasm.loadModel(env.liteRtEnvironment, modelPtr, modelBytes.byteLength);
  } catch (e) {
    throw new RunnerError(`loadModel failed: ${e?.message ?? e}${loggedErrors(mark).length ? ' | ' + loggedErrors(mark).join(' | ') : ''}`);
  }
  throwIfLoggedErrors('loadModel', mark);
  const compileOptions = {
    environment: env,
    accelerator: 'wasm',
    cpuOptions: {numThreads: 1},
    gpuOptions: {},
    webNNOptions: {},
  };
  mark = logLines.length;
  try {
    compiled = await wasm.compileModel(env.liteRtEnvironment, model, compileOptions);
  } catch (e) {
    throw new RunnerError(`compileModel failed: ${e?.message ?? e}${loggedErrors(mark).length ? ' | ' + loggedErrors(mark).join(' | ') : ''}`);
  }
  throwIfLoggedErrors('compileModel', mark);

  const numSignatures = model.getNumSignatures();
  if (numSignatures < 1) throw new RunnerError('model has no signature (LiteRT should synthesize one)');
  const signature = model.getSignature(0);
  const signatureKey = signature.key();
  const inputNames = vectorToArray(signature.inputNames());
  const outputNames = vectorToArray(signature.outputNames());
  signature.delete();

  if (specs.length !== inputNames.length) {
    throw new RunnerError(`model has ${inputNames.length} inputs (${inputNames.join(', ')}), inputs.json describes ${specs.length}`);
  }

  // Input buffers.
  const inputBuffers = [];
  for (let i = 0; i < inputNames.length; ++i) {
    const declared = model.getInputTensorType(0, i);
    const declaredInfo = describeType(declared);
    declared.delete();
    const spec = specs[i];
    const want = DTYPES[spec.dtype];
    if (want === undefined) throw new RunnerError(`input ${i}: unknown dtype '${spec.dtype}'`);
    if (want !== declaredInfo.elementType) {
      throw new RunnerError(`input ${i} '${inputNames[i]}' is ${declaredInfo.dtype}, inputs.json says ${spec.dtype}`);
    }
    if (!shapeFits(spec.shape ?? [], declaredInfo.shape)) {
      throw new RunnerError(`input ${i} '${inputNames[i]}' has shape [${declaredInfo.shape}], inputs.json says [${spec.shape}] (LiteRT.js 2.5.3 cannot resize inputs; a dynamic -1 dimension must be given as 1)`);
    }
    // The buffer carries the concrete shape (dynamic -1 dimensions replaced by the given ones).
    const rtt = makeRankedTensorType(wasm, want, spec.shape ?? []);
    const info = describeType(rtt);
    const file = path.join(inDir, spec.file ?? `input_${i}.bin`);
    if (!fs.existsSync(file)) throw new RunnerError(`missing ${file}`);
    const data = fs.readFileSync(file);
    if (info.bytes < 0 || data.byteLength !== info.bytes) {
      rtt.delete();
      throw new RunnerError(`input ${i} '${inputNames[i]}' ${info.dtype}[${info.shape}] needs ${info.bytes} bytes, ${file} has ${data.byteLength}`);
    }
    const buffer = wasm.LiteRtTensorBuffer.createManaged(
        env.liteRtEnvironment, wasm.LiteRtTensorBufferType.HOST_MEMORY, rtt, info.bytes);
    rtt.delete();
    const ptr = buffer.lock(wasm.LiteRtTensorBufferLockMode.WRITE);
    try {
      wasm.HEAPU8.set(data, ptr);  // re-read HEAPU8: memory may have grown
    } finally {
      buffer.unlock();
    }
    inputBuffers.push(buffer);
  }

  // Run.
  mark = logLines.length;
  let outputBuffers;
  try {
    outputBuffers = await compiled.run(0, inputBuffers);
  } catch (e) {
    throw new RunnerError(`run failed: ${e?.message ?? e}${loggedErrors(mark).length ? ' | ' + loggedErrors(mark).join(' | ') : ''}`);
  }
  throwIfLoggedErrors('run', mark);
  if (outputBuffers.length !== outputNames.length) {
    throw new RunnerError(`run returned ${outputBuffers.length} outputs, signature has ${outputNames.length}`);
  }

  // Outputs.
  fs.mkdirSync(outDir, {recursive: true});
  const outputs = [];
  for (let i = 0; i < outputBuffers.length; ++i) {
    const buffer = outputBuffers[i];
    const rtt = buffer.tensorType();
    const info = describeType(rtt);
    rtt.delete();
    // LiteRT.js preallocates output buffers from the model's static output types. Outputs whose
    // shape is only known after Prepare (e.g. TFLite_Detection_PostProcess, declared as shape [])
    // come back as 4-byte scalars or with element type NONE: report that instead of writing junk.
    // (A float scalar [] is indistinguishable here; the caller must compare shapes to TFLite's.)
    if (info.elementType === 0 || info.bytes < 0 || info.bytes !== buffer.size()) {
      throw new RunnerError(`output ${i} '${outputNames[i]}': LiteRT.js returned no usable tensor ` +
          `(element type ${info.dtype}, shape [${info.shape}], ${info.bytes} bytes, buffer ${buffer.size()} bytes); ` +
          `outputs with dynamic shapes are not supported by LiteRT.js`);
    }
    const ptr = buffer.lock(wasm.LiteRtTensorBufferLockMode.READ);
    let bytes;
    try {
      bytes = Buffer.from(wasm.HEAPU8.slice(ptr, ptr + info.bytes));
    } finally {
      buffer.unlock();
    }
    buffer.delete();
    const file = `output_${i}.bin`;
    fs.writeFileSync(path.join(outDir, file), bytes);
    outputs.push({index: i, name: outputNames[i], dtype: info.dtype, shape: info.shape, bytes: info.bytes, file});
  }
  for (const b of inputBuffers) b.delete();
  compiled.delete();
  model.delete();
  wasm._free(modelPtr);

  const summary = {
    runtime: `@litertjs/core ${version} (wasm, ${relaxedSimd ? 'relaxed SIMD' : 'compat, no relaxed SIMD'})`,
    model: path.resolve(modelPath),
    signature: signatureKey,
    inputs: inputNames,
    outputs,
  };
  fs.writeFileSync(path.join(outDir, 'outputs.json'), JSON.stringify(summary, null, 2) + '\n');
  throwIfLoggedErrors('cleanup', 0);  // anything logged at any point fails the run
}

process.on('unhandledRejection', (e) => fail(`unhandled rejection: ${e?.stack ?? e}`));
// If a LiteRT promise never settles, Node would drain the event loop and exit 0 silently.
let finished = false;
process.on('beforeExit', () => {
  if (!finished) fail('LiteRT.js never finished (a promise was left pending; event loop drained)');
});
main().then(
    () => { finished = true; process.exit(0); },
    (e) => fail(e instanceof RunnerError ? e.message : (e?.stack ?? String(e))));
