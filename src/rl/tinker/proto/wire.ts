/**
 * The protobuf wire format of the Tinker API (official Python SDK ≥ 0.25; schema `tinker_public.proto` taken from the
 * SDK 0.38.0 wheel, see PROVENANCE.md), converted to and from the JSON shapes of the 0.24 protocol that the rest of
 * longrun speaks (`WireDatum`, `TensorData`, `ForwardBackwardOutput` in ../client.ts), so that the server and the
 * client validate one form. Encoding and decoding are @bufbuild/protobuf's, from the generated schema; this file only
 * maps fields and packs the SDK's byte arrays (tokens as little-endian int32, dense tensors in their dtype, batched
 * outputs as one buffer with int64 byte offsets), as `tinker/proto/request_conv.py` and `response_conv.py` do.
 *
 * zstd bodies (`Content-Encoding: zstd`, the SDK's `proto_compress_fwdbwd`): inflated by fzstd with a bound on the
 * decompressed size (a larger body is a 413, whatever its compressed size), compressed by @hpcc-js/wasm-zstd.
 */
import { create, fromBinary, toBinary, type DescMessage, type Message } from '@bufbuild/protobuf';
import { Decompress } from 'fzstd';
import type { ForwardBackwardOutput, TensorData, WireDatum, WireSampledSequence } from '../client.ts';
import {
  ArrayRecordSchema, BatchedTensorSchema, ChunkSchema, DatumSchema, DType, EncodedTextChunkSchema, ForwardBackwardOutputSchema,
  ForwardBackwardRequestSchema, LossConfigValueSchema, SampledSequenceSchema, SampleResponseSchema, StopReason, TensorSchema,
  type ForwardBackwardRequest,
} from './tinker_public_pb.ts';

export const PROTO_CONTENT_TYPE = 'application/x-protobuf';

/** A body that cannot be read: `status` is the HTTP status to answer (400 malformed, 413 too large, 415 unsupported). */
export class WireError extends Error {
  constructor(readonly status: 400 | 413 | 415, readonly code: string, message: string) {
    super(message);
    this.name = 'WireError';
  }
}

// ---- byte arrays --------------------------------------------------------------------------------------------------

/** The bytes of `v` (copied, so the result never aliases a larger buffer). */
function bytesOf(v: ArrayBufferView): Uint8Array {
  return new Uint8Array(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
}

/** Reads `b` as little-endian values of `size` bytes (an unaligned view is copied first). */
function view<T>(b: Uint8Array, size: number, what: string, make: (buf: ArrayBuffer, n: number) => T): T {
  if (b.byteLength % size !== 0) throw new WireError(400, 'invalid_protobuf', `${what}: ${b.byteLength} bytes is not a whole number of ${size}-byte values`);
  const copy = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
  return make(copy as ArrayBuffer, b.byteLength / size);
}
const int32s = (b: Uint8Array, what: string) => view(b, 4, what, (buf, n) => new Int32Array(buf, 0, n));
const float32s = (b: Uint8Array, what: string) => view(b, 4, what, (buf, n) => new Float32Array(buf, 0, n));
const int64s = (b: Uint8Array, what: string) => view(b, 8, what, (buf, n) => new BigInt64Array(buf, 0, n));

function int64ToNumbers(a: BigInt64Array, what: string): number[] {
  const out = new Array<number>(a.length);
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    if (x > BigInt(Number.MAX_SAFE_INTEGER) || x < BigInt(Number.MIN_SAFE_INTEGER)) throw new WireError(400, 'invalid_protobuf', `${what}[${i}] = ${x} is outside the safe integer range`);
    out[i] = Number(x);
  }
  return out;
}

/** Fails on fields the schema does not know (a newer SDK's, whose meaning this side would silently drop). */
function noUnknown(m: Message & { $unknown?: { no: number }[] }, what: string): void {
  if (m.$unknown && m.$unknown.length > 0) throw new WireError(400, 'unknown_protobuf_field', `${what} (${m.$typeName}) has field number${m.$unknown.length > 1 ? 's' : ''} ${[...new Set(m.$unknown.map((u) => u.no))].join(', ')}, unknown to the tinker_public.proto of SDK 0.38.0 this server reads`);
}

