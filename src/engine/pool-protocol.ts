/**
 * Layout of the shared control block between the main thread and the pool workers (pool-worker.mjs reads the
 * same offsets; keep the two in sync). Int32 slots first, then float64 parameters, then an error message.
 */
export const CTRL = {
  /** Job generation; bumped by the main thread for each job (and for shutdown). */
  SEQ: 0,
  /** Index of the kernel in the export-name list given to the workers. */
  FN: 1,
  NPARAMS: 2,
  /** Workers that finished the current job. */
  DONE: 3,
  /** 0, or 1 + the tid of the first worker whose kernel threw. */
  ERROR: 4,
  SHUTDOWN: 5,
  /** Workers that instantiated the module (negative if one failed). */
  READY: 6,
  /** Threads taking part in the current job (main thread included). */
  ACTIVE: 7,
} as const;

export const PARAMS_BYTE_OFFSET = 64;
export const MAX_PARAMS = 24;
export const MESSAGE_BYTE_OFFSET = PARAMS_BYTE_OFFSET + MAX_PARAMS * 8;
export const MESSAGE_BYTES = 768;
export const CONTROL_BYTES = MESSAGE_BYTE_OFFSET + MESSAGE_BYTES;
