#!/usr/bin/env node
/**
 * A weather agent written with the Vercel AI SDK: `generateText` with two tools over several steps, through
 * `@ai-sdk/openai-compatible` pointed at OPENAI_BASE_URL. Nothing in it knows about longrun beyond reading the task
 * (stdin or LONGRUN_TASK) and printing its reward as the last stdout line.
 *
 *   node examples/ai-sdk-agent/agent.mjs < task.json        (with OPENAI_BASE_URL pointing at a rollout)
 */
import { readFileSync } from 'node:fs';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, stepCountIs, tool } from 'ai';
import { z } from 'zod';

const CELSIUS = { oslo: 5, lisbon: 18, cairo: 30, reykjavik: -2, lima: 20 };

const task = JSON.parse(process.env.LONGRUN_TASK ?? readFileSync(0, 'utf8'));
const provider = createOpenAICompatible({ name: 'longrun', baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });

const result = await generateText({
  model: provider('policy'),
  system: 'You answer weather questions. Get the temperature with get_temperature, convert it with to_fahrenheit, then answer in one sentence.',
  prompt: task.prompt,
  maxRetries: 0,
  maxOutputTokens: 256,
  stopWhen: stepCountIs(task.maxSteps ?? 6),
  tools: {
    get_temperature: tool({
      description: 'The temperature in a city now, in degrees Celsius.',
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => {
        const celsius = CELSIUS[city.toLowerCase()];
        return celsius === undefined ? { error: `no city ${city}` } : { city, celsius };
      },
    }),
    to_fahrenheit: tool({
      description: 'Converts degrees Celsius to degrees Fahrenheit.',
      inputSchema: z.object({ celsius: z.number() }),
      execute: async ({ celsius }) => ({ fahrenheit: Math.round((celsius * 9) / 5 + 32) }),
    }),
  },
});

// Reward: 1 when the final answer names the right Fahrenheit temperature.
const numbers = (result.text.match(/-?\d+(?:\.\d+)?/g) ?? []).map(Number);
const reward = numbers.includes(task.fahrenheit) ? 1 : 0;
console.log(JSON.stringify({ reward, steps: result.steps.length }));