function parse<D extends DescMessage>(schema: D, body: Uint8Array, what: string) {
  try {
    return fromBinary(schema, body);
  } catch (e) {
    throw new WireError(400, 'invalid_protobuf', `the body is not a ${schema.typeName} message (${what}): ${(e as Error).message}`);
  }
}

// ---- forward_backward requests --------------------------------------------------------------------------------------

export interface FwdBwdRequest {
  model_id: string;
  seq_id: number;
  forward_only: boolean;
  forward_backward_input: { data: WireDatum[]; loss_fn: string; loss_fn_config: Record<string, number> | null };
}

/** Checks what cannot be encoded (the JSON protocol leaves these to the server): finite numbers, integers where the dtype is. */
function checkValues(values: readonly unknown[], int: 'int32' | 'int64' | null, what: string): void {
  for (let i = 0; i < values.length; i++) {
    const x = values[i];
    const ok = typeof x === 'number' && Number.isFinite(x) && (int === null || (Number.isSafeInteger(x) && (int === 'int64' || (x >= -(2 ** 31) && x < 2 ** 31))));
    if (!ok) throw new WireError(400, 'invalid_datum', `${what}[${i}] must be a finite ${int ?? 'number'}${int ? ' integer' : ''} (got ${JSON.stringify(x)})`);
  }
}

function tensorToProto(t: TensorData, what: string) {
  checkValues(t.data, t.dtype === 'int64' ? 'int64' : null, `${what}.data`);
  let dense: Uint8Array;
  let dtype: DType;
  if (t.dtype === 'float32') {
    dense = bytesOf(Float32Array.from(t.data));
    dtype = DType.DTYPE_FLOAT32;
  } else if (t.dtype === 'int64') {
    dense = bytesOf(BigInt64Array.from(t.data, (x) => BigInt(x)));
    dtype = DType.DTYPE_INT64;
  } else throw new Error(`${what}: dtype ${String(t.dtype)} cannot be sent (float32 or int64)`);
  return create(TensorSchema, { encoding: { case: 'dense', value: dense }, dtype, shape: (t.shape ?? [t.data.length]).map((x) => BigInt(x)) });
}

/** A forward_backward request (or a forward-only one) as protobuf bytes, as the SDK builds it. */
export function encodeForwardBackwardRequest(r: FwdBwdRequest): Uint8Array {
  const lossFnConfig: Record<string, number> = {};
  const lossFnConfigV2: Record<string, ReturnType<typeof create<typeof LossConfigValueSchema>>> = {};
  for (const [k, v] of Object.entries(r.forward_backward_input.loss_fn_config ?? {})) {
    lossFnConfig[k] = v;
    lossFnConfigV2[k] = create(LossConfigValueSchema, { value: { case: 'number', value: v } });
  }
  const msg = create(ForwardBackwardRequestSchema, {
    modelId: r.model_id, seqId: r.seq_id, lossFn: r.forward_backward_input.loss_fn, forwardOnly: r.forward_only, lossFnConfig, lossFnConfigV2,
    data: r.forward_backward_input.data.map((d, k) => create(DatumSchema, {
      modelInput: d.model_input.chunks.map((c, j) => (checkValues(c.tokens, 'int32', `data[${k}].model_input.chunks[${j}].tokens`), c)).map((c) => create(ChunkSchema, { chunk: { case: 'encodedText', value: create(EncodedTextChunkSchema, { tokens: bytesOf(Int32Array.from(c.tokens)) }) } })),
      lossFnInputs: Object.fromEntries(Object.entries(d.loss_fn_inputs).map(([name, t]) => [name, tensorToProto(t, `data[${k}].loss_fn_inputs.${name}`)])),
    })),
  });
  return toBinary(ForwardBackwardRequestSchema, msg);
}

/**
 * A protobuf forward_backward body in the JSON shape of the 0.24 protocol (then validated as JSON bodies are).
 * Refused with a WireError: bytes that are not the message, unknown fields, image/audio chunks, sparse tensors, dtypes
 * other than float32/int64, text loss-config values, int64 values beyond 2^53.
 */
