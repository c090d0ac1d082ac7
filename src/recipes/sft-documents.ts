/**
 * The documents of a run file's SFT stage with a trajectories file (`sft.data`): the expert trajectories rendered
 * with the system prompt and tools the rollouts see (when the task provides them), then the drills the retail
 * section asks for (`retail.drills`: copy, identity, address, write; src/recipes/retail/), each kept within
 * `sft.config.seqLen`. `longrun train` trains on them; the scripts that score or continue an SFT stage read the same
 * documents.
 */
import type { TrajectoryRecord } from '../rl/sft-data.ts';
import type { BuiltRun, RunFile } from './train-setup.ts';

/** The run's SFT documents, rendered with the system prompt and tools the rollouts see (when the task provides them). */
export async function sftDocuments(run: RunFile, built: BuiltRun) {
  if (!run.sft) throw new Error('the config has no sft section');
  if (run.sft.data === undefined) throw new Error('the sft stage streams its data (retail.stream); it has no trajectories file');
  const { readTrajectoriesJsonl, buildSftDocuments } = await import('../rl/sft-data.ts');
  const seqLen = typeof run.sft.config.seqLen === 'number' ? run.sft.config.seqLen : 512;
  const records = readTrajectoriesJsonl(run.sft.data);
  const expert = buildSftDocuments(records, built.deps.format, { maxSeqLen: seqLen, ...built.conversation });
  const docs = [...expert.docs];
  /** What was mixed in after the expert documents, in order: label, documents, tokens. */
  const mix: { label: string; count: number; tokens: number }[] = [];
  const add = (label: string, d: typeof docs) => {
    docs.push(...d);
    mix.push({ label, count: d.length, tokens: d.reduce((a, x) => a + x.tokens.length, 0) });
    return d.length;
  };
  const drills = run.retail?.drills ?? {};
  const conversations = (r: TrajectoryRecord[]) => buildSftDocuments(r, built.deps.format, { maxSeqLen: seqLen, overflow: 'drop' }).docs;
  const drill = drills.copy
    ? add('copy-drill documents', (await import('./retail/copy-drill.ts')).copyDrillDocuments(built.tokenizer, drills.copy).filter((x) => x.tokens.length <= seqLen)) : 0;
  const identity = drills.identity
    ? add('identity-drill conversations', conversations((await import('./retail/identity-drill.ts')).identityDrillRecords(records, drills.identity))) : 0;
  const address = drills.address
    ? add('address-drill conversations', conversations((await import('./retail/address-drill.ts')).addressDrillRecords(records, drills.address))) : 0;
  const write = drills.write
    ? add('write-drill conversations', conversations((await import('./retail/write-drill.ts')).writeDrillRecords(records, drills.write))) : 0;
  return { ...expert, docs, seqLen, drill, identity, address, write, mix };
}
