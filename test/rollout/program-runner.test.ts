import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lastJsonLine, runProgram } from '../../src/rollout/program-runner.ts';

const ctx = { baseUrl: 'http://127.0.0.1:9/rollouts/r1/v1', rolloutId: 'r1', rewardUrl: 'http://127.0.0.1:9/rollouts/r1/reward', task: { id: 't1', prompt: 'hi' } };
const node = (code: string, timeoutMs = 20_000) => ({ command: process.execPath, args: ['-e', code], timeoutMs });

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitDead(pid: number, ms = 3000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return !alive(pid);
}

describe('program runner', () => {
  it('gives the program its base URL, rollout id and task (env and stdin) and reads its last JSON line', async () => {
    const code = `let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{console.log('noise');console.log(JSON.stringify({seen:[process.env.OPENAI_BASE_URL,process.env.LONGRUN_ROLLOUT_ID,process.env.LONGRUN_TASK_ID,process.env.LONGRUN_REWARD_URL,process.env.OPENAI_API_KEY,process.env.EXTRA],stdin:JSON.parse(s),reward:0.25}));console.log('{not json');});`;
    const r = await runProgram({ ...node(code), env: { EXTRA: 'x' } }, ctx);
    assert.equal(r.exitCode, 0);
    assert.equal(r.timedOut, false);
    assert.deepEqual(r.lastJson?.seen, [ctx.baseUrl, 'r1', 't1', ctx.rewardUrl, 'longrun', 'x']);
    assert.deepEqual(r.lastJson?.stdin, ctx.task);
    assert.equal(r.lastJson?.reward, 0.25);
  });

  it('runs a shell command line when no args are given', async () => {
    const r = await runProgram({ command: `${JSON.stringify(process.execPath)} -e "console.log(JSON.stringify({reward: 1}))"` }, ctx);
    assert.equal(r.exitCode, 0);
    assert.deepEqual(r.lastJson, { reward: 1 });
  });

  it('reports a crash with its exit status and stderr tail', async () => {
    const r = await runProgram(node(`console.error('x'.repeat(9000)); console.error('boom: the tool failed'); process.exit(3)`), ctx);
    assert.equal(r.exitCode, 3);
    assert.match(r.stderrTail, /boom: the tool failed\n$/);
    assert.ok(r.stderrTail.length <= 4096);
    assert.equal(r.lastJson, null);
  });

  it('kills the whole process group at the time-out, children included', async () => {
    const code = `const c=require('child_process').spawn(process.execPath,['-e','setInterval(()=>{},1000)'],{stdio:'ignore'});console.log(JSON.stringify({child:c.pid}));setInterval(()=>{},1000);`;
    const t0 = Date.now();
    const r = await runProgram(node(code, 800), ctx);
    assert.equal(r.timedOut, true);
    assert.ok(Date.now() - t0 < 5000, 'SIGTERM ends it well before the kill grace');
    const child = r.lastJson?.child as number;
    assert.ok(Number.isInteger(child));
    assert.ok(await waitDead(child), 'the grandchild is gone too');
  });

  it('does not wait for a straggler that holds stdout after the program exits, and kills it', async () => {
    const code = `const c=require('child_process').spawn(process.execPath,['-e','setInterval(()=>{},1000)'],{stdio:['ignore','inherit','inherit']});console.log(JSON.stringify({child:c.pid,reward:1}));setTimeout(()=>process.exit(0),100);`;
    const t0 = Date.now();
    const r = await runProgram(node(code, 15_000), ctx);
    assert.equal(r.timedOut, false);
    assert.equal(r.exitCode, 0);
    assert.ok(Date.now() - t0 < 5000);
    assert.ok(await waitDead(r.lastJson?.child as number));
  });

  it('reports a command that cannot start', async () => {
    const r = await runProgram({ command: '/nonexistent/agent-binary', args: [] }, ctx);
    assert.match(r.spawnError ?? '', /ENOENT/);
    assert.equal(r.exitCode, null);
  });

  it('lastJsonLine takes the last JSON object line', () => {
    assert.deepEqual(lastJsonLine('{"a":1}\n{"reward":2}\nbye\n'), { reward: 2 });
    assert.equal(lastJsonLine('[1,2]\nplain'), null);
  });
});