export function decodeForwardBackwardRequest(body: Uint8Array): FwdBwdRequest {
  const msg: ForwardBackwardRequest = parse(ForwardBackwardRequestSchema, body, 'forward_backward');
  noUnknown(msg, 'the request');
  let config: Record<string, number> | null = null;
  const v2 = Object.entries(msg.lossFnConfigV2);
  if (v2.length > 0) {
    config = {};
    for (const [k, v] of v2) {
      noUnknown(v, `loss_fn_config_v2.${k}`);
      if (v.value.case !== 'number') throw new WireError(400, 'invalid_request', `loss_fn_config_v2.${k} must be a number (this server's losses take numeric options only)`);
      config[k] = v.value.value;
    }
  } else if (Object.keys(msg.lossFnConfig).length > 0) config = { ...msg.lossFnConfig };
  const data = msg.data.map((d, k): WireDatum => {
    const name = `data[${k}]`;
    noUnknown(d, name);
    const chunks = d.modelInput.map((c, j) => {
      noUnknown(c, `${name}.model_input[${j}]`);
      if (c.chunk.case !== 'encodedText') throw new WireError(400, 'invalid_datum', `${name}.model_input[${j}]: only encoded_text chunks are supported (got ${c.chunk.case ?? 'an empty chunk'})`);
      noUnknown(c.chunk.value, `${name}.model_input[${j}].encoded_text`);
      return { type: 'encoded_text' as const, tokens: Array.from(int32s(c.chunk.value.tokens, `${name}.model_input[${j}].encoded_text.tokens`)) };
    });
    const inputs: Record<string, TensorData> = {};
    for (const [key, t] of Object.entries(d.lossFnInputs)) {
      const what = `${name}.loss_fn_inputs.${key}`;
      noUnknown(t, what);
      if (t.encoding.case !== 'dense') throw new WireError(400, 'invalid_datum', `${what}: ${t.encoding.case === 'sparseCsr' ? 'sparse tensors are not supported; send dense data' : 'the tensor has no data'}`);
      let values: number[];
      let dtype: TensorData['dtype'];
      if (t.dtype === DType.DTYPE_FLOAT32) {
        values = Array.from(float32s(t.encoding.value, `${what}.dense`));
        dtype = 'float32';
      } else if (t.dtype === DType.DTYPE_INT64) {
        values = int64ToNumbers(int64s(t.encoding.value, `${what}.dense`), `${what}.dense`);
        dtype = 'int64';
      } else throw new WireError(400, 'invalid_datum', `${what}.dtype must be DTYPE_FLOAT32 or DTYPE_INT64 (got ${DType[t.dtype] ?? t.dtype})`);
      inputs[key] = { data: values, dtype, shape: int64ToNumbers(BigInt64Array.from(t.shape), `${what}.shape`) };
    }
    return { model_input: { chunks }, loss_fn_inputs: inputs };
  });
  return { model_id: msg.modelId, seq_id: msg.seqId, forward_only: msg.forwardOnly, forward_backward_input: { data, loss_fn: msg.lossFn, loss_fn_config: config } };
}

// ---- forward_backward results -----------------------------------------------------------------------------------------

/** A forward/forward_backward result as `tinker_public.ForwardBackwardOutput` bytes: one ArrayRecord batching every datum. */
export function encodeForwardBackwardOutput(out: ForwardBackwardOutput): Uint8Array {
  const n = out.loss_fn_outputs.length;
  const fields: Record<string, ReturnType<typeof create<typeof BatchedTensorSchema>>> = {};
  for (const key of n > 0 ? Object.keys(out.loss_fn_outputs[0]) : []) {
    const dtype = out.loss_fn_outputs[0][key].dtype;
    const size = dtype === 'int64' ? 8 : 4;
    const offsets = new BigInt64Array(n + 1);
    let total = 0;
    for (let i = 0; i < n; i++) {
      const t = out.loss_fn_outputs[i][key];
      if (!t || t.dtype !== dtype) throw new Error(`loss_fn_outputs[${i}].${key}: every datum needs the field, in one dtype`);
      total += t.data.length;
      offsets[i + 1] = BigInt(total * size);
    }
    const data = dtype === 'int64' ? new BigInt64Array(total) : new Float32Array(total);
    let at = 0;
    for (const o of out.loss_fn_outputs) {
      const d = o[key].data;
      if (data instanceof BigInt64Array) for (let j = 0; j < d.length; j++) data[at + j] = BigInt(d[j]);
      else data.set(d, at);
      at += d.length;
    }
    fields[key] = create(BatchedTensorSchema, { data: bytesOf(data), offsets: bytesOf(offsets), dtype: dtype === 'int64' ? DType.DTYPE_INT64 : DType.DTYPE_FLOAT32, trailingShape: [] });
  }
  return toBinary(ForwardBackwardOutputSchema, create(ForwardBackwardOutputSchema, {
    lossFnOutputType: out.loss_fn_output_type || 'ArrayRecord',
    lossFnOutputs: n > 0 ? [create(ArrayRecordSchema, { typeTag: 'ArrayRecord', fields, numDatums: BigInt(n) })] : [],
    metrics: out.metrics,
  }));
}

