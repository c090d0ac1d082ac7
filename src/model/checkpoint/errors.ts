/** One error type for everything the checkpoint layer rejects; `code` lets callers and tests tell the cases apart. */
export type CheckpointErrorCode =
  | 'IO'
  | 'TRUNCATED'
  | 'BAD_HEADER_LENGTH'
  | 'BAD_JSON'
  | 'BAD_HEADER'
  | 'UNKNOWN_DTYPE'
  | 'BYTE_LENGTH'
  | 'OVERLAP'
  | 'GAP'
  | 'TRAILING_BYTES'
  | 'DUPLICATE_TENSOR'
  | 'NO_WEIGHTS'
  | 'BAD_INDEX'
  | 'BAD_CONFIG'
  | 'MISSING_TENSOR'
  | 'UNEXPECTED_TENSOR'
  | 'SHAPE_MISMATCH'
  | 'DTYPE_MISMATCH'
  | 'BAD_MXFP4'
  | 'BAD_GGUF'
  | 'BAD_ARGUMENT';

export interface CheckpointProblem {
  code: CheckpointErrorCode;
  message: string;
}

export class CheckpointError extends Error {
  readonly code: CheckpointErrorCode;
  /** Every problem found when several were collected before throwing (the first one decides `code`). */
  readonly problems: readonly CheckpointProblem[];

  constructor(code: CheckpointErrorCode, message: string, options?: { cause?: unknown; problems?: readonly CheckpointProblem[] }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CheckpointError';
    this.code = code;
    this.problems = options?.problems ?? [{ code, message }];
  }

  /** Throws one error that lists every problem (at most `limit` lines), or does nothing when there are none. */
  static throwAll(context: string, problems: readonly CheckpointProblem[], limit = 20): void {
    if (problems.length === 0) return;
    const shown = problems.slice(0, limit).map((p) => `  - ${p.message}`);
    if (problems.length > limit) shown.push(`  - … and ${problems.length - limit} more`);
    throw new CheckpointError(problems[0].code, `${context}: ${problems.length} problem(s):\n${shown.join('\n')}`, { problems });
  }
}
