/**
 * mcpServer against a small stdio MCP server (test/fixtures/mcp/fake-server.mjs, on the SDK's McpServer) and an
 * in-process Streamable HTTP server: tool listing and conversion, call routing and what each failure becomes (a tool
 * error the agent sees, or an EpisodeError naming the server with its stderr), a fresh server or session per
 * episode, bounded concurrency, and no process left behind after close.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { EpisodeError } from '../../../src/tooluse/api/errors.ts';
import { mcpServer, renderMcpContent, type OpenMcpServer } from '../../../src/tooluse/api/mcp.ts';
import type { ToolContext, ToolDef, ToolSourceContext } from '../../../src/tooluse/api/types.ts';
import { startHttpMcpServer } from '../../fixtures/mcp/http-server.ts';

const FAKE = fileURLToPath(new URL('../../fixtures/mcp/fake-server.mjs', import.meta.url));

let episode = 0;
function openCtx(extra: Partial<ToolSourceContext> = {}): ToolSourceContext {
  episode++;
  return { signal: new AbortController().signal, seed: episode, episodeId: `test:${episode}`, task: { id: `t${episode}` }, state: {}, ...extra };
}
function callCtx(signal = new AbortController().signal): ToolContext {
  return { signal, seed: 0, episodeId: 'test', task: { id: 't' }, state: {} };
}
function toolOf(open: { tools: ToolDef[] }, name: string): ToolDef {
  const t = open.tools.find((x) => x.name === name);
  assert.ok(t, `tool ${name} among ${open.tools.map((x) => x.name).join(', ')}`);
  return t;
}
async function call(open: { tools: ToolDef[] }, name: string, args: Record<string, unknown> = {}): Promise<unknown> {
  return toolOf(open, name).run(args, callCtx());
}
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
/** A process that is not our child is reaped by init, a moment after it dies: wait for that, up to `ms`. */
async function goneWithin(pid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (alive(pid)) {
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}
const fake = (mode = 'serve', options = {}) => mcpServer({ name: 'fake', command: process.execPath, args: [FAKE, mode] }, options);

describe('mcpServer over stdio', () => {
  test('lists the tools as ToolDefs and routes calls; close leaves no process (the server nor its child)', async () => {
    const source = fake();
    assert.equal(source.name, 'fake');
    const open = await source.open(openCtx());
    try {
      assert.deepEqual(open.tools.map((t) => t.name), ['echo', 'fail', 'mixed', 'slow', 'crash', 'spawn_child', 'whoami', 'counter']);
      const echo = toolOf(open, 'echo');
      assert.equal(echo.description, 'Echoes the text back.');
      assert.deepEqual(echo.parameters, { type: 'object', properties: { text: { type: 'string', description: 'What to echo' } }, required: ['text'] });
      assert.equal(echo.timeoutMs, 30_000);
      assert.equal(toolOf(open, 'whoami').kind, 'read');
      assert.equal(echo.kind, 'generic');
      assert.equal(await call(open, 'echo', { text: 'héllo 🙂' }), 'héllo 🙂');
      assert.equal(await call(open, 'mixed'), 'first\n[image: image/png, 10 bytes]\n[resource link: file:///a.txt (a.txt), text/plain]\nlast');
      assert.equal(open.handle.constructor.name, 'Client');
      assert.match(open.stderrTail(), /fake-server: ready/);
    } finally {
      const grandchild = Number(await call(open, 'spawn_child'));
      assert.ok(open.pid !== undefined && alive(open.pid) && alive(grandchild));
      await open.close();
      assert.equal(alive(open.pid!), false, 'the server process is gone after close');
      assert.ok(await goneWithin(grandchild, 3000), 'the process the server started is gone too (its process group was killed)');
    }
    assert.equal(source.openCount, 0);
  });

  test('an isError result and a refused call are tool errors (plain Errors), with the server still usable', async () => {
    const open = await fake().open(openCtx());
    try {
      await assert.rejects(call(open, 'fail'), (e: Error) => !(e instanceof EpisodeError) && e.message === 'the widget is broken');
      await assert.rejects(call(open, 'echo', { text: 42 }), (e: Error) => !(e instanceof EpisodeError) && /Invalid arguments for tool echo/.test(e.message));
      assert.equal(await call(open, 'echo', { text: 'still here' }), 'still here');
    } finally {
      await open.close();
    }
  });

  test('a call that outlasts timeoutMs is a tool error; so is one whose signal aborts', async () => {
    const open = await fake('serve', { timeoutMs: 300 }).open(openCtx());
    try {
      assert.equal(toolOf(open, 'slow').timeoutMs, 300);
      await assert.rejects(call(open, 'slow', { ms: 5000 }), (e: Error) => !(e instanceof EpisodeError) && /slow of MCP server "fake" timed out after 300 ms/.test(e.message));
      const controller = new AbortController();
      const pending = toolOf(open, 'slow').run({ ms: 5000 }, callCtx(controller.signal)) as Promise<unknown>;
      setTimeout(() => controller.abort(new Error('episode over')), 50);
      await assert.rejects(pending, (e: Error) => !(e instanceof EpisodeError) && /episode over/.test(e.message));
      assert.equal(await call(open, 'echo', { text: 'ok' }), 'ok');
    } finally {
      await open.close();
    }
  });

  test('every episode gets a fresh process; args, env and cwd are functions of the episode', async () => {
    const dirs = [mkdtempSync(join(tmpdir(), 'mcp-test-')), mkdtempSync(join(tmpdir(), 'mcp-test-'))];
    try {
      const source = mcpServer({
        name: 'fake',
        command: process.execPath,
        args: ({ task }) => [FAKE, 'serve', task.id],
        env: ({ state }) => ({ FAKE_VALUE: (state as { value: string }).value }),
        cwd: ({ state }) => (state as { dir: string }).dir,
      });
      const seen: { argv: string[]; cwd: string; value: string; pid: number }[] = [];
      for (const [i, dir] of dirs.entries()) {
        const open = await source.open(openCtx({ task: { id: `task-${i}` }, state: { dir, value: `v${i}` } }));
        try {
          assert.equal(await call(open, 'counter'), '1');
          assert.equal(await call(open, 'counter'), '2');
          seen.push(JSON.parse(String(await call(open, 'whoami'))));
        } finally {
          await open.close();
        }
      }
      assert.deepEqual(seen.map((s) => [s.argv, s.cwd, s.value]), [[['task-0'], realpathSync(dirs[0]), 'v0'], [['task-1'], realpathSync(dirs[1]), 'v1']]);
      assert.notEqual(seen[0].pid, seen[1].pid);
    } finally {
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    }
  });

  test('a process that exits with servers still open takes their process groups with it', async () => {
    const { spawn } = await import('node:child_process');
    const script = [
      `import { mcpServer } from ${JSON.stringify(new URL('../../../src/tooluse/api/mcp.ts', import.meta.url).href)};`,
      `const open = await mcpServer({ name: 'fake', command: process.execPath, args: [${JSON.stringify(FAKE)}, 'serve'] }).open({ signal: new AbortController().signal, seed: 0, episodeId: 'x', task: { id: 'x' }, state: null });`,
      `const child = await open.tools.find((t) => t.name === 'spawn_child').run({}, { signal: new AbortController().signal, seed: 0, episodeId: 'x', task: { id: 'x' }, state: null });`,
      'console.log(JSON.stringify([open.pid, Number(child)]));',
      'process.exit(0);',
    ].join('\n');
    const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    parent.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise((r) => parent.once('close', r));
    assert.equal(code, 0);
    const pids = JSON.parse(out.trim()) as number[];
    assert.equal(pids.length, 2);
    for (const pid of pids) assert.ok(await goneWithin(pid, 3000), `process ${pid} outlived the process that started it`);
  });

  test('a server that dies mid-episode is an EpisodeError naming it, with the tail of its stderr', async () => {
    const open = await fake().open(openCtx());
    try {
      await assert.rejects(call(open, 'crash'), (e: Error) => {
        assert.ok(e instanceof EpisodeError, `${e.name}: ${e.message}`);
        assert.match(e.message, /MCP server "fake" .* exited with code 3 during a call to crash/);
        assert.match(e.message, /segfault in widget driver/);
        assert.equal(e.env, 'fake');
        return true;
      });
      await assert.rejects(call(open, 'echo', { text: 'x' }), (e: Error) => e instanceof EpisodeError && /exited with code 3/.test(e.message));
      assert.equal(alive(open.pid!), false);
    } finally {
      await open.close();
    }
  });

  test('a server that exits before initialize, never answers it, or cannot be spawned is an EpisodeError', async () => {
    const early = fake('exit-early');
    await assert.rejects(early.open(openCtx()), (e: Error) => {
      assert.ok(e instanceof EpisodeError, `${e.name}: ${e.message}`);
      assert.match(e.message, /MCP server "fake" \(.*fake-server\.mjs exit-early\) exited with code 2 before it finished starting/);
      assert.match(e.message, /fatal: configuration file missing/);
      return true;
    });
    assert.equal(early.openCount, 0, 'the slot is given back');
    const started = Date.now();
    await assert.rejects(fake('silent', { startTimeoutMs: 700 }).open(openCtx()), (e: Error) => {
      assert.ok(e instanceof EpisodeError);
      assert.match(e.message, /did not finish starting \(initialize and tools\/list\) within 700 ms/);
      assert.match(e.message, /warming up forever/);
      return true;
    });
    assert.ok(Date.now() - started < 8000);
    await assert.rejects(mcpServer({ name: 'nope', command: join(tmpdir(), 'no-such-mcp-server-binary') }).open(openCtx()), (e: Error) => {
      assert.ok(e instanceof EpisodeError);
      assert.match(e.message, /MCP server "nope" .* could not be started \(spawn .*ENOENT\)/);
      return true;
    });
    await assert.rejects(
      mcpServer({ name: 'bad-args', command: process.execPath, args: () => { throw new Error('no folder for this task'); } }).open(openCtx()),
      (e: Error) => e instanceof EpisodeError && /MCP server "bad-args": its args\/env\/cwd function threw: no folder for this task/.test(e.message),
    );
  });

  test('bad specs are refused when the source is made', () => {
    assert.throws(() => mcpServer({ name: 'x', command: '' }), /MCP server "x": command must be a non-empty string/);
    assert.throws(() => mcpServer({ name: 'x', url: 'not a url' }), /MCP server "x": url "not a url" is not a valid URL/);
    assert.throws(() => mcpServer({ name: 'x', command: 'node' }, { maxConcurrent: 0 }), /maxConcurrent must be a positive integer/);
    assert.throws(() => mcpServer({ name: 'x', command: 'node' }, { prefix: 'a b' }), /prefix "a b" must start with a letter/);
  });

  test('include picks and orders tools, prefix renames them; an unknown include is an EpisodeError', async () => {
    const open = await fake('serve', { include: ['whoami', 'echo'], prefix: 'fk' }).open(openCtx());
    try {
      assert.deepEqual(open.tools.map((t) => t.name), ['fk_whoami', 'fk_echo']);
      assert.equal(await call(open, 'fk_echo', { text: 'routed to echo' }), 'routed to echo');
    } finally {
      await open.close();
    }
    await assert.rejects(fake('serve', { include: ['echo', 'teleport'] }).open(openCtx()), (e: Error) => e instanceof EpisodeError && /offers no tool "teleport" \(it offers: echo, fail/.test(e.message));
  });

  test('at most maxConcurrent servers of a source are open; further opens wait for a slot, or their abort', async () => {
    const source = fake('serve', { maxConcurrent: 2 });
    const a = await source.open(openCtx());
    const b = await source.open(openCtx());
    assert.equal(source.openCount, 2);
    let opened = false;
    const waiting = source.open(openCtx()).then((o) => {
      opened = true;
      return o;
    });
    const controller = new AbortController();
    const aborted = source.open(openCtx({ signal: controller.signal }));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(opened, false, 'the third open waits while two are open');
    controller.abort(new Error('run stopped'));
    await assert.rejects(aborted, /run stopped/);
    await a.close();
    const third = await waiting;
    assert.equal(source.openCount, 2);
    assert.equal(await call(third, 'counter'), '1');
    await Promise.all([b.close(), third.close(), third.close()]);
    assert.equal(source.openCount, 0);
    for (const o of [a, b, third]) assert.equal(alive(o.pid!), false);
  });
});

describe('mcpServer over Streamable HTTP', () => {
  test('a fresh session per episode, ended at close; a server gone mid-episode is an EpisodeError', async () => {
    const server = await startHttpMcpServer((s) => {
      let total = 0;
      s.registerTool('add', { description: 'Adds to a running total of this session.', inputSchema: { by: z.number().int().describe('How much') } }, async ({ by }) => ({
        content: [{ type: 'text', text: String((total += by)) }],
      }));
      s.registerTool('refuse', { description: 'Always refuses.', inputSchema: {} }, async () => ({ content: [{ type: 'text', text: 'not today' }], isError: true }));
    });
    const source = mcpServer({ name: 'web', url: server.url, headers: { 'x-test': '1' } });
    try {
      for (let ep = 0; ep < 2; ep++) {
        const open = await source.open(openCtx());
        try {
          assert.equal(open.pid, undefined);
          assert.deepEqual(open.tools.map((t) => t.name), ['add', 'refuse']);
          assert.deepEqual((toolOf(open, 'add').parameters as { required: string[] }).required, ['by']);
          assert.equal(await call(open, 'add', { by: 2 }), '2');
          assert.equal(await call(open, 'add', { by: 3 }), '5', 'state lives in the session');
          await assert.rejects(call(open, 'refuse'), (e: Error) => !(e instanceof EpisodeError) && e.message === 'not today');
          assert.equal(server.sessionCount(), 1);
        } finally {
          await open.close();
        }
        assert.equal(server.sessionCount(), 0, 'close ends the session');
      }
      assert.equal(server.sessionsOpened(), 2);
      const open = await source.open(openCtx());
      await server.close();
      await assert.rejects(call(open, 'add', { by: 1 }), (e: Error) => e instanceof EpisodeError && /MCP server "web" \(http:\/\/127\.0\.0\.1:\d+\/mcp\) lost its connection/.test(e.message));
      await open.close();
    } finally {
      await server.close();
    }
    await assert.rejects(source.open(openCtx()), (e: Error) => e instanceof EpisodeError && /MCP server "web" .* failed to start/.test(e.message));
  });
});

test('renderMcpContent: text joined, other content summarised, structuredContent when there is no content', () => {
  assert.equal(renderMcpContent({ content: [], structuredContent: { a: 1 } }), '{"a":1}');
  assert.equal(renderMcpContent({ content: [] }), '');
  assert.equal(
    renderMcpContent({
      content: [
        { type: 'audio', data: Buffer.from('abcd').toString('base64'), mimeType: 'audio/wav' },
        { type: 'resource', resource: { uri: 'mem://x', text: 'inline text' } },
        { type: 'resource', resource: { uri: 'mem://y', mimeType: 'application/octet-stream', blob: Buffer.from('12345').toString('base64') } },
      ],
    }),
    '[audio: audio/wav, 4 bytes]\ninline text\n[resource: mem://y, application/octet-stream, 5 bytes]',
  );
});

describe('mcpServer as a source of a defined env', () => {
  const define = async () => {
    const { defineEnv } = await import('../../../src/tooluse/api/define.ts');
    const source = fake('serve', { include: ['echo', 'crash'] });
    const def = defineEnv({
      id: 'test/mcp-fake-v0',
      instructions: 'Echo things.',
      sources: [source],
      tasks: [{ id: 'a', prompt: 'say hi' }],
      reward: async (ep) => {
        const client = ep.sources.fake as OpenMcpServer['handle'];
        const r = await client.callTool({ name: 'echo', arguments: { text: 'from the reward' } });
        return (r.content as { text: string }[])[0].text === 'from the reward' ? 1 : 0;
      },
    });
    return { source, env: def.makeEnv() };
  };

  test('its tools join the env\'s; the reward reaches the server through the handle before it closes', async () => {
    const { source, env } = await define();
    try {
      const [, info] = await env.reset({ seed: 0 });
      assert.deepEqual((info.tools as { function: { name: string } }[]).map((t) => t.function.name), ['echo', 'crash']);
      const [obs] = await env.step({ toolCalls: [{ name: 'echo', arguments: { text: 'hi' } }] });
      assert.match(obs.text, /hi/);
      const [, reward, terminated] = await env.step({ content: 'said hi' });
      assert.equal(terminated, true);
      assert.equal(reward, 1, 'the reward called the server through the handle before it closed');
      assert.equal(source.openCount, 0);
    } finally {
      await env.close();
    }
  });

  test(
    'a server that dies mid-episode ends the episode with an EpisodeError, not a tool error',
    async () => {
      const { source, env } = await define();
      try {
        await env.reset({ seed: 1 });
        await assert.rejects(env.step({ toolCalls: [{ name: 'crash', arguments: {} }] }), (e: Error) => {
          assert.ok(e instanceof EpisodeError, `${e.name}: ${e.message}`);
          assert.match(e.message, /MCP server "fake" .*exited with code 3/);
          assert.match(e.message, /segfault in widget driver/);
          return true;
        });
        assert.equal(source.openCount, 0, 'the episode\'s sources are closed');
      } finally {
        await env.close();
      }
    },
  );
});