/** `tinker_public.ForwardBackwardOutput` bytes in the JSON shape (per-datum tensors), as the SDK's response_conv reads them. */
export function decodeForwardBackwardOutput(body: Uint8Array): ForwardBackwardOutput {
  const msg = parse(ForwardBackwardOutputSchema, body, 'forward_backward result');
  const perField = new Map<string, { dtype: TensorData['dtype']; trailing: number[]; values: number[][] }>();
  let datums = 0;
  for (const [r, rec] of msg.lossFnOutputs.entries()) {
    let recDatums = Number(rec.numDatums);
    for (const [name, bt] of Object.entries(rec.fields)) {
      const what = `loss_fn_outputs[${r}].fields.${name}`;
      const size = bt.dtype === DType.DTYPE_INT64 ? 8 : 4;
      const offsets = int64ToNumbers(int64s(bt.offsets, `${what}.offsets`), `${what}.offsets`);
      let flat: number[];
      let dtype: TensorData['dtype'] = 'float32';
      if (bt.dtype === DType.DTYPE_FLOAT32) flat = Array.from(float32s(bt.data, `${what}.data`));
      else if (bt.dtype === DType.DTYPE_INT64) {
        flat = int64ToNumbers(int64s(bt.data, `${what}.data`), `${what}.data`);
        dtype = 'int64';
      } else if (bt.dtype === DType.DTYPE_INT32) {
        flat = Array.from(int32s(bt.data, `${what}.data`));
        dtype = 'int64';
      } else if (bt.dtype === DType.DTYPE_BFLOAT16) {
        const u16 = view(bt.data, 2, `${what}.data`, (buf, n) => new Uint16Array(buf, 0, n));
        const f = new Float32Array(new Uint32Array(Array.from(u16, (x) => x << 16)).buffer);
        flat = Array.from(f);
      } else throw new WireError(400, 'invalid_protobuf', `${what}: unsupported dtype ${bt.dtype}`);
      const entry = perField.get(name) ?? { dtype, trailing: bt.trailingShape.map(Number), values: [] };
      for (let i = 0; i + 1 < offsets.length; i++) entry.values.push(flat.slice(offsets[i] / size, offsets[i + 1] / size));
      perField.set(name, entry);
      if (recDatums === 0) recDatums = offsets.length - 1;
    }
    datums += recDatums;
  }
  const outputs: Record<string, TensorData>[] = [];
  for (let i = 0; i < datums; i++) {
    const o: Record<string, TensorData> = {};
    for (const [name, f] of perField) {
      const data = f.values[i] ?? [];
      const inner = f.trailing.reduce((a, b) => a * b, 1);
      o[name] = { data, dtype: f.dtype, shape: [inner ? data.length / inner : 0, ...f.trailing] };
    }
    outputs.push(o);
  }
  return { loss_fn_output_type: msg.lossFnOutputType.split(':').at(-1) || 'ArrayRecord', loss_fn_outputs: outputs, metrics: { ...msg.metrics } };
}

// ---- sample results -------------------------------------------------------------------------------------------------

export interface SampleResult {
  sequences: WireSampledSequence[];
  /** One per prompt token; null where there is none (the first token). */
  prompt_logprobs: (number | null)[] | null;
}

/** A sample result as `tinker_public.SampleResponse` bytes (prompt log-probs with NaN for "none", as the SDK reads them). */
export function encodeSampleResponse(r: SampleResult): Uint8Array {
  return toBinary(SampleResponseSchema, create(SampleResponseSchema, {
    sequences: r.sequences.map((s) => create(SampledSequenceSchema, {
      stopReason: s.stop_reason === 'length' ? StopReason.LENGTH : StopReason.STOP,
      tokens: bytesOf(Int32Array.from(s.tokens)),
      logprobs: s.logprobs ? bytesOf(Float32Array.from(s.logprobs)) : undefined,
    })),
    promptLogprobs: r.prompt_logprobs ? bytesOf(Float32Array.from(r.prompt_logprobs, (x) => (x === null ? NaN : x))) : undefined,
  }));
}

