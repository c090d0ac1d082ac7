/**
 * The tools of a real MCP server (@modelcontextprotocol/server-memory) as the agent is shown them: rendered in the
 * harmony and Qwen3 chat formats (the tool's name, description and parameters in the prompt), and a call to one of
 * them, written in each format, parsed back to the same name and arguments.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HarmonyFormat } from '../../../src/llm/harmony.ts';
import type { ChatMessage, ToolSpec } from '../../../src/llm/messages.ts';
import { o200kHarmony } from '../../../src/llm/o200k.ts';
import { Qwen3Format } from '../../../src/llm/qwen3.ts';
import { qwen3Tokenizer } from '../../../src/llm/qwen3-tokenizer.ts';
import { mcpServer } from '../../../src/tooluse/api/mcp.ts';
import { toolSpec } from '../../../src/tooluse/api/tool.ts';

const require = createRequire(import.meta.url);
const MEMORY = require.resolve('@modelcontextprotocol/server-memory/dist/index.js');

describe('MCP tools in the chat formats', () => {
  let specs: ToolSpec[] = [];
  let dir = '';
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mcp-render-'));
    const source = mcpServer({ name: 'memory', command: process.execPath, args: [MEMORY], env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') } }, { include: ['create_relations', 'read_graph'] });
    const open = await source.open({ signal: new AbortController().signal, seed: 0, episodeId: 'render', task: { id: 'render' }, state: null });
    try {
      specs = open.tools.map(toolSpec);
    } finally {
      await open.close();
    }
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const conversation = (): { messages: ChatMessage[]; tools: ToolSpec[] } => ({
    messages: [{ role: 'system', content: 'You keep a knowledge graph.' }, { role: 'user', content: 'Alice knows Bob.' }],
    tools: specs,
  });
  const call: ChatMessage = { role: 'assistant', content: '', toolCalls: [{ name: 'create_relations', arguments: { relations: [{ from: 'Alice', to: 'Bob', relationType: 'knows' }] } }] };

  test('harmony: the tools are TypeScript-like types in the developer message; a call parses back', () => {
    const format = new HarmonyFormat(o200kHarmony());
    const text = format.renderText(conversation(), { addGenerationPrompt: true });
    assert.match(text, /namespace functions \{/);
    assert.match(text, /\/\/ Create multiple new relations between entities in the knowledge graph\. Relations should be in active voice\ntype create_relations = \(_: \{\nrelations: \{\n\/\/ The name of the entity where the relation starts\nfrom: string,/);
    assert.match(text, /\/\/ The type of the relation\nrelationType: string,\n\}\[\],\n\}\) => any;/);
    assert.match(text, /\/\/ Read the entire knowledge graph\ntype read_graph = \(\) => any;/);
    const parsed = format.parseCompletion(format.renderCompletion(call), specs.map((s) => s.function.name));
    assert.ok(parsed.ok, parsed.ok ? '' : parsed.message);
    assert.deepEqual(parsed.toolCalls, [{ name: 'create_relations', arguments: call.toolCalls![0].arguments }]);
  });

  test('Qwen3: the tools are JSON lines in <tools>; a call parses back', () => {
    const format = new Qwen3Format(qwen3Tokenizer());
    const text = format.renderText(conversation(), { addGenerationPrompt: true });
    const tools = /<tools>\n([\s\S]*?)\n<\/tools>/.exec(text);
    assert.ok(tools, 'a <tools> block');
    const lines = tools[1].split('\n').map((l) => JSON.parse(l) as ToolSpec);
    assert.deepEqual(lines.map((l) => l.function.name), ['create_relations', 'read_graph']);
    assert.deepEqual(lines[0].function.parameters, specs[0].function.parameters);
    assert.deepEqual(Object.keys((lines[0].function.parameters as { properties: object }).properties), ['relations']);
    const parsed = format.parseCompletion(format.renderCompletion(call), specs.map((s) => s.function.name));
    assert.ok(parsed.ok, parsed.ok ? '' : parsed.message);
    assert.deepEqual(parsed.toolCalls, [{ name: 'create_relations', arguments: call.toolCalls![0].arguments }]);
  });
});