export function decodeSampleResponse(body: Uint8Array): SampleResult {
  const msg = parse(SampleResponseSchema, body, 'sample result');
  return {
    sequences: msg.sequences.map((s, i) => ({
      tokens: Array.from(int32s(s.tokens, `sequences[${i}].tokens`)),
      logprobs: s.logprobs !== undefined && s.logprobs.byteLength > 0 ? Array.from(float32s(s.logprobs, `sequences[${i}].logprobs`)) : null,
      stop_reason: s.stopReason === StopReason.LENGTH ? 'length' : 'stop',
    })),
    prompt_logprobs: msg.promptLogprobs !== undefined && msg.promptLogprobs.byteLength > 0 ? Array.from(float32s(msg.promptLogprobs, 'prompt_logprobs'), (x) => (Number.isNaN(x) ? null : x)) : null,
  };
}

// ---- zstd -----------------------------------------------------------------------------------------------------------

const ZSTD_MAGIC = 0xfd2fb528;

/** The window size the first zstd frame of `b` declares (what a decoder allocates for it), or null when it is not a zstd frame. */
function zstdWindow(b: Uint8Array): number | null {
  if (b.length < 6 || (b[0] | (b[1] << 8) | (b[2] << 16) | (b[3] << 24)) >>> 0 !== ZSTD_MAGIC) return null;
  const fhd = b[4];
  const singleSegment = (fhd >> 5) & 1;
  if (!singleSegment) {
    const exp = 10 + (b[5] >> 3);
    const base = 2 ** exp;
    return base + (base / 8) * (b[5] & 7);
  }
  // Single segment: the window is the frame content size (its field follows the optional dictionary id).
  const dictBytes = [0, 1, 2, 4][fhd & 3];
  const fcsBytes = [1, 2, 4, 8][fhd >> 6];
  const at = 5 + dictBytes;
  if (b.length < at + fcsBytes) return null;
  let size = 0;
  for (let i = fcsBytes - 1; i >= 0; i--) size = size * 256 + b[at + i];
  return fcsBytes === 2 ? size + 256 : size;
}

/**
 * Inflates a zstd body, refusing (413) one that inflates past `maxBytes` — checked on the first frame's declared
 * window before anything is allocated, then on the bytes actually produced, so a small bomb costs no more than
 * `maxBytes` of memory. Bytes that are not zstd, or end early, are a 400.
 */
export function inflateZstd(body: Uint8Array, maxBytes: number): Uint8Array {
  const window = zstdWindow(body);
  if (window === null) throw new WireError(400, 'invalid_zstd', 'Content-Encoding is zstd but the body is not a zstd frame');
  if (window > maxBytes) throw new WireError(413, 'body_too_large', `the zstd body declares a ${window}-byte window, over the server's limit of ${maxBytes} decompressed bytes`);
  const parts: Uint8Array[] = [];
  let total = 0;
  const over = new WireError(413, 'body_too_large', `the zstd body inflates past the server's limit of ${maxBytes} bytes`);
  const d = new Decompress((chunk) => {
    total += chunk.length;
    if (total > maxBytes) throw over;
    parts.push(chunk.slice());
  });
  const STEP = 16 * 1024;
  try {
    for (let at = 0; at < body.length; at += STEP) d.push(body.subarray(at, at + STEP), at + STEP >= body.length);
  } catch (e) {
    if (e instanceof WireError) throw e;
    throw new WireError(400, 'invalid_zstd', `the zstd body cannot be inflated: ${(e as Error).message}`);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

let zstdModule: Promise<{ compress(data: Uint8Array, level?: number): Uint8Array }> | undefined;

/** zstd-compresses `data` (level 3, python-zstandard's default), one frame with its content size. */
export async function deflateZstd(data: Uint8Array, level = 3): Promise<Uint8Array> {
  zstdModule ??= import('@hpcc-js/wasm-zstd').then((m) => m.Zstd.load());
  return (await zstdModule).compress(data, level);
}
